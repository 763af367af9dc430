//! MCP's tasks (revision 2026-07-28, extension
//! `io.modelcontextprotocol/tasks`) behind the memory seam: a
//! [`TaskStore`], reached from a run's memory ([`RunMemory::task_store`](super::RunMemory::task_store)).
//! The [`Journal`](crate::journal) keeps tasks in its `journal_tasks`
//! table, for every instance on it; [`LocalTasks`] (a [`LocalMemory`](super::LocalMemory)'s)
//! in the process, for a server without a journal, gone with it.
//!
//! The rules every store keeps: a task is created once (a second create of
//! its id is refused), and only a task that has not ended moves, so of a
//! finish and a cancellation exactly one is recorded.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use serde_json::Value;

use super::{Answer, JournalError};

/// Where a task stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// Its call runs (or ran on a process that ended before recording it).
    Working,
    /// It waits for the client's input (an approval, or its tool's questions).
    InputRequired,
    /// Its call ended; the result is kept (a tool error included).
    Completed,
    /// It could not be carried out (the server's failure, not the tool's).
    Failed,
    /// The client cancelled it.
    Cancelled,
}

impl TaskState {
    /// The name the journal and MCP give it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Working => "working",
            TaskState::InputRequired => "input_required",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
        }
    }

    /// Whether it has ended (completed, failed or cancelled): it never moves
    /// again.
    pub fn has_ended(self) -> bool {
        matches!(self, TaskState::Completed | TaskState::Failed | TaskState::Cancelled)
    }
}

/// A task as a [`TaskStore`] keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskRecord {
    /// Its id, made by the server (unique across processes).
    pub task_id: String,
    /// The user whose call it is; only they may read or move it.
    pub user_id: Option<String>,
    /// The tool called.
    pub tool: String,
    /// The arguments as the client sent them.
    pub input: Value,
    /// Where it stands.
    pub state: TaskState,
    /// A line about its state, for people.
    pub status_message: Option<String>,
    /// Once it ended: the result the client reads (an MCP `CallToolResult`).
    pub result: Option<Value>,
    /// When it was created.
    pub created_at: SystemTime,
    /// When it last moved.
    pub updated_at: SystemTime,
    /// When it may be forgotten; `None`: kept.
    pub expires_at: Option<SystemTime>,
}

/// Where MCP's tasks are kept: created, read, counted and moved, each
/// one atomic step of the store. Every store keeps two rules: a task is
/// created once (a second create of its id is refused), and only a task
/// that has not ended moves, so of a finish and a cancellation exactly one
/// is recorded. The runtime ships two: the [`Journal`](crate::journal)'s,
/// and [`LocalTasks`].
pub trait TaskStore: fmt::Debug + Send + Sync + 'static {
    /// Writes a new task (a task starts without a `result`).
    /// [`JournalError::Refused`] for an id taken (a journal: a database
    /// error) or over the journal's limits.
    fn create<'a>(&'a self, task: &'a TaskRecord) -> Answer<'a, ()>;

    /// The task `task_id`, if the store holds it.
    fn task<'a>(&'a self, task_id: &'a str) -> Answer<'a, Option<TaskRecord>>;

    /// How many tasks have not ended nor expired (by the store's clock): in
    /// all, and of `user_id` (0 without one). What a server's tasks are
    /// capped by.
    fn active<'a>(&'a self, user_id: Option<&'a str>) -> Answer<'a, (usize, usize)>;

    /// Moves a task that has not ended to `state`, with its message and
    /// (for an end) its result; `false` when it had ended already (another
    /// writer's end stands) or is not held.
    fn move_task<'a>(&'a self, task_id: &'a str, state: TaskState, message: Option<&'a str>, result: Option<&'a Value>) -> Answer<'a, bool>;

    /// Forgets the tasks past their expiry and names them, so that what
    /// their runs left can be forgotten too. The default forgets none, for
    /// a store its host prunes ([`Journal::prune`](crate::journal::Journal::prune)).
    fn forget_expired(&self) -> Answer<'_, Vec<String>> {
        Answer::ready(Ok(Vec::new()))
    }
}

/// Tasks kept in this process ([`LocalMemory`](super::LocalMemory)'s
/// store): gone with it, or once expired ([`TaskStore::forget_expired`]).
/// Each answer is ready at once.
#[derive(Debug, Default)]
pub struct LocalTasks(Mutex<HashMap<String, TaskRecord>>);

impl LocalTasks {
    fn held(&self) -> MutexGuard<'_, HashMap<String, TaskRecord>> {
        // Every change is one insert or one assignment: a panic elsewhere
        // leaves no task half written.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn live(task: &TaskRecord, now: SystemTime) -> bool {
    task.expires_at.is_none_or(|expires_at| expires_at > now)
}

impl TaskStore for LocalTasks {
    fn create<'a>(&'a self, task: &'a TaskRecord) -> Answer<'a, ()> {
        let mut held = self.held();
        if held.contains_key(&task.task_id) {
            return Answer::ready(Err(JournalError::Refused { field: "task_id", why: format!("task {:?} exists already", task.task_id) }));
        }
        held.insert(task.task_id.clone(), TaskRecord { result: None, ..task.clone() });
        Answer::ready(Ok(()))
    }

    fn task<'a>(&'a self, task_id: &'a str) -> Answer<'a, Option<TaskRecord>> {
        Answer::ready(Ok(self.held().get(task_id).cloned()))
    }

    fn active<'a>(&'a self, user_id: Option<&'a str>) -> Answer<'a, (usize, usize)> {
        let now = SystemTime::now();
        let held = self.held();
        let active: Vec<&TaskRecord> = held.values().filter(|task| !task.state.has_ended() && live(task, now)).collect();
        let of_user = user_id.map_or(0, |user_id| active.iter().filter(|task| task.user_id.as_deref() == Some(user_id)).count());
        Answer::ready(Ok((active.len(), of_user)))
    }

    fn move_task<'a>(&'a self, task_id: &'a str, state: TaskState, message: Option<&'a str>, result: Option<&'a Value>) -> Answer<'a, bool> {
        let mut held = self.held();
        let Some(task) = held.get_mut(task_id).filter(|task| !task.state.has_ended()) else { return Answer::ready(Ok(false)) };
        task.state = state;
        task.status_message = message.map(str::to_owned);
        task.result = result.cloned();
        task.updated_at = SystemTime::now();
        Answer::ready(Ok(true))
    }

    fn forget_expired(&self) -> Answer<'_, Vec<String>> {
        let now = SystemTime::now();
        let mut held = self.held();
        let expired: Vec<String> = held.values().filter(|task| !live(task, now)).map(|task| task.task_id.clone()).collect();
        for task_id in &expired {
            held.remove(task_id);
        }
        Answer::ready(Ok(expired))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn task(id: &str, user: &str, expires_in: Duration) -> TaskRecord {
        let now = SystemTime::now();
        TaskRecord {
            task_id: id.into(),
            user_id: Some(user.into()),
            tool: "t".into(),
            input: Value::Null,
            state: TaskState::Working,
            status_message: None,
            result: None,
            created_at: now,
            updated_at: now,
            expires_at: Some(now + expires_in),
        }
    }

    #[tokio::test]
    async fn a_task_is_created_once_and_ends_once() {
        let tasks = LocalTasks::default();
        tasks.create(&task("a", "alice", Duration::from_secs(60))).await.unwrap();
        assert!(tasks.create(&task("a", "bob", Duration::from_secs(60))).await.is_err(), "an id is taken once");
        assert_eq!(tasks.active(Some("alice")).await.unwrap(), (1, 1));
        assert!(tasks.move_task("a", TaskState::Cancelled, None, None).await.unwrap());
        assert!(!tasks.move_task("a", TaskState::Completed, None, Some(&Value::Bool(true))).await.unwrap(), "a cancel stands");
        let held = tasks.task("a").await.unwrap().unwrap();
        assert_eq!((held.state, held.result), (TaskState::Cancelled, None));
        assert_eq!(tasks.active(Some("alice")).await.unwrap(), (0, 0));
    }

    #[tokio::test]
    async fn an_expired_task_is_not_counted_and_is_forgotten() {
        let tasks = LocalTasks::default();
        tasks.create(&task("old", "alice", Duration::ZERO)).await.unwrap();
        assert_eq!(tasks.active(Some("alice")).await.unwrap(), (0, 0));
        tasks.create(&task("new", "alice", Duration::from_secs(60))).await.unwrap();
        assert_eq!(tasks.forget_expired().await.unwrap(), ["old"]);
        assert!(tasks.task("old").await.unwrap().is_none(), "forgotten");
        assert!(tasks.task("new").await.unwrap().is_some(), "a live task is kept");
    }
}

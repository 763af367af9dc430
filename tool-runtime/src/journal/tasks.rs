//! Tasks (MCP revision 2026-07-28, extension `io.modelcontextprotocol/tasks`):
//! one row per task, written before the response that names it, so any
//! instance on the journal answers `tasks/get`, and a restarted one too.
//! A task's call is an ordinary durable call (its effect in `calls.rs`);
//! the row holds what the client polls: its status, and once it ended, the
//! result it reads. Only a task not yet ended moves (`WHERE status IN
//! ('working', 'input_required')`), so of a finish and a cancellation
//! exactly one is recorded, by one statement.

use serde_json::Value;
use sqlx::{ColumnIndex, Decode, Row, Type};

use super::rows::RowReader;
use super::{Journal, JournalError, limits, now, on_pool};
use crate::memory::records::millis;
use crate::memory::{Answer, TaskRecord, TaskState, TaskStore};

const CREATE: &str = "INSERT INTO journal_tasks (task_id, user_id, tool, input, status, status_message, result, created_at, updated_at, expires_at) \
     VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $7, $8)";
const ONE: &str =
    "SELECT task_id, user_id, tool, input, status, status_message, result, created_at, updated_at, expires_at FROM journal_tasks WHERE task_id = $1";
const ACTIVE: &str = concat!(
    "SELECT COUNT(*) AS active, COALESCE(SUM(CASE WHEN user_id = $1 THEN 1 ELSE 0 END), 0) AS of_user \
     FROM journal_tasks WHERE status IN ('working', 'input_required') AND (expires_at IS NULL OR expires_at > ",
    now!(),
    ")"
);
const MOVE: &str = concat!(
    "UPDATE journal_tasks SET status = $2, status_message = $3, result = $4, updated_at = ",
    now!(),
    " WHERE task_id = $1 AND status IN ('working', 'input_required')"
);

/// The tasks of a [`Journal`] ([`Journal::tasks`]): one record per MCP
/// task, which any instance on the journal reads and moves.
///
/// A borrowed handle, as cheap to make as a reference: take one where it
/// is used, `journal.tasks().get(...)`.
#[derive(Clone, Copy, Debug)]
pub struct TaskRecords<'j> {
    pub(super) journal: &'j Journal,
}

impl TaskRecords<'_> {
    /// Writes a new task (its `result` is not written: a task starts
    /// without one).
    ///
    /// # Errors
    ///
    /// [`JournalError::Refused`] for an id over the [`limits`]; a database
    /// error for a task id already taken.
    pub async fn create(self, task: &TaskRecord) -> Result<(), JournalError> {
        limits::id("task_id", &task.task_id)?;
        limits::optional_id("user_id", task.user_id.as_deref())?;
        limits::text("tool", &task.tool)?;
        let input = task.input.to_string();
        on_pool!(self.journal, pool => {
            sqlx::query(CREATE)
                .bind(&task.task_id)
                .bind(task.user_id.as_deref())
                .bind(&task.tool)
                .bind(&input)
                .bind(task.state.as_str())
                .bind(task.status_message.as_deref())
                .bind(millis(task.created_at))
                .bind(task.expires_at.map(millis))
                .execute(pool)
                .await
                .map_err(JournalError::database("create_task"))?;
            Ok(())
        })
    }

    /// The task `task_id`, if the journal holds it.
    ///
    /// # Errors
    ///
    /// When the journal cannot be read, or its row does not decode.
    pub async fn get(self, task_id: &str) -> Result<Option<TaskRecord>, JournalError> {
        limits::id("task_id", task_id)?;
        on_pool!(self.journal, pool => {
            let row = sqlx::query(ONE).bind(task_id).fetch_optional(pool).await.map_err(JournalError::database("task"))?;
            row.as_ref().map(decode_task).transpose()
        })
    }

    /// How many tasks have not ended nor expired (by the journal's clock):
    /// in all, and of `user_id` (0 without one). What an MCP server's tasks
    /// are capped by.
    ///
    /// # Errors
    ///
    /// When the journal cannot be read.
    pub async fn active(self, user_id: Option<&str>) -> Result<(usize, usize), JournalError> {
        limits::optional_id("user_id", user_id)?;
        on_pool!(self.journal, pool => {
            let row = sqlx::query(ACTIVE).bind(user_id).fetch_one(pool).await.map_err(JournalError::database("active_tasks"))?;
            let count = |column: &str| row.try_get::<i64, _>(column).map(|count| usize::try_from(count).unwrap_or(0));
            Ok((count("active").map_err(JournalError::database("active_tasks"))?, count("of_user").map_err(JournalError::database("active_tasks"))?))
        })
    }

    /// Moves a task that has not ended to `state`, with its message and (for
    /// an end) its result; `false` when it had ended already (another
    /// writer's end stands).
    ///
    /// # Errors
    ///
    /// When the journal cannot be written.
    pub async fn move_to(self, task_id: &str, state: TaskState, message: Option<&str>, result: Option<&Value>) -> Result<bool, JournalError> {
        limits::id("task_id", task_id)?;
        let result = result.map(Value::to_string);
        on_pool!(self.journal, pool => {
            let moved = sqlx::query(MOVE)
                .bind(task_id)
                .bind(state.as_str())
                .bind(message)
                .bind(result.as_deref())
                .execute(pool)
                .await
                .map_err(JournalError::database("move_task"))?;
            Ok(moved.rows_affected() == 1)
        })
    }
}

impl TaskStore for Journal {
    fn create<'a>(&'a self, task: &'a TaskRecord) -> Answer<'a, ()> {
        Answer::waiting(self.tasks().create(task))
    }

    fn task<'a>(&'a self, task_id: &'a str) -> Answer<'a, Option<TaskRecord>> {
        Answer::waiting(self.tasks().get(task_id))
    }

    fn active<'a>(&'a self, user_id: Option<&'a str>) -> Answer<'a, (usize, usize)> {
        Answer::waiting(self.tasks().active(user_id))
    }

    fn move_task<'a>(&'a self, task_id: &'a str, state: TaskState, message: Option<&'a str>, result: Option<&'a Value>) -> Answer<'a, bool> {
        Answer::waiting(self.tasks().move_to(task_id, state, message, result))
    }
}

fn decode_task<'r, R: Row>(row: &'r R) -> Result<TaskRecord, JournalError>
where
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    Option<i64>: Decode<'r, R::Database> + Type<R::Database>,
{
    let row = RowReader::new(row, "journal_tasks", "task_id")?;
    let status: String = row.get("status")?;
    let state = state_named(&status).ok_or_else(|| row.corrupt(format!("unknown status {status:?}")))?;
    Ok(TaskRecord {
        user_id: row.get("user_id")?,
        tool: row.get("tool")?,
        input: row.json("input")?,
        state,
        status_message: row.get("status_message")?,
        result: row.optional_json("result")?,
        created_at: row.time("created_at")?,
        updated_at: row.time("updated_at")?,
        expires_at: row.optional_time("expires_at")?,
        task_id: row.key,
    })
}

/// The state named `text` ([`TaskState::as_str`]), if it names one.
fn state_named(text: &str) -> Option<TaskState> {
    [TaskState::Working, TaskState::InputRequired, TaskState::Completed, TaskState::Failed, TaskState::Cancelled]
        .into_iter()
        .find(|state| state.as_str() == text)
}

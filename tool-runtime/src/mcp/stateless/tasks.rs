//! Tasks at revision 2026-07-28 (extension `io.modelcontextprotocol/tasks`),
//! offered only to a request that declares the extension, and kept in the
//! task store of the server's memory ([`TaskStore`]): the journal's, on a
//! server with one, for every instance on it; else the process's own,
//! gone with it. The server decides per tool ([`TaskSupport`],
//! `McpServer::with_task_support`): by default a tool whose own `timeout`
//! is at least [`TASK_TIMEOUT`] (the registry's default does not count:
//! every tool has it), or that has an `interim` text, answers with a task
//! instead of its result; a tool that requires a task refuses a client that
//! does not declare the extension (`-32021`, naming it), before it runs.
//!
//! The task is written to the store (with a journal, `journal/tasks.rs`)
//! before the answer; then its call runs on this process, detached from the
//! request, as a call of the run `mcp-task:<task id>` in the server's memory
//! (call `<task id>`), and its end is written to the task. `tasks/get` reads
//! the task from the store, with a journal on any instance: a completed task's result is what was journaled, never
//! a second execution. A task found working that no process here runs (its
//! process ended, or it runs elsewhere) is taken up again through the same
//! durable call: the effect journal answers a finished call with its
//! result, waits for one started elsewhere until its tool's timeout from
//! its start, and refuses one whose end was never recorded
//! (`OUTCOME_UNKNOWN`) unless the tool is idempotent; so the call runs at
//! most once. `tasks/cancel` ends the task (one statement: of a finish and
//! a cancellation one wins) and cancels its call where it runs here; the
//! instance that runs it, when another received the cancel, reads the
//! task's row every 200 ms while its call runs and cancels the call when
//! the row says cancelled, so the call stops on every instance, as a call
//! cancelled here does (a tool that is not `interruptible` runs on). A task
//! is its caller's: another user reads no such task. A call that needs
//! approval answers with a task too, which waits `input_required` for
//! `tasks/update` (`task_approvals.rs`).

use std::collections::HashMap;
use std::future::IntoFuture;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use rmcp::ErrorData;
use rmcp::RoleServer;
use rmcp::model::{CallToolResponse, CreateTaskResult, DetailedTask, Task, TaskPayload, TaskStatus};
use rmcp::service::RequestContext;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Stateless, task_approvals, task_questions};
use crate::context::UserContext;
use crate::error_report::Escaped;
use crate::mcp::caller::Caller;
use crate::mcp::server::Server;
use crate::mcp::{results, tool_list};
use crate::memory::{JournalError, TaskRecord, TaskState, TaskStore};
use crate::steps::Steps;
use crate::tool::ToolDefinition;

/// The shortest tool timeout that makes a call a task: 10 seconds.
pub const TASK_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a task is kept by default: a day. Past it, a task is no
/// longer served (`tasks/get` reads no such task) and its call never taken
/// up again.
pub const DEFAULT_TASK_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// How many tasks of one user may be under way (working or waiting for
/// input) at once, by default, on all the instances of a journal.
pub const DEFAULT_MAX_TASKS_PER_USER: usize = 16;

/// How many tasks may be under way at once in all, by default.
pub const DEFAULT_MAX_TASKS: usize = 256;

/// Whether a call of a tool answers with a task, for a client that
/// declares the tasks extension (`McpServer::with_task_support`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never: the call answers with its result.
    Never,
    /// For a client that declares tasks; any other reads the result.
    Optional,
    /// Always: a client that does not declare tasks is refused (`-32021`)
    /// before the call runs.
    Required,
    /// As [`Required`](TaskSupport::Required), but the tool's questions
    /// ([`Ctx::elicit`](crate::Ctx::elicit) and its kin) come first: the
    /// call runs in rounds of `input_required` until they are all answered,
    /// and the round that answers the last of them answers with a task,
    /// which runs the call on with those answers (a question it asks after
    /// that, the task asks through `tasks/get`). A call that asks nothing
    /// answers its first round with its result.
    AfterQuestions,
}

impl TaskSupport {
    /// The rule a server follows unless told otherwise: [`Optional`](TaskSupport::Optional)
    /// for a tool whose own `timeout` is at least [`TASK_TIMEOUT`] or that
    /// has an `interim` text, [`Never`](TaskSupport::Never) for any other.
    pub fn by_default(def: &ToolDefinition) -> TaskSupport {
        match def.interim.is_some() || def.timeout.is_some_and(|timeout| timeout >= TASK_TIMEOUT) {
            true => TaskSupport::Optional,
            false => TaskSupport::Never,
        }
    }
}

/// How a server decides a tool's [`TaskSupport`].
pub(crate) type TaskRule = Arc<dyn Fn(&ToolDefinition) -> TaskSupport + Send + Sync>;

/// What bounds a server's tasks; see `McpServer::with_task_ttl`,
/// `with_max_tasks_per_user`, `with_max_tasks`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TaskLimits {
    pub(crate) ttl: Duration,
    pub(crate) max: usize,
    pub(crate) per_user: usize,
}

impl Default for TaskLimits {
    fn default() -> Self {
        TaskLimits { ttl: DEFAULT_TASK_TTL, max: DEFAULT_MAX_TASKS, per_user: DEFAULT_MAX_TASKS_PER_USER }
    }
}

/// How often the instance running a task reads its row for a
/// cancellation recorded by another.
const CANCEL_POLL: Duration = Duration::from_millis(200);

/// How often a client should poll a task.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// The calls of tasks this process runs, by task id, each with its token.
#[derive(Default)]
pub(crate) struct RunningTasks(Mutex<HashMap<String, CancellationToken>>);

impl RunningTasks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether a call of `def` answers with a task for this request.
///
/// # Errors
///
/// `-32021`, naming the tasks extension, for a tool that requires a task
/// when the request does not declare the extension.
pub(super) fn wanted<App>(
    server: &Server<App>,
    stateless: &Stateless,
    def: Option<&ToolDefinition>,
    caller: &Caller,
    context: &RequestContext<RoleServer>,
) -> Result<bool, ErrorData> {
    let Some(def) = def.filter(|_| server.tasks().is_some()) else { return Ok(false) };
    match (stateless.task_support)(def) {
        TaskSupport::Never => Ok(false),
        TaskSupport::Optional => Ok(declared(server, caller, context)),
        // A caller the hook did not name keeps no task: it reads the result.
        TaskSupport::Required | TaskSupport::AfterQuestions if caller.nameless => Ok(false),
        TaskSupport::Required | TaskSupport::AfterQuestions if !declared(server, caller, context) => {
            Err(ErrorData::missing_required_client_capability(rmcp::model::ClientCapabilities::builder().enable_tasks().build()))
        }
        TaskSupport::Required => Ok(true),
        // Its questions first, in rounds; the last round answers with the task.
        TaskSupport::AfterQuestions => Ok(false),
    }
}

/// Whether a call of `tool` whose questions are all answered now goes on
/// as a task ([`TaskSupport::AfterQuestions`], for a request that declares
/// tasks).
pub(super) fn after_questions<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    tool: &str,
    caller: &Caller,
    context: &RequestContext<RoleServer>,
) -> bool {
    let def = server.registry.definition(tool);
    def.is_some_and(|def| (stateless.task_support)(def) == TaskSupport::AfterQuestions) && declared(server, caller, context)
}

/// Whether tasks are offered to this request: the server's memory keeps
/// tasks, the request declares the extension, and its caller has a name (a task
/// is its caller's, and a caller the authentication hook did not name
/// could not be told from another).
pub(super) fn declared<App>(server: &Server<App>, caller: &Caller, context: &RequestContext<RoleServer>) -> bool {
    server.tasks().is_some() && !caller.nameless && context.client_capabilities().is_some_and(|capabilities| capabilities.supports_tasks())
}

/// The server's task store, for a request that `read` a task from it or
/// that `wanted` a task.
fn store<App>(server: &Server<App>) -> &dyn TaskStore {
    server.tasks().expect("tasks are served only by a memory that keeps them")
}

/// Creates the task in the store, starts its call here, and answers with
/// it; a task that could not be written is not started (a 503 tool error).
pub(super) async fn create<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    tool: &str,
    arguments: Value,
    user: &Arc<UserContext>,
) -> CallToolResponse {
    match record(server, stateless, tool, arguments, user).await {
        Ok(task) => begin(server, stateless, &task, user),
        Err(refused) => refused,
    }
}

/// Writes a new task of `tool` for `user` to the store, not started yet
/// ([`begin`]); the answer that refuses it, when the caps or the store
/// refuse it.
pub(super) async fn record<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    tool: &str,
    arguments: Value,
    user: &UserContext,
) -> Result<TaskRecord, CallToolResponse> {
    let store = store(server);
    forget_expired(server, store).await;
    let now = SystemTime::now();
    let refuse = |error: &crate::error::ToolError| results::refused(server, tool, error);
    admitted(stateless.task_limits, store, user).await.map_err(|refused| refuse(&refused))?;
    let task = TaskRecord {
        task_id: crate::ids::fresh_id("task-").to_string(),
        user_id: user.id.clone(),
        tool: tool.to_owned(),
        input: arguments,
        state: TaskState::Working,
        status_message: None,
        result: None,
        created_at: now,
        updated_at: now,
        expires_at: Some(now + stateless.task_limits.ttl),
    };
    match store.create(&task).await {
        Ok(()) => Ok(task),
        Err(error) => Err(refuse(&not_recorded(tool, &error))),
    }
}

/// Starts the call of `task`, just recorded, here; the answer that says
/// it was created.
pub(super) fn begin<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    task: &TaskRecord,
    user: &Arc<UserContext>,
) -> CallToolResponse {
    start(server, stateless, task, user.clone());
    CallToolResponse::Task(CreateTaskResult::new(wire(task)))
}

/// Forgets the tasks the store forgot as expired: what their runs left in
/// the server's memory (a question never answered) is forgotten too.
async fn forget_expired<App>(server: &Server<App>, store: &dyn TaskStore) {
    match store.forget_expired().await {
        Ok(expired) => {
            for task_id in expired {
                end_run(server, &task_id, "The task expired before it was answered.").await;
            }
        }
        Err(error) => tracing::warn!(error = %Escaped(&error), "expired tasks could not be forgotten"),
    }
}

/// Ends the run of the task `task_id` that ended waiting: its calls still
/// undecided rejected with `text`, and nothing of it carried out any more.
async fn end_run<App>(server: &Server<App>, task_id: &str, text: &str) {
    if let Err(error) = server.memory.end_run(&task_approvals::run_id(task_id), text).await {
        tracing::error!(task_id = %Escaped(task_id), error = %Escaped(&error), "an ended task's waiting calls could not be ended");
    }
}

/// Whether `user` may start one more task: within the caps on tasks under
/// way (of the user, and in all), counted in the store.
async fn admitted(limits: TaskLimits, store: &dyn TaskStore, user: &UserContext) -> Result<(), crate::error::ToolError> {
    let (all, of_user) = store.active(user.id.as_deref()).await.map_err(|error| not_recorded("", &error))?;
    if user.id.is_some() && of_user >= limits.per_user {
        return Err(crate::error::ToolError::rate_limited(
            "TOO_MANY_TASKS",
            format!("{of_user} tasks of this user are already under way, so this call was not run. Wait for one to end, then call it again."),
        ));
    }
    if all >= limits.max {
        return Err(crate::error::ToolError::rate_limited(
            "TOO_MANY_TASKS",
            format!("{all} tasks are already under way on this server, its limit, so this call was not run. Try it again in a few minutes."),
        ));
    }
    Ok(())
}

/// The refusal of a call whose task could not be read or written.
fn not_recorded(tool: &str, error: &JournalError) -> crate::error::ToolError {
    tracing::error!(tool = %Escaped(tool), error = %Escaped(error), "a task could not be written to its store");
    crate::error::ToolError::new(503, "TASK_NOT_RECORDED", "This call could not be recorded as a task, so it was not run. Try again in a moment.")
}

/// Runs a task's call on this process unless it runs here already.
fn start<App: Send + Sync + 'static>(server: &Server<App>, stateless: &Stateless, task: &TaskRecord, user: Arc<UserContext>) {
    let token = CancellationToken::new();
    {
        let mut running = stateless.tasks.lock();
        if running.contains_key(&task.task_id) {
            return;
        }
        running.insert(task.task_id.clone(), token.clone());
    }
    let (server, tasks, task) = (server.clone(), stateless.tasks.clone(), task.clone());
    tokio::spawn(async move {
        if let Err(error) = run(&server, &task, user, &token).await {
            tracing::error!(task_id = %Escaped(&task.task_id), error = %Escaped(&error), "a task could not be carried on in its store");
        }
        tasks.lock().remove(&task.task_id);
        crate::mcp::subscriptions::announce_changes(&server).await;
    });
}

/// A task's call, in the run of the task in the server's memory, and its
/// end written to the task; a call that waits for approval leaves the task
/// `input_required`.
async fn run<App: Send + Sync + 'static>(
    server: &Server<App>,
    task: &TaskRecord,
    user: Arc<UserContext>,
    token: &CancellationToken,
) -> Result<(), JournalError> {
    let (memory, store) = (&server.memory, store(server));
    let durable = crate::memory::Remembered::durable(memory.clone(), &task_approvals::run_id(&task.task_id));
    let names = tool_list::restriction(server, &Steps::default(), &user, false, &task.tool);
    // Its tool may ask: the questions wait in the memory, as the task does.
    let asking = Arc::new(crate::question::Asking::new(task.tool.as_str().into(), user.id.clone(), Some(server.registry.approval_ttl())));
    let call = server.registry.call(&server.app, &task.tool, task.input.clone()).user(user).cancellation(token).offered(names);
    let mut call = std::pin::pin!(call.call_id(task.task_id.as_str()).remembered(durable).asking(asking).into_future());
    let outcome = tokio::select! {
        outcome = &mut call => outcome,
        () = cancelled_elsewhere(store, &task.task_id) => {
            // The call reads its token cancelled and ends as it does then
            // (a tool that is not interruptible runs on to its end).
            token.cancel();
            call.await
        }
    };
    let result = match outcome {
        crate::call::CallOutcome::Done(result) => result,
        crate::call::CallOutcome::NeedsApproval(pending) if pending.asks() => {
            if let Some(name) = task_questions::named_twice(pending.questions()) {
                // Answered by name, only one of the two ever could be.
                let why = format!("two questions of the task are named {name:?}: give each question of a call its own name");
                tracing::error!(task_id = %Escaped(&task.task_id), why = %Escaped(&why), "a task's questions could not be asked");
                end_run(server, &task.task_id, "The task's questions could not be asked.").await;
                let error = serde_json::json!({"code": rmcp::model::ErrorCode::INTERNAL_ERROR.0, "message": why});
                store.move_task(&task.task_id, TaskState::Failed, None, Some(&error)).await?;
                return Ok(());
            }
            store.move_task(&task.task_id, TaskState::InputRequired, Some("waiting for answers to its questions"), None).await?;
            return Ok(());
        }
        crate::call::CallOutcome::NeedsApproval(pending) => match task_approvals::decided(server, task, pending).await? {
            Some(result) => {
                // Carried out: the approval is settled.
                memory.settle(&task_approvals::run_id(&task.task_id), &task.task_id).await?;
                result
            }
            None => return Ok(()),
        },
    };
    task_questions::settle(&**memory, task).await?;
    let (state, result) = ended(server, result);
    store.move_task(&task.task_id, state, None, Some(&result)).await?;
    Ok(())
}

/// How a task whose call settled with `result` ends, and what its reader
/// reads: a call the server failed (a bug, an outage: the generic 500) is
/// `failed` with a JSON-RPC error; any other, the tool's error included,
/// is `completed` with its result, as a direct answer carries it (without
/// the discriminator of a direct answer).
fn ended<App: Send + Sync + 'static>(server: &Server<App>, result: crate::result::CallResult) -> (TaskState, Value) {
    if result.kind == crate::result::ResultKind::Internal {
        return (TaskState::Failed, serde_json::json!({"code": rmcp::model::ErrorCode::INTERNAL_ERROR.0, "message": result.text}));
    }
    let mut answer = serde_json::to_value(rmcp::model::ServerResult::from(CallToolResponse::from(results::answer(server, result))))
        .expect("a tool result serialises");
    if let Some(object) = answer.as_object_mut() {
        object.remove("resultType");
    }
    (TaskState::Completed, answer)
}

/// Ends when the task's store says it was cancelled, by `tasks/cancel` on
/// any instance; pending for as long as it was not.
async fn cancelled_elsewhere(store: &dyn TaskStore, task_id: &str) {
    loop {
        tokio::time::sleep(CANCEL_POLL).await;
        match store.task(task_id).await {
            Ok(Some(task)) if task.state == TaskState::Cancelled => return,
            Ok(_) => {}
            // Read again at the next poll; the call goes on meanwhile.
            Err(error) => tracing::warn!(task_id = %Escaped(task_id), error = %Escaped(&error), "a running task's row could not be read"),
        }
    }
}

/// `tasks/update`: the client's answer to a task waiting for approval,
/// journaled as its decision; the call then goes on here. A response that
/// answers nothing outstanding is ignored.
pub(super) async fn update<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    task_id: &str,
    responses: &rmcp::model::InputResponses,
    caller: &Caller,
) -> Result<(), ErrorData> {
    let user = &caller.user;
    let task = read(server, task_id, caller).await?;
    let memory = &*server.memory;
    let answered = match task_questions::waiting(memory, &task).await.map_err(internal)? {
        Some(questions) => task_questions::answer(memory, &task, &questions, responses, user).await?,
        None => task_approvals::answer(memory, &task, responses, user).await?,
    };
    if answered {
        resume_decided(server, stateless, task, user).await;
    }
    Ok(())
}

/// Moves a task whose approval was decided back to working, and runs it.
async fn resume_decided<App: Send + Sync + 'static>(server: &Server<App>, stateless: &Stateless, mut task: TaskRecord, user: &Arc<UserContext>) {
    match store(server).move_task(&task.task_id, TaskState::Working, None, None).await {
        Ok(_) => {
            task.state = TaskState::Working;
            start(server, stateless, &task, user.clone());
        }
        Err(error) => tracing::error!(task_id = %Escaped(&task.task_id), error = %Escaped(&error), "a decided task could not be moved on"),
    }
}

/// The task `task_id` of the request's caller; a working one that runs
/// nowhere here is taken up again.
pub(super) async fn get<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    task_id: &str,
    caller: &Caller,
) -> Result<DetailedTask, ErrorData> {
    let user = &caller.user;
    let mut task = read(server, task_id, caller).await?;
    let memory = &*server.memory;
    let questions = match task.state {
        TaskState::InputRequired => task_questions::waiting(memory, &task).await.map_err(internal)?,
        _ => None,
    };
    let decided = match &questions {
        Some(questions) => questions.is_empty(),
        None => task.state == TaskState::InputRequired && task_approvals::is_decided(memory, &task).await,
    };
    if decided {
        resume_decided(server, stateless, task.clone(), user).await;
        task.state = TaskState::Working;
    }
    if task.state == TaskState::Working {
        start(server, stateless, &task, user.clone());
    }
    Ok(detailed(&task, questions.as_deref()))
}

/// Cancels the task `task_id` of the request's caller: ended in the
/// store unless it ended first, its call cancelled where it runs here, and
/// its run ended (what waits for an answer rejected).
pub(super) async fn cancel<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    task_id: &str,
    caller: &Caller,
) -> Result<(), ErrorData> {
    let task = read(server, task_id, caller).await?;
    let moved = store(server).move_task(&task.task_id, TaskState::Cancelled, Some("cancelled by the client"), None).await.map_err(internal)?;
    if moved {
        let running = stateless.tasks.lock().remove(&task.task_id);
        match running {
            // Its call runs here: it reads its token cancelled and ends.
            Some(token) => token.cancel(),
            // It waits (or runs elsewhere): its approval or its questions
            // wait for no one any more.
            None => end_run(server, &task.task_id, "The client cancelled the task.").await,
        }
    }
    Ok(())
}

/// The task `task_id` of the request's caller, unless it expired: an
/// expired task is no one's.
async fn read<App>(server: &Server<App>, task_id: &str, caller: &Caller) -> Result<TaskRecord, ErrorData> {
    let no_such = || {
        ErrorData::invalid_params(
            format!("there is no task {task_id:?} of yours (or it expired); tasks/get takes the taskId a tools/call answered with"),
            None,
        )
    };
    let Some(store) = server.tasks() else { return Err(no_such()) };
    if caller.nameless {
        return Err(no_such());
    }
    let now = SystemTime::now();
    match store.task(task_id).await {
        Ok(Some(task)) if task.user_id == caller.user.id && task.expires_at.is_none_or(|expires_at| expires_at > now) => Ok(task),
        Ok(_) => Err(no_such()),
        Err(JournalError::Refused { .. }) => Err(no_such()),
        Err(error) => Err(internal(error)),
    }
}

fn internal(error: JournalError) -> ErrorData {
    tracing::error!(error = %Escaped(&error), "a task's store could not be read or written");
    ErrorData::internal_error("the task could not be read or written; try again in a moment", None)
}

/// A task as MCP's `tasks/get` gives it; one waiting for its tool's
/// `questions` asks them.
fn detailed(task: &TaskRecord, questions: Option<&[(String, crate::memory::Ask)]>) -> DetailedTask {
    let payload = match (task.state, &task.result) {
        (TaskState::Completed, Some(Value::Object(result))) => TaskPayload::Completed { result: result.clone() },
        (TaskState::Failed, Some(Value::Object(error))) => TaskPayload::Failed { error: error.clone() },
        (TaskState::Cancelled, _) => TaskPayload::Cancelled,
        (TaskState::InputRequired, _) => {
            let input_requests = match questions {
                Some(questions) => task_questions::input_requests(questions),
                None => task_approvals::input_requests(task),
            };
            TaskPayload::InputRequired { input_requests }
        }
        (TaskState::Working, _) => TaskPayload::Working,
        (TaskState::Failed | TaskState::Completed, _) => {
            let mut error = serde_json::Map::new();
            error.insert("code".into(), (-32603).into());
            error.insert("message".into(), "the task ended without a result it could keep".into());
            TaskPayload::Failed { error }
        }
    };
    DetailedTask::new(wire(task), payload)
}

/// A task's base fields: status, times, TTL and poll interval.
fn wire(task: &TaskRecord) -> Task {
    let status = match task.state {
        TaskState::Working => TaskStatus::Working,
        TaskState::InputRequired => TaskStatus::InputRequired,
        TaskState::Completed => TaskStatus::Completed,
        TaskState::Failed => TaskStatus::Failed,
        TaskState::Cancelled => TaskStatus::Cancelled,
    };
    let mut wire =
        Task::new(&task.task_id, status, iso(task.created_at), iso(task.updated_at)).with_poll_interval_ms(POLL_INTERVAL.as_millis() as u64);
    if let Some(expires_at) = task.expires_at {
        wire = wire.with_ttl_ms(expires_at.duration_since(task.created_at).unwrap_or_default().as_millis() as u64);
    }
    if let Some(message) = &task.status_message {
        wire = wire.with_status_message(message.clone());
    }
    wire
}

/// ISO 8601, in UTC, to the millisecond.
fn iso(time: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(time).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

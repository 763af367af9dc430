//! Revision 2026-07-28 of MCP, served beside the session-based revisions:
//! no `initialize` handshake and no session, `server/discover`, and every
//! request carrying its protocol version, client capabilities and client
//! info in its `_meta`.
//!
//! The server's one handler (`mcp/handler.rs`) sends here every request
//! that names 2026-07-28 or later (and `server/discover`); an `initialize`
//! and what follows on its session go to the session (`mcp/sessions/`). Over streamable HTTP such a request
//! is served without a session by whichever instance receives it; over
//! stdio, each request of the connection on its own. Nothing here keeps
//! state between requests:
//!
//! - **Who calls** is the request's own credential: the user the
//!   [authentication hook](super::McpServer::with_auth) gave for it (over
//!   stdio, the server's user). `tools/list` and `tools/call` are computed
//!   for that user.
//! - **What is offered** is what a fresh run offers at its first step for
//!   that user: `visible_when` sees step 0 and no tool executed. A tool with
//!   `requires` is not offered (the revision has no run in which its
//!   requirement could be met), and per-run rules (`max_retries`,
//!   `ends_run`) have no run to act on. External tools are not offered at
//!   this revision. The list keeps the registry's order, with its caching
//!   hints (`mcp/cache.rs`).
//! - **A call needing approval** answers `input_required` with a form
//!   elicitation and a sealed `requestState` (`approvals.rs`, `state.rs`);
//!   the client retries with the human's answer and that state.
//! - **A tool's own questions** answer `input_required` too, each one of
//!   `inputRequests`, only for what the request's `_meta` declares
//!   (`-32021` otherwise); the state carries the questions and their
//!   answers from round to round (`questions.rs`).
//! - **A retried call** that carries an idempotency key in its `_meta`
//!   reads the journaled result of the first call with that key and
//!   credential instead of running again (`retries.rs`); this needs a
//!   memory that outlives the process (a journal).
//! - **Tasks**, for a client that declares the extension: a call of a
//!   tool that supports tasks answers with a task kept in the server's
//!   memory's task store (`tasks.rs`), polled, and cancelled; with a
//!   journal, on any instance; a tool that requires one refuses a client that does not
//!   declare the extension (`-32021`).
//! - **Log messages** of a call go to its client only when the request's
//!   `_meta` names a level (`io.modelcontextprotocol/logLevel`), at or
//!   above it; a level that is not one is refused (`-32602`).
//! - **List changes** are announced on `subscriptions/listen` streams
//!   (`mcp/listeners.rs`).
//! - **Headers.** rmcp checks the `Mcp-Method` and `Mcp-Name` headers of a
//!   request against its body (`400` on a mismatch) and its protocol
//!   version against [`supported_versions`].

mod approvals;
mod calls;
mod questions;
mod retries;
mod state;
mod task_approvals;
mod task_questions;
mod tasks;

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResponse, ListToolsResult, ProtocolVersion};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};

pub use retries::IDEMPOTENCY_KEY;
pub(crate) use state::Sealing;
pub use state::StateKeyError;
pub use tasks::{DEFAULT_MAX_TASKS, DEFAULT_MAX_TASKS_PER_USER, DEFAULT_TASK_TTL, TASK_TIMEOUT, TaskSupport};
pub(crate) use tasks::{RunningTasks, TaskLimits, TaskRule};

use super::caller::Caller;
use super::server::Server;
use super::tool_list;
use crate::steps::Steps;

/// The protocol revisions the server speaks: those with sessions
/// (2024-11-05 to 2025-11-25) and 2026-07-28.
pub fn supported_versions() -> &'static [ProtocolVersion] {
    ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28)
}

/// What only this revision keeps beside the server: the key its
/// `requestState` is sealed with, the tasks this process runs, and how
/// tasks are bounded and chosen. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Stateless {
    pub(crate) sealing: Arc<Sealing>,
    pub(crate) tasks: Arc<RunningTasks>,
    pub(crate) task_limits: TaskLimits,
    pub(crate) task_support: TaskRule,
}

impl Default for Stateless {
    /// A key drawn at random, and tasks as by default.
    fn default() -> Self {
        Stateless {
            sealing: Arc::new(Sealing::random()),
            tasks: Arc::default(),
            task_limits: TaskLimits::default(),
            task_support: Arc::new(TaskSupport::by_default),
        }
    }
}

/// `tools/list` for the request's caller: what a fresh run offers them.
pub(crate) fn list_tools<App: Send + Sync + 'static>(server: &Server<App>, context: &RequestContext<RoleServer>) -> ListToolsResult {
    let user = Caller::of(&server.user, &context.extensions).user;
    tool_list::list(server, &tool_list::offered(server, &Steps::default(), &user, false))
}

/// `tools/call` for the request's caller (`calls.rs`, which says its
/// errors); then the listening clients hear what it changed.
pub(crate) async fn call_tool<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    request: CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let response = calls::call(server, stateless, request, context).await?;
    super::subscriptions::announce_changes(server).await;
    Ok(response)
}

/// `tasks/get`.
pub(crate) async fn get_task<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    request: rmcp::model::GetTaskParams,
    context: &RequestContext<RoleServer>,
) -> Result<rmcp::model::GetTaskResult, ErrorData> {
    let caller = Caller::of(&server.user, &context.extensions);
    tasks::get(server, stateless, &request.task_id, &caller).await.map(rmcp::model::GetTaskResult::new)
}

/// `tasks/update`.
pub(crate) async fn update_task<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    request: rmcp::model::UpdateTaskParams,
    context: &RequestContext<RoleServer>,
) -> Result<(), ErrorData> {
    let caller = Caller::of(&server.user, &context.extensions);
    tasks::update(server, stateless, &request.task_id, &request.input_responses, &caller).await
}

/// `tasks/cancel`.
pub(crate) async fn cancel_task<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    request: rmcp::model::CancelTaskParams,
    context: &RequestContext<RoleServer>,
) -> Result<(), ErrorData> {
    let caller = Caller::of(&server.user, &context.extensions);
    tasks::cancel(server, stateless, &request.task_id, &caller).await
}

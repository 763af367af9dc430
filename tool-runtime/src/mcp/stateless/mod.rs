//! Revision 2026-07-28 of MCP, served beside the session-based revisions:
//! no `initialize` handshake and no session, `server/discover`, and every
//! request carrying its protocol version, client capabilities and client
//! info in its `_meta`.
//!
//! rmcp routes each request: an `initialize` (and what follows on its
//! session) goes to the session handler (`mcp/sessions/session.rs`), a request that
//! names 2026-07-28 or later goes here. Over streamable HTTP such a request
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
//!   this revision. The list keeps the registry's order, with cache hints
//!   (`ttlMs: 0`, `cacheScope: "private"`: it depends on the caller).
//! - **A call needing approval** answers `input_required` with a form
//!   elicitation and a sealed `requestState` (`approvals.rs`, `state.rs`);
//!   the client retries with the human's answer and that state.
//! - **A retried call** that carries an idempotency key in its `_meta`
//!   reads the journaled result of the first call with that key and
//!   credential instead of running again (`retries.rs`).
//! - **Tasks**, with a journal and for a client that declares the
//!   extension: a long call answers with a task kept in the journal
//!   (`tasks.rs`), polled, and cancelled, on any instance.
//! - **Headers.** rmcp checks the `Mcp-Method` and `Mcp-Name` headers of a
//!   request against its body (`400` on a mismatch) and its protocol
//!   version against [`supported_versions`].

mod answers;
mod approvals;
mod calls;
mod retries;
mod state;
#[cfg(feature = "journal")]
mod task_approvals;
#[cfg(feature = "journal")]
mod tasks;

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

pub use retries::IDEMPOTENCY_KEY;
pub(crate) use state::Sealing;
pub use state::StateKeyError;
#[cfg(feature = "journal")]
pub(crate) use tasks::RunningTasks;
#[cfg(feature = "journal")]
pub(crate) use tasks::TaskLimits;
#[cfg(feature = "journal")]
pub use tasks::{DEFAULT_MAX_TASKS, DEFAULT_MAX_TASKS_PER_USER, DEFAULT_TASK_TTL, TASK_TIMEOUT};

use super::McpServer;
use super::http::sessions::BoundedSessions;
use super::sessions::McpSession;

/// The protocol revisions the server speaks: those with sessions
/// (2024-11-05 to 2025-11-25) and 2026-07-28.
pub fn supported_versions() -> &'static [ProtocolVersion] {
    ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28)
}

/// The rmcp handler of one connection (stdio) or of one HTTP request or
/// session: a request at revision 2026-07-28 or later is served here,
/// statelessly; any other goes to the connection's [`McpSession`], made
/// at its first such request. Made by [`McpServer::handler`].
pub struct McpHandler<App> {
    server: McpServer<App>,
    session: OnceLock<McpSession<App>>,
    /// Over HTTP, the session store a legacy session is kept in.
    store: Option<Arc<BoundedSessions>>,
}

impl<App: Send + Sync + 'static> McpHandler<App> {
    pub(super) fn new(server: McpServer<App>, store: Option<Arc<BoundedSessions>>) -> Self {
        McpHandler { server, session: OnceLock::new(), store }
    }

    /// The session of the connection's legacy requests.
    fn legacy(&self) -> &McpSession<App> {
        self.session.get_or_init(|| {
            let session = McpSession::new(self.server.clone());
            match &self.store {
                Some(store) => session.in_store(store.clone()),
                None => session,
            }
        })
    }
}

/// Whether `context`'s request is at revision 2026-07-28 or later (dates
/// compare as text).
fn is_current(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

impl<App: Send + Sync + 'static> ServerHandler for McpHandler<App> {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().enable_tool_list_changed();
        // Tasks need the journal, which keeps them across processes.
        #[cfg(feature = "journal")]
        let capabilities = match self.server.journal.is_some() {
            true => capabilities.enable_tasks(),
            false => capabilities,
        };
        self.server.server_config(capabilities.build())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(supported_versions())
    }

    async fn list_tools(&self, request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        match is_current(&context) {
            true => Ok(calls::list(&self.server, &context)),
            false => self.legacy().list_tools(request, context).await,
        }
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.server.registry.definition(name).map(super::sessions::mcp_tool)
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        match is_current(&context) {
            // Boxed: rmcp moves the handler's future into a task per request.
            true => Ok(Box::pin(calls::call(&self.server, request, &context)).await),
            false => self.legacy().call_tool(request, context).await,
        }
    }

    #[cfg(feature = "journal")]
    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        let caller = calls::caller(&self.server, &context);
        tasks::get(&self.server, &request.task_id, &caller).await.map(rmcp::model::GetTaskResult::new)
    }

    #[cfg(feature = "journal")]
    async fn update_task(&self, request: rmcp::model::UpdateTaskParams, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let caller = calls::caller(&self.server, &context);
        tasks::update(&self.server, &request.task_id, &request.input_responses, &caller).await
    }

    #[cfg(feature = "journal")]
    async fn cancel_task(&self, request: rmcp::model::CancelTaskParams, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let caller = calls::caller(&self.server, &context);
        tasks::cancel(&self.server, &request.task_id, &caller).await
    }
}

//! The server's one rmcp handler: rmcp calls it for every request of a
//! connection (stdio) or of an HTTP request or session, and it picks the
//! request's [`Revision`] once and hands the request to that revision's
//! adapter: the connection's session (`mcp/sessions/`) for the revisions
//! with sessions, the stateless adapter (`mcp/stateless/`) for 2026-07-28.
//! What no revision owns is served the same at both: prompts, resources
//! and completion (`composed.rs`), the tool definitions rmcp checks
//! `Mcp-Param-*` headers against, and the `subscriptions/listen` streams
//! (`listeners.rs`; rmcp serves them at 2026-07-28 only).
//!
//! Every method hands its request on boxed: rmcp spawns one future per
//! request that holds room for the largest of the handler's methods, and
//! copies it as it wraps and spawns it, so one adapter's long wait (a
//! task's, a session's approval) would otherwise cost every `tools/call`
//! a copy of its size.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorCode, InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::http::sessions::BoundedSessions;
use super::server::Server;
use super::sessions::McpSession;
use super::stateless::{self, Stateless, supported_versions};
use super::{subscriptions, tool_list};

/// The rmcp handler of one connection (stdio) or of one HTTP request or
/// session: each request is served at its own revision, a request of
/// 2026-07-28 statelessly, any other on the connection's [`McpSession`],
/// made at its first such request. Made by
/// [`McpServer::handler`](super::McpServer::handler).
pub struct McpHandler<App> {
    server: Server<App>,
    stateless: Stateless,
    session: OnceLock<McpSession<App>>,
    /// Over HTTP, the session store a session is kept in.
    store: Option<Arc<BoundedSessions>>,
}

/// The revision a request speaks, which decides who serves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Revision {
    /// 2024-11-05 to 2025-11-25: the connection's session.
    Sessions,
    /// 2026-07-28 or later: the request on its own.
    Stateless,
}

impl Revision {
    /// The revision of the request of `context`: its `_meta`'s, else its
    /// session's (dates compare as text). What rmcp's
    /// `RequestContext::protocol_version` reads, read in place rather than
    /// decoded into a copy on every request.
    fn of(context: &RequestContext<RoleServer>) -> Revision {
        const KEY: &str = "io.modelcontextprotocol/protocolVersion";
        let stateless = |version: &str| version >= ProtocolVersion::V_2026_07_28.as_str();
        let stateless = match context.meta.0.get(KEY).and_then(serde_json::Value::as_str) {
            Some(version) => stateless(version),
            None => context.peer.peer_info().is_some_and(|info| stateless(info.protocol_version.as_str())),
        };
        if stateless { Revision::Stateless } else { Revision::Sessions }
    }
}

impl<App: Send + Sync + 'static> McpHandler<App> {
    pub(super) fn new(server: Server<App>, stateless: Stateless, store: Option<Arc<BoundedSessions>>) -> Self {
        McpHandler { server, stateless, session: OnceLock::new(), store }
    }

    /// The session of the connection's requests at the revisions with
    /// sessions.
    fn session(&self) -> &McpSession<App> {
        self.session.get_or_init(|| {
            let session = McpSession::new(self.server.clone());
            match &self.store {
                Some(store) => session.in_store(store.clone()),
                None => session,
            }
        })
    }
}

impl<App: Send + Sync + 'static> ServerHandler for McpHandler<App> {
    /// What both revisions offer; the session's `initialize` answers with
    /// its own, and tasks are offered at 2026-07-28 only, kept in the
    /// server's memory.
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = self.server.capabilities();
        if self.server.tasks().is_some() {
            capabilities.extensions.get_or_insert_default().insert(rmcp::model::TASKS_EXTENSION_ID.to_owned(), serde_json::Map::new());
        }
        self.server.config(capabilities)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(supported_versions())
    }

    async fn initialize(&self, request: InitializeRequestParams, context: RequestContext<RoleServer>) -> Result<InitializeResult, ErrorData> {
        Box::pin(self.session().initialize(request, context)).await
    }

    async fn list_tools(&self, request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        match Revision::of(&context) {
            Revision::Sessions => Box::pin(self.session().list_tools(request, context)).await,
            Revision::Stateless => Ok(stateless::list_tools(&self.server, &context)),
        }
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.server.registry.definition(name).map(tool_list::mcp_tool)
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        match Revision::of(&context) {
            Revision::Sessions => Box::pin(self.session().call_tool(request, context)).await,
            Revision::Stateless => Box::pin(stateless::call_tool(&self.server, &self.stateless, request, &context)).await,
        }
    }

    #[allow(deprecated, reason = "logging/setLevel is the session revisions'")]
    async fn set_level(&self, request: rmcp::model::SetLevelRequestParams, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        match Revision::of(&context) {
            Revision::Sessions => self.session().set_level(request, context).await,
            // A stateless request names its level in its `_meta`.
            Revision::Stateless => Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, "logging/setLevel", None)),
        }
    }

    super::composed::serve_composed!();

    fn accepted_subscription_filter(&self, _requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(subscriptions::accepted(&self.server))
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        Box::pin(subscriptions::listen(&self.server, subscription)).await
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        Box::pin(stateless::get_task(&self.server, &self.stateless, request, &context)).await
    }

    async fn update_task(&self, request: rmcp::model::UpdateTaskParams, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        Box::pin(stateless::update_task(&self.server, &self.stateless, request, &context)).await
    }

    async fn cancel_task(&self, request: rmcp::model::CancelTaskParams, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        Box::pin(stateless::cancel_task(&self.server, &self.stateless, request, &context)).await
    }
}

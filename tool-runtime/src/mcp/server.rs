//! What every revision serves with: the registry and the app, who calls
//! when a request names no one, how the server names itself, its one memory,
//! the runner of external tools, the caps on calls waiting for a human,
//! the handler composed beside the tools, the caching hints, and the
//! clients listening for list changes. [`McpServer`](super::McpServer)
//! holds one and hands a clone to each handler it makes.

use std::sync::Arc;

use rmcp::model::{Implementation, ProtocolVersion, ServerCapabilities, ServerConfig, ToolsCapability};

use super::cache::CacheHints;
use super::composed::Composed;
use super::listeners::Listeners;
use super::waiting::WaitingCalls;
use crate::context::UserContext;
use crate::memory::{LocalMemory, RunMemory, TaskStore};
use crate::registry::Registry;

/// The host's runner of external tools' calls, for an MCP server.
pub(crate) type ExternalRunner =
    Arc<dyn Fn(crate::ExternalCall) -> crate::BoxFuture<'static, Result<serde_json::Value, crate::ToolError>> + Send + Sync>;

/// The state both revisions serve from. Cheap to clone.
pub(crate) struct Server<App> {
    pub(crate) registry: Registry<App>,
    pub(crate) app: Arc<App>,
    /// Who calls when the request's transport names no one (stdio, HTTP
    /// without an authentication hook).
    pub(crate) user: Arc<UserContext>,
    pub(crate) info: Implementation,
    pub(crate) instructions: Option<String>,
    /// The server's one memory: a journal (`McpServer::with_journal`),
    /// where each session's run, and revision 2026-07-28's approvals, keyed
    /// retries and tasks are kept for every instance on it; else a memory
    /// of this process, which keeps its tasks.
    pub(crate) memory: Arc<dyn RunMemory>,
    /// Whether `memory` outlives the process (a journal).
    pub(crate) durable: bool,
    /// Who runs the calls of external tools.
    pub(crate) external: Option<ExternalRunner>,
    /// The calls waiting for approval, capped.
    pub(crate) waiting: Arc<WaitingCalls>,
    /// The prompts, resources and completion served beside the tools.
    pub(crate) composed: Composed,
    /// The caching hints of lists and reads.
    pub(crate) cache: CacheHints,
    /// The `subscriptions/listen` streams open on this process.
    pub(crate) listeners: Arc<Listeners>,
}

impl<App> Clone for Server<App> {
    fn clone(&self) -> Self {
        Server {
            registry: self.registry.clone(),
            app: self.app.clone(),
            user: self.user.clone(),
            info: self.info.clone(),
            instructions: self.instructions.clone(),
            memory: self.memory.clone(),
            durable: self.durable,
            external: self.external.clone(),
            waiting: self.waiting.clone(),
            composed: self.composed.clone(),
            cache: self.cache,
            listeners: self.listeners.clone(),
        }
    }
}

impl<App> Server<App> {
    /// A server of `registry`'s tools, calling them with `app`, with
    /// nothing else set.
    pub(crate) fn new(registry: Registry<App>, app: Arc<App>) -> Self {
        Server {
            registry,
            app,
            user: Arc::new(UserContext::default()),
            info: Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
            instructions: None,
            memory: Arc::new(LocalMemory::default()),
            durable: false,
            external: None,
            waiting: Arc::default(),
            composed: Composed::default(),
            cache: CacheHints::default(),
            listeners: Arc::default(),
        }
    }

    /// The memory that outlives the process, if the server has one: where
    /// sessions' runs, approvals and keyed retries are kept.
    pub(crate) fn durable_memory(&self) -> Option<&Arc<dyn RunMemory>> {
        self.durable.then_some(&self.memory)
    }

    /// Where the server's tasks are kept: its memory's store.
    pub(crate) fn tasks(&self) -> Option<&dyn TaskStore> {
        self.memory.task_store()
    }

    /// What both revisions offer: tools (whose list changes), log messages,
    /// and what the composed handler declares (prompts, resources,
    /// completion).
    pub(crate) fn capabilities(&self) -> ServerCapabilities {
        let mut capabilities = self.composed.capabilities();
        let mut tools = ToolsCapability::default();
        tools.list_changed = Some(true);
        capabilities.tools = Some(tools);
        capabilities.logging = Some(serde_json::Map::new());
        capabilities
    }

    /// What a connection says of this server: its name, version and
    /// instructions, and `capabilities`.
    pub(crate) fn config(&self, capabilities: ServerCapabilities) -> ServerConfig {
        let config =
            ServerConfig::new(capabilities).with_server_info(self.info.clone()).with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
        match &self.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }
}

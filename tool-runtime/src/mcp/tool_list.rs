//! The tool list: which tools a caller is offered, each as an MCP tool,
//! and `tools/list` with its caching hints. A session lists what its run
//! offers now; the stateless revision what a fresh run offers.

use rmcp::model::{ListToolsResult, Tool};

use super::cache::Cached;
use super::server::Server;
use crate::context::UserContext;
use crate::steps::Steps;
use crate::tool::ToolDefinition;

/// The tools `steps` offer `user` now, in the registry's order: never a
/// provider's built-in tool (it is that provider's), and an external tool
/// only when `external` (where a runner runs it).
pub(crate) fn offered<'s, App: Send + Sync + 'static>(
    server: &'s Server<App>,
    steps: &Steps,
    user: &UserContext,
    external: bool,
) -> Vec<&'s ToolDefinition> {
    let offered = steps.offered(server.registry.tools(), server.app.as_ref(), user).into_iter();
    offered.filter(|def| def.provider_defined.is_none() && (external || !def.external)).collect()
}

/// The names of `tools`.
pub(crate) fn names(tools: &[&ToolDefinition]) -> Vec<String> {
    tools.iter().map(|def| def.name.clone()).collect()
}

/// `tools/list` of `tools`, with the server's caching hints.
pub(crate) fn list<App>(server: &Server<App>, tools: &[&ToolDefinition]) -> ListToolsResult {
    let mut result = ListToolsResult::with_all_items(tools.iter().map(|def| mcp_tool(def)).collect());
    server.cache.apply(Cached::Tools, &mut result.ttl_ms, &mut result.cache_scope);
    result
}

/// One `tools/list` entry, as [`providers::mcp::tool`](crate::providers::mcp::tool)
/// writes it: the input schema as the tool gives it.
pub(crate) fn mcp_tool(def: &ToolDefinition) -> Tool {
    serde_json::from_value(crate::providers::mcp::tool(def)).expect("providers::mcp writes valid MCP tools")
}

/// Whether `tools/list` gives the tool an `outputSchema`.
pub(crate) fn declares_output_schema(def: &ToolDefinition) -> bool {
    def.output_schema.as_deref().is_some_and(crate::providers::mcp::is_object_schema)
}

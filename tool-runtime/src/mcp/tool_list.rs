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
    offered.filter(|def| listed(def, external)).collect()
}

/// The tools a call of `name` may reach, for [`Call::offered`](crate::pipeline::Call):
/// `None` when [`offered`] holds `name` (the call needs no list: found
/// without listing the others, which a server of many tools would do on
/// every call), else the names of the tools offered, which the call is
/// refused with as unknown.
pub(crate) fn restriction<App: Send + Sync + 'static>(
    server: &Server<App>,
    steps: &Steps,
    user: &UserContext,
    external: bool,
    name: &str,
) -> Option<Vec<String>> {
    let listed = server.registry.definition(name).is_some_and(|def| listed(def, external));
    if listed && steps.offers_tool(server.registry.tools(), server.app.as_ref(), user, name) {
        return None;
    }
    Some(names(&offered(server, steps, user, external)))
}

/// Whether the tool list may hold `def`: never a provider's built-in tool,
/// and an external tool only when `external`.
fn listed(def: &ToolDefinition, external: bool) -> bool {
    def.provider_defined.is_none() && (external || !def.external)
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

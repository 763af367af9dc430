//! What the requests of revision 2026-07-28 share below their handlers: the
//! tools offered to a caller, a finished call's answer, and the name of the
//! one input an approval asks for.

use rmcp::model::CallToolResponse;

use crate::context::UserContext;
use crate::mcp::McpServer;
use crate::mcp::sessions::{call_tool_result, declares_output_schema};
use crate::result::CallResult;
use crate::steps::Steps;
use crate::tool::ToolDefinition;

/// The key of the elicitation in `inputRequests` and of its answer in
/// `inputResponses`.
pub(crate) const APPROVAL_INPUT: &str = "approval";

/// The tools offered to `user` at this revision, in the registry's order:
/// what a fresh run offers at its first step, without provider-defined and
/// external tools.
pub(super) fn offered<'s, App: Send + Sync + 'static>(server: &'s McpServer<App>, user: &UserContext) -> Vec<&'s ToolDefinition> {
    let offered = Steps::default().offered(server.registry.tools(), server.app.as_ref(), user);
    offered.into_iter().filter(|def| def.provider_defined.is_none() && !def.external).collect()
}

/// A settled call as MCP carries it, as on the session path.
pub(super) fn complete<App: Send + Sync + 'static>(server: &McpServer<App>, result: CallResult) -> CallToolResponse {
    let declares_output = server.registry.definition(&result.tool).is_some_and(declares_output_schema);
    CallToolResponse::Complete(call_tool_result(result, declares_output))
}

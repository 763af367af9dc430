//! A settled call as MCP carries it, at every revision.

use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

use super::server::Server;
use super::tool_list::declares_output_schema;
use crate::content::{Block, ResourceBody, base64};
use crate::error::ToolError;
use crate::result::{CallResult, ResultKind};

/// `result` as MCP carries it, for a tool of `server`'s registry.
pub(crate) fn answer<App: Send + Sync + 'static>(server: &Server<App>, result: CallResult) -> CallToolResult {
    let declares_output = server.registry.definition(&result.tool).is_some_and(declares_output_schema);
    call_tool_result(result, declares_output)
}

/// A call refused before the pipeline, with `error` as its one line.
pub(crate) fn refused<App: Send + Sync + 'static>(server: &Server<App>, tool: &str, error: &ToolError) -> CallToolResponse {
    answer(server, CallResult::failure(tool.into(), crate::ids::fresh_call_id(), ResultKind::Denied, error)).into()
}

/// A result as MCP carries it: the model's line as text; on success the
/// structured output too, when it is an object (MCP's `structuredContent`
/// must be one) and the text was not cut. A cut output is never sent whole
/// as structured content; a tool that declares an `outputSchema` must send
/// structured content with every success (clients such as the Python SDK
/// reject a success without it), so its cut output is flagged `isError`.
/// A tool error's structured value (a typed failure) goes with its
/// `isError` result, under the same object rule; clients check
/// `structuredContent` against the `outputSchema` on success only.
///
/// A success with content blocks carries them as MCP content blocks, and
/// no structured content (such a tool declares no `outputSchema`).
pub(crate) fn call_tool_result(result: CallResult, declares_output: bool) -> CallToolResult {
    let content = match result.content.is_empty() {
        true => vec![ContentBlock::text(result.text)],
        false => result.content.into_iter().map(mcp_block).collect(),
    };
    if result.kind == ResultKind::ToolError {
        let mut failure = CallToolResult::error(content);
        failure.structured_content = result.structured.map(|value| *value).filter(Value::is_object);
        return failure;
    }
    if result.kind != ResultKind::Success || (result.truncated && declares_output) {
        return CallToolResult::error(content);
    }
    let mut success = CallToolResult::success(content);
    if !result.truncated {
        success.structured_content = result.structured.map(|value| *value).filter(Value::is_object);
    }
    success
}

/// A content block as rmcp writes it (binary data in base64).
fn mcp_block(block: Block) -> ContentBlock {
    match block {
        Block::Text(text) => ContentBlock::text(text),
        Block::Image(image) => ContentBlock::image(base64(&image.data), image.mime_type),
        Block::Audio(audio) => ContentBlock::audio(base64(&audio.data), audio.mime_type),
        Block::ResourceLink(link) => {
            let mut resource = rmcp::model::Resource::new(link.uri, link.name);
            resource.description = link.description;
            resource.mime_type = link.mime_type;
            ContentBlock::resource_link(resource)
        }
        Block::Resource(resource) => {
            let contents = match resource.body {
                ResourceBody::Text(text) => ResourceContents::text(text, resource.uri),
                ResourceBody::Blob(data) => ResourceContents::blob(base64(&data), resource.uri),
            };
            ContentBlock::resource(match resource.mime_type {
                Some(mime_type) => contents.with_mime_type(mime_type),
                None => contents,
            })
        }
    }
}

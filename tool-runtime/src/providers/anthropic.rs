//! Anthropic Messages: `tools` with `input_schema`, `tool_use` blocks, and
//! `tool_result` blocks. Anthropic's built-in tools are exported as their
//! own entries; the blocks of those it runs itself (web search) are read by
//! [`provider_items`], and the calls of those the host runs (bash, the text
//! editor) are ordinary `tool_use` blocks, under the tool's fixed name.
//!
//! Anthropic reads JSON Schema as it is (`$defs` and `$ref` included), so
//! the input schema is the canonical one without `$schema` (and without
//! the formats that are not JSON Schema's, as in every dialect), and nothing
//! is lost. Anthropic's rule for names, `^[a-zA-Z0-9_-]{1,64}$`, is looser than
//! the registry's `^[a-z][a-z0-9_]{0,63}$`, so every registered tool passes
//! it; a hand-made [`ToolDefinition`] is checked.

use serde_json::{Map, Value, json};

use super::builtin::{Provider, ProviderItem, is_function};
use super::{DialectError, Export, ExportOptions, PayloadError, Reader, check_name, failed, pointer};
use crate::call::Arguments;
use crate::call::ToolCall;
use crate::result::CallResult;
use crate::tool::ToolDefinition;

const PROVIDER: &str = "anthropic";
const READER: Reader = Reader { provider: PROVIDER };

/// The rule Anthropic documents for tool names.
const NAME_RULE: &str = "^[a-zA-Z0-9_-]{1,64}$";

/// The request's `tools`: one `{"name", "description", "input_schema"}` per
/// tool (Anthropic's built-ins as their own entries, other providers' left
/// out: a loss says so). `options` is accepted for symmetry with the other
/// dialects; none applies to Anthropic.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::providers::{anthropic, ExportOptions};
/// use tool_runtime::ToolDefinition;
///
/// let def = ToolDefinition::new("echo", "Echo the text.", json!({
///     "$schema": "https://json-schema.org/draft/2020-12/schema",
///     "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]
/// }));
/// let export = anthropic::tools([&def], &ExportOptions::default()).unwrap();
/// assert_eq!(export.tools[0], json!({
///     "name": "echo",
///     "description": "Echo the text.",
///     "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
/// }));
/// assert!(export.losses.is_empty());
/// ```
pub fn tools<'a>(defs: impl IntoIterator<Item = &'a ToolDefinition>, options: &ExportOptions) -> Result<Export, DialectError> {
    let _ = options;
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let (mut tools, mut losses) = (Vec::new(), Vec::new());
    for def in defs {
        if !is_function(def, "Anthropic", Provider::Anthropic, &mut tools, &mut losses) {
            continue;
        }
        check_name(PROVIDER, &def.name, NAME_RULE, allowed, allowed, 64)?;
        let mut schema = (*super::exported(def).input_schema).clone();
        if let Value::Object(map) = &mut schema {
            map.shift_remove("$schema");
        }
        tools.push(json!({"name": def.name, "description": def.description, "input_schema": schema}));
    }
    Ok(Export { tools, losses })
}

/// The `tool_use` blocks of a message's `content` (a whole response, the
/// assistant message, or the content array itself); other blocks are
/// skipped. `input` is taken as the value it is.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::providers::anthropic;
///
/// let response = json!({"role": "assistant", "stop_reason": "tool_use", "content": [
///     {"type": "text", "text": "Let me look."},
///     {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "hi"}}
/// ]});
/// let calls = anthropic::parse_calls(&response).unwrap();
/// assert_eq!(calls.len(), 1);
/// assert_eq!(calls[0].id, "toolu_1");
/// ```
pub fn parse_calls(payload: &Value) -> Result<Vec<ToolCall>, PayloadError> {
    let (blocks, at) = match payload {
        Value::Array(blocks) => (blocks.as_slice(), String::new()),
        other => {
            let root = READER.object(other, "")?;
            let content = READER.field(root, "content", "")?;
            (READER.array(content, "/content")?, "/content".to_owned())
        }
    };
    let mut calls = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        let at = pointer(&at, &i.to_string());
        let block = READER.object(block, &at)?;
        if READER.string(block, "type", &at)? != "tool_use" {
            continue;
        }
        let id = READER.string(block, "id", &at)?;
        let name = READER.string(block, "name", &at)?;
        let input = READER.field(block, "input", &at)?;
        calls.push(ToolCall::new(id, name, Arguments::Value(input.clone())));
    }
    Ok(calls)
}

/// The blocks of Anthropic's own runs of its built-ins in a message's
/// `content`: `server_tool_use` (the call) and `web_search_tool_result` (and
/// any other `*_tool_result`: the result). They go back to Anthropic with
/// the assistant's message as they are; they are not calls to execute.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::providers::{anthropic, builtin::ItemKind};
///
/// let response = json!({"role": "assistant", "content": [
///     {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "rust 2024"}},
///     {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
///     {"type": "text", "text": "Nothing found."}
/// ]});
/// let items = anthropic::provider_items(&response).unwrap();
/// assert_eq!(items.len(), 2);
/// assert_eq!((items[1].kind, items[1].id.as_deref()), (ItemKind::Outcome, Some("srvtoolu_1")));
/// assert!(anthropic::parse_calls(&response).unwrap().is_empty());
/// ```
pub fn provider_items(payload: &Value) -> Result<Vec<ProviderItem>, PayloadError> {
    super::builtin::anthropic_items(payload)
}

/// One user message with a `tool_result` block per result (Anthropic wants
/// every result of a turn in the next user message), `is_error: true` on
/// failures, refusals and rejections. Empty when there are no results.
///
/// ```
/// # use std::sync::Arc;
/// # use tool_runtime::prelude::*;
/// # use tool_runtime::providers::anthropic;
/// /// Refuse.
/// #[tool(policy = deny)]
/// async fn wipe() -> String { String::new() }
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// # let registry = Registry::<()>::builder().tools(tools![wipe]).build().unwrap();
/// let refused = registry.call(&Arc::new(()), "wipe", "").call_id("toolu_1").await.into_result().unwrap();
/// let messages = anthropic::results(&[refused]);
/// assert_eq!(messages[0]["role"], "user");
/// assert_eq!(messages[0]["content"][0]["is_error"], true);
/// # }
/// ```
pub fn results(results: &[CallResult]) -> Vec<Value> {
    if results.is_empty() {
        return Vec::new();
    }
    let blocks: Vec<Value> = results
        .iter()
        .map(|result| {
            let mut block = Map::new();
            block.insert("type".into(), "tool_result".into());
            block.insert("tool_use_id".into(), result.call_id.as_str().into());
            block.insert("content".into(), super::blocks::anthropic(result));
            if failed(result) {
                block.insert("is_error".into(), true.into());
            }
            Value::Object(block)
        })
        .collect();
    vec![json!({"role": "user", "content": blocks})]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_against_anthropic_rule() {
        let long = "a".repeat(65);
        for bad in ["", "look up", "naïve", long.as_str()] {
            let def = ToolDefinition::new(bad, "T.", json!({"type": "object"}));
            assert!(matches!(tools([&def], &ExportOptions::default()), Err(DialectError::Name { .. })), "{bad:?}");
        }
        for good in ["Look-Up_2", "a"] {
            let def = ToolDefinition::new(good, "T.", json!({"type": "object"}));
            assert!(tools([&def], &ExportOptions::default()).is_ok(), "{good}");
        }
    }

    #[test]
    fn malformed_blocks_say_where() {
        let err = parse_calls(&json!({"content": [{"type": "tool_use", "id": "t", "name": "x"}]})).unwrap_err();
        assert_eq!(err.to_string(), "malformed anthropic payload at `/content/0`: missing `input`");
        let err = parse_calls(&json!({"content": "text"})).unwrap_err();
        assert_eq!(err.to_string(), "malformed anthropic payload at `/content`: expected an array, found a string");
        assert!(parse_calls(&json!({"role": "assistant"})).is_err());
    }
}

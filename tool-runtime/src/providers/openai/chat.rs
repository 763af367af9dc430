//! OpenAI Chat Completions: `tools`, `tool_calls` and `role: tool` messages.

use serde_json::{Map, Value, json};

use super::super::builtin::{Route, route};
use super::super::{Export, ExportOptions, PayloadError, Reader, pointer};
use super::function;
use crate::call::Arguments;
use crate::call::ToolCall;
use crate::result::CallResult;
use crate::tool::ToolDefinition;

const READER: Reader = Reader { provider: "openai chat" };

/// The request's `tools`: one `{"type": "function", "function": {...}}`
/// per tool, with `strict` decided per tool (see the
/// [module](super) docs).
///
/// ```
/// use serde_json::json;
/// use tool_runtime::providers::{openai, ExportOptions};
/// use tool_runtime::ToolDefinition;
///
/// let def = ToolDefinition::new("echo", "Echo the text.", json!({
///     "type": "object",
///     "properties": {"text": {"type": "string"}, "loud": {"type": "boolean", "default": false}},
///     "required": ["text"],
///     "additionalProperties": false
/// }));
/// let export = openai::chat::tools([&def], &ExportOptions::default()).unwrap();
/// let function = &export.tools[0]["function"];
/// assert_eq!(function["strict"], true);
/// assert_eq!(function["parameters"]["required"], json!(["text", "loud"]));
/// assert_eq!(function["parameters"]["properties"]["loud"]["type"], json!(["boolean", "null"]));
/// ```
pub fn tools<'a>(defs: impl IntoIterator<Item = &'a ToolDefinition>, options: &ExportOptions) -> Result<Export, super::DialectError> {
    let mut losses = Vec::new();
    let mut tools = Vec::new();
    for def in defs {
        // No built-in tool is a Chat Completions tool: OpenAI's are the Responses API's.
        if let Route::Skip(loss) = route(def, "OpenAI Chat Completions", None) {
            losses.push(loss);
            continue;
        }
        let function = function(def, options, &mut losses)?;
        tools.push(json!({
            "type": "function",
            "function": {
                "name": def.name,
                "description": def.description,
                "parameters": function.parameters,
                "strict": function.strict,
            }
        }));
    }
    Ok(Export { tools, losses })
}

/// The tool calls of a chat completion (`choices[0].message.tool_calls`)
/// or of the assistant message itself. No `tool_calls` means no calls.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::providers::openai;
///
/// let message = json!({"role": "assistant", "content": null, "tool_calls": [
///     {"id": "call_1", "type": "function", "function": {"name": "echo", "arguments": "{\"text\":\"hi\"}"}}
/// ]});
/// let calls = openai::chat::parse_calls(&message).unwrap();
/// assert_eq!((calls[0].id.as_str(), calls[0].name.as_str()), ("call_1", "echo"));
/// ```
pub fn parse_calls(payload: &Value) -> Result<Vec<ToolCall>, PayloadError> {
    let root = READER.object(payload, "")?;
    let (message, at) = if let Some(choices) = root.get("choices") {
        let choices = READER.array(choices, "/choices")?;
        let first = choices.first().ok_or_else(|| READER.error("/choices", "expected at least one choice"))?;
        let choice = READER.object(first, "/choices/0")?;
        let message = READER.field(choice, "message", "/choices/0")?;
        (READER.object(message, "/choices/0/message")?, "/choices/0/message".to_owned())
    } else if root.contains_key("tool_calls") || root.contains_key("role") {
        (root, String::new())
    } else {
        return Err(READER.error("", "expected a chat completion (with `choices`) or an assistant message"));
    };
    let calls = match message.get("tool_calls") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(calls) => READER.array(calls, &pointer(&at, "tool_calls"))?,
    };
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let at = pointer(&pointer(&at, "tool_calls"), &i.to_string());
            let call = READER.object(call, &at)?;
            if let Some(kind) = call.get("type").and_then(Value::as_str).filter(|kind| *kind != "function") {
                return Err(READER.error(&pointer(&at, "type"), format!("unsupported tool call type `{kind}`; only functions are offered")));
            }
            let id = READER.string(call, "id", &at)?;
            let function_at = pointer(&at, "function");
            let function = READER.object(READER.field(call, "function", &at)?, &function_at)?;
            let name = READER.string(function, "name", &function_at)?;
            let arguments = arguments(function, &function_at)?;
            Ok(ToolCall::new(id, name, arguments))
        })
        .collect()
}

/// `arguments` is JSON text; some compatible servers send the object.
pub(super) fn arguments(function: &Map<String, Value>, at: &str) -> Result<Arguments<'static>, PayloadError> {
    match function.get("arguments") {
        None | Some(Value::Null) => Ok(Arguments::Text(String::new().into())),
        Some(Value::String(text)) => Ok(Arguments::Text(text.clone().into())),
        Some(object @ Value::Object(_)) => Ok(Arguments::Value(object.clone())),
        Some(_) => Err(READER.error(&pointer(at, "arguments"), "expected the arguments as JSON text")),
    }
}

/// One `{"role": "tool", "tool_call_id", "content"}` message per result.
///
/// ```
/// # use std::sync::Arc;
/// # use tool_runtime::prelude::*;
/// # use tool_runtime::providers::openai;
/// /// Echo.
/// #[tool]
/// async fn echo(text: String) -> String { text }
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// # let registry = Registry::<()>::builder().tools(tools![echo]).build().unwrap();
/// let result = registry.call(&Arc::new(()), "echo", r#"{"text": "hi"}"#).call_id("call_1").await.into_result().unwrap();
/// let messages = openai::chat::results(&[result]);
/// assert_eq!(messages[0], serde_json::json!({"role": "tool", "tool_call_id": "call_1", "content": "hi"}));
/// # }
/// ```
pub fn results(results: &[CallResult]) -> Vec<Value> {
    results
        .iter()
        .map(|result| json!({"role": "tool", "tool_call_id": result.call_id, "content": super::super::blocks::text_only(super::super::Dialect::OpenAiChat, result)}))
        .collect()
}

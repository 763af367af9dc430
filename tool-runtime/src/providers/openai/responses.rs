//! OpenAI Responses: `tools`, `function_call` items and
//! `function_call_output` items; OpenAI's built-in tools (web search, file
//! search, code interpreter) are exported here and read back by
//! [`provider_items`].

use serde_json::{Value, json};

use super::super::builtin::{Provider, ProviderItem, is_function};
use super::super::{Export, ExportOptions, PayloadError, Reader, pointer};
use super::function;
use crate::call::ToolCall;
use crate::result::CallResult;
use crate::tool::ToolDefinition;

const READER: Reader = Reader { provider: "openai responses" };

/// The request's `tools`: one `{"type": "function", "name", ...}` per
/// tool, with `strict` decided per tool (see the [module](super) docs);
/// OpenAI's built-ins as their own entries, other providers' left out (a
/// loss says so).
///
/// ```
/// use serde_json::json;
/// use tool_runtime::providers::{openai, ExportOptions};
/// use tool_runtime::ToolDefinition;
///
/// let def = ToolDefinition::new("echo", "Echo the text.", json!({
///     "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]
/// }));
/// let export = openai::responses::tools([&def], &ExportOptions::new().strict(false)).unwrap();
/// assert_eq!(export.tools[0]["name"], "echo");
/// assert_eq!(export.tools[0]["strict"], false);
/// ```
pub fn tools<'a>(defs: impl IntoIterator<Item = &'a ToolDefinition>, options: &ExportOptions) -> Result<Export, super::DialectError> {
    let mut losses = Vec::new();
    let mut tools = Vec::new();
    for def in defs {
        if !is_function(def, "OpenAI Responses", Provider::OpenAi, &mut tools, &mut losses) {
            continue;
        }
        let function = function(def, options, &mut losses)?;
        tools.push(json!({
            "type": "function",
            "name": def.name,
            "description": def.description,
            "parameters": function.parameters,
            "strict": function.strict,
        }));
    }
    Ok(Export { tools, losses })
}

/// The `function_call` items of a response's `output` (or of the output
/// array itself); other items (messages, reasoning) are skipped. The
/// call's id is its `call_id`.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::providers::openai;
///
/// let response = json!({"output": [
///     {"type": "reasoning", "id": "rs_1", "summary": []},
///     {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "echo", "arguments": "{\"text\":\"hi\"}"}
/// ]});
/// let calls = openai::responses::parse_calls(&response).unwrap();
/// assert_eq!(calls[0].id, "call_1");
/// ```
pub fn parse_calls(payload: &Value) -> Result<Vec<ToolCall>, PayloadError> {
    let (items, at) = match payload {
        Value::Array(items) => (items.as_slice(), String::new()),
        other => {
            let root = READER.object(other, "")?;
            let output = READER.field(root, "output", "")?;
            (READER.array(output, "/output")?, "/output".to_owned())
        }
    };
    let mut calls = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = pointer(&at, &i.to_string());
        let item = READER.object(item, &at)?;
        if item.get("type").and_then(Value::as_str) != Some("function_call") {
            continue;
        }
        let call_id = READER.string(item, "call_id", &at)?;
        let name = READER.string(item, "name", &at)?;
        let arguments = super::chat::arguments(item, &at).map_err(|err| READER.error(&err.pointer, err.problem))?;
        calls.push(ToolCall::new(call_id, name, arguments));
    }
    Ok(calls)
}

/// One `{"type": "function_call_output", "call_id", "output"}` item per
/// result.
pub fn results(results: &[CallResult]) -> Vec<Value> {
    results
        .iter()
        .map(|result| json!({"type": "function_call_output", "call_id": result.call_id, "output": super::super::blocks::responses(result)}))
        .collect()
}

/// The items of OpenAI's built-in tools in a response's `output` (or in the
/// output array itself): `web_search_call`, `file_search_call`,
/// `code_interpreter_call`, each a call with its result. OpenAI ran them;
/// they are for the host to show, not calls to execute.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::providers::{builtin::ItemKind, openai};
///
/// let response = json!({"output": [
///     {"type": "code_interpreter_call", "id": "ci_1", "code": "print(6 * 7)", "container_id": "cntr_1",
///      "outputs": [{"type": "logs", "logs": "42"}], "status": "completed"},
///     {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "42"}]}
/// ]});
/// let items = openai::responses::provider_items(&response).unwrap();
/// assert_eq!((items[0].tool.as_str(), items[0].kind), ("code_interpreter", ItemKind::CallAndOutcome));
/// assert_eq!(items[0].value["outputs"][0]["logs"], "42");
/// ```
pub fn provider_items(payload: &Value) -> Result<Vec<ProviderItem>, PayloadError> {
    super::super::builtin::openai_items(payload)
}

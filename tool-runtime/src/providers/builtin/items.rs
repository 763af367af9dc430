//! The calls and results of provider-run built-ins, read from a response.

use serde_json::{Map, Value};

use super::{Provider, ProviderDefined};
use crate::providers::{PayloadError, Reader, pointer};
use crate::tool::ToolDefinition;

// No variant is named `Result`: a public item of that name makes the
// compiler spell `std::result::Result` in full in its messages to users.
/// Whether an item is a built-in's call, its outcome (the result), or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ItemKind {
    /// What the model asked the built-in (Anthropic `server_tool_use`,
    /// Gemini `executableCode`).
    Call,
    /// What the built-in gave (Anthropic `web_search_tool_result`, Gemini
    /// `codeExecutionResult` and `groundingMetadata`).
    Outcome,
    /// Both in one item (OpenAI's `web_search_call`, `file_search_call`,
    /// `code_interpreter_call`: the action or code, the status and the
    /// results).
    CallAndOutcome,
}

/// A call or result of a provider-run built-in, as a response carries it.
/// The runtime never executes one: it is for the host to show or keep (a
/// transcript, a log), and it goes back to the provider with the rest of
/// the assistant's message.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ProviderItem {
    /// The provider.
    pub provider: Provider,
    /// The built-in, as [`ProviderDefined::tool`] names it: `web_search`,
    /// `file_search`, `code_interpreter`, `google_search`,
    /// `code_execution`.
    pub tool: String,
    /// A call, its outcome, or both.
    pub kind: ItemKind,
    /// The call's id, which a result shares with its call (OpenAI's item
    /// `id`, Anthropic's `id` and `tool_use_id`, Gemini's part `id`), where
    /// the provider gives one.
    pub id: Option<String>,
    /// The item, block or part as received (for Gemini's search, the
    /// candidate's `groundingMetadata`).
    pub value: Value,
}

impl ProviderItem {
    /// The tool of `defs` (usually the registry's definitions) declared as
    /// this built-in, whose name is the custom name the host knows it by.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_runtime::prelude::*;
    /// use tool_runtime::providers::{builtin::ProviderTool, openai};
    ///
    /// let registry = Registry::<()>::builder().tool(ProviderTool::openai_web_search("search")).build().unwrap();
    /// let response = json!({"output": [
    ///     {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "rust"}}
    /// ]});
    /// let items = openai::responses::provider_items(&response).unwrap();
    /// assert_eq!(items[0].declared_in(registry.definitions()).unwrap().name, "search");
    /// ```
    pub fn declared_in<'a>(&self, defs: impl IntoIterator<Item = &'a ToolDefinition>) -> Option<&'a ToolDefinition> {
        defs.into_iter().find(|def| def.provider_defined.as_deref().is_some_and(|declared| self.is(declared)))
    }

    fn is(&self, declared: &ProviderDefined) -> bool {
        declared.provider == self.provider && declared.tool == self.tool
    }
}

/// The elements of `payload` under `key` (or `payload` itself, an array).
fn elements<'v>(reader: &Reader, payload: &'v Value, key: &str) -> Result<(&'v [Value], String), PayloadError> {
    match payload {
        Value::Array(items) => Ok((items.as_slice(), String::new())),
        other => {
            let root = reader.object(other, "")?;
            let at = pointer("", key);
            Ok((reader.array(reader.field(root, key, "")?, &at)?, at))
        }
    }
}

fn optional_string(reader: &Reader, map: &Map<String, Value>, key: &str, at: &str) -> Result<Option<String>, PayloadError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => reader.string(map, key, at).map(|id| Some(id.to_owned())),
    }
}

/// OpenAI Responses: the `web_search_call`, `file_search_call` and
/// `code_interpreter_call` items of a response's `output`.
pub(crate) fn openai_items(payload: &Value) -> Result<Vec<ProviderItem>, PayloadError> {
    let reader = Reader { provider: "openai responses" };
    let (items, at) = elements(&reader, payload, "output")?;
    let mut found = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = pointer(&at, &i.to_string());
        let map = reader.object(item, &at)?;
        let tool = match map.get("type").and_then(Value::as_str) {
            Some("web_search_call") => "web_search",
            Some("file_search_call") => "file_search",
            Some("code_interpreter_call") => "code_interpreter",
            _ => continue,
        };
        let id = Some(reader.string(map, "id", &at)?.to_owned());
        found.push(ProviderItem { provider: Provider::OpenAi, tool: tool.into(), kind: ItemKind::CallAndOutcome, id, value: item.clone() });
    }
    Ok(found)
}

/// Anthropic: the `server_tool_use` blocks of a message's `content` and
/// the blocks of their results (`web_search_tool_result`, and every other
/// `*_tool_result` but the host's own `tool_result`).
pub(crate) fn anthropic_items(payload: &Value) -> Result<Vec<ProviderItem>, PayloadError> {
    let reader = Reader { provider: "anthropic" };
    let (blocks, at) = elements(&reader, payload, "content")?;
    let mut found = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        let at = pointer(&at, &i.to_string());
        let map = reader.object(block, &at)?;
        let kind = reader.string(map, "type", &at)?;
        let (tool, kind, id) = if kind == "server_tool_use" {
            (reader.string(map, "name", &at)?, ItemKind::Call, reader.string(map, "id", &at)?)
        } else if let Some(tool) = kind.strip_suffix("_tool_result").filter(|tool| !tool.is_empty()) {
            (tool, ItemKind::Outcome, reader.string(map, "tool_use_id", &at)?)
        } else {
            continue;
        };
        found.push(ProviderItem { provider: Provider::Anthropic, tool: tool.into(), kind, id: Some(id.into()), value: block.clone() });
    }
    Ok(found)
}

/// Gemini's runs of its built-ins in a response: the `executableCode`
/// (call) and `codeExecutionResult` (result) parts of each candidate's
/// content (or of a content, or of a parts array), and each candidate's
/// `groundingMetadata` (the result of a Google search). Gemini ran them;
/// they are for the host to show, not calls to execute.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::providers::{builtin::ItemKind, gemini};
///
/// let response = json!({"candidates": [{"content": {"role": "model", "parts": [
///     {"executableCode": {"language": "PYTHON", "code": "print(6 * 7)"}},
///     {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "42\n"}},
///     {"text": "42"}
/// ]}, "groundingMetadata": {"webSearchQueries": ["answer"]}}]});
/// let items = gemini::provider_items(&response).unwrap();
/// let kinds: Vec<_> = items.iter().map(|item| (item.tool.as_str(), item.kind)).collect();
/// assert_eq!(kinds, [("code_execution", ItemKind::Call), ("code_execution", ItemKind::Outcome), ("google_search", ItemKind::Outcome)]);
/// ```
pub fn gemini_items(payload: &Value) -> Result<Vec<ProviderItem>, PayloadError> {
    let reader = Reader { provider: "gemini" };
    let mut found = Vec::new();
    let root = match payload {
        Value::Array(_) => return gemini_parts(&reader, payload, "", &mut found).map(|()| found),
        other => reader.object(other, "")?,
    };
    let Some(candidates) = root.get("candidates") else {
        let parts = root.get("parts").ok_or_else(|| reader.error("", "expected a response (with `candidates`) or a content (with `parts`)"))?;
        gemini_parts(&reader, parts, "/parts", &mut found)?;
        return Ok(found);
    };
    for (i, candidate) in reader.array(candidates, "/candidates")?.iter().enumerate() {
        let at = format!("/candidates/{i}");
        let candidate = reader.object(candidate, &at)?;
        if let Some(Value::Object(content)) = candidate.get("content")
            && let Some(parts) = content.get("parts").filter(|parts| !parts.is_null())
        {
            gemini_parts(&reader, parts, &format!("{at}/content/parts"), &mut found)?;
        }
        if let Some(grounding) = candidate.get("groundingMetadata").filter(|grounding| !grounding.is_null()) {
            let kind = ItemKind::Outcome;
            found.push(ProviderItem { provider: Provider::Gemini, tool: "google_search".into(), kind, id: None, value: grounding.clone() });
        }
    }
    Ok(found)
}

fn gemini_parts(reader: &Reader, parts: &Value, at: &str, found: &mut Vec<ProviderItem>) -> Result<(), PayloadError> {
    for (i, part) in reader.array(parts, at)?.iter().enumerate() {
        let at = pointer(at, &i.to_string());
        let part = reader.object(part, &at)?;
        let (key, kind) = if part.contains_key("executableCode") {
            ("executableCode", ItemKind::Call)
        } else if part.contains_key("codeExecutionResult") {
            ("codeExecutionResult", ItemKind::Outcome)
        } else {
            continue;
        };
        let inner_at = pointer(&at, key);
        let inner = reader.object(&part[key], &inner_at)?;
        let id = optional_string(reader, inner, "id", &inner_at)?;
        found.push(ProviderItem { provider: Provider::Gemini, tool: "code_execution".into(), kind, id, value: part[key].clone() });
    }
    Ok(())
}

//! Gemini: function declarations, `functionCall` parts and
//! `functionResponse` parts; Gemini's built-ins (Google search, code
//! execution) as tools of their own, read back by [`provider_items`].
//!
//! A declaration's `parameters` is the OpenAPI 3.0 subset Gemini's `Schema`
//! holds (the fields of `google.genai.types.Schema`): `type` (upper case),
//! `format`, `title`, `description`, `nullable`, `enum` (strings only),
//! `default`, `example`, `properties`, `required`, `propertyOrdering`,
//! `minProperties`, `maxProperties`, `items`, `minItems`, `maxItems`,
//! `minimum`, `maximum`, `minLength`, `maxLength`, `pattern`, `anyOf`.
//! So the canonical schema is rewritten:
//!
//! - `$ref`s are inlined and `$defs` dropped; a recursive type is a
//!   [`DialectError::Recursive`] rather than a 400 from the provider;
//! - `additionalProperties`, `$schema` go; type arrays and `anyOf` with a
//!   `null` alternative become `nullable: true`; `oneOf` becomes `anyOf`;
//! - a string `const` becomes a one-value `enum`; non-string enums and
//!   constants, unsupported formats and unsupported keywords are moved into
//!   the description (validation still enforces them);
//! - objects list their properties in `propertyOrdering`, so Gemini keeps
//!   the declaration order, as the Gemini SDK does.
//!
//! A tool without parameters has no `parameters`. An object without
//! properties below the root (a map, an empty struct) is a
//! [`DialectError::Unsupported`]: Gemini refuses such objects.

use serde_json::{Map, Value, json};

pub use super::builtin::items::gemini_items as provider_items;
use super::builtin::{Provider, Route, route};
use super::{DialectError, Export, ExportOptions, PayloadError, Reader, check_name, failed, pointer};
use crate::call::Arguments;
use crate::call::ToolCall;
use crate::ids::fresh_call_id;
use crate::result::CallResult;
use crate::tool::ToolDefinition;
use subset::Subset;

const PROVIDER: &str = "gemini";
const READER: Reader = Reader { provider: PROVIDER };

/// Gemini's rule for function names: a letter or underscore, then letters,
/// digits, underscores, dots, colons or dashes, at most 64 in all.
const NAME_RULE: &str = "^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$";

/// The prefix of the ids given to calls that came without one; such ids are
/// not sent back in `functionResponse`.
const LOCAL_ID_PREFIX: &str = "gemini_";

/// The request's `tools`: one `{"functionDeclarations": [...]}` holding a
/// declaration per tool, or nothing when no tool is offered, then a tool
/// per Gemini built-in (`{"googleSearch": {}}`); other providers' built-ins
/// are left out (a loss says so). `options` is accepted for symmetry; none
/// applies to Gemini.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::providers::{gemini, ExportOptions};
/// use tool_runtime::ToolDefinition;
///
/// let def = ToolDefinition::new("find", "Find orders.", json!({
///     "type": "object",
///     "properties": {"status": {"anyOf": [{"$ref": "#/$defs/Status"}, {"type": "null"}]}},
///     "required": [],
///     "additionalProperties": false,
///     "$defs": {"Status": {"type": "string", "enum": ["open", "shipped"]}}
/// }));
/// let export = gemini::tools([&def], &ExportOptions::default()).unwrap();
/// let declaration = &export.tools[0]["functionDeclarations"][0];
/// assert_eq!(declaration["parameters"]["properties"]["status"], json!({
///     "type": "STRING", "enum": ["open", "shipped"], "nullable": true
/// }));
/// ```
pub fn tools<'a>(defs: impl IntoIterator<Item = &'a ToolDefinition>, options: &ExportOptions) -> Result<Export, DialectError> {
    let _ = options;
    let (mut declarations, mut losses, mut builtins) = (Vec::new(), Vec::new(), Vec::new());
    for def in defs {
        match route(def, "Gemini", Some(Provider::Gemini)) {
            Route::Entry(entry) => builtins.push(entry.clone()),
            Route::Skip(loss) => losses.push(loss),
            Route::Function => {
                let (declaration, lost) = declaration(def)?;
                declarations.push(declaration);
                losses.extend(lost);
            }
        }
    }
    let mut tools = if declarations.is_empty() { Vec::new() } else { vec![json!({"functionDeclarations": declarations})] };
    tools.extend(builtins);
    Ok(Export { tools, losses })
}

fn declaration(def: &ToolDefinition) -> Result<(Value, Vec<super::Loss>), DialectError> {
    check_name(
        PROVIDER,
        &def.name,
        NAME_RULE,
        |c| c.is_ascii_alphabetic() || c == '_',
        |c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'),
        64,
    )?;
    let exported = super::exported(def);
    let def = &*exported;
    let mut subset = Subset::new(def);
    let parameters = subset.schema(&def.input_schema, "", "")?;
    let mut declaration = Map::new();
    declaration.insert("name".into(), def.name.clone().into());
    declaration.insert("description".into(), def.description.clone().into());
    let has_parameters = parameters.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty());
    if has_parameters {
        declaration.insert("parameters".into(), parameters);
    }
    Ok((Value::Object(declaration), subset.losses.into_vec()))
}

/// The `functionCall` parts of a response's first candidate (or of a
/// content, or of its parts array). Calls without an `id` get a fresh one,
/// which [`results`] does not send back; absent `args` mean `{}`.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::providers::gemini;
///
/// let response = json!({"candidates": [{"content": {"role": "model", "parts": [
///     {"functionCall": {"name": "find", "args": {"status": "open"}}}
/// ]}}]});
/// let calls = gemini::parse_calls(&response).unwrap();
/// assert_eq!(calls[0].name, "find");
/// assert!(!calls[0].id.is_empty());
/// ```
pub fn parse_calls(payload: &Value) -> Result<Vec<ToolCall>, PayloadError> {
    let (parts, at) = match payload {
        Value::Array(parts) => (parts.as_slice(), String::new()),
        other => {
            let root = READER.object(other, "")?;
            let (content, at) = if let Some(candidates) = root.get("candidates") {
                let candidates = READER.array(candidates, "/candidates")?;
                let first = candidates.first().ok_or_else(|| READER.error("/candidates", "expected at least one candidate"))?;
                let candidate = READER.object(first, "/candidates/0")?;
                let Some(content) = candidate.get("content") else {
                    // A candidate stopped for safety or length has no content.
                    return Ok(Vec::new());
                };
                (READER.object(content, "/candidates/0/content")?, "/candidates/0/content".to_owned())
            } else if root.contains_key("parts") {
                (root, String::new())
            } else {
                return Err(READER.error("", "expected a response (with `candidates`) or a content (with `parts`)"));
            };
            match content.get("parts") {
                None | Some(Value::Null) => return Ok(Vec::new()),
                Some(parts) => {
                    let at = pointer(&at, "parts");
                    (READER.array(parts, &at)?, at)
                }
            }
        }
    };
    let mut calls = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let at = pointer(&at, &i.to_string());
        let part = READER.object(part, &at)?;
        let Some(call) = part.get("functionCall") else { continue };
        let at = pointer(&at, "functionCall");
        let call = READER.object(call, &at)?;
        let name = READER.string(call, "name", &at)?;
        let id = match call.get("id") {
            None | Some(Value::Null) => format!("{LOCAL_ID_PREFIX}{}", fresh_call_id()),
            Some(Value::String(id)) => id.clone(),
            Some(_) => return Err(READER.error(&pointer(&at, "id"), "expected a string")),
        };
        let args = match call.get("args") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(args @ Value::Object(_)) => args.clone(),
            Some(_) => return Err(READER.error(&pointer(&at, "args"), "expected an object")),
        };
        calls.push(ToolCall::new(id, name, Arguments::Value(args)));
    }
    Ok(calls)
}

/// One `user` content with a `functionResponse` part per result, in the
/// calls' order: `response: {"output": text}`, or `{"error": text}` for
/// failures, refusals and rejections. Empty when there are no results.
///
/// ```
/// # use std::sync::Arc;
/// # use tool_runtime::prelude::*;
/// # use tool_runtime::providers::gemini;
/// /// Echo.
/// #[tool]
/// async fn echo(text: String) -> String { text }
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// # let registry = Registry::<()>::builder().tools(tools![echo]).build().unwrap();
/// let result = registry.call(&Arc::new(()), "echo", r#"{"text": "hi"}"#).call_id("fc_1").await.into_result().unwrap();
/// let contents = gemini::results(&[result]);
/// assert_eq!(contents[0]["parts"][0]["functionResponse"], serde_json::json!({
///     "id": "fc_1", "name": "echo", "response": {"output": "hi"}
/// }));
/// # }
/// ```
pub fn results(results: &[CallResult]) -> Vec<Value> {
    if results.is_empty() {
        return Vec::new();
    }
    let parts: Vec<Value> = results
        .iter()
        .map(|result| {
            let mut response = Map::new();
            if !result.call_id.starts_with(LOCAL_ID_PREFIX) {
                response.insert("id".into(), result.call_id.as_str().into());
            }
            response.insert("name".into(), result.tool.as_str().into());
            let key = if failed(result) { "error" } else { "output" };
            super::blocks::gemini(result, key, &mut response);
            json!({"functionResponse": response})
        })
        .collect();
    vec![json!({"role": "user", "parts": parts})]
}

mod subset;
#[cfg(test)]
mod tests;

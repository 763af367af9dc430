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
use super::{
    DialectError, Export, ExportOptions, Losses, Moved, PayloadError, Reader, check_name, discriminated, failed, pointer, rename, show, show_all,
};
use crate::call::Arguments;
use crate::ids::fresh_call_id;
use crate::result::CallResult;
use crate::run::ToolCall;
use crate::schema::resolve;
use crate::tool::ToolDefinition;

const PROVIDER: &str = "gemini";
const READER: Reader = Reader { provider: PROVIDER };

/// Gemini's rule for function names: a letter or underscore, then letters,
/// digits, underscores, dots, colons or dashes, at most 64 in all.
const NAME_RULE: &str = "^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$";

/// The prefix of the ids given to calls that came without one; such ids are
/// not sent back in `functionResponse`.
const LOCAL_ID_PREFIX: &str = "gemini_";

/// Keywords Gemini's `Schema` keeps as they are.
const KEPT: &[&str] = &[
    "title",
    "description",
    "default",
    "required",
    "minProperties",
    "maxProperties",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
];

/// Keywords that only inform the model.
const INFORMATIONAL: &[&str] = &["deprecated", "readOnly", "writeOnly", "$comment", "$id", "$anchor", "contentEncoding", "contentMediaType"];

/// The formats Gemini documents, per type.
fn format_supported(kind: Option<&str>, format: &str) -> bool {
    match kind {
        Some("STRING") => matches!(format, "enum" | "date-time"),
        Some("NUMBER") => matches!(format, "float" | "double"),
        Some("INTEGER") => matches!(format, "int32" | "int64"),
        _ => false,
    }
}

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
    let mut subset = Subset { def, losses: Losses::new(&def.name), stack: Vec::new() };
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

struct Subset<'a> {
    def: &'a ToolDefinition,
    losses: Losses,
    /// The definitions being inlined, outermost first.
    stack: Vec<String>,
}

impl Subset<'_> {
    /// Rewrites one node. `at` is where it lands in the exported schema,
    /// `source` where it is in the canonical one.
    fn schema(&mut self, node: &Value, at: &str, source: &str) -> Result<Value, DialectError> {
        let map = match node {
            Value::Object(map) => map.clone(),
            Value::Bool(true) => return Ok(json!({})),
            Value::Bool(false) => {
                self.losses.constraint(at, "false", "a schema that accepts nothing cannot be expressed; dropped");
                return Ok(json!({}));
            }
            other => return Ok(other.clone()),
        };
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            return self.inline(&map, reference, at, source);
        }
        let mut map = map;
        if let Some(Value::Array(members)) = map.get("allOf")
            && let [member] = members.as_slice()
            && let Some(member) = member.as_object().cloned()
        {
            map.shift_remove("allOf");
            let mut merged = member;
            for (key, value) in map {
                merged.insert(key, value);
            }
            return self.schema(&Value::Object(merged), at, source);
        }
        let mut nullable = false;
        for key in ["anyOf", "oneOf"] {
            let Some(Value::Array(alternatives)) = map.get(key).cloned() else { continue };
            let (nulls, rest): (Vec<Value>, Vec<Value>) = alternatives.into_iter().partition(crate::schema::is_null_schema);
            nullable |= !nulls.is_empty();
            if key == "oneOf" && rest.len() > 1 && !discriminated(&rest, &self.def.input_schema) {
                self.losses.constraint(at, "oneOf", "became anyOf: Gemini has no oneOf; validation still requires exactly one match");
            }
            map.shift_remove(key);
            if let [only] = rest.as_slice() {
                // `Option<T>`: the one alternative, with this node's own
                // keywords (its description) winning.
                let mut merged = only.as_object().cloned().unwrap_or_default();
                for (key, value) in map {
                    merged.insert(key, value);
                }
                let mut out = self.schema(&Value::Object(merged), at, source)?;
                if nullable && let Value::Object(out) = &mut out {
                    out.insert("nullable".into(), true.into());
                }
                return Ok(out);
            }
            if !rest.is_empty() {
                map.insert("anyOf".into(), Value::Array(rest));
            }
        }
        let mut out = Map::new();
        let mut moved = Moved::default();
        let kind = match map.get("type") {
            Some(Value::String(kind)) => {
                nullable |= kind == "null";
                (kind != "null").then(|| kind.to_uppercase())
            }
            Some(Value::Array(kinds)) => {
                let non_null: Vec<&str> = kinds.iter().filter_map(Value::as_str).filter(|kind| *kind != "null").collect();
                nullable |= non_null.len() < kinds.len();
                match non_null.as_slice() {
                    [one] => Some(one.to_uppercase()),
                    [] => None,
                    several => {
                        map.insert("anyOf".into(), Value::Array(several.iter().map(|kind| json!({"type": kind})).collect()));
                        None
                    }
                }
            }
            _ => None,
        };
        let mut kind = kind;
        if let Some(constant) = map.get("const").filter(|_| !map.contains_key("enum")).cloned() {
            rename(&mut map, "const", "enum", Value::Array(vec![constant]));
        }
        if let Some(Value::Array(values)) = map.get("enum").cloned() {
            let (nulls, values): (Vec<Value>, Vec<Value>) = values.into_iter().partition(Value::is_null);
            nullable |= !nulls.is_empty();
            if values.iter().all(Value::is_string) {
                kind.get_or_insert_with(|| "STRING".to_owned());
                map.insert("enum".into(), Value::Array(values));
            } else {
                map.shift_remove("enum");
                self.losses.constraint(at, "enum", "moved into the description: Gemini enums hold strings only; validation still enforces it");
                let sentence = match values.as_slice() {
                    [one] => format!("Allowed value: {}.", show(one)),
                    _ => format!("Allowed values: {}.", show_all(&values)),
                };
                moved.sentence(sentence);
            }
        }
        if let Some(kind) = &kind {
            out.insert("type".into(), kind.clone().into());
        }
        for (key, value) in map {
            match key.as_str() {
                "type" | "$schema" | "$defs" => {}
                "enum" => {
                    out.insert(key, value);
                }
                "properties" => {
                    let mut properties = Map::new();
                    if let Value::Object(source_properties) = &value {
                        for (name, schema) in source_properties {
                            let at = pointer(&pointer(at, "properties"), name);
                            let source = pointer(&pointer(source, "properties"), name);
                            properties.insert(name.clone(), self.schema(schema, &at, &source)?);
                        }
                    }
                    if properties.len() > 1 {
                        let order: Vec<Value> = properties.keys().cloned().map(Value::String).collect();
                        out.insert("properties".into(), Value::Object(properties));
                        out.insert("propertyOrdering".into(), Value::Array(order));
                    } else {
                        out.insert("properties".into(), Value::Object(properties));
                    }
                }
                "items" if value.is_object() || value.is_boolean() => {
                    let items = self.schema(&value, &pointer(at, "items"), &pointer(source, "items"))?;
                    out.insert(key, items);
                }
                "anyOf" => {
                    let mut alternatives = Vec::new();
                    for (i, alternative) in value.as_array().into_iter().flatten().enumerate() {
                        let at = pointer(&pointer(at, "anyOf"), &i.to_string());
                        let source = pointer(&pointer(source, "anyOf"), &i.to_string());
                        alternatives.push(self.schema(alternative, &at, &source)?);
                    }
                    out.insert(key, Value::Array(alternatives));
                }
                "additionalProperties" => {
                    let note = if value == Value::Bool(false) {
                        "dropped: Gemini has no additionalProperties, so it is not told that other properties are refused; validation refuses them"
                    } else {
                        "moved into the description: Gemini has no additionalProperties; validation still enforces it"
                    };
                    self.losses.constraint(at, "additionalProperties", note);
                    if value != Value::Bool(false) {
                        moved.constraint("additionalProperties", &value);
                    }
                }
                "format" => {
                    let format = value.as_str().unwrap_or_default();
                    if format_supported(kind.as_deref(), format) {
                        out.insert(key, value);
                    } else {
                        self.losses.information(at, "format", "moved into the description: Gemini does not support this format");
                        moved.sentence(format!("Format: {}.", value.as_str().map_or_else(|| value.to_string(), str::to_owned)));
                    }
                }
                "examples" => {
                    let examples = value.as_array().cloned().unwrap_or_else(|| vec![value.clone()]);
                    if let Some(first) = examples.first() {
                        out.insert("example".into(), first.clone());
                    }
                    if examples.len() > 1 {
                        self.losses.information(at, "examples", "Gemini keeps one example; the others were moved into the description");
                        moved.sentence(format!("Examples: {}.", show_all(&examples)));
                    }
                }
                _ if KEPT.contains(&key.as_str()) => {
                    out.insert(key, value);
                }
                _ if INFORMATIONAL.contains(&key.as_str()) => {
                    self.losses.information(at, &key, "dropped: Gemini does not support it");
                }
                _ => {
                    self.losses.constraint(at, &key, "moved into the description: Gemini does not support it; validation still enforces it");
                    moved.constraint(&key, &value);
                }
            }
        }
        let no_properties = out.get("properties").and_then(Value::as_object).is_none_or(Map::is_empty);
        if kind.as_deref() == Some("OBJECT") && no_properties && !at.is_empty() {
            // Gemini answers 400 ("should be non-empty for OBJECT type").
            return Err(DialectError::Unsupported {
                provider: PROVIDER,
                tool: self.def.name.clone(),
                what: "an object without properties (a map, or a struct without fields) cannot be declared to Gemini".into(),
                pointer: source.to_owned(),
            });
        }
        if nullable {
            out.insert("nullable".into(), true.into());
        }
        moved.apply(&mut out);
        Ok(Value::Object(out))
    }

    /// Inlines a `$ref`, the node's own keywords winning; a type that is
    /// already being inlined contains itself.
    fn inline(&mut self, map: &Map<String, Value>, reference: &str, at: &str, source: &str) -> Result<Value, DialectError> {
        let Some((Value::Object(target), name)) = resolve(&self.def.input_schema, reference) else {
            return Err(DialectError::Reference {
                provider: PROVIDER,
                tool: self.def.name.clone(),
                reference: reference.to_owned(),
                pointer: source.to_owned(),
            });
        };
        if self.stack.contains(&name) {
            return Err(DialectError::Recursive { provider: PROVIDER, tool: self.def.name.clone(), type_name: name, pointer: source.to_owned() });
        }
        let mut merged = target.clone();
        for (key, value) in map {
            if key != "$ref" {
                merged.insert(key.clone(), value.clone());
            }
        }
        self.stack.push(name);
        let out = self.schema(&Value::Object(merged), at, reference.trim_start_matches('#'));
        self.stack.pop();
        out
    }
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

#[cfg(test)]
mod tests;

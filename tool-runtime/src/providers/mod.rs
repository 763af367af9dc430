//! Provider dialects: the one canonical schema of each tool, exported for
//! one provider as a separate pass; the provider's tool-call payloads parsed
//! into [`ToolCall`](crate::ToolCall)s; and [`CallResult`]s rendered back
//! into that provider's message shape.
//!
//! Every provider module has the same three functions:
//!
//! - `tools(defs, &ExportOptions) -> Result<Export, DialectError>`: the
//!   value of the request's `tools` field for the tools offered in a step,
//!   and what the dialect lost of each schema;
//! - `parse_calls(&Value) -> Result<Vec<ToolCall>, PayloadError>`: the tool
//!   calls of a response;
//! - `results(&[CallResult]) -> Vec<Value>`: the messages (or items) to
//!   append to the conversation. A result with content blocks
//!   ([`Block`](crate::Block)) is rendered in the dialect's own shape where
//!   it has one; a block it cannot carry is described in text, and is a
//!   [`ResultLoss`] ([`result_losses`]; the `blocks` module's table says
//!   which dialect carries what).
//!
//! | module | dialect |
//! |---|---|
//! | [`openai::chat`] | OpenAI Chat Completions, with strict mode |
//! | [`openai::responses`] | OpenAI Responses, with strict mode |
//! | [`anthropic`] | Anthropic Messages |
//! | [`gemini`] | Gemini function declarations (the OpenAPI 3.0 subset) |
//! | [`mcp`] | MCP `tools/list` entries (annotations as hints, `outputSchema`) |
//!
//! [`builtin`] holds the providers' own tools (web search, code execution,
//! Anthropic's bash...): declared in a registry, each exported to its own
//! provider only, their calls and results read back by `provider_items`.
//!
//! Every dialect exports a tool's schemas with the `format`s of JSON Schema
//! only (one function, `exported`, does it for all): schemars' names of
//! number types (`uint32`, `int64`, `double`) are dropped, and an
//! integer's range stays as `minimum` and
//! `maximum`, which the canonical schema states for every integer type.
//!
//! A host loop with any HTTP client is then a few lines:
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use tool_runtime::prelude::*;
//! use tool_runtime::providers::{anthropic, ExportOptions};
//!
//! /// Add two numbers.
//! #[tool(read_only)]
//! async fn add(a: i64, b: i64) -> i64 { a + b }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let registry = Registry::<()>::builder().tools(tools![add]).build().unwrap();
//! let mut run = registry.run(Arc::new(()));
//! let export = anthropic::tools(run.offered(), &ExportOptions::default()).unwrap();
//! assert_eq!(export.tools[0]["name"], "add");
//! // ... send `export.tools` to the model; it answers:
//! let response = json!({"role": "assistant", "content": [
//!     {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}}
//! ]});
//! let calls = anthropic::parse_calls(&response).unwrap();
//! let step = run.execute(calls).await;
//! let reply = anthropic::results(&step.results);
//! assert_eq!(reply[0]["content"][0]["content"], "5");
//! # }
//! ```

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::result::{CallResult, ResultKind};
use crate::tool::ToolDefinition;

pub mod anthropic;
mod blocks;
pub mod builtin;
pub mod gemini;
pub mod mcp;
pub mod openai;
mod prepared;

pub use blocks::{ResultLoss, result_losses};
pub use prepared::{Dialect, Prepared};

/// Settings of an export.
///
/// ```
/// use tool_runtime::providers::ExportOptions;
///
/// let never_strict = ExportOptions::new().strict(false);
/// assert_eq!(never_strict.strict, Some(false));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportOptions {
    /// Strict mode (OpenAI) for tools that do not set `strict` themselves:
    /// `None` (the default) turns it on for each tool whose schema strict
    /// mode can express without losing a constraint; `Some(true)` forces
    /// it, `Some(false)` never uses it. A tool's own `strict = bool` wins.
    pub strict: Option<bool>,
}

impl ExportOptions {
    /// The defaults: strict mode decided per tool.
    pub fn new() -> Self {
        ExportOptions::default()
    }

    /// Strict mode for every tool that does not set it itself.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = Some(strict);
        self
    }
}

/// The tools of one step, in one provider's dialect.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Export {
    /// The value of the request's `tools` field, one element per tool
    /// (for Gemini, one element holding every function declaration). Empty
    /// when no tool is offered: leave the field out of the request then.
    pub tools: Vec<Value>,
    /// What the dialect could not say, per tool, for the host to log. The
    /// runtime's own validation still enforces every constraint listed.
    pub losses: Vec<Loss>,
}

/// One keyword of a canonical schema that a dialect could not carry as a
/// keyword: moved into the description, converted, or dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Loss {
    /// The tool.
    pub tool: String,
    /// Where, as a JSON pointer into the exported schema (`""` is its root).
    pub pointer: String,
    /// The keyword, as the canonical schema spells it.
    pub keyword: String,
    /// What happened to it.
    pub note: String,
    /// Whether the keyword constrained the accepted values (a range, a
    /// length, closed objects...) rather than only informing the model (a
    /// default, a title, an example). A constraint that the provider no
    /// longer sees keeps strict mode off unless forced; validation still
    /// enforces it.
    pub constraint: bool,
}

impl fmt::Display for Loss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pointer = if self.pointer.is_empty() { "(root)" } else { &self.pointer };
        let kind = if self.constraint { "constraint" } else { "information" };
        write!(f, "{} {pointer}: `{}` ({kind}): {}", self.tool, self.keyword, self.note)
    }
}

/// A tool that a dialect cannot express at all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DialectError {
    /// The tool's name breaks the provider's rule for names.
    #[error("{provider}: the tool name `{tool}` does not match the provider's rule `{rule}`")]
    Name {
        /// The dialect.
        provider: &'static str,
        /// The tool.
        tool: String,
        /// The provider's rule, as a regular expression.
        rule: &'static str,
    },
    /// A type contains itself, which the dialect cannot express.
    #[error(
        "{provider}: tool `{tool}`: the type `{type_name}` contains itself (at `{pointer}`), and {provider} function declarations cannot express recursive types; make the type finite or do not offer this tool to {provider}"
    )]
    Recursive {
        /// The dialect.
        provider: &'static str,
        /// The tool.
        tool: String,
        /// The name of the recursive type (its `$defs` entry).
        type_name: String,
        /// Where the type refers to itself, in the canonical schema.
        pointer: String,
    },
    /// A part of the schema the dialect has no way to say.
    #[error("{provider}: tool `{tool}`: {what} (at `{pointer}`); do not offer this tool to {provider}, or change its input type")]
    Unsupported {
        /// The dialect.
        provider: &'static str,
        /// The tool.
        tool: String,
        /// What cannot be said.
        what: String,
        /// Where, in the canonical schema.
        pointer: String,
    },
    /// A `$ref` that does not point into the schema itself.
    #[error("{provider}: tool `{tool}`: the reference `{reference}` at `{pointer}` does not point into the schema's own `$defs`")]
    Reference {
        /// The dialect.
        provider: &'static str,
        /// The tool.
        tool: String,
        /// The `$ref` value.
        reference: String,
        /// Where, in the canonical schema.
        pointer: String,
    },
}

/// A provider payload that does not have the shape the provider documents.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed {provider} payload at `{pointer}`: {problem}")]
#[non_exhaustive]
pub struct PayloadError {
    /// The dialect.
    pub provider: &'static str,
    /// Where, as a JSON pointer into the payload (`""` is its root).
    pub pointer: String,
    /// What was expected there.
    pub problem: String,
}

/// The definition as every dialect exports it: its input, output and
/// failure schemas without the formats that are not JSON Schema's
/// (`crate::schema::standard_formats_only`); the definition itself when
/// they have none.
pub(crate) fn exported(def: &ToolDefinition) -> Cow<'_, ToolDefinition> {
    let clean = |schema: &Arc<Value>| crate::schema::standard_formats_only(schema).map(Arc::new);
    let input = clean(&def.input_schema);
    let output = def.output_schema.as_ref().and_then(clean);
    let failure = def.failure_schema.as_ref().and_then(clean);
    if input.is_none() && output.is_none() && failure.is_none() {
        return Cow::Borrowed(def);
    }
    let mut def = def.clone();
    def.input_schema = input.unwrap_or(def.input_schema);
    def.output_schema = output.or(def.output_schema);
    def.failure_schema = failure.or(def.failure_schema);
    Cow::Owned(def)
}

/// Whether a result tells the model that the call failed: errors, invalid
/// input, refusals and rejections, not a success nor a call that waits for
/// a human.
pub(crate) fn failed(result: &CallResult) -> bool {
    !matches!(result.kind, ResultKind::Success | ResultKind::PendingApproval | ResultKind::External)
}

/// Collects the losses of one tool's export.
pub(crate) struct Losses {
    tool: String,
    list: Vec<Loss>,
}

impl Losses {
    pub(crate) fn new(tool: &str) -> Self {
        Losses { tool: tool.to_owned(), list: Vec::new() }
    }

    pub(crate) fn constraint(&mut self, pointer: &str, keyword: &str, note: impl Into<String>) {
        self.push(pointer, keyword, note.into(), true);
    }

    pub(crate) fn information(&mut self, pointer: &str, keyword: &str, note: impl Into<String>) {
        self.push(pointer, keyword, note.into(), false);
    }

    fn push(&mut self, pointer: &str, keyword: &str, note: String, constraint: bool) {
        let loss = Loss { tool: self.tool.clone(), pointer: pointer.to_owned(), keyword: keyword.to_owned(), note, constraint };
        if !self.list.contains(&loss) {
            self.list.push(loss);
        }
    }

    pub(crate) fn has_constraints(&self) -> bool {
        self.list.iter().any(|loss| loss.constraint)
    }

    pub(crate) fn into_vec(self) -> Vec<Loss> {
        self.list
    }
}

/// What a dialect appends to a schema's description for the keywords it
/// moved there: informational sentences first, then one `Constraints:`
/// sentence.
#[derive(Default)]
pub(crate) struct Moved {
    sentences: Vec<String>,
    constraints: Vec<String>,
}

impl Moved {
    pub(crate) fn sentence(&mut self, sentence: String) {
        self.sentences.push(sentence);
    }

    pub(crate) fn constraint(&mut self, keyword: &str, value: &Value) {
        self.constraints.push(format!("{keyword} {}", show(value)));
    }

    /// Appends the moved text to `node`'s description.
    pub(crate) fn apply(self, node: &mut Map<String, Value>) {
        let mut parts = self.sentences;
        if !self.constraints.is_empty() {
            parts.push(format!("Constraints: {}.", self.constraints.join(", ")));
        }
        if parts.is_empty() {
            return;
        }
        let moved = parts.join(" ");
        let text = match node.get("description").and_then(Value::as_str) {
            Some(existing) if !existing.trim().is_empty() => {
                let existing = existing.trim_end();
                let stop = if existing.ends_with(['.', '!', '?', ':']) { "" } else { "." };
                format!("{existing}{stop} {moved}")
            }
            _ => moved,
        };
        node.insert("description".into(), Value::String(text));
    }
}

/// Replaces the keyword `from` by `to` with `value`, where `from` stood
/// (serde_json's `remove` would move the last keyword into its place).
pub(crate) fn rename(map: &mut Map<String, Value>, from: &str, to: &str, value: Value) {
    let mut value = Some(value);
    for (key, old) in std::mem::take(map) {
        if key == from {
            if let Some(value) = value.take() {
                map.insert(to.to_owned(), value);
            }
        } else if key != to {
            map.insert(key, old);
        }
    }
}

/// A value as the description shows it: strings and numbers as they are
/// read in text, everything else as compact JSON.
pub(crate) fn show(value: &Value) -> String {
    match value {
        // Unescaped, so a pattern reads as written.
        Value::String(text) => format!("\"{text}\""),
        other => other.to_string(),
    }
}

/// `values` as a list for a description: `"a", "b", 3`.
pub(crate) fn show_all(values: &[Value]) -> String {
    values.iter().map(show).collect::<Vec<_>>().join(", ")
}

/// `base` with one more JSON pointer token, escaped.
pub(crate) fn pointer(base: &str, token: &str) -> String {
    format!("{base}/{}", token.replace('~', "~0").replace('/', "~1"))
}

/// Whether the alternatives of a `oneOf` exclude each other by a tag: each
/// is an object whose same required property has a different constant
/// value (what serde's tagged enums make). Then `anyOf` means the same.
pub(crate) fn discriminated(alternatives: &[Value], root: &Value) -> bool {
    let objects: Vec<&Map<String, Value>> = alternatives
        .iter()
        .filter_map(|alt| {
            let alt = alt.as_object()?;
            match crate::schema::ref_target(alt, root) {
                Some(target) => target.as_object(),
                None => Some(alt),
            }
        })
        .collect();
    if objects.len() != alternatives.len() || objects.len() < 2 {
        return false;
    }
    let Some(Value::Object(first)) = objects[0].get("properties") else {
        return false;
    };
    first.keys().any(|tag| {
        let mut seen: Vec<&Value> = Vec::new();
        objects.iter().all(|object| {
            let required = object.get("required").and_then(Value::as_array).is_some_and(|names| names.iter().any(|n| n == tag));
            let value = object
                .get("properties")
                .and_then(|p| p.get(tag))
                .and_then(|p| p.get("const").or_else(|| p.get("enum").and_then(Value::as_array).filter(|e| e.len() == 1).and_then(|e| e.first())));
            match value {
                Some(value) if required && !seen.contains(&value) => {
                    seen.push(value);
                    true
                }
                _ => false,
            }
        })
    })
}

/// Checks a tool name against a provider's rule: allowed characters, a
/// first-character rule, and a maximum length.
pub(crate) fn check_name(
    provider: &'static str,
    name: &str,
    rule: &'static str,
    first: fn(char) -> bool,
    rest: fn(char) -> bool,
    max: usize,
) -> Result<(), DialectError> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(first) && chars.all(rest) && name.chars().count() <= max;
    if ok { Ok(()) } else { Err(DialectError::Name { provider, tool: name.to_owned(), rule }) }
}

/// Reads a provider payload, with errors that say where it went wrong.
pub(crate) struct Reader {
    pub(crate) provider: &'static str,
}

impl Reader {
    pub(crate) fn error(&self, pointer: &str, problem: impl Into<String>) -> PayloadError {
        PayloadError { provider: self.provider, pointer: pointer.to_owned(), problem: problem.into() }
    }

    pub(crate) fn object<'v>(&self, value: &'v Value, at: &str) -> Result<&'v Map<String, Value>, PayloadError> {
        value.as_object().ok_or_else(|| self.error(at, format!("expected an object, found {}", kind(value))))
    }

    pub(crate) fn array<'v>(&self, value: &'v Value, at: &str) -> Result<&'v [Value], PayloadError> {
        value.as_array().map(Vec::as_slice).ok_or_else(|| self.error(at, format!("expected an array, found {}", kind(value))))
    }

    /// A field that must be there.
    pub(crate) fn field<'v>(&self, map: &'v Map<String, Value>, key: &str, at: &str) -> Result<&'v Value, PayloadError> {
        map.get(key).ok_or_else(|| self.error(at, format!("missing `{key}`")))
    }

    /// A string field that must be there.
    pub(crate) fn string<'v>(&self, map: &'v Map<String, Value>, key: &str, at: &str) -> Result<&'v str, PayloadError> {
        let value = self.field(map, key, at)?;
        value.as_str().ok_or_else(|| self.error(&pointer(at, key), format!("expected a string, found {}", kind(value))))
    }
}

/// The JSON type of a value, for error messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn moved_text_is_appended_as_sentences() {
        let mut node = Map::new();
        node.insert("description".into(), json!("Two or three sentences"));
        let mut moved = Moved::default();
        moved.sentence("Default: \"en\".".into());
        moved.constraint("minLength", &json!(10));
        moved.constraint("maxLength", &json!(600));
        moved.apply(&mut node);
        assert_eq!(node["description"], "Two or three sentences. Default: \"en\". Constraints: minLength 10, maxLength 600.");
        let mut bare = Map::new();
        let mut moved = Moved::default();
        moved.constraint("uniqueItems", &json!(true));
        moved.apply(&mut bare);
        assert_eq!(bare["description"], "Constraints: uniqueItems true.");
    }

    #[test]
    fn tagged_alternatives_are_discriminated() {
        let root = json!({});
        let tagged = [
            json!({"type": "object", "properties": {"kind": {"const": "a"}}, "required": ["kind"]}),
            json!({"type": "object", "properties": {"kind": {"const": "b"}}, "required": ["kind"]}),
        ];
        assert!(discriminated(&tagged, &root));
        let same_tag = [tagged[0].clone(), tagged[0].clone()];
        assert!(!discriminated(&same_tag, &root));
        let untagged = [json!({"type": "string"}), json!({"type": "integer"})];
        assert!(!discriminated(&untagged, &root));
    }
}

//! A registry's tools exported once per dialect, so that each step's
//! payload is a join of ready-made JSON texts.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use serde_json::Value;

use super::{DialectError, Export, ExportOptions, Loss, anthropic, gemini, mcp, openai};
use crate::tool::ToolDefinition;

/// A provider dialect, for a [`Prepared`] export.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// [`openai::chat`]: the `tools` array of a Chat Completions request.
    OpenAiChat,
    /// [`openai::responses`]: the `tools` array of a Responses request.
    OpenAiResponses,
    /// [`anthropic`]: the `tools` array of a Messages request.
    Anthropic,
    /// [`gemini`]: `[{"functionDeclarations": [...]}]`.
    Gemini,
    /// [`mcp`]: a `tools/list` result, `{"tools": [...]}`.
    Mcp,
}

/// The tools of a registry in one dialect, each serialised once, so that
/// the payload of a step is a join of ready-made JSON texts: the cost of a
/// step is linear in the tools it offers, and no schema is converted or
/// serialised inside it.
///
/// Build it once per registry and dialect (the export is the same as the
/// dialect's own `tools` function gives, tool by tool), then ask it for the
/// payload of each step:
///
/// ```
/// use std::sync::Arc;
/// use serde_json::{json, Value};
/// use tool_runtime::prelude::*;
/// use tool_runtime::providers::{openai, Dialect, ExportOptions, Prepared};
///
/// /// Add two numbers.
/// #[tool(read_only)]
/// async fn add(a: i64, b: i64) -> i64 { a + b }
///
/// /// Only on the first step.
/// #[tool(visible_when = first)]
/// async fn greet() -> String { "hi".into() }
/// fn first<App>(view: &StepView<'_, App>) -> bool { view.step == 0 }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let registry = Registry::<()>::builder().tools(tools![add, greet]).build().unwrap();
/// let prepared = Prepared::new(Dialect::OpenAiChat, registry.definitions(), &ExportOptions::default()).unwrap();
/// let mut run = registry.run(Arc::new(()));
/// let tools: Value = serde_json::from_str(&prepared.payload(run.offered())).unwrap();
/// assert_eq!(tools, json!(openai::chat::tools(run.offered(), &ExportOptions::default()).unwrap().tools));
/// run.execute(vec![]).await;
/// let tools: Value = serde_json::from_str(&prepared.payload(run.offered())).unwrap();
/// assert_eq!(tools[0]["function"]["name"], "add");
/// assert_eq!(tools.as_array().unwrap().len(), 1);
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Prepared {
    dialect: Dialect,
    options: ExportOptions,
    /// Every entry's JSON text, in the order given to `new`, joined by
    /// commas: offered tools that are neighbours there are copied as one
    /// span (all tools of a registry, in order, are one copy).
    text: Arc<str>,
    /// Each tool's name, the span of its entry in `text`, and the input
    /// schema it was made from.
    entries: Vec<(Arc<str>, Range<usize>, Arc<Value>)>,
    index: HashMap<Arc<str>, usize>,
    /// Gemini's built-ins, each a tool of its own after the one holding the
    /// function declarations: their names and entries.
    separate: Vec<(Arc<str>, Arc<str>)>,
    /// Built-ins of other providers, left out of this dialect.
    skipped: Vec<Arc<str>>,
    losses: Vec<Loss>,
}

impl Prepared {
    /// Exports every tool of `defs` (usually `registry.definitions()`) in
    /// `dialect` and serialises each entry. Fails as the dialect's own
    /// `tools` function would, on the first tool it cannot express.
    pub fn new<'a>(dialect: Dialect, defs: impl IntoIterator<Item = &'a ToolDefinition>, options: &ExportOptions) -> Result<Prepared, DialectError> {
        let mut text = String::new();
        let (mut entries, mut index, mut all_losses) = (Vec::new(), HashMap::new(), Vec::new());
        let (mut separate, mut skipped) = (Vec::new(), Vec::new());
        for def in defs {
            let (exported, losses) = entry(dialect, def, options)?;
            all_losses.extend(losses);
            let entry = match exported {
                Exported::Entry(entry) => entry,
                Exported::Separate(entry) => {
                    separate.push((def.name.as_str().into(), entry));
                    continue;
                }
                Exported::Skipped => {
                    skipped.push(def.name.as_str().into());
                    continue;
                }
            };
            if !text.is_empty() {
                text.push(',');
            }
            let start = text.len();
            text.push_str(&entry);
            let name: Arc<str> = def.name.as_str().into();
            index.insert(name.clone(), entries.len());
            entries.push((name, start..text.len(), def.input_schema.clone()));
        }
        Ok(Prepared { dialect, options: options.clone(), text: text.into(), entries, index, separate, skipped, losses: all_losses })
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// What the dialect lost of each schema (as [`Export::losses`]).
    pub fn losses(&self) -> &[Loss] {
        &self.losses
    }

    /// One tool's entry, as JSON text (for Gemini, its function
    /// declaration, or the tool of a built-in; for MCP, its `tools/list`
    /// element). `None` for a tool not prepared, or left out of the dialect.
    pub fn entry(&self, name: &str) -> Option<&str> {
        match self.index.get(name) {
            Some(&i) => Some(&self.text[self.entries[i].1.clone()]),
            None => self.separate.iter().find(|(separate, _)| **separate == *name).map(|(_, entry)| &**entry),
        }
    }

    /// The payload for the tools offered in a step (usually
    /// [`Run::offered`](crate::Run::offered)), as JSON text: the value of
    /// the request's `tools` field (for MCP, the whole `tools/list`
    /// result). The entries are joined in the order given. A tool that
    /// was not prepared, or whose input schema is not the one prepared (a
    /// tool its scope rebuilt for the turn, [`Run::select`](crate::Run::select)),
    /// is exported on the spot, and left out if the dialect cannot express it.
    pub fn payload<'a>(&self, offered: impl IntoIterator<Item = &'a ToolDefinition>) -> String {
        let mut payload = String::new();
        self.payload_into(offered, &mut payload);
        payload
    }

    /// [`payload`](Self::payload) written into `payload` (cleared first),
    /// so that a host loop can reuse one buffer across steps.
    pub fn payload_into<'a>(&self, offered: impl IntoIterator<Item = &'a ToolDefinition>, payload: &mut String) {
        payload.clear();
        let (open, close) = match self.dialect {
            Dialect::Gemini => ("[{\"functionDeclarations\":[", "]}]"),
            Dialect::Mcp => ("{\"tools\":[", "]}"),
            _ => ("[", "]"),
        };
        // Spans of `text` (neighbouring entries merged) or entries made on
        // the spot, in the order offered.
        let mut parts: Vec<Part> = Vec::new();
        // Gemini's built-ins offered, which follow the declarations.
        let mut separate: Vec<Arc<str>> = Vec::new();
        // The offered tools usually come in the order they were prepared
        // in: a cursor finds them by comparing names, without hashing.
        let mut cursor = 0;
        for def in offered {
            let found = self.entries[cursor..]
                .iter()
                .position(|(name, ..)| **name == *def.name)
                .map(|offset| cursor + offset)
                .or_else(|| self.index.get(def.name.as_str()).copied())
                // A tool rebuilt for a turn by its scope is not the one prepared.
                .filter(|&i| Arc::ptr_eq(&self.entries[i].2, &def.input_schema));
            match found {
                Some(i) => {
                    let span = self.entries[i].1.clone();
                    match parts.last_mut() {
                        // The next entry in `text`: one span with the comma between.
                        Some(Part::Span(last, end_index)) if *end_index + 1 == i => {
                            last.end = span.end;
                            *end_index = i;
                        }
                        _ => parts.push(Part::Span(span, i)),
                    }
                    cursor = i + 1;
                }
                None if def.provider_defined.is_some() && self.skipped.iter().any(|name| **name == *def.name) => {}
                None => match self.separate.iter().find(|(name, _)| **name == *def.name) {
                    Some((_, entry)) => separate.push(entry.clone()),
                    None => match entry(self.dialect, def, &self.options) {
                        Ok((Exported::Entry(entry), _)) => parts.push(Part::Fresh(entry)),
                        Ok((Exported::Separate(entry), _)) => separate.push(entry),
                        Ok((Exported::Skipped, _)) | Err(_) => {}
                    },
                },
            }
        }
        if parts.is_empty() {
            // An empty Gemini payload is an empty `tools` list, as `gemini::tools` gives.
            if self.dialect == Dialect::Gemini {
                payload.push('[');
                payload.push_str(&separate.join(","));
                payload.push(']');
            } else {
                payload.push_str(open);
                payload.push_str(close);
            }
            return;
        }
        let bytes: usize = parts.iter().map(|part| self.part(part).len() + 1).sum();
        payload.reserve(open.len() + bytes + close.len());
        payload.push_str(open);
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                payload.push(',');
            }
            payload.push_str(self.part(part));
        }
        payload.push_str(close);
        if !separate.is_empty() {
            // Inside the `tools` list: `close` ended the declarations' tool.
            payload.pop();
            for entry in &separate {
                payload.push(',');
                payload.push_str(entry);
            }
            payload.push(']');
        }
    }

    fn part<'s>(&'s self, part: &'s Part) -> &'s str {
        match part {
            Part::Span(span, _) => &self.text[span.clone()],
            Part::Fresh(text) => text,
        }
    }
}

enum Part {
    /// A span of `Prepared::text`, ending with the entry at this index.
    Span(Range<usize>, usize),
    Fresh(Arc<str>),
}

/// What a dialect makes of one tool.
enum Exported {
    /// An element of the payload's list (for Gemini, a declaration).
    Entry(Arc<str>),
    /// A Gemini built-in: a tool of its own, after the declarations.
    Separate(Arc<str>),
    /// Another provider's built-in, left out.
    Skipped,
}

/// One tool's entry in `dialect`, serialised, and what the dialect lost.
fn entry(dialect: Dialect, def: &ToolDefinition, options: &ExportOptions) -> Result<(Exported, Vec<Loss>), DialectError> {
    let one = std::slice::from_ref(def);
    if def.provider_defined.is_some() {
        let (value, losses) = match dialect {
            Dialect::Mcp => (Value::Null, Vec::new()),
            Dialect::Gemini => first(gemini::tools(one, options)?),
            _ => first(exported(dialect, one, options)?),
        };
        let exported = match value {
            Value::Null => Exported::Skipped,
            value if dialect == Dialect::Gemini => Exported::Separate(value.to_string().into()),
            value => Exported::Entry(value.to_string().into()),
        };
        return Ok((exported, losses));
    }
    let (value, losses) = match dialect {
        Dialect::Gemini => {
            let (mut value, losses) = first(gemini::tools(one, options)?);
            (value["functionDeclarations"][0].take(), losses)
        }
        Dialect::Mcp => (mcp::tools_list(one)["tools"][0].take(), Vec::new()),
        _ => first(exported(dialect, one, options)?),
    };
    Ok((Exported::Entry(value.to_string().into()), losses))
}

/// The export of a dialect whose payload is a list of the tools' entries.
fn exported(dialect: Dialect, defs: &[ToolDefinition], options: &ExportOptions) -> Result<Export, DialectError> {
    match dialect {
        Dialect::OpenAiChat => openai::chat::tools(defs, options),
        Dialect::OpenAiResponses => openai::responses::tools(defs, options),
        _ => anthropic::tools(defs, options),
    }
}

fn first(export: Export) -> (Value, Vec<Loss>) {
    let Export { mut tools, losses } = export;
    (if tools.is_empty() { Value::Null } else { tools.swap_remove(0) }, losses)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn defs() -> Vec<ToolDefinition> {
        let schema = |constraint: Value| {
            json!({
                "$schema": crate::schema::SCHEMA_DIALECT,
                "type": "object",
                "properties": {"text": {"type": "string", "description": "What to say.", "maxLength": constraint}},
                "required": ["text"],
                "additionalProperties": false
            })
        };
        (0..5).map(|i| ToolDefinition::new(format!("tool_{i}"), format!("Tool number {i}."), schema(json!(10 + i)))).collect()
    }

    fn exported(dialect: Dialect, defs: &[ToolDefinition]) -> Value {
        let options = ExportOptions::default();
        match dialect {
            Dialect::OpenAiChat => json!(openai::chat::tools(defs, &options).unwrap().tools),
            Dialect::OpenAiResponses => json!(openai::responses::tools(defs, &options).unwrap().tools),
            Dialect::Anthropic => json!(anthropic::tools(defs, &options).unwrap().tools),
            Dialect::Gemini => json!(gemini::tools(defs, &options).unwrap().tools),
            Dialect::Mcp => mcp::tools_list(defs),
        }
    }

    #[test]
    fn a_prepared_payload_is_the_dialects_own_export() {
        let defs = defs();
        for dialect in [Dialect::OpenAiChat, Dialect::OpenAiResponses, Dialect::Anthropic, Dialect::Gemini, Dialect::Mcp] {
            let prepared = Prepared::new(dialect, &defs, &ExportOptions::default()).unwrap();
            for offered in [&defs[..], &defs[1..3], &defs[4..], &[]] {
                let payload: Value = serde_json::from_str(&prepared.payload(offered)).unwrap();
                assert_eq!(payload, exported(dialect, offered), "{dialect:?}, {} tools", offered.len());
                let mut reused = String::from("left over from the last step");
                prepared.payload_into(offered, &mut reused);
                assert_eq!(reused, prepared.payload(offered));
            }
        }
    }

    #[test]
    fn a_prepared_payload_keeps_the_order_given_and_exports_unknown_tools_on_the_spot() {
        let defs = defs();
        let prepared = Prepared::new(Dialect::Anthropic, &defs[..3], &ExportOptions::default()).unwrap();
        let offered = [&defs[2], &defs[0], &defs[4]];
        let payload: Value = serde_json::from_str(&prepared.payload(offered)).unwrap();
        let names: Vec<&str> = payload.as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["tool_2", "tool_0", "tool_4"]);
        assert_eq!(prepared.entry("tool_1").map(|entry| entry.starts_with('{') && entry.contains("\"tool_1\"")), Some(true));
        assert!(prepared.entry("tool_4").is_none());
    }

    #[test]
    fn a_prepared_export_reports_losses_and_errors_like_the_dialect() {
        let defs = defs();
        let prepared = Prepared::new(Dialect::OpenAiChat, &defs, &ExportOptions::new().strict(true)).unwrap();
        let expected = openai::chat::tools(&defs, &ExportOptions::new().strict(true)).unwrap().losses;
        assert_eq!(prepared.losses(), expected.as_slice());
        let bad = ToolDefinition::new("bad name", "Bad.", json!({"type": "object"}));
        assert!(matches!(Prepared::new(Dialect::OpenAiChat, [&bad], &ExportOptions::default()), Err(DialectError::Name { .. })));
    }
}

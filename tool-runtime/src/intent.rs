//! Intent classification: for an agent with many tools, a cheap first model
//! call picks the tools of a turn. The registry writes that call (a
//! [`Classifier`]: its prompt and the schema of its answer, as a tool the
//! model is made to call), reads the answer in any provider's dialect into
//! a [`Selection`], and [`Run::select`](crate::Run::select) offers what was selected for the
//! turn, each scoped tool rebuilt from its scope value.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::call::Arguments;
use crate::error_report::Escaped;
use crate::error_report::panic_message;
use crate::providers::{Dialect, anthropic, gemini, openai};
use crate::table::{Entry, ToolTable};
use crate::tool::ToolDefinition;

pub use crate::scope::ScopedTool;

/// The intent classifier's call, written from the registry's tools: a
/// prompt listing them (each by its `classification` line, else the first
/// sentence of its description, with its `example_prompts` and
/// `scope_prompt`), and the schema of the answer, which names the tools the
/// turn needs (an `enum` of their names) and, for tools with a scope, a
/// scope value of that tool's scope type.
///
/// Tools that are `always_active` are not listed: every turn offers them.
/// In a registry built with
/// [`intent_opt_in(true)`](crate::RegistryBuilder::intent_opt_in), only the
/// tools that opt in (`#[tool(as_intent)]`) are listed, as agents whose
/// intent list is a few entry points among many tools want.
///
/// Send [`prompt`](Self::prompt) as the system message, the user's message
/// as it is, and [`tool`](Self::tool) exported in the provider's dialect as
/// the only tool, with the tool choice forced to it; then read the response
/// with [`read`](Self::read), or, for a provider's structured output
/// (answer text matching [`answer_schema`](Self::answer_schema)), with
/// [`read_json`](Self::read_json).
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use tool_runtime::prelude::*;
/// use tool_runtime::providers::{anthropic, Dialect, ExportOptions};
///
/// /// Look up one order by its number.
/// #[tool(read_only, classification = "Order status and items", example_prompts("Where is my parcel?"))]
/// async fn lookup_order(order_id: String) -> String { order_id }
///
/// /// Say hello.
/// #[tool(always_active)]
/// async fn greet() -> String { "hello".into() }
///
/// /// Tell a joke.
/// #[tool]
/// async fn joke() -> String { "...".into() }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let registry = Registry::<()>::builder().tools(tools![lookup_order, greet, joke]).build().unwrap();
/// let mut run = registry.run(Arc::new(()));
/// let classifier = run.classifier();
/// assert!(classifier.prompt().contains("- lookup_order: Order status and items"));
/// let _tools = anthropic::tools([&classifier.tool()], &ExportOptions::default()).unwrap();
/// // ... the model answers with a call of `select_tools`:
/// let response = json!({"content": [{"type": "tool_use", "id": "toolu_1", "name": "select_tools",
///     "input": {"tools": ["lookup_order"]}}]});
/// let selection = classifier.read(Dialect::Anthropic, &response);
/// run.select(&selection);
/// assert_eq!(run.offered_names(), ["lookup_order", "greet"]);
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Classifier {
    prompt: String,
    answer_schema: Value,
    /// The names the answer may give.
    choices: Vec<String>,
}

impl Classifier {
    /// The name of the tool the classifier's model calls to answer.
    pub const TOOL_NAME: &'static str = "select_tools";

    /// The classifier of `defs`; with `opt_in`, of those written
    /// `as_intent` only.
    pub(crate) fn new<'a>(defs: impl IntoIterator<Item = &'a ToolDefinition>, opt_in: bool) -> Self {
        let defs: Vec<&ToolDefinition> = defs.into_iter().filter(|def| !def.always_active && (def.as_intent || !opt_in)).collect();
        let mut prompt = String::from(
            "Choose the tools an assistant needs to answer the user's next message. Answer by calling `select_tools` \
             once, with the names of the tools needed in `tools` (an empty list when none is needed).",
        );
        let scoped: Vec<&ToolDefinition> = defs.iter().copied().filter(|def| def.scope_schema.is_some()).collect();
        if !scoped.is_empty() {
            prompt.push_str(
                " A tool marked `scope` can be narrowed to what the message is about: when the message says enough, \
                 give its scope in `scopes`, under the tool's name.",
            );
        }
        prompt.push_str("\n\nTools:");
        for def in &defs {
            let line = def.classification.clone().unwrap_or_else(|| first_sentence(&def.description));
            prompt.push_str(&format!("\n- {}: {line}", def.name));
            if !def.example_prompts.is_empty() {
                let quoted: Vec<String> = def.example_prompts.iter().map(|example| format!("{example:?}")).collect();
                prompt.push_str(&format!("\n  Users say: {}", quoted.join(" | ")));
            }
            if def.scope_schema.is_some() {
                let hint = def.scope_prompt.as_deref().unwrap_or("narrow it to what the message names");
                prompt.push_str(&format!("\n  scope: {hint}"));
            }
        }
        let choices: Vec<String> = defs.iter().map(|def| def.name.clone()).collect();
        Classifier { prompt, answer_schema: answer_schema(&choices, &scoped), choices }
    }

    /// The classifier's instructions and the tools to choose from.
    pub fn prompt(&self) -> &str {
        &self.prompt
    }

    /// The JSON Schema of the answer: `{"tools": [name, ...], "scopes":
    /// {tool: scope}}`, the names an `enum`, each scope its tool's scope
    /// type (`scopes` only when a listed tool has a scope).
    pub fn answer_schema(&self) -> &Value {
        &self.answer_schema
    }

    /// The answer as a tool, [`TOOL_NAME`](Self::TOOL_NAME), to export
    /// with any dialect's `tools` function.
    pub fn tool(&self) -> ToolDefinition {
        let mut tool = ToolDefinition::new(Self::TOOL_NAME, "Select the tools the user's message needs.", self.answer_schema.clone());
        tool.strict = Some(true);
        tool
    }

    /// The selection in a model's response in `dialect`: its call of
    /// `select_tools`. A response without one, or whose answer is not the
    /// expected object, fails open ([`Selection::failed_open`]), and so does
    /// a response over 1 MiB as JSON, unread, or an answer over 64 KiB.
    pub fn read(&self, dialect: Dialect, response: &Value) -> Selection {
        // Reading the calls copies their arguments: an oversized response
        // is refused before that.
        if json_len(response, MAX_RESPONSE_BYTES).is_none() {
            return Selection::fail_open(format!("the response is over {MAX_RESPONSE_BYTES} bytes as JSON"));
        }
        let calls = match dialect {
            Dialect::OpenAiChat => openai::chat::parse_calls(response),
            Dialect::OpenAiResponses => openai::responses::parse_calls(response),
            Dialect::Anthropic => anthropic::parse_calls(response),
            Dialect::Gemini => gemini::parse_calls(response),
            _ => return Selection::fail_open("MCP carries no model responses; read the answer with the model's dialect"),
        };
        let calls = match calls {
            Ok(calls) => calls,
            Err(err) => return Selection::fail_open(format!("the response could not be read: {err}")),
        };
        let Some(call) = calls.into_iter().find(|call| call.name == Self::TOOL_NAME) else {
            return Selection::fail_open("the model did not call `select_tools`");
        };
        match call.arguments {
            Arguments::Value(answer) => self.read_value(&answer),
            Arguments::Text(text) => self.read_json(&text),
        }
    }

    /// The selection in an answer given as JSON text (a provider's
    /// structured output matching [`answer_schema`](Self::answer_schema)).
    /// An answer over 64 KiB fails open unread.
    pub fn read_json(&self, answer: &str) -> Selection {
        if answer.len() > MAX_ANSWER_BYTES {
            return Selection::fail_open(format!("the answer is {} bytes, over {MAX_ANSWER_BYTES}", answer.len()));
        }
        match serde_json::from_str::<Value>(answer) {
            Ok(answer) => self.read_value(&answer),
            Err(err) => Selection::fail_open(format!("the answer is not JSON: {err}")),
        }
    }

    /// The selection in a parsed answer. Names that are not tools to
    /// choose from are dropped (and listed in [`Selection::dropped`]). An
    /// answer over 64 KiB as JSON text fails open unread, as in
    /// [`read_json`](Self::read_json) and [`read`](Self::read): a list of
    /// names and a few scope values is far less.
    pub fn read_value(&self, answer: &Value) -> Selection {
        if json_len(answer, MAX_ANSWER_BYTES).is_none() {
            return Selection::fail_open(format!("the answer is over {MAX_ANSWER_BYTES} bytes as JSON"));
        }
        let Some(names) = answer.get("tools").and_then(Value::as_array) else {
            return Selection::fail_open("the answer has no `tools` list");
        };
        let mut selection = Selection::new(std::iter::empty::<String>());
        for name in names {
            match name.as_str() {
                Some(name) if self.choices.iter().any(|choice| choice == name) => {
                    if !selection.tools.iter().any(|tool| tool == name) {
                        selection.tools.push(name.to_owned());
                    }
                }
                _ => selection.dropped.push(name.as_str().map_or_else(|| name.to_string(), str::to_owned)),
            }
        }
        if let Some(Value::Object(scopes)) = answer.get("scopes") {
            for (tool, scope) in scopes {
                // Strict mode sends `null` for a scope left out.
                if !scope.is_null() && selection.tools.contains(tool) {
                    selection.scopes.insert(tool.clone(), scope.clone());
                }
            }
        }
        if !selection.dropped.is_empty() {
            tracing::warn!(dropped = ?Escaped(&selection.dropped), "the intent classifier named tools that are not offered; dropped");
        }
        selection
    }
}

/// The longest classifier answer read, in bytes of JSON text: a list of
/// names and a few scope values.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// The longest classifier response read, in bytes of JSON text: its answer
/// and what the provider wraps it in.
const MAX_RESPONSE_BYTES: usize = 16 * MAX_ANSWER_BYTES;

/// The longest scope value a tool is rebuilt from, in bytes of JSON text,
/// and how much longer than the tool's own its rebuilt description and
/// input schema may each be: a scope names what a message is about.
const MAX_SCOPE_BYTES: usize = 4 * 1024;

/// The length of `value` as compact JSON text, when it is at most `max`
/// bytes; `None` beyond, found without writing more than `max + 1` bytes.
fn json_len(value: &Value, max: usize) -> Option<usize> {
    struct Counter {
        written: usize,
        max: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.written += bytes.len();
            if self.written > self.max {
                return Err(std::io::Error::other("over the limit"));
            }
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter { written: 0, max };
    serde_json::to_writer(&mut counter, value).ok().map(|()| counter.written)
}

/// The answer's schema: the names as an enum, and each scoped tool's scope
/// schema under `scopes`, its `$defs` moved to the root under the tool's name.
fn answer_schema(choices: &[String], scoped: &[&ToolDefinition]) -> Value {
    let mut properties = Map::new();
    properties.insert(
        "tools".into(),
        json!({"type": "array", "items": {"type": "string", "enum": choices}, "description": "The tools the message needs."}),
    );
    let mut defs = Map::new();
    if !scoped.is_empty() {
        let mut scopes = Map::new();
        for def in scoped {
            let Some(schema) = &def.scope_schema else { continue };
            let mut schema = (**schema).clone();
            if let Value::Object(map) = &mut schema {
                map.remove("$schema");
                if let Some(Value::Object(own)) = map.remove("$defs") {
                    for (name, definition) in own {
                        defs.insert(format!("{}.{name}", def.name), definition);
                    }
                }
            }
            rename_refs(&mut schema, &def.name);
            scopes.insert(def.name.clone(), schema);
        }
        for (name, definition) in defs.iter_mut() {
            let tool = name.split('.').next().unwrap_or_default().to_owned();
            rename_refs(definition, &tool);
        }
        properties.insert(
            "scopes".into(),
            json!({"type": "object", "properties": scopes, "additionalProperties": false,
                   "description": "For a selected tool with a scope: what to narrow it to."}),
        );
    }
    let mut root = json!({"type": "object", "properties": properties, "required": ["tools"], "additionalProperties": false});
    if !defs.is_empty() {
        root["$defs"] = Value::Object(defs);
    }
    root
}

/// Points `#/$defs/X` of a scope schema at its new place, `#/$defs/tool.X`.
fn rename_refs(schema: &mut Value, tool: &str) {
    let mut stack = vec![schema];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(reference)) = map.get_mut("$ref")
                    && let Some(name) = reference.strip_prefix("#/$defs/")
                    && !name.starts_with(&format!("{tool}."))
                {
                    *reference = format!("#/$defs/{tool}.{name}");
                }
                stack.extend(map.values_mut());
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
}

/// The first sentence of a description: up to the first `. ` or line break.
fn first_sentence(description: &str) -> String {
    let line = description.lines().next().unwrap_or_default();
    match line.find(". ") {
        Some(end) => line[..=end].to_owned(),
        None => line.to_owned(),
    }
}

/// The tools an intent classifier selected for a turn, read by a
/// [`Classifier`] or written by the host, and given to [`Run::select`](crate::Run::select).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Selection {
    /// The tools selected, in the answer's order.
    pub tools: Vec<String>,
    /// The scope value of each selected tool the answer scoped.
    pub scopes: Map<String, Value>,
    /// Names the answer gave that are not tools to choose from.
    pub dropped: Vec<String>,
    /// Why the answer could not be used, when it could not: then the turn
    /// offers every tool (the classifier fails open).
    pub failed_open: Option<String>,
}

impl Selection {
    /// A selection of `tools`, without scopes.
    pub fn new<S: Into<String>>(tools: impl IntoIterator<Item = S>) -> Self {
        Selection { tools: tools.into_iter().map(Into::into).collect(), ..Selection::default() }
    }

    /// The same selection with `tool` scoped to `scope`.
    pub fn scope(mut self, tool: impl Into<String>, scope: Value) -> Self {
        self.scopes.insert(tool.into(), scope);
        self
    }

    /// No usable answer: every tool is offered, and `why` is reported.
    pub fn fail_open(why: impl Into<String>) -> Self {
        let why = why.into();
        tracing::warn!(why = %Escaped(&why), "the intent classifier's answer is unusable; every tool is offered this turn");
        Selection { failed_open: Some(why), ..Selection::default() }
    }
}

/// A scoped tool that kept its own definition for the turn, and why: its
/// scope value did not fit the scope type or was too long, its scope
/// function panicked or wrote too much, or the schema it rebuilt would
/// accept an input the tool's own refuses.
///
/// Its line (`Display`) quotes the classifier's value with control
/// characters escaped, so it can be logged as it is; the fields hold the
/// text unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeProblem {
    /// The tool.
    pub tool: String,
    /// What went wrong.
    pub problem: String,
}

impl fmt::Display for ScopeProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool `{}` is not scoped this turn: {}", Escaped(&self.tool), Escaped(&self.problem))
    }
}

/// A tool rebuilt for a turn by its scope function, and the validator of
/// its rebuilt schema.
#[derive(Debug)]
pub(crate) struct Scoped {
    pub(crate) def: ToolDefinition,
    pub(crate) validator: Arc<jsonschema::Validator>,
}

/// `tool` of `tools` rebuilt for `scope`, checked; `None` for a tool without
/// a scope.
pub(crate) fn scope<App: Send + Sync + 'static>(tools: &ToolTable<App>, tool: &str, scope: &Value) -> Option<Result<Scoped, String>> {
    let entry = tools.entry(tool)?;
    let schema = entry.def.scope_schema.as_ref()?;
    Some(rebuild(entry, schema, scope))
}

/// `entry`'s tool rebuilt by its scope function from `value`, once the value
/// fits the scope schema the classifier was shown; refused when the value
/// or what the function wrote is too long, or the rebuilt schema widens.
fn rebuild<App>(entry: &Entry<App>, schema: &Value, value: &Value) -> Result<Scoped, String> {
    if json_len(value, MAX_SCOPE_BYTES).is_none() {
        return Err(format!("the scope value is over {MAX_SCOPE_BYTES} bytes as JSON; a scope names what the message is about"));
    }
    let scope_validator = jsonschema::draft202012::new(schema).map_err(|err| format!("the scope schema does not compile: {err}"))?;
    if let Some(problem) = crate::validation::problems(&scope_validator, value).into_iter().next() {
        return Err(format!("the scope value does not fit the scope type: {problem}"));
    }
    let mut rebuilt = ScopedTool::new(entry.def.description.clone(), (*entry.def.input_schema).clone());
    match std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.scope(value, &mut rebuilt))) {
        Ok(Ok(())) => {}
        Ok(Err(err)) => return Err(format!("the scope value does not fit the scope type: {err}")),
        Err(payload) => return Err(format!("the scope function panicked: {}", panic_message(payload.as_ref()))),
    }
    if rebuilt.description.len() > entry.def.description.len() + MAX_SCOPE_BYTES {
        return Err(format!(
            "the rebuilt description is {} bytes, more than {MAX_SCOPE_BYTES} over the tool's own ({})",
            rebuilt.description.len(),
            entry.def.description.len()
        ));
    }
    let own = json_len(&entry.def.input_schema, usize::MAX).unwrap_or_default();
    if json_len(&rebuilt.input_schema, own + MAX_SCOPE_BYTES).is_none() {
        return Err(format!("the rebuilt input schema is more than {MAX_SCOPE_BYTES} bytes over the tool's own ({own})"));
    }
    if let Some(widening) = crate::scope::widening(&entry.def.input_schema, &rebuilt.input_schema) {
        return Err(format!("the rebuilt input schema would accept more than the tool's own ({widening})"));
    }
    let validator = jsonschema::draft202012::new(&rebuilt.input_schema).map_err(|err| format!("the rebuilt input schema does not compile: {err}"))?;
    let mut def = entry.def.clone();
    def.description = rebuilt.description;
    def.input_schema = Arc::new(rebuilt.input_schema);
    Ok(Scoped { def, validator: Arc::new(validator) })
}

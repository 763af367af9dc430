//! Provider-defined tools: the tools a provider builds in (web search, code
//! execution, a shell, a file editor), declared in a registry beside the
//! app's own tools.
//!
//! A [`ProviderTool`] is declared with its provider, the built-in's id (as
//! `provider.type`, such as `anthropic.bash_20250124`), its arguments (the
//! provider's settings for it, sent in the request) and a custom name: the
//! name the registry, the run and the host know it by.
//!
//! - **Export.** Each dialect's `tools` sends a built-in to its own provider
//!   only, as that provider's entry (`{"type": "web_search"}` for OpenAI
//!   Responses, `{"type": "bash_20250124", "name": "bash"}` for Anthropic,
//!   a `{"googleSearch": {}}` tool for Gemini); every other dialect leaves it
//!   out and says so in [`Export::losses`](super::Export::losses). MCP
//!   clients are never offered one.
//! - **Runs at the provider** (web search, file search, code interpreter,
//!   Google search, code execution): the provider runs it and puts the call
//!   and its result in its response. They are not calls for the host:
//!   `parse_calls` skips them, and each dialect's `provider_items` reads them
//!   as [`ProviderItem`]s (for a transcript, say). Called through the
//!   registry anyway, such a tool answers with an error and runs nothing.
//! - **Runs on the host** (Anthropic's bash and text editor): the model asks
//!   in an ordinary `tool_use` block under the provider's fixed name (`bash`,
//!   `str_replace_based_edit_tool`), which the registry maps to the custom
//!   name; the call goes through the whole pipeline (validation against the
//!   built-in's input schema, policy, approval, timeout) to the handler the
//!   developer gives with [`ProviderTool::handler`], which reads a typed
//!   input ([`BashInput`], [`TextEditorCommand`] or any `Deserialize` type).
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use tool_runtime::prelude::*;
//! use tool_runtime::providers::builtin::{BashInput, ProviderTool};
//! use tool_runtime::providers::{anthropic, openai, ExportOptions};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let shell = ProviderTool::anthropic_bash("shell")
//!     .handler(|input: BashInput, _ctx: Ctx<()>| async move {
//!         Ok::<_, ToolError>(json!(format!("ran {}", input.command.unwrap_or_default())))
//!     })
//!     .policy(PolicyKind::NeedsApproval);
//! let registry = Registry::<()>::builder()
//!     .tool(ProviderTool::openai_web_search("search").arg("search_context_size", "low"))
//!     .tool(shell)
//!     .build()
//!     .unwrap();
//! let run = registry.run(Arc::new(()));
//! let export = anthropic::tools(run.offered(), &ExportOptions::default()).unwrap();
//! assert_eq!(export.tools, [json!({"type": "bash_20250124", "name": "bash"})]);
//! assert_eq!(export.losses[0].tool, "search");
//! let export = openai::responses::tools(run.offered(), &ExportOptions::default()).unwrap();
//! assert_eq!(export.tools, [json!({"type": "web_search", "search_context_size": "low"})]);
//! # }
//! ```

mod inputs;
pub(crate) mod items;

use std::future::Future;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

pub use inputs::{BashInput, TextEditorCommand};
pub use items::{ItemKind, ProviderItem};
pub(crate) use items::{anthropic_items, openai_items};

use super::Loss;
use crate::context::Ctx;
pub use crate::definition::{Provider, ProviderDefined, Runs};
use crate::dynamic::DynamicTool;
use crate::error::ToolError;
use crate::tool::{BoxError, BoxedTool, ToolDefinition};

/// A built-in tool of a provider, to declare in a registry.
///
/// Built-ins that run at the provider go into the registry as they are
/// (`.tool(ProviderTool::openai_web_search("search"))`); those that run on
/// the host need a [`handler`](Self::handler), which turns the declaration
/// into a [`DynamicTool`] with its policy, timeout and other settings. A
/// host-run built-in registered without a handler fails the registry's build.
/// See the [module](self) docs.
#[derive(Clone, Debug)]
#[must_use]
pub struct ProviderTool {
    name: String,
    description: String,
    declared: ProviderDefined,
    input_schema: Value,
}

impl ProviderTool {
    fn new(name: impl Into<String>, provider: Provider, kind: &str, tool: &str, wire_name: Option<&str>, runs: Runs, description: &str) -> Self {
        let mut entry = Map::new();
        match provider {
            Provider::Gemini => {
                entry.insert(kind.to_owned(), json!({}));
            }
            _ => {
                entry.insert("type".into(), kind.into());
            }
        }
        if let Some(wire_name) = wire_name {
            entry.insert("name".into(), wire_name.into());
        }
        let declared = ProviderDefined {
            provider,
            id: format!("{}.{}", provider.prefix(), if provider == Provider::Gemini { tool } else { kind }),
            tool: tool.to_owned(),
            entry: Value::Object(entry),
            wire_name: wire_name.map(str::to_owned),
            runs,
            problem: None,
        };
        ProviderTool { name: name.into(), description: description.to_owned(), declared, input_schema: json!({"type": "object"}) }
    }

    /// OpenAI's web search (Responses: `{"type": "web_search"}`), run by
    /// OpenAI. Arguments: `search_context_size`, `user_location`,
    /// `filters`...
    pub fn openai_web_search(name: impl Into<String>) -> Self {
        Self::new(name, Provider::OpenAi, "web_search", "web_search", None, Runs::AtProvider, "OpenAI's built-in web search.")
    }

    /// OpenAI's file search over the given vector stores (Responses:
    /// `{"type": "file_search", "vector_store_ids": [...]}`), run by
    /// OpenAI. Arguments: `max_num_results`, `filters`, `ranking_options`.
    pub fn openai_file_search<S: Into<String>>(name: impl Into<String>, vector_store_ids: impl IntoIterator<Item = S>) -> Self {
        let ids: Vec<String> = vector_store_ids.into_iter().map(Into::into).collect();
        Self::new(name, Provider::OpenAi, "file_search", "file_search", None, Runs::AtProvider, "OpenAI's built-in file search.")
            .arg("vector_store_ids", ids)
    }

    /// OpenAI's code interpreter (Responses: `{"type":
    /// "code_interpreter", "container": {"type": "auto"}}`), run by OpenAI.
    /// Set `container` to a container id, or to `{"type": "auto",
    /// "file_ids": [...]}`, with [`arg`](Self::arg).
    pub fn openai_code_interpreter(name: impl Into<String>) -> Self {
        Self::new(name, Provider::OpenAi, "code_interpreter", "code_interpreter", None, Runs::AtProvider, "OpenAI's built-in code interpreter.")
            .arg("container", json!({"type": "auto"}))
    }

    /// Anthropic's web search (`web_search_20250305`), run by Anthropic.
    /// Arguments: `max_uses`, `allowed_domains`, `blocked_domains`,
    /// `user_location`.
    pub fn anthropic_web_search(name: impl Into<String>) -> Self {
        Self::new(
            name,
            Provider::Anthropic,
            "web_search_20250305",
            "web_search",
            Some("web_search"),
            Runs::AtProvider,
            "Anthropic's built-in web search.",
        )
    }

    /// Anthropic's bash tool (`bash_20250124`, called `bash`), run on the
    /// host: give it a [`handler`](Self::handler) reading a [`BashInput`].
    pub fn anthropic_bash(name: impl Into<String>) -> Self {
        let mut tool = Self::new(
            name,
            Provider::Anthropic,
            "bash_20250124",
            "bash",
            Some("bash"),
            Runs::OnHost,
            "Run a shell command in a persistent bash session.",
        );
        tool.input_schema = inputs::bash_schema();
        tool
    }

    /// Anthropic's text editor (`text_editor_20250728`, called
    /// `str_replace_based_edit_tool`), run on the host: give it a
    /// [`handler`](Self::handler) reading a [`TextEditorCommand`].
    /// Argument: `max_characters`.
    pub fn anthropic_text_editor(name: impl Into<String>) -> Self {
        let mut tool = Self::new(
            name,
            Provider::Anthropic,
            "text_editor_20250728",
            "str_replace_based_edit_tool",
            Some("str_replace_based_edit_tool"),
            Runs::OnHost,
            "View, create and edit text files.",
        );
        tool.input_schema = inputs::text_editor_schema();
        tool
    }

    /// Gemini's Google search grounding (`{"googleSearch": {}}`), run by
    /// Google. Arguments: `excludeDomains`, `timeRangeFilter`...
    pub fn gemini_google_search(name: impl Into<String>) -> Self {
        Self::new(name, Provider::Gemini, "googleSearch", "google_search", None, Runs::AtProvider, "Gemini's built-in Google search.")
    }

    /// Gemini's code execution (`{"codeExecution": {}}`), run by Google.
    pub fn gemini_code_execution(name: impl Into<String>) -> Self {
        Self::new(name, Provider::Gemini, "codeExecution", "code_execution", None, Runs::AtProvider, "Gemini's built-in code execution.")
    }

    /// Sets one of the provider's arguments for the tool, sent in its entry
    /// (for Gemini, inside its object: `{"googleSearch": {key: value}}`).
    /// The keys `type` and `name` are the provider's and cannot be set: the
    /// registry's build fails on them.
    pub fn arg(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        let key = key.into();
        let entry = self.declared.entry.as_object_mut().expect("an entry is an object");
        let target = match self.declared.provider {
            Provider::Gemini => entry.values_mut().next().and_then(Value::as_object_mut).expect("a Gemini entry holds an object"),
            _ => {
                if key == "type" || key == "name" {
                    let provider = self.declared.provider;
                    self.declared.problem.get_or_insert(format!("the key `{key}` of the entry is {provider}'s own; remove `.arg(\"{key}\", ...)`"));
                    return self;
                }
                entry
            }
        };
        target.insert(key, value.into());
        self
    }

    /// What the host reads about the tool (the provider does not read it:
    /// the built-in's own description is the provider's).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// The declaration as the registry will hold it.
    pub fn declared(&self) -> &ProviderDefined {
        &self.declared
    }

    /// A host-run built-in with its handler: a [`DynamicTool`] validated
    /// against the built-in's input schema, whose settings (policy,
    /// timeout, ...) are set as any dynamic tool's. The handler reads the
    /// validated input as `I`; an input that passes the schema but does not
    /// read as `I` is answered with an `INVALID_INPUT` error the model reads.
    ///
    /// A built-in run by the provider gets a handler too, but it is never
    /// called: the model never asks the host for such a call.
    pub fn handler<App, I, F, Fut, T, E>(self, handler: F) -> DynamicTool<App>
    where
        App: Send + Sync + 'static,
        I: DeserializeOwned + Send + 'static,
        F: Fn(I, Ctx<App>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
        T: serde::Serialize,
        E: Into<BoxError>,
    {
        let handler = Arc::new(handler);
        let ProviderTool { name, description, declared, input_schema } = self;
        let tool = DynamicTool::new(name, description, input_schema, move |args: Value, ctx: Ctx<App>| {
            let handler = handler.clone();
            async move {
                let input: I = serde_json::from_value(args).map_err(|error| {
                    Box::new(ToolError::bad_request("INVALID_INPUT", format!("The input does not match the tool: {error}."))) as BoxError
                })?;
                let output = handler(input, ctx).await.map_err(Into::into)?;
                serde_json::to_value(output).map_err(|error| Box::new(error) as BoxError)
            }
        });
        tool.provider_defined(declared)
    }
}

impl ProviderTool {
    /// A built-in run by the provider as a [`DynamicTool`], to set what
    /// decides when it is offered (`visible_when`, `requires`, `tags`...).
    /// Called through the registry, it answers with an error
    /// (`PROVIDER_TOOL`) and runs nothing. For a host-run built-in, use
    /// [`handler`](Self::handler): this one fails the registry's build.
    ///
    /// ```
    /// # use tool_runtime::prelude::*;
    /// # use tool_runtime::providers::builtin::ProviderTool;
    /// let search = ProviderTool::gemini_google_search("google").into_tool::<()>().requires(["classify"]);
    /// # let _ = search;
    /// ```
    pub fn into_tool<App: Send + Sync + 'static>(mut self) -> DynamicTool<App> {
        let provider = self.declared.provider;
        if self.declared.runs == Runs::OnHost {
            let id = &self.declared.id;
            let problem = format!("`{id}` runs on the host: give it a handler with `ProviderTool::handler`");
            self.declared.problem.get_or_insert(problem);
        }
        let name = self.name.clone();
        let refused = move |_: Value, _: Ctx<App>| {
            let line = format!("`{name}` is {provider}'s built-in tool, run by {provider}; it cannot be called here.");
            async move { Err::<Value, _>(ToolError::bad_request("PROVIDER_TOOL", line).no_retry()) }
        };
        self.handler(refused)
    }
}

impl<App: Send + Sync + 'static> From<ProviderTool> for BoxedTool<App> {
    /// [`ProviderTool::into_tool`], boxed.
    fn from(tool: ProviderTool) -> Self {
        tool.into_tool().into()
    }
}

/// What a dialect does with one offered tool.
pub(crate) enum Route<'d> {
    /// An ordinary tool: the dialect's function entry.
    Function,
    /// A built-in of this dialect's provider: its entry as it is.
    Entry(&'d Value),
    /// A built-in of another provider: left out, with this loss.
    Skip(Loss),
}

/// Where `def` goes in the export of `dialect` (named for the loss), whose
/// provider's built-ins are `own` (`None`: a dialect that takes none).
pub(crate) fn route<'d>(def: &'d ToolDefinition, dialect: &str, own: Option<Provider>) -> Route<'d> {
    match &def.provider_defined {
        None => Route::Function,
        Some(declared) if Some(declared.provider) == own => Route::Entry(&declared.entry),
        Some(declared) => Route::Skip(Loss {
            tool: def.name.clone(),
            pointer: String::new(),
            keyword: "provider".into(),
            note: format!("`{}` is a built-in tool of {}; left out of the {dialect} export", declared.id, declared.provider),
            constraint: false,
        }),
    }
}

/// [`route`], for a dialect whose built-ins go beside its functions: the
/// entry of a built-in of `own` goes to `tools`, the loss of another's to
/// `losses`; `true` when `def` is an ordinary tool, which the dialect
/// exports itself.
pub(crate) fn is_function(def: &ToolDefinition, dialect: &str, own: Provider, tools: &mut Vec<Value>, losses: &mut Vec<Loss>) -> bool {
    match route(def, dialect, Some(own)) {
        Route::Function => true,
        Route::Entry(entry) => {
            tools.push(entry.clone());
            false
        }
        Route::Skip(loss) => {
            losses.push(loss);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_entries_follow_each_provider() {
        let google = ProviderTool::gemini_google_search("g").arg("excludeDomains", json!(["example.com"]));
        assert_eq!(google.declared().entry, json!({"googleSearch": {"excludeDomains": ["example.com"]}}));
        assert_eq!(google.declared().id, "google.google_search");
        let editor = ProviderTool::anthropic_text_editor("e");
        assert_eq!(editor.declared().id, "anthropic.text_editor_20250728");
        assert_eq!(editor.declared().wire_name.as_deref(), Some("str_replace_based_edit_tool"));
        assert_eq!(editor.declared().runs, Runs::OnHost);
        let interpreter = ProviderTool::openai_code_interpreter("p").arg("container", "cntr_1");
        assert_eq!(interpreter.declared().entry, json!({"type": "code_interpreter", "container": "cntr_1"}));
        assert_eq!(interpreter.declared().runs, Runs::AtProvider);
        assert!(ProviderTool::anthropic_web_search("w").arg("name", "x").declared().problem.is_some());
    }
}

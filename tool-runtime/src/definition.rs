//! What describes a tool: the constants `#[tool]` writes (`ToolMeta`,
//! `Metadata`, `Execution`) and the [`ToolDefinition`] a registry builds
//! from them, or a `DynamicTool` is given.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::origin::Origin;
use crate::policy::PolicyKind;

/// When a successful call ends the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndsRun {
    /// Never (the default).
    Never,
    /// Every successful call.
    Always,
    /// A predicate decides on the input and the output.
    Predicate,
}

/// The static description of a tool, as the `#[tool]` macro writes it.
/// Built by generated code; read it through [`ToolDefinition`].
#[doc(hidden)]
#[derive(Debug)]
pub struct ToolMeta {
    pub name: &'static str,
    /// Every `#[doc]` value of the function, joined with `\n`.
    pub doc: &'static str,
    /// `description = "..."`, which wins over the doc comment.
    pub description: Option<&'static str>,
    pub title: Option<&'static str>,
    pub tags: &'static [&'static str],
    pub annotations: Annotations,
    pub policy: PolicyKind,
    pub visible_when: bool,
    pub requires: &'static [&'static str],
    pub ends_run: EndsRun,
    pub timeout: Option<Duration>,
    pub max_output_chars: Option<usize>,
    pub max_retries: Option<u32>,
    pub ends_turn: bool,
    pub parallel_safe: bool,
    pub strict: Option<bool>,
}

impl ToolMeta {
    /// No key written: the value of every field `#[tool]` leaves out
    /// (`..ToolMeta::DEFAULT`), so that the generated constant states only
    /// what the tool sets. `name` and `doc` are always written.
    pub const DEFAULT: ToolMeta = ToolMeta {
        name: "",
        doc: "",
        description: None,
        title: None,
        tags: &[],
        annotations: Annotations { read_only: None, destructive: None, idempotent: None, open_world: None },
        policy: PolicyKind::Allow,
        visible_when: false,
        requires: &[],
        ends_run: EndsRun::Never,
        timeout: None,
        max_output_chars: None,
        max_retries: None,
        ends_turn: false,
        parallel_safe: false,
        strict: None,
    };
}

/// The metadata keys of `#[tool]` (`kind`, `examples`, `example_prompts`,
/// `related`, `always_active`, `as_intent`, `classification`,
/// `scope_prompt`, `meta`),
/// grouped in `Tool::METADATA`, whose default is [`Metadata::EMPTY`], so
/// that a tool using none of them emits nothing for them.
#[doc(hidden)]
#[derive(Debug)]
pub struct Metadata {
    pub kind: Option<&'static str>,
    pub examples: &'static [&'static str],
    pub example_prompts: &'static [&'static str],
    pub related: &'static [&'static str],
    pub always_active: bool,
    pub as_intent: bool,
    pub classification: Option<&'static str>,
    pub scope_prompt: Option<&'static str>,
    pub meta: &'static [(&'static str, MetaValue)],
}

impl Metadata {
    /// No metadata key written.
    pub const EMPTY: Metadata = Metadata {
        kind: None,
        examples: &[],
        example_prompts: &[],
        related: &[],
        always_active: false,
        as_intent: false,
        classification: None,
        scope_prompt: None,
        meta: &[],
    };
}

/// How calls of the tool run, beyond the timeout (`interim`,
/// `interruptible`), grouped in `Tool::EXECUTION`, whose default is
/// [`Execution::DEFAULT`], so that a tool using none of these keys emits
/// nothing for them.
#[doc(hidden)]
#[derive(Debug)]
pub struct Execution {
    /// `interim = "..."` and its delay (`interim_after`, else
    /// [`Interim::DEFAULT_AFTER`]).
    pub interim: Option<(&'static str, Duration)>,
    /// `interruptible = false` makes it false.
    pub interruptible: bool,
    /// `idempotency_key = path` sets it (the key comes from `Tool::effect_key`).
    pub idempotency_key: bool,
    /// `replay = false` makes it false.
    pub replay: bool,
    /// `external`: calls are handed to the host instead of executed.
    pub external: bool,
    /// `failure_mode = "error"` makes it [`FailureMode::Error`].
    pub failure_mode: FailureMode,
    /// `on_result = path` sets it (the hook is `Tool::on_result`).
    pub on_result: bool,
    /// `resolve = path` sets it (the conversion is `Tool::resolve`).
    pub resolve: bool,
}

impl Execution {
    /// No execution key written.
    pub const DEFAULT: Execution = Execution {
        interim: None,
        interruptible: true,
        idempotency_key: false,
        replay: true,
        external: false,
        failure_mode: FailureMode::Return,
        on_result: false,
        resolve: false,
    };
}

/// Who reads a tool's own failure (a [`ToolError`](crate::ToolError) or a
/// typed failure it returned, an `Err` item of its stream):
/// `#[tool(failure_mode = "...")]`,
/// [`DynamicTool::failure_mode`](crate::DynamicTool::failure_mode).
///
/// Only the tool's own failure: invalid arguments, a refusal, a timeout
/// and a cancellation read as always, and an error that is not a
/// `ToolError` (a bug, a panic) is the generic status-500 line in either
/// mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FailureMode {
    /// The model reads the failure's one line, to act on it (the default).
    #[default]
    Return,
    /// The call ends as an error the host handles: its result is a
    /// [`ResultKind::HostError`](crate::ResultKind::HostError), whose
    /// `error_code` and `status` are the failure's, the failure goes to
    /// `on_tool_error`, and the model reads the generic status-500 line.
    Error,
}

/// The text a call shows while it is still running: emitted once, as a
/// [`Progress`](crate::Progress) report with `interim: true`, when the call
/// has not ended after `after` (`#[tool(interim = "...", interim_after =
/// "2s")]`, [`DynamicTool::interim`](crate::DynamicTool::interim)).
///
/// A call that ends first, is cancelled or times out emits nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interim {
    /// What the user reads meanwhile, such as `"Still searching the archive..."`.
    pub text: String,
    /// How long the call runs before the text is emitted, counted from
    /// the tool's first poll.
    pub after: Duration,
}

impl Interim {
    /// The delay when `interim` is written without `interim_after`.
    pub const DEFAULT_AFTER: Duration = Duration::from_secs(2);
}

/// One value of `meta(key = value, ...)`: the literals the macro accepts.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum MetaValue {
    Str(&'static str),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl MetaValue {
    fn to_json(self) -> Value {
        match self {
            MetaValue::Str(text) => Value::from(text),
            MetaValue::Int(number) => Value::from(number),
            // The macro only writes finite floats; a non-finite one would be `null`.
            MetaValue::Float(number) => Value::from(number),
            MetaValue::Bool(flag) => Value::from(flag),
        }
    }
}

/// A tool as the registry holds it: what the model is told, and the rules
/// the runtime applies to its calls.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolDefinition {
    /// The name the model calls.
    pub name: String,
    /// What the model reads to decide when to call the tool.
    pub description: String,
    /// A human-readable title (MCP).
    pub title: Option<String>,
    /// Free tags for filtering and policy.
    pub tags: Vec<String>,
    /// Effect hints.
    pub annotations: Annotations,
    /// The JSON Schema (2020-12) of the input: an object at the root.
    pub input_schema: Arc<Value>,
    /// The JSON Schema of the output, when the output type has one.
    pub output_schema: Option<Arc<Value>>,
    /// The JSON Schema of a typed failure's structured value
    /// ([`ToolError::structured`](crate::ToolError::structured)): `E`'s, for a `#[tool]` written
    /// `-> Result<T, E>` whose `E` is `Serialize + JsonSchema` and converts
    /// into `ToolError`. MCP has no field for it: `tools/list` sends it as
    /// `failureSchema` in the tool's `_meta`.
    pub failure_schema: Option<Arc<Value>>,
    /// How calls are decided.
    pub policy: PolicyKind,
    /// Whether a `visible_when` predicate decides per step.
    pub has_visibility_predicate: bool,
    /// Tools that must have run successfully in the run before this one is offered.
    pub requires: Vec<String>,
    /// When a successful call ends the run.
    pub ends_run: EndsRun,
    /// The per-tool timeout, overriding the registry default.
    pub timeout: Option<Duration>,
    /// The per-tool output limit, overriding the registry default.
    pub max_output_chars: Option<usize>,
    /// The text emitted once when a call is still running after a delay.
    pub interim: Option<Interim>,
    /// After this many failed calls in one run the tool is no longer offered
    /// in that run, and a further call (or the approval of one parked
    /// before) reads `TOOL_EXHAUSTED`. A call counts as failed when it read
    /// invalid arguments, the tool's own error, an internal error (the
    /// generic 500: a bug, a panic, an outage) or the tool's own timeout; a
    /// call the run's or the step's time limit stopped, a cancelled call and
    /// a refusal (by policy or a human) do not count.
    pub max_retries: Option<u32>,
    /// A successful call halts the run on the same step, with no trailing
    /// step (unlike `ends_run`).
    pub ends_turn: bool,
    /// May run concurrently with other calls of the same step.
    pub parallel_safe: bool,
    /// Per-tool override of provider strict mode.
    pub strict: Option<bool>,
    /// Whether the caller's cancellation reaches the tool (the default).
    /// When false (`interruptible = false`), the tool's token fires only at
    /// its timeout: a call cancelled, or dropped, while it runs still runs
    /// to its end, and a run cancelled meanwhile still gets the result.
    pub interruptible: bool,
    /// In a durable run, the effect of a call is identified by a key the
    /// tool derives from its input (`idempotency_key = path`, for inputs
    /// whose identity is not the call id, such as an order id), rather
    /// than by the run and the call id.
    pub idempotency_key: bool,
    /// In a durable run, whether a call whose effect the journal already
    /// holds returns the journaled result instead of running again (the
    /// default). `replay = false` always runs the tool again: an observation
    /// tool, whose answer changes, or one that must do its work each time
    /// (write a file, run a command), destructive or not.
    ///
    /// A call found started and never finished (its process died, or it
    /// still runs elsewhere) is another matter: whether its effect happened
    /// is unknown. With `replay = false`, a tool that is `read_only` or
    /// `idempotent` runs it again; any other reads `OUTCOME_UNKNOWN` ("check
    /// its effect first"), as with `replay` on, and is not run over it.
    pub replay: bool,
    /// An external tool (`external`): a call is validated and judged like
    /// any other, then handed to the host to run instead of executed (its
    /// result is [`ResultKind::External`](crate::ResultKind::External)); the
    /// host supplies the output later ([`ExternalCalls::complete`](crate::ExternalCalls::complete)).
    pub external: bool,
    /// An external tool whose validated input converts into the host's
    /// typed proposal (`resolve = path`): a call whose conversion fails is
    /// refused (the model reads why) instead of handed over, and the host
    /// takes the proposal with [`Registry::proposal`](crate::Registry::proposal).
    pub resolve: bool,
    /// Who reads the tool's own failure: the model (the default), or the
    /// host, while the model reads the generic line (`failure_mode = "error"`).
    pub failure_mode: FailureMode,
    /// Whether the tool has a result hook of its own (`on_result = path`),
    /// which sees each outcome of its calls beside the registry's
    /// ([`RegistryBuilder::on_result`](crate::RegistryBuilder::on_result)).
    pub has_result_hook: bool,
    /// A declared grouping (`kind = "read"`), for registries and
    /// documentation ([`Registry::definitions_of_kind`](crate::Registry::definitions_of_kind))
    /// and exported as `kind` in MCP `_meta`. It is not an authorisation
    /// boundary: nothing in the runtime allows or refuses a call by its kind.
    pub kind: Option<String>,
    /// Usage examples, such as `geocode("Amsterdam")`.
    pub examples: Vec<String>,
    /// Natural-language prompts a user might write that call for this tool.
    pub example_prompts: Vec<String>,
    /// Tools often used together with this one; each must be in the
    /// registry (checked at build, as `requires` is).
    pub related: Vec<String>,
    /// Offered in every turn whatever an intent classifier selects (its
    /// visibility and `requires` still apply).
    pub always_active: bool,
    /// Listed to the intent classifier of a registry that lists only the
    /// tools that opt in ([`RegistryBuilder::intent_opt_in`](crate::RegistryBuilder::intent_opt_in));
    /// every tool but an `always_active` one is listed otherwise.
    pub as_intent: bool,
    /// A compact one-liner describing the tool to an intent classifier.
    pub classification: Option<String>,
    /// A one-line hint for an intent classifier on when and how to scope the tool.
    pub scope_prompt: Option<String>,
    /// Free-form metadata (`meta(key = value, ...)`), exported as MCP `_meta`.
    pub meta: Map<String, Value>,
    /// The JSON Schema of the tool's scope (`scope = path`): what an intent
    /// classifier answers to narrow the tool for one turn
    /// ([`Run::select`](crate::Run::select)). `None` for a tool without a scope.
    pub scope_schema: Option<Arc<Value>>,
    /// For a provider's built-in tool (web search, Anthropic's bash...),
    /// what the provider calls it and who runs it: dialects export it to
    /// its own provider only (see `providers::builtin`).
    pub provider_defined: Option<Arc<ProviderDefined>>,
    /// Where the definition comes from: `#[tool]`, a dynamic tool, a
    /// provider's built-in, or a tool the host runs. Filter by it with
    /// [`Registry::definitions_of_origin`](crate::Registry::definitions_of_origin);
    /// an [`ApprovalFloor::origin`](crate::ApprovalFloor::origin) makes
    /// every tool of an origin need approval.
    pub origin: Origin,
}

impl ToolDefinition {
    /// A definition with only a name, description and input schema; the
    /// builder methods set the rest. Used for dynamic tools (its
    /// [`origin`](Self::origin) is [`Origin::Dynamic`]).
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        ToolDefinition {
            name: name.into(),
            description: description.into(),
            title: None,
            tags: Vec::new(),
            annotations: Annotations::default(),
            input_schema: Arc::new(input_schema),
            output_schema: None,
            failure_schema: None,
            policy: PolicyKind::Allow,
            has_visibility_predicate: false,
            requires: Vec::new(),
            ends_run: EndsRun::Never,
            timeout: None,
            max_output_chars: None,
            interim: None,
            max_retries: None,
            ends_turn: false,
            parallel_safe: false,
            strict: None,
            interruptible: true,
            idempotency_key: false,
            replay: true,
            external: false,
            resolve: false,
            failure_mode: FailureMode::Return,
            has_result_hook: false,
            kind: None,
            examples: Vec::new(),
            example_prompts: Vec::new(),
            related: Vec::new(),
            always_active: false,
            as_intent: false,
            classification: None,
            scope_prompt: None,
            meta: Map::new(),
            scope_schema: None,
            provider_defined: None,
            origin: Origin::Dynamic,
        }
    }

    pub(crate) fn from_meta(meta: &ToolMeta, metadata: &Metadata, execution: &Execution, input_schema: Value, schemas: [Option<Value>; 3]) -> Self {
        let [output_schema, failure_schema, scope_schema] = schemas;
        ToolDefinition {
            name: meta.name.to_owned(),
            description: match meta.description {
                Some(explicit) => explicit.to_owned(),
                None => crate::docs::description(meta.doc),
            },
            title: meta.title.map(str::to_owned),
            tags: meta.tags.iter().map(|tag| (*tag).to_owned()).collect(),
            annotations: meta.annotations,
            input_schema: Arc::new(input_schema),
            output_schema: output_schema.map(Arc::new),
            failure_schema: failure_schema.map(Arc::new),
            policy: meta.policy,
            has_visibility_predicate: meta.visible_when,
            requires: strings(meta.requires),
            ends_run: meta.ends_run,
            timeout: meta.timeout,
            max_output_chars: meta.max_output_chars,
            interim: execution.interim.map(|(text, after)| Interim { text: text.to_owned(), after }),
            max_retries: meta.max_retries,
            ends_turn: meta.ends_turn,
            parallel_safe: meta.parallel_safe || meta.annotations.read_only == Some(true),
            strict: meta.strict,
            interruptible: execution.interruptible,
            idempotency_key: execution.idempotency_key,
            replay: execution.replay,
            external: execution.external,
            resolve: execution.resolve,
            failure_mode: execution.failure_mode,
            has_result_hook: execution.on_result,
            kind: metadata.kind.map(str::to_owned),
            examples: strings(metadata.examples),
            example_prompts: strings(metadata.example_prompts),
            related: strings(metadata.related),
            always_active: metadata.always_active,
            as_intent: metadata.as_intent,
            classification: metadata.classification.map(str::to_owned),
            scope_prompt: metadata.scope_prompt.map(str::to_owned),
            meta: metadata.meta.iter().map(|(key, value)| ((*key).to_owned(), value.to_json())).collect(),
            scope_schema: scope_schema.map(Arc::new),
            provider_defined: None,
            origin: if execution.external { Origin::External } else { Origin::Typed },
        }
    }
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|text| (*text).to_owned()).collect()
}
/// The MCP effect hints of a tool. `None` means "not declared".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// The tool does not change its environment.
    #[serde(rename = "readOnlyHint", skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite data.
    #[serde(rename = "destructiveHint", skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Calling it twice with the same input has no further effect.
    #[serde(rename = "idempotentHint", skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// The tool reaches an open world (the web, other people).
    #[serde(rename = "openWorldHint", skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

/// The provider a built-in tool belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI; its built-ins are tools of the Responses API only.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini.
    Gemini,
}

impl Provider {
    /// The provider's prefix in a built-in's id: `openai`, `anthropic`,
    /// `google`.
    pub fn prefix(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "google",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Provider::OpenAi => "OpenAI",
            Provider::Anthropic => "Anthropic",
            Provider::Gemini => "Gemini",
        })
    }
}

/// Who runs a built-in tool's calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Runs {
    /// The provider, which returns the call and its result in its response.
    AtProvider,
    /// The host: the model's call comes back as an ordinary tool call and
    /// goes through the registry to the tool's handler.
    OnHost,
}

/// What a [`ToolDefinition`] of a built-in tool of a provider holds
/// ([`ToolDefinition::provider_defined`]; declared with `providers::builtin::ProviderTool`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ProviderDefined {
    /// The provider.
    pub provider: Provider,
    /// The built-in's id, `provider.type`: `openai.web_search`,
    /// `anthropic.bash_20250124`, `google.code_execution`.
    pub id: String,
    /// The provider's name for the tool, without a version: `web_search`,
    /// `bash`, `code_execution`, as `ProviderItem::tool` gives it.
    pub tool: String,
    /// The element of the request's `tools` that declares it, arguments
    /// included.
    pub entry: Value,
    /// The name the model calls it by, where the provider fixes one
    /// (Anthropic's `name`); a call under this name is a call of the tool.
    pub wire_name: Option<String>,
    /// Who runs its calls.
    pub runs: Runs,
    /// Why the registry's build refuses the declaration, if it does.
    pub(crate) problem: Option<String>,
}

//! The trait `#[tool]` implements, and the definition a registry keeps.

use std::any::Any;
use std::borrow::Cow;
use std::error::Error as StdError;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use schemars::{Schema, SchemaGenerator};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::context::{CallState, Ctx, StepView};
use crate::__private::Args;
use crate::error::ToolError;
use crate::policy::{PolicyKind, Verdict};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a policy predicate settles with: a verdict, or an error that denies
/// the call (fail closed) and is reported to the developer.
pub type PolicyFuture<'a> = BoxFuture<'a, Result<Verdict, BoxError>>;

/// An error of any type, boxed.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// What a tool's execution ends with, before the registry turns it into text.
pub type CallFuture = BoxFuture<'static, Result<ToolOutput, Failure>>;

/// A tool's successful output: its JSON value, and whether it ends the run.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutput {
    /// The output, serialised.
    pub value: Value,
    /// Whether this successful call ends the run (`ends_run`).
    pub ends_run: bool,
}

/// Why a tool's execution failed.
#[derive(Debug)]
pub enum Failure {
    /// The tool returned a [`ToolError`]: the model reads its line.
    Tool(ToolError),
    /// Any other error: a bug or an outage; the model reads the generic line.
    Internal(BoxError),
}

impl Failure {
    /// Sorts an error a tool returned: a [`ToolError`] (directly or boxed)
    /// is for the model, anything else is internal.
    pub fn from_error<E: Into<BoxError>>(error: E) -> Self {
        let boxed: BoxError = error.into();
        match boxed.downcast::<ToolError>() {
            Ok(tool_error) => Failure::Tool(*tool_error),
            Err(other) => Failure::Internal(other),
        }
    }
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

/// The metadata keys of `#[tool]` (`kind`, `examples`, `example_prompts`,
/// `related`, `always_active`, `classification`, `scope_prompt`, `meta`),
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
}

impl Execution {
    /// No execution key written.
    pub const DEFAULT: Execution = Execution { interim: None, interruptible: true };
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
    /// ([`ToolError::structured`]): `E`'s, for a `#[tool]` written
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
    /// After this many failed calls in one run (invalid arguments or tool
    /// errors), the tool is no longer offered in that run.
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
    /// A compact one-liner describing the tool to an intent classifier.
    pub classification: Option<String>,
    /// A one-line hint for an intent classifier on when and how to scope the tool.
    pub scope_prompt: Option<String>,
    /// Free-form metadata (`meta(key = value, ...)`), exported as MCP `_meta`.
    pub meta: Map<String, Value>,
}

impl ToolDefinition {
    /// A definition with only a name, description and input schema; the
    /// builder methods set the rest. Used for dynamic tools.
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
            kind: None,
            examples: Vec::new(),
            example_prompts: Vec::new(),
            related: Vec::new(),
            always_active: false,
            classification: None,
            scope_prompt: None,
            meta: Map::new(),
        }
    }

    pub(crate) fn from_meta(
        meta: &ToolMeta,
        metadata: &Metadata,
        execution: &Execution,
        input_schema: Value,
        schemas: [Option<Value>; 2],
    ) -> Self {
        let [output_schema, failure_schema] = schemas;
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
            kind: metadata.kind.map(str::to_owned),
            examples: strings(metadata.examples),
            example_prompts: strings(metadata.example_prompts),
            related: strings(metadata.related),
            always_active: metadata.always_active,
            classification: metadata.classification.map(str::to_owned),
            scope_prompt: metadata.scope_prompt.map(str::to_owned),
            meta: metadata.meta.iter().map(|(key, value)| ((*key).to_owned(), value.to_json())).collect(),
        }
    }
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|text| (*text).to_owned()).collect()
}

/// A tool usable in a `Registry<App>`. Implemented by `#[tool]` on the type
/// it generates beside the function (same name); not meant to be written by
/// hand (use [`DynamicTool`](crate::DynamicTool) for tools defined at run
/// time).
///
/// A tool whose first parameter is `Ctx<App>` implements `Tool<App>` for
/// that app only; a tool without a context implements it for every app.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool for a registry of app state `{App}`",
    label = "not a tool for `{App}`",
    note = "put `#[tool]` on an `async fn` and list the function's name in `tools![...]`",
    note = "a tool whose first parameter is `Ctx<X>` works only in a `Registry<X>`"
)]
pub trait Tool<App>: 'static {
    /// The parsed input the policy predicate sees and `call` consumes.
    #[doc(hidden)]
    type Input: Send + Sync + 'static;

    /// The macro's static description of the tool.
    #[doc(hidden)]
    const META: ToolMeta;

    /// The metadata keys written on the tool; none by default.
    #[doc(hidden)]
    const METADATA: Metadata = Metadata::EMPTY;

    /// The execution keys written on the tool; none by default.
    #[doc(hidden)]
    const EXECUTION: Execution = Execution::DEFAULT;

    /// The input schema, before the registry normalises it.
    #[doc(hidden)]
    fn input_schema(generator: &mut SchemaGenerator) -> Schema;

    /// The output schema, when the output type has one.
    #[doc(hidden)]
    fn output_schema(generator: &mut SchemaGenerator) -> Option<Schema>;

    /// The schema of a typed failure's structured value; `None` unless the
    /// tool is written `-> Result<T, E>` with a typed failure `E`.
    #[doc(hidden)]
    fn failure_schema(generator: &mut SchemaGenerator) -> Option<Schema> {
        let _ = generator;
        None
    }

    /// Reads the input from the arguments, text or a validated object
    /// (borrowed: the registry keeps them).
    #[doc(hidden)]
    fn parse(args: &mut Args<'_>) -> Result<Self::Input, serde_json::Error>;

    /// Parses again what a call's input was parsed from (for an `ends_run`
    /// predicate, which sees the input after the call consumed it).
    #[doc(hidden)]
    fn parse_again(args: &ParsedFrom<'_>) -> Option<Self::Input> {
        match args {
            ParsedFrom::Text(text) => Args::text(text, None)?.read_whole(Self::parse),
            ParsedFrom::Value(value) => match &**value {
                Value::Object(map) => Self::parse(&mut Args::new(map)).ok(),
                _ => None,
            },
        }
    }

    /// The policy predicate; only called when `META.policy` is `Predicate`.
    #[doc(hidden)]
    fn decide<'a>(input: &'a Self::Input, ctx: &'a Ctx<App>) -> PolicyFuture<'a> {
        let _ = (input, ctx);
        Box::pin(std::future::ready(Ok(Verdict::Allow)))
    }

    /// Whether this call may run beside the other calls of its step, by
    /// the `parallel_safe` predicate on the raw arguments; `None` when the
    /// tool has no predicate (`META.parallel_safe` decides).
    #[doc(hidden)]
    fn parallel_safe(args: &Value) -> Option<bool> {
        let _ = args;
        None
    }

    /// The visibility predicate; only called when `META.visible_when` is set.
    #[doc(hidden)]
    fn visible(view: &StepView<'_, App>) -> bool {
        let _ = view;
        true
    }

    /// Runs the tool. The call's state is lent: a tool that takes a context
    /// asks it for one (`call.ctx()`) and clones it. `args` is what the
    /// input was parsed from, for an `ends_run` predicate that needs the
    /// input after the call consumed it.
    #[doc(hidden)]
    fn call(input: Self::Input, call: &mut CallState<'_, App>, args: &ParsedFrom<'_>) -> CallFuture;
}

/// What a call's input was parsed from, kept by the registry (for an
/// `ends_run` predicate, and for a human to review a pending call).
#[doc(hidden)]
#[derive(Clone, Debug)]
pub enum ParsedFrom<'a> {
    /// The model's text, read straight into the input.
    Text(Cow<'a, str>),
    /// The arguments as a JSON value (an object), after validation.
    Value(Box<Value>),
}

impl ParsedFrom<'_> {
    /// The same, owning its text (to keep it while a call waits).
    pub fn into_owned(self) -> ParsedFrom<'static> {
        match self {
            ParsedFrom::Text(text) => ParsedFrom::Text(Cow::Owned(text.into_owned())),
            ParsedFrom::Value(value) => ParsedFrom::Value(value),
        }
    }

    /// The arguments as a JSON value, for a human to review.
    pub(crate) fn to_value(&self) -> Value {
        match self {
            // It parsed into the input, so it is an object.
            ParsedFrom::Text(text) => serde_json::from_str(text).unwrap_or_default(),
            ParsedFrom::Value(value) => Value::clone(value),
        }
    }
}

/// The object-safe face of a tool, shared by macro-made and dynamic tools.
pub(crate) trait ErasedTool<App>: Send + Sync {
    fn definition(&self) -> Result<ToolDefinition, String>;
    fn parse(&self, args: &Map<String, Value>) -> Result<Box<dyn Any + Send + Sync>, serde_json::Error>;
    /// The text read straight into the input, where the schema makes it
    /// exact; `None` sends the call down the value path.
    fn parse_text(&self, text: &str, properties: &[Box<str>]) -> Option<Box<dyn Any + Send + Sync>>;
    /// Whether `parse` itself checks the types the schema states (true for
    /// `#[tool]`s, whose input is a Rust type; false for dynamic tools,
    /// whose input is any JSON value and whose schema is the only check).
    fn parses_types(&self) -> bool;
    fn decide<'a>(&'a self, input: &'a (dyn Any + Send + Sync), ctx: &'a Ctx<App>) -> PolicyFuture<'a>;
    fn visible(&self, view: &StepView<'_, App>) -> bool;
    /// The `parallel_safe` predicate on the raw arguments, if the tool has one.
    fn parallel_safe(&self, args: &Value) -> Option<bool>;
    fn call(&self, input: Box<dyn Any + Send + Sync>, call: &mut CallState<'_, App>, args: &ParsedFrom<'_>) -> CallFuture;
}

struct Typed<T>(PhantomData<fn() -> T>);

impl<App: 'static, T: Tool<App>> ErasedTool<App> for Typed<T> {
    fn definition(&self) -> Result<ToolDefinition, String> {
        let mut generator = crate::schema::generator();
        let input = crate::schema::normalize_input(T::input_schema(&mut generator), &mut generator)?;
        let mut generator = crate::schema::output_generator();
        let output = T::output_schema(&mut generator)
            .map(|schema| crate::schema::with_definitions(schema, &mut generator));
        let mut generator = crate::schema::output_generator();
        let failure = T::failure_schema(&mut generator)
            .map(|schema| crate::schema::with_definitions(schema, &mut generator));
        Ok(ToolDefinition::from_meta(&T::META, &T::METADATA, &T::EXECUTION, input, [output, failure]))
    }

    fn parse(&self, args: &Map<String, Value>) -> Result<Box<dyn Any + Send + Sync>, serde_json::Error> {
        T::parse(&mut Args::new(args)).map(|input| Box::new(input) as Box<dyn Any + Send + Sync>)
    }

    fn parse_text(&self, text: &str, properties: &[Box<str>]) -> Option<Box<dyn Any + Send + Sync>> {
        let input = Args::text(text, Some(properties))?.read_whole(T::parse)?;
        Some(Box::new(input))
    }

    fn parses_types(&self) -> bool {
        true
    }

    fn decide<'a>(&'a self, input: &'a (dyn Any + Send + Sync), ctx: &'a Ctx<App>) -> PolicyFuture<'a> {
        match input.downcast_ref::<T::Input>() {
            Some(input) => T::decide(input, ctx),
            None => Box::pin(std::future::ready(Err("policy input of the wrong type".into()))),
        }
    }

    fn visible(&self, view: &StepView<'_, App>) -> bool {
        T::visible(view)
    }

    fn parallel_safe(&self, args: &Value) -> Option<bool> {
        T::parallel_safe(args)
    }

    fn call(&self, input: Box<dyn Any + Send + Sync>, call: &mut CallState<'_, App>, args: &ParsedFrom<'_>) -> CallFuture {
        match input.downcast::<T::Input>() {
            Ok(input) => T::call(*input, call, args),
            Err(_) => Box::pin(std::future::ready(Err(Failure::Internal("call input of the wrong type".into())))),
        }
    }
}

/// A tool ready for a registry: what `tools![...]` makes of each name, and
/// what [`DynamicTool`](crate::DynamicTool) converts into.
pub struct BoxedTool<App> {
    pub(crate) name: &'static str,
    pub(crate) inner: Arc<dyn ErasedTool<App>>,
}

impl<App> Clone for BoxedTool<App> {
    fn clone(&self) -> Self {
        BoxedTool { name: self.name, inner: self.inner.clone() }
    }
}

impl<App: 'static> BoxedTool<App> {
    /// Boxes the tool generated by `#[tool]` under the type `T`.
    pub fn of<T: Tool<App>>() -> Self {
        BoxedTool { name: T::META.name, inner: Arc::new(Typed::<T>(PhantomData)) }
    }

    pub(crate) fn dynamic(inner: Arc<dyn ErasedTool<App>>) -> Self {
        BoxedTool { name: "", inner }
    }
}

impl<App> std::fmt::Debug for BoxedTool<App> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BoxedTool").field(&self.name).finish()
    }
}

/// Collects `#[tool]` functions into the list a [`Registry`](crate::Registry)
/// is built from. The same name twice fails to compile.
///
/// ```
/// use tool_runtime::prelude::*;
///
/// /// Say hello.
/// #[tool]
/// async fn hello(name: String) -> String {
///     format!("Hello, {name}!")
/// }
///
/// /// Tell the time.
/// #[tool(read_only)]
/// async fn now() -> String {
///     "noon".into()
/// }
///
/// let registry = Registry::<()>::builder().tools(tools![hello, now]).build().unwrap();
/// assert_eq!(registry.names().collect::<Vec<_>>(), ["hello", "now"]);
/// ```
///
/// ```compile_fail
/// # use tool_runtime::prelude::*;
/// /// Say hello.
/// #[tool]
/// async fn hello() -> String { String::new() }
/// let tools: Vec<BoxedTool<()>> = tools![hello, hello];
/// ```
#[macro_export]
macro_rules! tools {
    ($($tool:path),* $(,)?) => {{
        const _: () = $crate::__private::assert_unique_names([$(<$tool as $crate::__private::Named>::NAME),*]);
        ::std::vec![$($crate::BoxedTool::of::<$tool>()),*]
    }};
}

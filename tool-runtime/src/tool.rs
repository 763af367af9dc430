//! The trait `#[tool]` implements, and its type erasure; what describes a
//! tool is in `definition`.

use std::any::Any;
use std::error::Error as StdError;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value};

use crate::call_report::CallReport;
use crate::context::{CallState, Ctx, StepView};
pub use crate::definition::{Annotations, EndsRun, Execution, FailureMode, Interim, MetaValue, Metadata, ToolDefinition, ToolMeta};
use crate::error::ToolError;
use crate::policy::Verdict;
use crate::readers::Args;
pub use crate::readers::ParsedFrom;
use crate::scope::ScopedTool;
use crate::validation::Properties;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a policy predicate settles with: a verdict, or an error that denies
/// the call (fail closed) and is reported to the developer.
pub type PolicyFuture<'a> = BoxFuture<'a, Result<Verdict, BoxError>>;

/// A policy predicate's call, not made yet: the pipeline makes it where the
/// registry's policy timeout applies.
pub enum PolicyCall<'a> {
    /// A synchronous predicate, which may block its thread: it is called on
    /// a blocking thread, raced against the timeout.
    Blocking(Box<dyn FnOnce() -> Result<Verdict, BoxError> + Send + 'a>),
    /// An async predicate's future, awaited under the timeout.
    Async(PolicyFuture<'a>),
}

/// An error of any type, boxed.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// An external tool's proposal (`resolve = path`): the host's typed value,
/// read back with [`Registry::proposal`](crate::Registry::proposal).
pub type Proposal = Box<dyn Any + Send>;

/// What a tool's execution ends with, before the registry turns it into text.
pub type CallFuture = BoxFuture<'static, Result<ToolOutput, Failure>>;

/// What a tool's reconcile hook (`#[tool(reconcile = path)]`,
/// [`DynamicTool::reconcile`](crate::DynamicTool::reconcile)) found of a
/// call of the tool that was started and never finished (its process died
/// mid-call), asked in a durable run before the call reads
/// `OUTCOME_UNKNOWN`. `Option<T>` converts into it: `Some` happened, `None`
/// unknown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reconciled<T> {
    /// The effect happened, and this is the output the call would have
    /// returned: it is journaled as the call's result.
    Happened(T),
    /// The effect did not happen: the unfinished start is withdrawn and
    /// the call runs now (of several calls that find it so, one runs).
    DidNotHappen,
    /// It cannot be told: the call reads `OUTCOME_UNKNOWN`, and stays in
    /// doubt until the host settles it.
    Unknown,
}

impl<T> From<Option<T>> for Reconciled<T> {
    fn from(found: Option<T>) -> Self {
        found.map_or(Reconciled::Unknown, Reconciled::Happened)
    }
}

/// A tool's successful output, and whether it ends the run.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutput {
    /// What the tool returned.
    pub output: Output,
    /// Whether this successful call ends the run (`ends_run`).
    pub ends_run: bool,
}

/// What a tool returned. (Small, at 32 bytes: every call's result moves
/// through several layers as a `Result<ToolOutput, Failure>`, and a JSON
/// value is 72.)
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// A string, which the model reads as it is.
    Text(String),
    /// Any other value, serialised.
    Value(Box<Value>),
    /// Content blocks (`Vec<Block>`).
    Blocks(Vec<crate::content::Block>),
}

impl Output {
    /// A serialised output: a string is text.
    pub fn of_value(value: Value) -> Self {
        match value {
            Value::String(text) => Output::Text(text),
            other => Output::Value(Box::new(other)),
        }
    }
}

/// Why a tool's execution failed.
#[derive(Debug)]
pub enum Failure {
    /// The tool returned a [`ToolError`]: the model reads its line. (Boxed:
    /// every call's result passes through several layers as a
    /// `Result<ToolOutput, Failure>`, and a `ToolError` is 160 bytes.)
    Tool(Box<ToolError>),
    /// Any other error: a bug or an outage; the model reads the generic line.
    Internal(BoxError),
}

impl Failure {
    /// Sorts an error a tool returned: a [`ToolError`] (directly or boxed)
    /// is for the model, anything else is internal.
    pub fn from_error<E: Into<BoxError>>(error: E) -> Self {
        let boxed: BoxError = error.into();
        match boxed.downcast::<ToolError>() {
            Ok(tool_error) => Failure::Tool(tool_error),
            Err(other) => Failure::Internal(other),
        }
    }
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
    fn verdict<'a>(input: &'a Self::Input, ctx: &'a Ctx<App>) -> PolicyCall<'a> {
        let _ = (input, ctx);
        PolicyCall::Async(Box::pin(std::future::ready(Ok(Verdict::Allow))))
    }

    /// Whether this call may run beside the other calls of its step, by
    /// the `parallel_safe` predicate on the raw arguments; `None` when the
    /// tool has no predicate (`META.parallel_safe` decides).
    #[doc(hidden)]
    fn parallel_safe(args: &Value) -> Option<bool> {
        let _ = args;
        None
    }

    /// The identity of the call's effect in a durable run's journal, from
    /// the input (`idempotency_key = path`); `None` (the default) keys it
    /// by the run and the call id.
    #[doc(hidden)]
    fn effect_key(input: &Self::Input) -> Option<String> {
        let _ = input;
        None
    }

    /// `reconcile = path`: in a durable run, what became of a call of the
    /// tool started and never finished, asked with the call's context
    /// before it reads `OUTCOME_UNKNOWN` ([`Reconciled`]; the default:
    /// unknown).
    #[doc(hidden)]
    fn reconcile(input: &Self::Input, ctx: &Ctx<App>) -> Reconciled<Result<ToolOutput, Failure>> {
        let _ = (input, ctx);
        Reconciled::Unknown
    }

    /// `resolve = path`, for an external tool: its validated input
    /// converted into the host's proposal, or why the call is refused (the
    /// text the model reads); `None` (the default) for a tool without one.
    #[doc(hidden)]
    fn resolve(input: &Self::Input) -> Option<Result<Proposal, String>> {
        let _ = input;
        None
    }

    /// `scope = path`: the schema of the scope type, which the intent
    /// classifier answers for this tool; `None` for a tool without a scope.
    #[doc(hidden)]
    fn scope_schema(generator: &mut SchemaGenerator) -> Option<Schema> {
        let _ = generator;
        None
    }

    /// `scope = path`: reads the scope value into the scope type and lets
    /// the function rebuild the tool; only called when `scope_schema` is
    /// `Some`.
    #[doc(hidden)]
    fn scope(scope: &Value, tool: &mut ScopedTool) -> Result<(), serde_json::Error> {
        let _ = (scope, tool);
        Ok(())
    }

    /// The visibility predicate; only called when `META.visible_when` is set.
    #[doc(hidden)]
    fn visible(view: &StepView<'_, App>) -> bool {
        let _ = view;
        true
    }

    /// `on_result = path`: sees each outcome of a call of the tool; only
    /// called when `EXECUTION.on_result` is set, off the call's path.
    #[doc(hidden)]
    fn on_result(report: &CallReport) {
        let _ = report;
    }

    /// Runs the tool. The call's state is lent: a tool that takes a context
    /// asks it for one (`call.ctx()`) and clones it. `args` is what the
    /// input was parsed from, for an `ends_run` predicate that needs the
    /// input after the call consumed it.
    #[doc(hidden)]
    fn call(input: Self::Input, call: &mut CallState<'_, App>, args: &ParsedFrom<'_>) -> CallFuture;

    /// Runs the tool where it is called, for a tool whose function never
    /// waits (the macro saw no `.await` in its body, and only macros that
    /// write none): what `call`'s future would return on its first poll,
    /// with no future boxed. Any other tool hands its input back, and is
    /// run by `call`.
    #[doc(hidden)]
    fn call_now(input: Self::Input, call: &mut CallState<'_, App>, args: &ParsedFrom<'_>) -> Result<Result<ToolOutput, Failure>, Self::Input> {
        let _ = (call, args);
        Err(input)
    }
}

/// A call made on text read straight into the input ([`ErasedTool::run_text`]).
pub(crate) enum TextCall {
    /// A tool that never waits ran: what it returned.
    Returned(Result<ToolOutput, Failure>),
    /// The tool's future, not yet polled.
    Made(CallFuture),
}

/// The object-safe face of a tool, shared by macro-made and dynamic tools.
pub(crate) trait ErasedTool<App>: Send + Sync {
    fn definition(&self) -> Result<ToolDefinition, String>;
    /// The keys that contradict each other, each worded with what to do:
    /// none for a `#[tool]`, whose macro refuses them at compile time.
    fn contradictions(&self) -> Vec<String> {
        Vec::new()
    }
    /// For a variant made at registration, the name of the `#[tool]` it
    /// is a variant of (its contradictions are worded as the variant's).
    fn variant_of(&self) -> Option<&'static str> {
        None
    }
    fn parse(&self, args: &Map<String, Value>) -> Result<Box<dyn Any + Send + Sync>, serde_json::Error>;
    /// The text read straight into the input, where the schema makes it
    /// exact; `None` sends the call down the value path.
    fn parse_text(&self, text: &str, properties: &Properties) -> Option<Box<dyn Any + Send + Sync>>;
    /// The text read straight into the input, as `parse_text` reads it,
    /// and the call made on it at once: run there by `call_now` where the
    /// tool never waits, else made by `call`. For a call whose verdict
    /// does not depend on its input, whose input is then never boxed.
    /// `None` (and no call made) sends the call down the stages one by one.
    fn run_text(&self, text: &str, properties: &Properties, call: &mut CallState<'_, App>, args: &ParsedFrom<'_>) -> Option<TextCall> {
        let _ = (text, properties, call, args);
        None
    }

    /// Whether `parse` itself checks the types the schema states (true for
    /// `#[tool]`s, whose input is a Rust type; false for dynamic tools,
    /// whose input is any JSON value and whose schema is the only check).
    fn parses_types(&self) -> bool;
    fn verdict<'a>(&'a self, input: &'a (dyn Any + Send + Sync), ctx: &'a Ctx<App>) -> PolicyCall<'a>;
    fn visible(&self, view: &StepView<'_, App>) -> bool;
    /// The tool's own result hook (`on_result`), if it has one.
    fn on_result(&self, report: &CallReport) {
        let _ = report;
    }
    /// The `parallel_safe` predicate on the raw arguments, if the tool has one.
    fn parallel_safe(&self, args: &Value) -> Option<bool>;
    /// The effect key the tool derives from a call's input, if it does.
    fn effect_key(&self, input: &(dyn Any + Send + Sync)) -> Option<String>;
    /// What the tool's reconcile hook says of an unfinished call.
    fn reconcile(&self, input: &(dyn Any + Send + Sync), ctx: &Ctx<App>) -> Reconciled<Result<ToolOutput, Failure>>;
    /// An external tool's proposal from a call's input (`resolve`), if it
    /// converts its calls; an error is the refusal the model reads.
    fn resolve(&self, input: &(dyn Any + Send + Sync)) -> Option<Result<Proposal, String>>;
    /// Rebuilds the tool for a scope value (`scope = path`); an error says
    /// why the value does not fit the scope type.
    fn scope(&self, scope: &Value, tool: &mut ScopedTool) -> Result<(), String>;
    fn call(&self, input: Box<dyn Any + Send + Sync>, call: &mut CallState<'_, App>, args: &ParsedFrom<'_>) -> CallFuture;
}

struct Typed<T>(PhantomData<fn() -> T>);

/// How a tool's schemas are generated, as function pointers: the one
/// [`define`] that reads them is compiled once, not once for each tool.
struct Schemas {
    input: fn(&mut SchemaGenerator) -> Schema,
    output: fn(&mut SchemaGenerator) -> Option<Schema>,
    failure: fn(&mut SchemaGenerator) -> Option<Schema>,
    scope: fn(&mut SchemaGenerator) -> Option<Schema>,
}

/// A tool's definition, from its constants and its schemas, each schema
/// generated with its own generator.
fn define(meta: &ToolMeta, metadata: &Metadata, execution: &Execution, schemas: Schemas) -> Result<ToolDefinition, String> {
    let mut generator = crate::schema::generator();
    let input = crate::schema::normalize_input((schemas.input)(&mut generator), &mut generator)?;
    let with_definitions = |schema: fn(&mut SchemaGenerator) -> Option<Schema>, mut generator: SchemaGenerator| {
        schema(&mut generator).map(|schema| crate::schema::with_definitions(schema, &mut generator))
    };
    let output = with_definitions(schemas.output, crate::schema::output_generator());
    let failure = with_definitions(schemas.failure, crate::schema::output_generator());
    let scope = with_definitions(schemas.scope, crate::schema::generator());
    Ok(ToolDefinition::from_meta(meta, metadata, execution, input, [output, failure, scope]))
}

impl<App: 'static, T: Tool<App>> ErasedTool<App> for Typed<T> {
    fn definition(&self) -> Result<ToolDefinition, String> {
        let schemas = Schemas { input: T::input_schema, output: T::output_schema, failure: T::failure_schema, scope: T::scope_schema };
        define(&T::META, &T::METADATA, &T::EXECUTION, schemas)
    }

    fn parse(&self, args: &Map<String, Value>) -> Result<Box<dyn Any + Send + Sync>, serde_json::Error> {
        T::parse(&mut Args::new(args)).map(|input| Box::new(input) as Box<dyn Any + Send + Sync>)
    }

    fn parse_text(&self, text: &str, properties: &Properties) -> Option<Box<dyn Any + Send + Sync>> {
        Some(Box::new(read_text::<App, T>(text, properties)?))
    }

    fn run_text(&self, text: &str, properties: &Properties, call: &mut CallState<'_, App>, args: &ParsedFrom<'_>) -> Option<TextCall> {
        let input = read_text::<App, T>(text, properties)?;
        Some(match T::call_now(input, call, args) {
            Ok(returned) => TextCall::Returned(returned),
            Err(input) => TextCall::Made(T::call(input, call, args)),
        })
    }

    fn parses_types(&self) -> bool {
        true
    }

    fn verdict<'a>(&'a self, input: &'a (dyn Any + Send + Sync), ctx: &'a Ctx<App>) -> PolicyCall<'a> {
        match input.downcast_ref::<T::Input>() {
            Some(input) => T::verdict(input, ctx),
            None => wrong_policy_input(),
        }
    }

    fn visible(&self, view: &StepView<'_, App>) -> bool {
        T::visible(view)
    }

    fn on_result(&self, report: &CallReport) {
        T::on_result(report);
    }

    fn parallel_safe(&self, args: &Value) -> Option<bool> {
        T::parallel_safe(args)
    }

    fn effect_key(&self, input: &(dyn Any + Send + Sync)) -> Option<String> {
        T::effect_key(input.downcast_ref::<T::Input>()?)
    }

    fn reconcile(&self, input: &(dyn Any + Send + Sync), ctx: &Ctx<App>) -> Reconciled<Result<ToolOutput, Failure>> {
        input.downcast_ref::<T::Input>().map_or(Reconciled::Unknown, |input| T::reconcile(input, ctx))
    }

    fn resolve(&self, input: &(dyn Any + Send + Sync)) -> Option<Result<Proposal, String>> {
        T::resolve(input.downcast_ref::<T::Input>()?)
    }

    fn scope(&self, scope: &Value, tool: &mut ScopedTool) -> Result<(), String> {
        T::scope(scope, tool).map_err(|err| err.to_string())
    }

    fn call(&self, input: Box<dyn Any + Send + Sync>, call: &mut CallState<'_, App>, args: &ParsedFrom<'_>) -> CallFuture {
        match input.downcast::<T::Input>() {
            Ok(input) => T::call(*input, call, args),
            Err(_) => wrong_call_input(),
        }
    }
}

// What a tool reads of an input of another tool's type (a bug of the
// runtime's): apart from the generic methods, so that it is compiled once,
// not once for each tool.

fn wrong_policy_input<'a>() -> PolicyCall<'a> {
    PolicyCall::Async(Box::pin(std::future::ready(Err("policy input of the wrong type".into()))))
}

fn wrong_call_input() -> CallFuture {
    Box::pin(std::future::ready(Err(Failure::Internal("call input of the wrong type".into()))))
}

/// The text read straight into `T`'s input, when its reader takes it whole.
fn read_text<App, T: Tool<App>>(text: &str, properties: &Properties) -> Option<T::Input> {
    Args::text(text, Some(properties))?.read_whole(T::parse)
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

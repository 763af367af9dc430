//! The diagnostic probes: traits generated code goes through, spanned on
//! the user's tokens, so that a wrong parameter, context, input, default or
//! predicate fails there with a message that says what to do.

use std::future::Future;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::returns::ToolReturn;
use super::schemas::{InputSchema, struct_schema};
use crate::call_report::CallReport;
use crate::context::{Ctx, StepView};
use crate::policy::Verdict;
use crate::readers::Args;
use crate::tool::{BoxError, Failure, PolicyCall, Proposal, Reconciled, ToolOutput};

/// A type usable as a tool parameter. Generated code goes through its
/// functions, spanned on the parameter's type, so a type that is not
/// `Deserialize + JsonSchema` fails once, there, with this message.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool parameter",
    label = "not `Deserialize + JsonSchema`",
    note = "a tool parameter must implement `serde::Deserialize` and `schemars::JsonSchema`: add `#[derive(Deserialize, JsonSchema)]` to the type"
)]
pub trait ToolParam: Sized {
    /// Adds the parameter to the input schema.
    fn add_to(schema: &mut InputSchema, generator: &mut SchemaGenerator, name: &'static str, doc: &'static str, default: Option<Option<Value>>);

    /// Reads the parameter from the arguments.
    fn take_from(args: &mut Args<'_>, name: &'static str) -> Result<Self, serde_json::Error>;

    /// Reads the parameter from the arguments, or its default.
    fn take_or_else_from(args: &mut Args<'_>, name: &'static str, default: impl FnOnce() -> Self) -> Result<Self, serde_json::Error>;
}
// No supertraits: each would be reported on its own, without this message.
#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned + JsonSchema> ToolParam for T {
    fn add_to(schema: &mut InputSchema, generator: &mut SchemaGenerator, name: &'static str, doc: &'static str, default: Option<Option<Value>>) {
        schema.param::<T>(generator, name, doc, default);
    }

    fn take_from(args: &mut Args<'_>, name: &'static str) -> Result<T, serde_json::Error> {
        args.take::<T>(name)
    }

    fn take_or_else_from(args: &mut Args<'_>, name: &'static str, default: impl FnOnce() -> T) -> Result<T, serde_json::Error> {
        args.take_or_else::<T>(name, default)
    }
}

/// `#[tool(default)]` on a parameter: its type's `Default`.
#[diagnostic::on_unimplemented(
    message = "`#[tool(default)]` needs a default value, but `{Self}` does not implement `Default`",
    label = "`{Self}` has no `Default`",
    note = "derive or implement `Default` for `{Self}`, or give the value: `#[tool(default = expr)]`"
)]
pub trait DefaultParam: Sized {
    fn default_param() -> Self;
}
#[diagnostic::do_not_recommend]
impl<T: Default> DefaultParam for T {
    fn default_param() -> Self {
        T::default()
    }
}

/// The struct of an `Input<T>` tool.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's input",
    label = "not `Deserialize + JsonSchema`",
    note = "the struct in `Input<T>` must implement `serde::Deserialize` and `schemars::JsonSchema`: add `#[derive(Deserialize, JsonSchema)]` to it"
)]
pub trait ToolInput: Sized {
    fn schema(generator: &mut SchemaGenerator) -> Schema;
    fn parse(args: &mut Args<'_>) -> Result<Self, serde_json::Error>;
}
#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned + JsonSchema> ToolInput for T {
    fn schema(generator: &mut SchemaGenerator) -> Schema {
        struct_schema::<T>(generator)
    }

    fn parse(args: &mut Args<'_>) -> Result<T, serde_json::Error> {
        args.parse_struct::<T>()
    }
}

/// The first parameter, read as the context.
#[diagnostic::on_unimplemented(
    message = "the first parameter is read as the tool's context, but `{Self}` is not `tool_runtime::Ctx<{App}>`",
    label = "not the runtime's `Ctx`",
    note = "write the context as `Ctx<App>` with `tool_runtime::Ctx`; a tool's inputs come after it"
)]
pub trait CtxParam<App>: Sized {
    fn from_ctx(ctx: Ctx<App>) -> Self;
}
impl<App> CtxParam<App> for Ctx<App> {
    fn from_ctx(ctx: Ctx<App>) -> Self {
        ctx
    }
}

/// A first parameter written `Ctx` without its app type, which only
/// compiles when `Ctx` is an alias: the macro needs the app type written.
#[diagnostic::on_unimplemented(
    message = "`#[tool]` reads the app type from the context's type as written: write `{Self}` here, not an alias",
    label = "write `{Self}`",
    note = "a tool whose first parameter is `Ctx<App>` implements the tool for `Registry<App>`, with `App` as written"
)]
pub trait CtxAppWritten {
    const CHECKED: () = ();
}
/// Nothing implements `CtxAppWritten` (this impl only keeps rustc from
/// calling the trait unimplementable).
pub enum NoApp {}
#[diagnostic::do_not_recommend]
impl CtxAppWritten for NoApp {}

/// A parameter written as `Input<T>`, taking the whole input as one struct.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is read as the whole input, but it is not `tool_runtime::Input<T>`",
    label = "not the runtime's `Input`",
    note = "take a whole input struct as `Input<T>` from `tool_runtime`, with `T: Deserialize + JsonSchema`"
)]
pub trait InputParam: Sized {
    type Inner;
    fn wrap(inner: Self::Inner) -> Self;
}
impl<T> InputParam for crate::Input<T> {
    type Inner = T;
    fn wrap(inner: T) -> Self {
        crate::Input(inner)
    }
}

/// What a policy predicate may return: a verdict, or a result of one.
#[diagnostic::on_unimplemented(
    message = "a policy predicate must return `Verdict` or `Result<Verdict, E>`, sync or async, not `{Self}`",
    label = "returns `{Self}`",
    note = "write it as `fn(&Input, &Ctx<App>) -> Verdict` (or `async fn`)"
)]
pub trait IntoVerdict {
    fn into_verdict(self) -> Result<Verdict, BoxError>;
}
impl IntoVerdict for Verdict {
    fn into_verdict(self) -> Result<Verdict, BoxError> {
        Ok(self)
    }
}
impl<E: Into<BoxError>> IntoVerdict for Result<Verdict, E> {
    fn into_verdict(self) -> Result<Verdict, BoxError> {
        self.map_err(Into::into)
    }
}

/// `PolicyProbe(move || predicate(input, ctx)).into_policy()`: the call of a
/// sync or an async predicate, not made yet (the pipeline makes it under
/// the policy timeout; a sync one on a blocking thread).
pub struct PolicyProbe<C>(pub C);

impl<C, F> PolicyProbe<C>
where
    C: FnOnce() -> F,
    F: Future + Send,
    F::Output: IntoVerdict,
{
    pub fn into_policy<'a>(self) -> PolicyCall<'a>
    where
        C: Send + 'a,
        F: 'a,
    {
        PolicyCall::Async(Box::pin(async move { (self.0)().await.into_verdict() }))
    }
}

/// The sync case, and the fallback for any other return type, so that a
/// wrong one is reported as `IntoVerdict`, with its message.
pub trait SyncPolicy {
    type Returned;
    fn into_policy<'a>(self) -> PolicyCall<'a>
    where
        Self: Send + 'a,
        Self::Returned: IntoVerdict;
}
impl<C: FnOnce() -> R, R> SyncPolicy for PolicyProbe<C> {
    type Returned = R;
    fn into_policy<'a>(self) -> PolicyCall<'a>
    where
        Self: Send + 'a,
        R: IntoVerdict,
    {
        PolicyCall::Blocking(Box::new(move || {
            // Moved whole: the probe is what is known to be `Send`.
            let probe = self;
            (probe.0)().into_verdict()
        }))
    }
}

/// A `visible_when` predicate.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `visible_when` predicate for a tool of app `{App}`",
    label = "expected `fn(&StepView<'_, {App}>) -> bool`",
    note = "a tool without a `Ctx<App>` parameter works in any registry, so its predicates must be generic \
            (`fn p<App>(view: &StepView<'_, App>) -> bool`); or give the tool a first parameter `ctx: Ctx<YourApp>`"
)]
pub trait VisibleWhen<App> {
    fn visible(&self, view: &StepView<'_, App>) -> bool;
}
impl<App, F: Fn(&StepView<'_, App>) -> bool> VisibleWhen<App> for F {
    fn visible(&self, view: &StepView<'_, App>) -> bool {
        self(view)
    }
}

/// A `parallel_safe` predicate, on the raw arguments.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `parallel_safe` predicate",
    label = "expected `fn(&serde_json::Value) -> bool`",
    note = "the predicate sees the call's raw arguments, before validation, and returns `bool` or `Result<bool, E>`; \
            false, an error or a panic means the call is not parallel-safe"
)]
pub trait ParallelSafeWhen {
    fn parallel_safe(&self, args: &Value) -> bool;
}
impl<F: Fn(&Value) -> R, R: ParallelVerdict> ParallelSafeWhen for F {
    fn parallel_safe(&self, args: &Value) -> bool {
        self(args).is_parallel_safe()
    }
}

/// What a `parallel_safe` predicate returns: `bool`, or `Result<bool, E>`
/// (an error means not parallel-safe).
pub trait ParallelVerdict {
    #[allow(clippy::wrong_self_convention, reason = "a predicate's verdict is read once, consumed")]
    fn is_parallel_safe(self) -> bool;
}
impl ParallelVerdict for bool {
    fn is_parallel_safe(self) -> bool {
        self
    }
}
impl<E> ParallelVerdict for Result<bool, E> {
    fn is_parallel_safe(self) -> bool {
        self.unwrap_or(false)
    }
}

/// `ends_run_call(predicate, input, output).decide().await`: calls an
/// `ends_run` predicate, sync or async. Coercing the path to a function
/// pointer reports a wrong signature on it, once.
pub fn ends_run_call<'a, I, O, R>(predicate: fn(&'a I, &'a O) -> R, input: &'a I, output: &'a O) -> EndsRunProbe<R> {
    EndsRunProbe(predicate(input, output))
}

/// What an `ends_run` predicate returned, to be settled by `decide`.
pub struct EndsRunProbe<R>(pub R);

impl<F: Future<Output = bool>> EndsRunProbe<F> {
    /// An async predicate: its future.
    pub fn decide(self) -> F {
        self.0
    }
}

/// The sync case, and the fallback for any other return type, so that a
/// wrong one is reported as `EndsRunVerdict`, with its message.
pub trait SyncEndsRun {
    type Returned;
    fn decide(self) -> std::future::Ready<bool>
    where
        Self::Returned: EndsRunVerdict;
}
impl<R> SyncEndsRun for EndsRunProbe<R> {
    type Returned = R;
    fn decide(self) -> std::future::Ready<bool>
    where
        R: EndsRunVerdict,
    {
        std::future::ready(self.0.ends_run())
    }
}

/// What an `ends_run` predicate may return.
#[diagnostic::on_unimplemented(
    message = "an `ends_run` predicate must return `bool`, sync or async, not `{Self}`",
    label = "returns `{Self}`",
    note = "write it as `fn(&Input, &Output) -> bool` or `async fn(&Input, &Output) -> bool`, where `Input` is the type named like the tool"
)]
pub trait EndsRunVerdict {
    fn ends_run(self) -> bool;
}
impl EndsRunVerdict for bool {
    fn ends_run(self) -> bool {
        self
    }
}

/// `effect_key_call(key, input)`: calls an `idempotency_key` function.
/// Coercing the path to a function pointer reports a wrong signature on it,
/// once; a wrong return type is reported as `EffectKey`, with its message.
pub fn effect_key_call<'a, I, K: EffectKey>(key: fn(&'a I) -> K, input: &'a I) -> String {
    key(input).into_key()
}

/// `on_result_call(hook, report)`: calls an `on_result` hook. Coercing the
/// path to a function pointer reports a wrong signature on it, once.
pub fn on_result_call(hook: fn(&CallReport), report: &CallReport) {
    hook(report);
}

/// `resolve_call(resolve, input)`: calls an external tool's `resolve`
/// function: its proposal boxed for the host, or its error as the text the
/// model reads. Coercing the path to a function pointer reports a wrong
/// signature on it, once.
pub fn resolve_call<'a, I, P: Send + 'static, E: ResolveError>(resolve: fn(&'a I) -> Result<P, E>, input: &'a I) -> Result<Proposal, String> {
    match resolve(input) {
        Ok(proposal) => Ok(Box::new(proposal)),
        Err(error) => Err(error.refusal()),
    }
}

/// What a `resolve` function fails with: text the model reads.
#[diagnostic::on_unimplemented(
    message = "the error of a `resolve` function is what the model reads as the call's refusal, but `{Self}` is not text",
    label = "not `Display`",
    note = "return `Result<Proposal, String>` (or an error type that implements `std::fmt::Display`), worded for the model: \
            say what is wrong with the call and how to make it again"
)]
pub trait ResolveError {
    fn refusal(self) -> String;
}
impl<E: std::fmt::Display> ResolveError for E {
    fn refusal(self) -> String {
        self.to_string()
    }
}

/// `reconcile_call(hook, input, ctx)`: calls a `reconcile` function, and
/// serialises the output it gives as the tool's own. Coercing the path to
/// a function pointer reports a wrong signature on it, once; an answer
/// that is not one fails on `IntoReconciled`, with its message.
pub fn reconcile_call<'a, I, App, R: IntoReconciled>(
    hook: fn(&'a I, &'a Ctx<App>) -> R,
    input: &'a I,
    ctx: &'a Ctx<App>,
) -> Reconciled<Result<ToolOutput, Failure>> {
    hook(input, ctx).into_reconciled()
}

/// What a `reconcile` function may answer: a [`Reconciled`] of the tool's
/// output, or an `Option` of it (`None`: unknown).
#[diagnostic::on_unimplemented(
    message = "a `reconcile` function must answer `Reconciled<T>` or `Option<T>` of the tool's output `T`, not `{Self}`",
    label = "answers `{Self}`",
    note = "write it as a sync `fn(&Input, &Ctx<App>) -> Reconciled<T>`: `Happened(output)` when the effect took place, \
            `DidNotHappen` when it did not (the call then runs), `Unknown` when it cannot tell"
)]
pub trait IntoReconciled {
    fn into_reconciled(self) -> Reconciled<Result<ToolOutput, Failure>>;
}
impl<O: ToolReturn> IntoReconciled for Reconciled<O> {
    fn into_reconciled(self) -> Reconciled<Result<ToolOutput, Failure>> {
        match self {
            Reconciled::Happened(output) => Reconciled::Happened(output.to_output(false)),
            Reconciled::DidNotHappen => Reconciled::DidNotHappen,
            Reconciled::Unknown => Reconciled::Unknown,
        }
    }
}
impl<O: ToolReturn> IntoReconciled for Option<O> {
    fn into_reconciled(self) -> Reconciled<Result<ToolOutput, Failure>> {
        Reconciled::from(self).into_reconciled()
    }
}

/// What an `idempotency_key` function may return: the key as text.
#[diagnostic::on_unimplemented(
    message = "an `idempotency_key` function must return the key as a `String` or a `&str`, not `{Self}`",
    label = "returns `{Self}`",
    note = "write it as a sync `fn(&Input) -> String`, where `Input` is the type named like the tool (or `T` of `Input<T>`); \
            turn a number into text with `to_string()` or `format!`"
)]
pub trait EffectKey {
    fn into_key(self) -> String;
}
impl EffectKey for String {
    fn into_key(self) -> String {
        self
    }
}
impl EffectKey for &str {
    fn into_key(self) -> String {
        self.to_owned()
    }
}

/// `scope_fn(path)`: a `scope = path` function, coerced once to a function
/// pointer, so that a wrong signature (or a scope type that is not
/// `Deserialize + JsonSchema`) is reported on the path, once. What it
/// gives names no scope type, so nothing that uses it fails again.
pub fn scope_fn<S: schemars::JsonSchema + serde::de::DeserializeOwned + 'static>(scope: fn(&S, &mut crate::scope::ScopedTool)) -> ScopeFn {
    ScopeFn {
        schema: |generator| generator.subschema_for::<S>(),
        call: Box::new(move |value, tool| {
            let value = S::deserialize(value)?;
            scope(&value, tool);
            Ok(())
        }),
    }
}

/// A tool's `scope` function, whatever its scope type: the schema of that
/// type, and the function on a scope value read into it.
pub struct ScopeFn {
    schema: fn(&mut schemars::SchemaGenerator) -> schemars::Schema,
    #[allow(clippy::type_complexity)]
    call: Box<dyn Fn(&serde_json::Value, &mut crate::scope::ScopedTool) -> Result<(), serde_json::Error>>,
}

impl ScopeFn {
    /// The schema of the scope type.
    pub fn schema(&self, generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        (self.schema)(generator)
    }

    /// Reads a scope value into the scope type and lets the function
    /// rebuild the tool.
    pub fn call(&self, value: &serde_json::Value, tool: &mut crate::scope::ScopedTool) -> Result<(), serde_json::Error> {
        (self.call)(value, tool)
    }
}

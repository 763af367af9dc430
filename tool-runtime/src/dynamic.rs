//! Tools defined at run time from a name, a description and a raw JSON
//! Schema: tools discovered from an MCP server or loaded from configuration.
//!
//! A dynamic tool has the keys of `#[tool]`, as builder methods, and the
//! macro's checks of them: where the macro refuses two keys together at
//! compile time, [`RegistryBuilder::build`](crate::RegistryBuilder::build)
//! refuses them with a [`BuildProblem::Contradiction`](crate::BuildProblem::Contradiction)
//! naming the tool (`dynamic/checks.rs`). [`DynamicTool::streamed`] is the
//! streaming form, as a `#[tool]` returning [`Streamed`].

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::call_report::CallReport;
use crate::context::{Ctx, StepView};
use crate::error::ToolError;
use crate::origin::Origin;
use crate::policy::{PolicyKind, Verdict};
use crate::scope::ScopedTool;
use crate::streamed::Streamed;
use crate::tool::{Annotations, BoxError, BoxFuture, BoxedTool, EndsRun, FailureMode, Interim, PolicyCall, Proposal, Reconciled, ToolDefinition};

/// What runs a call: a handler that returns the output, or one that returns
/// a stream of outputs (every one but the last preliminary).
enum Handler<App> {
    Value(ValueFn<App>),
    Streamed(StreamFn<App>),
}
type ValueFn<App> = Arc<dyn Fn(Value, Ctx<App>) -> BoxFuture<'static, Result<Value, BoxError>> + Send + Sync>;
type StreamFn<App> = Arc<dyn Fn(Value, Ctx<App>) -> BoxFuture<'static, Streamed<Value>> + Send + Sync>;
type PolicyFn<App> = Arc<dyn for<'a> Fn(&'a Value, &'a Ctx<App>) -> PolicyCall<'a> + Send + Sync>;
type VisibleFn<App> = Arc<dyn Fn(&StepView<'_, App>) -> bool + Send + Sync>;
/// An `ends_run` predicate, on the validated arguments and the output.
#[derive(Clone)]
enum EndsRunFn {
    Sync(SyncEndsRun),
    Async(AsyncEndsRun),
}
type SyncEndsRun = Arc<dyn Fn(&Value, &Value) -> bool + Send + Sync>;
type AsyncEndsRun = Arc<dyn Fn(Value, Value) -> BoxFuture<'static, bool> + Send + Sync>;
type ParallelFn = Arc<dyn Fn(&Value) -> bool + Send + Sync>;
type EffectKeyFn = Arc<dyn Fn(&Value) -> String + Send + Sync>;
type ReconcileFn<App> = Arc<dyn Fn(&Value, &Ctx<App>) -> Reconciled<Value> + Send + Sync>;
type ScopeFn = Arc<dyn Fn(&Value, &mut ScopedTool) + Send + Sync>;
type ResultFn = Arc<dyn Fn(&CallReport) + Send + Sync>;
type ResolveFn = Arc<dyn Fn(&Value) -> Result<Proposal, String> + Send + Sync>;

/// An `on_error` recovery, on the validated arguments and the handler's
/// error; `None` declines.
#[derive(Clone)]
enum RecoverFn {
    Sync(SyncRecover),
    Async(AsyncRecover),
}
type SyncRecover = Arc<dyn Fn(&Value, &BoxError) -> Option<Value> + Send + Sync>;
type AsyncRecover = Arc<dyn Fn(Value, Arc<BoxError>) -> BoxFuture<'static, Option<Value>> + Send + Sync>;

/// A tool whose schema is known only at run time. Its arguments go through
/// the same pipeline as a `#[tool]`'s: guard, validation against the given
/// schema, policy, timeout, output.
///
/// ```
/// use std::sync::Arc;
/// use serde_json::{json, Value};
/// use tool_runtime::prelude::*;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let shout = DynamicTool::new(
///     "shout",
///     "Repeat the text in capitals.",
///     json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
///     |args: Value, _ctx: Ctx<()>| async move {
///         Ok::<_, ToolError>(Value::from(args["text"].as_str().unwrap_or_default().to_uppercase()))
///     },
/// );
/// let registry = Registry::builder().tool(shout).build().unwrap();
/// let result = registry.invoke(&Arc::new(()), "shout", r#"{"text": "hi"}"#).await;
/// assert_eq!(result.text, "HI");
/// # }
/// ```
pub struct DynamicTool<App> {
    definition: ToolDefinition,
    handler: Handler<App>,
    policy: Option<PolicyFn<App>>,
    visible: Option<VisibleFn<App>>,
    ends_run: Option<EndsRunFn>,
    parallel: Option<ParallelFn>,
    recover: Option<RecoverFn>,
    effect_key: Option<EffectKeyFn>,
    reconcile: Option<ReconcileFn<App>>,
    scope: Option<ScopeFn>,
    on_result: Option<ResultFn>,
    resolve: Option<ResolveFn>,
    content_blocks: bool,
}

impl<App: Send + Sync + 'static> DynamicTool<App> {
    /// A tool named `name`, described by `description`, whose input must
    /// match `input_schema` (an object schema), run by `handler`.
    pub fn new<F, Fut, E>(name: impl Into<String>, description: impl Into<String>, input_schema: Value, handler: F) -> Self
    where
        F: Fn(Value, Ctx<App>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        let handler = Handler::Value(Arc::new(move |args, ctx| {
            let future = handler(args, ctx);
            Box::pin(async move { future.await.map_err(Into::into) })
        }));
        DynamicTool::with_handler(ToolDefinition::new(name, description, input_schema), handler)
    }

    /// A streaming tool (a `#[tool]` returning [`Streamed`]): `handler`
    /// returns a stream of values, of which every one but the last is a
    /// preliminary result, sent through the call's progress sink (a
    /// [`Progress`](crate::Progress) report whose `preliminary` holds it; MCP
    /// progress notifications), and the last is the result the model reads.
    /// The tool's timeout, cancellation and output limit cover the whole
    /// stream, as for a `#[tool]`. An `Err` item of
    /// [`Streamed::try_new`] ends the call with that error; a stream that
    /// ends without an item gives the generic 500. `on_error` does not apply
    /// (the build refuses it).
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use serde_json::{json, Value};
    /// use tool_runtime::prelude::*;
    /// use tool_runtime::{stream, ProgressSink, Streamed};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let count = DynamicTool::streamed("count", "Count to three.", json!({"type": "object"}), |_: Value, _: Ctx<()>| async {
    ///     Streamed::new(stream::iter([json!(1), json!(2), json!(3)]))
    /// });
    /// let registry = Registry::builder().tool(count).build().unwrap();
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let sink = seen.clone();
    /// let progress = ProgressSink::new(move |report| sink.lock().unwrap().push(report.preliminary.unwrap()));
    /// let result = registry.call(&Arc::new(()), "count", "{}").progress(progress).await.into_result().unwrap();
    /// assert_eq!(result.text, "3");
    /// assert_eq!(*seen.lock().unwrap(), [json!(1), json!(2)]);
    /// # }
    /// ```
    pub fn streamed<F, Fut>(name: impl Into<String>, description: impl Into<String>, input_schema: Value, handler: F) -> Self
    where
        F: Fn(Value, Ctx<App>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Streamed<Value>> + Send + 'static,
    {
        let handler = Handler::Streamed(Arc::new(move |args, ctx| Box::pin(handler(args, ctx))));
        DynamicTool::with_handler(ToolDefinition::new(name, description, input_schema), handler)
    }

    fn with_handler(definition: ToolDefinition, handler: Handler<App>) -> Self {
        DynamicTool {
            definition,
            handler,
            policy: None,
            visible: None,
            ends_run: None,
            parallel: None,
            recover: None,
            effect_key: None,
            reconcile: None,
            scope: None,
            on_result: None,
            resolve: None,
            content_blocks: false,
        }
    }

    /// An external tool (`#[tool(external)]`): its calls are validated and
    /// decided, then handed to the host to run ([`ExternalCalls::complete`](crate::ExternalCalls::complete)
    /// supplies the output). Give it an [`output_schema`](Self::output_schema)
    /// to have the host's output checked.
    pub fn external(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        let mut tool = DynamicTool::new(name, description, input_schema, |_args, _ctx| async { Err::<Value, _>(ToolError::internal()) });
        tool.definition.external = true;
        tool.definition.origin = Origin::External;
        tool
    }

    /// For an external tool ([`external`](Self::external)): converts a
    /// call's validated arguments into the host's typed proposal, as
    /// `#[tool(resolve = path)]` does. When it fails, the call is refused
    /// and the model reads the error's text; else the call is handed over,
    /// and the host reads the proposal with
    /// [`Registry::proposal`](crate::Registry::proposal) (or
    /// [`ExternalCalls::proposal`](crate::ExternalCalls::proposal)), which
    /// converts again: keep it a pure function of the arguments. Not on a
    /// tool the registry runs: the build refuses it.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use serde_json::{json, Value};
    /// # use tool_runtime::prelude::*;
    /// use tool_runtime::ResultKind;
    ///
    /// struct Transfer { cents: u64 }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let transfer = DynamicTool::external("transfer", "Propose a transfer.", json!({"type": "object"}))
    ///     .resolve(|args: &Value| match args["cents"].as_u64() {
    ///         Some(cents) if cents > 0 => Ok(Transfer { cents }),
    ///         _ => Err("Give the amount in cents, above zero."),
    ///     });
    /// let registry = Registry::builder().tool(transfer).build().unwrap();
    /// let app = Arc::new(());
    /// let refused = registry.invoke(&app, "transfer", r#"{"cents": 0}"#).await;
    /// assert_eq!(refused.kind, ResultKind::Denied);
    /// let handed = registry.invoke(&app, "transfer", r#"{"cents": 500}"#).await;
    /// let proposal: Transfer = registry.proposal(&handed.external_call().unwrap()).unwrap();
    /// assert_eq!(proposal.cents, 500);
    /// # }
    /// ```
    pub fn resolve<P, E>(mut self, resolve: impl Fn(&Value) -> Result<P, E> + Send + Sync + 'static) -> Self
    where
        P: Send + 'static,
        E: std::fmt::Display,
    {
        self.definition.resolve = true;
        self.resolve = Some(Arc::new(move |args| resolve(args).map(|proposal| Box::new(proposal) as Proposal).map_err(|error| error.to_string())));
        self
    }

    /// A human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.definition.title = Some(title.into());
        self
    }

    /// Free tags.
    pub fn tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.definition.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Effect hints; `read_only` also makes the tool parallel-safe.
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.definition.annotations = annotations;
        if annotations.read_only == Some(true) {
            self.definition.parallel_safe = true;
        }
        self
    }

    /// A static policy (`Allow`, `Deny` or `NeedsApproval`).
    pub fn policy(mut self, policy: PolicyKind) -> Self {
        self.definition.policy = policy;
        self.policy = None;
        self
    }

    /// A policy predicate on the validated arguments and the call context.
    /// It may block: it runs on a blocking thread, raced against the
    /// registry's policy timeout (one still running then is left to finish
    /// there, and the call is denied).
    pub fn policy_fn(mut self, predicate: impl Fn(&Value, &Ctx<App>) -> Verdict + Send + Sync + 'static) -> Self {
        self.definition.policy = PolicyKind::Predicate;
        let predicate = Arc::new(predicate);
        self.policy = Some(Arc::new(move |args, ctx| {
            let predicate = predicate.clone();
            PolicyCall::Blocking(Box::new(move || Ok(predicate(args, ctx))))
        }));
        self
    }

    /// An async policy predicate: it gets a copy of the validated arguments
    /// and the call's context, and may await (a lookup, a service). It runs
    /// under the registry's policy timeout; an error or a panic denies the
    /// call (fail closed) and is reported.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use serde_json::{json, Value};
    /// # use tool_runtime::prelude::*;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let pay = DynamicTool::new("pay", "Pay an amount.", json!({"type": "object"}), |_args, _ctx: Ctx<()>| async {
    ///     Ok::<_, ToolError>(json!("paid"))
    /// })
    /// .policy_async(|args: Value, _ctx| async move {
    ///     let small = args["amount"].as_u64().is_some_and(|amount| amount <= 100);
    ///     Ok::<_, std::io::Error>(if small { Verdict::Allow } else { Verdict::deny("Too much.") })
    /// });
    /// let registry = Registry::builder().tool(pay).build().unwrap();
    /// let app = Arc::new(());
    /// assert_eq!(registry.invoke(&app, "pay", r#"{"amount": 20}"#).await.text, "paid");
    /// assert!(registry.invoke(&app, "pay", r#"{"amount": 900}"#).await.text.contains("Too much."));
    /// # }
    /// ```
    pub fn policy_async<F, Fut, E>(mut self, predicate: F) -> Self
    where
        F: Fn(Value, Ctx<App>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Verdict, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        self.definition.policy = PolicyKind::Predicate;
        self.policy = Some(Arc::new(move |args, ctx| {
            let decided = predicate(args.clone(), ctx.clone());
            PolicyCall::Async(Box::pin(async move { decided.await.map_err(Into::into) }))
        }));
        self
    }

    /// The JSON Schema of the tool's output, for providers and MCP clients
    /// (`outputSchema`); outputs are checked against it where the registry
    /// checks outputs
    /// ([`validate_outputs`](crate::RegistryBuilder::validate_outputs)).
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.definition.output_schema = Some(Arc::new(schema));
        self
    }

    /// The JSON Schema of the structured value of the tool's failures: the
    /// handler returns `Err(ToolError::...with_structured(value))`, and the
    /// value reaches [`CallResult::structured`](crate::CallResult::structured)
    /// and MCP `structuredContent`, as a `#[tool]`'s typed failure does. MCP
    /// clients read the schema in the tool's `_meta` (`failureSchema`); where
    /// the registry checks outputs, failure values are checked against it.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use serde_json::{json, Value};
    /// # use tool_runtime::prelude::*;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let reserve = DynamicTool::new("reserve", "Reserve a seat.", json!({"type": "object"}), |_args, _ctx: Ctx<()>| async {
    ///     Err::<Value, _>(ToolError::conflict("FULL", "The flight is full; offer another one.")
    ///         .with_structured(json!({"kind": "full", "next_free": "LH 402"})))
    /// })
    /// .failure_schema(json!({"type": "object", "properties": {"kind": {"const": "full"}, "next_free": {"type": "string"}}}));
    /// let registry = Registry::builder().tool(reserve).build().unwrap();
    /// let result = registry.invoke(&Arc::new(()), "reserve", "{}").await;
    /// assert_eq!(result.text, "code: FULL, status: 409, userMessage: The flight is full; offer another one.");
    /// assert_eq!(result.structured().unwrap()["next_free"], "LH 402");
    /// # }
    /// ```
    pub fn failure_schema(mut self, schema: Value) -> Self {
        self.definition.failure_schema = Some(Arc::new(schema));
        self
    }

    /// A successful call ends the run when `predicate` says so, on the
    /// validated arguments and the output.
    pub fn ends_run_fn(mut self, predicate: impl Fn(&Value, &Value) -> bool + Send + Sync + 'static) -> Self {
        self.definition.ends_run = EndsRun::Predicate;
        self.ends_run = Some(EndsRunFn::Sync(Arc::new(predicate)));
        self
    }

    /// A successful call ends the run when the async `predicate` says so.
    /// It gets a copy of the validated arguments and of the output, and may
    /// await (a lookup, a service); it runs inside the call, under the
    /// tool's timeout.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use serde_json::{json, Value};
    /// # use tool_runtime::prelude::*;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let close = DynamicTool::new("close", "Close the ticket.", json!({"type": "object"}), |_args, _ctx: Ctx<()>| async {
    ///     Ok::<_, ToolError>(json!("closed"))
    /// })
    /// .ends_run_async(|_args: Value, output: Value| async move { output == json!("closed") });
    /// let registry = Registry::builder().tool(close).build().unwrap();
    /// assert!(registry.invoke(&Arc::new(()), "close", "{}").await.ends_run);
    /// # }
    /// ```
    pub fn ends_run_async<F, Fut>(mut self, predicate: F) -> Self
    where
        F: Fn(Value, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        self.definition.ends_run = EndsRun::Predicate;
        self.ends_run = Some(EndsRunFn::Async(Arc::new(move |args, output| Box::pin(predicate(args, output)))));
        self
    }

    /// Recovers from the handler's own error: `recovery` sees the validated
    /// arguments and the error, and returns the output the model reads, or
    /// `None` to let the error through. It is never called for timeouts,
    /// cancellation, invalid arguments or policy refusals; a panic in it
    /// gives the original error.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use serde_json::{json, Value};
    /// # use tool_runtime::prelude::*;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let quote = DynamicTool::new("quote", "Quote a price.", json!({"type": "object"}), |_args, _ctx: Ctx<()>| async {
    ///     Err::<Value, _>(ToolError::unavailable("FEED_DOWN", "The feed is down."))
    /// })
    /// .on_error(|_args, _error| Some(json!("9.99 (cached)")));
    /// let registry = Registry::builder().tool(quote).build().unwrap();
    /// assert_eq!(registry.invoke(&Arc::new(()), "quote", "{}").await.text, "9.99 (cached)");
    /// # }
    /// ```
    pub fn on_error(mut self, recovery: impl Fn(&Value, &BoxError) -> Option<Value> + Send + Sync + 'static) -> Self {
        self.recover = Some(RecoverFn::Sync(Arc::new(recovery)));
        self
    }

    /// Like [`on_error`](Self::on_error), for a recovery that awaits: it
    /// gets a copy of the arguments and a shared handle on the error.
    pub fn on_error_async<F, Fut>(mut self, recovery: F) -> Self
    where
        F: Fn(Value, Arc<BoxError>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<Value>> + Send + 'static,
    {
        self.recover = Some(RecoverFn::Async(Arc::new(move |args, error| Box::pin(recovery(args, error)))));
        self
    }

    /// A result hook of the tool's own (`#[tool(on_result = path)]`): sees
    /// each outcome of the tool's calls ([`CallReport`]), before the
    /// registry's hook ([`RegistryBuilder::on_result`](crate::RegistryBuilder::on_result)).
    /// It runs off the call's path, on a blocking thread: a hook that
    /// blocks or panics changes nothing of the call.
    pub fn on_result(mut self, hook: impl Fn(&CallReport) + Send + Sync + 'static) -> Self {
        self.definition.has_result_hook = true;
        self.on_result = Some(Arc::new(hook));
        self
    }

    /// A visibility predicate on the step view.
    pub fn visible_when(mut self, predicate: impl Fn(&StepView<'_, App>) -> bool + Send + Sync + 'static) -> Self {
        self.definition.has_visibility_predicate = true;
        self.visible = Some(Arc::new(predicate));
        self
    }

    /// Offered only after each named tool ran successfully in the run.
    pub fn requires<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.definition.requires = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Every successful call ends the run.
    pub fn ends_run(mut self, ends: bool) -> Self {
        self.definition.ends_run = if ends { EndsRun::Always } else { EndsRun::Never };
        self.ends_run = None;
        self
    }

    /// A successful call halts the run on the same step, with no trailing
    /// step (unlike [`ends_run`](Self::ends_run)).
    pub fn ends_turn(mut self, ends: bool) -> Self {
        self.definition.ends_turn = ends;
        self
    }

    /// `false`: the caller's cancellation does not reach the tool; only its
    /// timeout cancels its token (see
    /// [`ToolDefinition::interruptible`]).
    pub fn interruptible(mut self, interruptible: bool) -> Self {
        self.definition.interruptible = interruptible;
        self
    }

    /// In a durable run, identifies a call's effect by `key` of the
    /// validated arguments (an order id, say) instead of by the run and
    /// the call id: a second call with the same key, in any run, gets the
    /// first one's journaled result.
    pub fn idempotency_key(mut self, key: impl Fn(&Value) -> String + Send + Sync + 'static) -> Self {
        self.definition.idempotency_key = true;
        self.effect_key = Some(Arc::new(key));
        self
    }

    /// In a durable run, says what became of a call of the tool that was
    /// started and never finished (its process died mid-call), before the
    /// call reads `OUTCOME_UNKNOWN`: `hook` looks the effect up from the
    /// validated arguments and the call's context, with the app (is the
    /// order refunded?), and answers that it happened, with the output the
    /// call would have returned (journaled as the call's result), that it
    /// did not (the call runs now), or that it cannot tell
    /// ([`Reconciled`]; an `Option<Value>` converts: `None` cannot tell).
    /// The same as `#[tool(reconcile = path)]`.
    pub fn reconcile<R: Into<Reconciled<Value>>>(mut self, hook: impl Fn(&Value, &Ctx<App>) -> R + Send + Sync + 'static) -> Self {
        self.reconcile = Some(Arc::new(move |input: &Value, ctx: &Ctx<App>| hook(input, ctx).into()));
        self
    }

    /// `false`: in a durable run, the tool runs again even when the journal
    /// holds its effect (observation tools, whose answer changes, and tools
    /// that must do their work each time, such as running a command). A
    /// call started and never finished still reads `OUTCOME_UNKNOWN` unless
    /// the tool is `read_only` or `idempotent` (see
    /// [`ToolDefinition::replay`]).
    pub fn replay(mut self, replay: bool) -> Self {
        self.definition.replay = replay;
        self
    }

    /// Who reads the handler's own failure (a [`ToolError`] it returned):
    /// the model, as its one line ([`FailureMode::Return`], the default), or
    /// the host ([`FailureMode::Error`]: the call ends as a
    /// [`ResultKind::HostError`](crate::ResultKind::HostError) and the model
    /// reads the generic line). Not on an external tool, whose failure is
    /// the host's already: the build refuses it.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use serde_json::{json, Value};
    /// # use tool_runtime::prelude::*;
    /// use tool_runtime::{FailureMode, ResultKind};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let charge = DynamicTool::new("charge", "Charge the card.", json!({"type": "object"}), |_args, _ctx: Ctx<()>| async {
    ///     Err::<Value, _>(ToolError::unavailable("PSP_DOWN", "The payment provider is down."))
    /// })
    /// .failure_mode(FailureMode::Error);
    /// let registry = Registry::builder().tool(charge).build().unwrap();
    /// let result = registry.invoke(&Arc::new(()), "charge", "{}").await;
    /// assert_eq!(result.kind, ResultKind::HostError);
    /// assert_eq!(result.error_code.as_deref(), Some("PSP_DOWN"));
    /// assert!(!result.text.contains("payment provider"), "the model reads the generic line");
    /// # }
    /// ```
    pub fn failure_mode(mut self, mode: FailureMode) -> Self {
        self.definition.failure_mode = mode;
        self
    }

    /// Overrides the registry's default timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.definition.timeout = Some(timeout);
        self
    }

    /// Emits `text` once when a call is still running after `after`: a
    /// [`Progress`](crate::Progress) report with `interim: true` to the
    /// call's progress sink (MCP `notifications/progress` for a client that
    /// asked for progress). A call that ends first emits nothing. An empty
    /// text or a zero delay fails the registry's build
    /// ([`BuildProblem::InvalidInterim`](crate::BuildProblem::InvalidInterim)).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use serde_json::{json, Value};
    /// # use tool_runtime::prelude::*;
    /// let search = DynamicTool::new("search", "Search the archive.", json!({"type": "object"}), |_: Value, _: Ctx<()>| async {
    ///     Ok::<_, ToolError>(Value::Null)
    /// })
    /// .interim("Still searching the archive...", Duration::from_secs(2));
    /// let registry = Registry::builder().tool(search).build().unwrap();
    /// assert_eq!(registry.definition("search").unwrap().interim.as_ref().unwrap().after, Duration::from_secs(2));
    /// ```
    pub fn interim(mut self, text: impl Into<String>, after: Duration) -> Self {
        self.definition.interim = Some(Interim { text: text.into(), after });
        self
    }

    /// The handler's value is a list of MCP content blocks (as [`Block`](crate::Block)
    /// serialises them, as in an MCP `tools/call` result's `content`). A value that is
    /// not one is a bug: the model reads the generic 500; such a tool has no output schema.
    ///
    /// ```
    /// # use serde_json::json;
    /// use tool_runtime::prelude::*;
    /// use tool_runtime::Block;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let snapshot = DynamicTool::<()>::new("snapshot", "Take a snapshot.", json!({"type": "object"}), |_, _| async {
    ///     Ok::<_, ToolError>(json!([{"type": "image", "data": "AQID", "mimeType": "image/png"}]))
    /// })
    /// .content_blocks(true);
    /// let registry = Registry::builder().tool(snapshot).build().unwrap();
    /// let result = registry.invoke(&std::sync::Arc::new(()), "snapshot", "{}").await;
    /// assert_eq!(*result.content, [Block::image(vec![1, 2, 3], "image/png")]);
    /// # }
    /// ```
    pub fn content_blocks(mut self, blocks: bool) -> Self {
        self.content_blocks = blocks;
        self
    }

    /// Overrides the registry's default output limit.
    pub fn max_output_chars(mut self, chars: usize) -> Self {
        self.definition.max_output_chars = Some(chars);
        self
    }

    /// After `retries` failed calls in one run the tool is no longer offered
    /// in that run, and a further call (or the approval of one parked
    /// before) reads `TOOL_EXHAUSTED`. A call counts as failed when it read
    /// invalid arguments, the tool's own error, an internal error (the
    /// generic 500: a bug, a panic, an outage) or the tool's own timeout; a
    /// call the run's or the step's time limit stopped, a cancelled call and
    /// a refusal (by policy or a human) do not count.
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.definition.max_retries = Some(retries);
        self
    }

    /// May run concurrently with other calls of the same step.
    pub fn parallel_safe(mut self, safe: bool) -> Self {
        self.definition.parallel_safe = safe;
        self.parallel = None;
        self
    }

    /// Decides per call whether it may run concurrently with the other
    /// calls of its step, on the raw (unvalidated) arguments; a panic means
    /// not.
    pub fn parallel_safe_fn(mut self, predicate: impl Fn(&Value) -> bool + Send + Sync + 'static) -> Self {
        self.definition.parallel_safe = false;
        self.parallel = Some(Arc::new(predicate));
        self
    }

    /// Per-tool override of provider strict mode.
    pub fn strict(mut self, strict: bool) -> Self {
        self.definition.strict = Some(strict);
        self
    }

    /// A declared grouping, filterable with
    /// [`Registry::definitions_of_kind`](crate::Registry::definitions_of_kind);
    /// not an authorisation boundary.
    pub fn kind(mut self, kind: impl Into<String>) -> Self {
        self.definition.kind = Some(kind.into());
        self
    }

    /// Usage examples, such as `geocode("Amsterdam")`.
    pub fn examples<S: Into<String>>(mut self, examples: impl IntoIterator<Item = S>) -> Self {
        self.definition.examples = examples.into_iter().map(Into::into).collect();
        self
    }

    /// Prompts a user might write that call for this tool.
    pub fn example_prompts<S: Into<String>>(mut self, prompts: impl IntoIterator<Item = S>) -> Self {
        self.definition.example_prompts = prompts.into_iter().map(Into::into).collect();
        self
    }

    /// Tools often used together with this one; each must be in the
    /// registry, or [`build`](crate::RegistryBuilder::build) fails.
    pub fn related<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.definition.related = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Offered in every turn whatever an intent classifier selects.
    pub fn always_active(mut self, always: bool) -> Self {
        self.definition.always_active = always;
        self
    }

    /// Lists the tool to the intent classifier of a registry built with
    /// [`intent_opt_in(true)`](crate::RegistryBuilder::intent_opt_in), which
    /// lists only the tools that opt in (`#[tool(as_intent)]`). Not with
    /// [`always_active`](Self::always_active): the build refuses both.
    pub fn as_intent(mut self, listed: bool) -> Self {
        self.definition.as_intent = listed;
        self
    }

    /// A compact one-liner describing the tool to an intent classifier.
    pub fn classification(mut self, text: impl Into<String>) -> Self {
        self.definition.classification = Some(text.into());
        self
    }

    /// A one-line hint for an intent classifier on when and how to scope the tool.
    pub fn scope_prompt(mut self, text: impl Into<String>) -> Self {
        self.definition.scope_prompt = Some(text.into());
        self
    }

    /// Marks the tool as a provider's built-in (see
    /// `providers::builtin::ProviderTool`).
    pub(crate) fn provider_defined(mut self, declared: crate::definition::ProviderDefined) -> Self {
        self.definition.provider_defined = Some(Arc::new(declared));
        self.definition.origin = Origin::ProviderDefined;
        self
    }

    /// Adds one free-form metadata entry, exported in MCP `_meta` (a
    /// later entry with the same key replaces the earlier one). The key
    /// `kind` is taken by [`kind`](Self::kind): using both fails the build.
    ///
    /// ```
    /// # use serde_json::{json, Value};
    /// # use tool_runtime::prelude::*;
    /// let tool = DynamicTool::new("ping", "Ping.", json!({"type": "object"}), |_: Value, _: Ctx<()>| async {
    ///     Ok::<_, ToolError>(Value::Null)
    /// })
    /// .meta("owner", "network")
    /// .meta("cost", 2);
    /// let registry = Registry::builder().tool(tool).build().unwrap();
    /// assert_eq!(registry.definition("ping").unwrap().meta["cost"], 2);
    /// ```
    pub fn meta(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.definition.meta.insert(key.into(), value.into());
        self
    }

    /// A scope (`scope = path` of `#[tool]`): an intent classifier answers a
    /// value matching `schema` for this tool, and `rebuild` narrows the
    /// tool's description and input schema to it for the turn
    /// ([`Run::select`](crate::Run::select)). A value that does not match
    /// `schema` leaves the tool as it is, and is reported.
    pub fn scope(mut self, schema: Value, rebuild: impl Fn(&Value, &mut ScopedTool) + Send + Sync + 'static) -> Self {
        self.definition.scope_schema = Some(Arc::new(schema));
        self.scope = Some(Arc::new(rebuild));
        self
    }
}

impl<App: Send + Sync + 'static> From<DynamicTool<App>> for BoxedTool<App> {
    fn from(tool: DynamicTool<App>) -> Self {
        BoxedTool::dynamic(Arc::new(tool))
    }
}

mod checks;
mod erased;

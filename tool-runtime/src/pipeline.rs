//! One call through every stage, in this order: guard,
//! validation and parsing, policy, approval, execution, output, `ends_run`.

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::future::{Future, IntoFuture};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use smol_str::SmolStr;

use crate::context::{CallInfo, CallState, Ctx, ProgressSink, UserContext};
use crate::error::ToolError;
use crate::error_report::{panic_message, ErrorKind, ErrorReport};
use crate::guard::{self, GuardError};
use crate::policy::{PolicyKind, Verdict};
use crate::registry::{Entry, Registry};
use crate::result::{lines, CallResult, ResultKind};
use crate::tool::{BoxError, CallFuture, Failure, ParsedFrom, ToolOutput};

/// The arguments of a call, as text (provider payloads) or already parsed
/// (MCP). Text may be borrowed: a call with a `&str` copies it only if it
/// must keep it (a call that waits for approval).
#[derive(Clone, Debug, PartialEq)]
pub enum Arguments<'a> {
    /// Raw JSON text.
    Text(Cow<'a, str>),
    /// A parsed JSON value.
    Value(Value),
}

impl Arguments<'_> {
    /// The same arguments, owning their text.
    pub fn into_owned(self) -> Arguments<'static> {
        match self {
            Arguments::Text(text) => Arguments::Text(Cow::Owned(text.into_owned())),
            Arguments::Value(value) => Arguments::Value(value),
        }
    }
}

impl<'a> From<&'a str> for Arguments<'a> {
    fn from(text: &'a str) -> Self {
        Arguments::Text(Cow::Borrowed(text))
    }
}

impl From<String> for Arguments<'_> {
    fn from(text: String) -> Self {
        Arguments::Text(Cow::Owned(text))
    }
}

impl From<Value> for Arguments<'_> {
    fn from(value: Value) -> Self {
        Arguments::Value(value)
    }
}

impl From<Map<String, Value>> for Arguments<'_> {
    fn from(map: Map<String, Value>) -> Self {
        Arguments::Value(Value::Object(map))
    }
}

/// How a call ended: with a result, or parked until a human decides.
pub enum CallOutcome<App> {
    /// The call ended; the model reads `result.text`.
    Done(CallResult),
    /// The call waits for a human: pass it to [`Registry::approve`],
    /// [`Registry::approve_with`] or [`Registry::reject`].
    NeedsApproval(PendingCall<App>),
}

impl<App> fmt::Debug for CallOutcome<App> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallOutcome::Done(result) => f.debug_tuple("Done").field(result).finish(),
            CallOutcome::NeedsApproval(pending) => f.debug_tuple("NeedsApproval").field(pending).finish(),
        }
    }
}

impl<App> CallOutcome<App> {
    /// The result, or `None` while a human must decide.
    pub fn into_result(self) -> Option<CallResult> {
        match self {
            CallOutcome::Done(result) => Some(result),
            CallOutcome::NeedsApproval(_) => None,
        }
    }
}

/// A call that passed validation and policy and waits for a human. Pass
/// it back to [`Registry::approve`], [`Registry::approve_with`] or
/// [`Registry::reject`].
///
/// It is one pointer wide (what it holds is boxed), so a [`CallOutcome`]
/// is no larger than the [`CallResult`] of a call that did not wait.
pub struct PendingCall<App>(Box<Pending<App>>);

struct Pending<App> {
    id: SmolStr,
    tool: SmolStr,
    rejection_text: Option<String>,
    input: Box<dyn Any + Send + Sync>,
    args: ParsedFrom<'static>,
    ctx: Ctx<App>,
    /// When the call was parked; past the registry's approval TTL it is
    /// not run. Tokio's clock, so tests can pause time.
    parked: tokio::time::Instant,
}

impl<App> fmt::Debug for PendingCall<App> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingCall")
            .field("id", &self.0.id)
            .field("tool", &self.0.tool)
            .finish_non_exhaustive()
    }
}

impl<App> PendingCall<App> {
    /// The call id (also the approval id).
    pub fn id(&self) -> &SmolStr {
        &self.0.id
    }

    /// The tool.
    pub fn tool(&self) -> &SmolStr {
        &self.0.tool
    }

    /// The validated arguments, for the human to review. A pending call
    /// keeps its arguments once, as they came (the model's text, or the
    /// object it sent), beside the parsed input it will run with; this
    /// builds the JSON value from them on each call.
    pub fn arguments(&self) -> Value {
        self.0.args.to_value()
    }

    /// What the model reads if the human rejects without a text (the
    /// policy's rejection text).
    pub fn rejection_text(&self) -> Option<&str> {
        self.0.rejection_text.as_deref()
    }

    /// The result the model reads while the call waits.
    pub fn pending_result(&self) -> CallResult {
        CallResult::failure(self.0.tool.clone(), self.0.id.clone(), ResultKind::PendingApproval, &lines::pending())
    }
}

/// A call being set up; `.await` it. Made by [`Registry::call`].
#[must_use = "a call does nothing until it is awaited"]
pub struct Call<'r, App> {
    registry: &'r Registry<App>,
    app: &'r Arc<App>,
    name: String,
    args: Arguments<'r>,
    info: CallInfo,
    offered: Option<Vec<String>>,
}

impl<'r, App: Send + Sync + 'static> Call<'r, App> {
    /// Who is calling (default: an anonymous user).
    pub fn user(mut self, user: impl Into<Arc<UserContext>>) -> Self {
        self.info.user = Some(user.into());
        self
    }

    /// The conversation thread.
    pub fn thread_id(mut self, thread_id: impl Into<Arc<str>>) -> Self {
        self.info.thread_id = Some(thread_id.into());
        self
    }

    /// The call id (default: a fresh `call_N`).
    pub fn call_id(mut self, call_id: impl Into<SmolStr>) -> Self {
        self.info.call_id = call_id.into();
        self
    }

    /// A token the caller cancels to cancel the call. The tool sees a child
    /// of it, which the runtime also cancels at the timeout.
    pub fn cancellation(mut self, token: &CancellationToken) -> Self {
        self.info.cancel = token.child_token().into();
        self
    }

    /// Where the tool's progress reports go.
    pub fn progress(mut self, sink: ProgressSink) -> Self {
        self.info.progress = Some(sink);
        self
    }

    /// Only these tools may be called (those offered in the current step);
    /// any other name is refused as unknown, as in a [`Run`](crate::Run).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn offered(mut self, offered: Vec<String>) -> Self {
        self.offered = Some(offered);
        self
    }
}

impl<'r, App: Send + Sync + 'static> IntoFuture for Call<'r, App> {
    type Output = CallOutcome<App>;
    type IntoFuture = Pin<Box<dyn Future<Output = CallOutcome<App>> + Send + 'r>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let Call { registry, app, name, args, info, offered } = self;
            registry.process(app, &name, args, move || info, offered.as_deref()).await
        })
    }
}

static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

/// How many ids a thread takes from the shared counter at a time.
const CALL_ID_BLOCK: u64 = 1024;

thread_local! {
    /// The ids this thread may hand out: `(next, end)` of its current block.
    static CALL_IDS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// A fresh, process-unique call id (`call_N`). Each thread takes blocks of
/// numbers from a shared counter, so ids are unique but not in call order
/// across threads. The id fits a `SmolStr` inline: no allocation.
pub(crate) fn fresh_call_id() -> SmolStr {
    let n = CALL_IDS.with(|ids| {
        let (mut next, mut end) = ids.get();
        if next == end {
            next = NEXT_CALL.fetch_add(CALL_ID_BLOCK, Ordering::Relaxed);
            end = next + CALL_ID_BLOCK;
        }
        ids.set((next + 1, end));
        next
    });
    // Not `format!`: it costs a call as much as the rest of its setup.
    SmolStr::from_iter(["call_", itoa::Buffer::new().format(n)])
}

impl<App: Send + Sync + 'static> Registry<App> {
    /// Sets up a call of `name` with `args`; `.await` it for the outcome.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use tool_runtime::prelude::*;
    /// /// Echo.
    /// #[tool]
    /// async fn echo(text: String) -> String { text }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let registry = Registry::<()>::builder().tools(tools![echo]).build().unwrap();
    /// let outcome = registry
    ///     .call(&Arc::new(()), "echo", r#"{"text": "hi"}"#)
    ///     .user(UserContext::new("u-1"))
    ///     .call_id("toolu_01")
    ///     .await;
    /// assert_eq!(outcome.into_result().unwrap().text, "hi");
    /// # }
    /// ```
    ///
    /// The app state is borrowed for the call: a tool that takes a
    /// [`Ctx`] gets a clone of the `Arc`; one that does not costs no
    /// reference count.
    pub fn call<'a>(&'a self, app: &'a Arc<App>, name: &str, args: impl Into<Arguments<'a>>) -> Call<'a, App> {
        Call {
            registry: self,
            app,
            name: name.to_owned(),
            args: args.into(),
            info: CallInfo::anonymous(fresh_call_id()),
            offered: None,
        }
    }

    /// Calls `name` with `args` as an anonymous user and returns what the
    /// model reads. A call that needs approval is not run: its result says
    /// it is pending (use [`call`](Self::call) to approve it).
    ///
    /// The app state is borrowed for the call, as by [`call`](Self::call).
    pub fn invoke<'a, A>(&'a self, app: &'a Arc<App>, name: &'a str, args: A) -> impl Future<Output = CallResult> + 'a
    where
        A: Into<Arguments<'a>> + 'a,
    {
        // Not an `async fn`: the pipeline's future, mapped, with no state
        // machine around it (whose setup would copy it).
        let anonymous = || CallInfo::anonymous(fresh_call_id());
        self.process(app, name, args, anonymous, None).map(|outcome| match outcome {
            CallOutcome::Done(result) => result,
            CallOutcome::NeedsApproval(pending) => pending.pending_result(),
        })
    }

    /// Runs a pending call as it is, since a human approved it.
    ///
    /// A call that waited longer than [`approval_ttl`](Self::approval_ttl)
    /// is not run: the result is [`Rejected`](ResultKind::Rejected) with
    /// the code `APPROVAL_EXPIRED`.
    pub async fn approve(&self, pending: PendingCall<App>) -> CallResult {
        let pending = *pending.0;
        if let Some(expired) = self.expired(&pending) {
            return expired;
        }
        let span = call_span(&pending.tool, &pending.id);
        let result = match self.entry(&pending.tool) {
            None => self.unknown(pending.tool.clone(), &pending.id, &[]),
            Some(entry) => {
                span.record("verdict", "approved");
                let call = Staged { entry, input: pending.input, call: pending.ctx.into(), args: pending.args };
                self.execute(call, &span).instrument(span.clone()).await
            }
        };
        record_outcome(&span, result.kind);
        result
    }

    /// Runs a pending call with the input a human edited. The edited input
    /// is validated and decided again: a `Deny` refuses it; `NeedsApproval`
    /// runs it, since a human approved exactly that input.
    ///
    /// A call that waited longer than [`approval_ttl`](Self::approval_ttl)
    /// is not run, as by [`approve`](Self::approve).
    pub async fn approve_with(&self, pending: PendingCall<App>, edited: impl Into<Arguments<'_>>) -> CallResult {
        let pending = *pending.0;
        if let Some(expired) = self.expired(&pending) {
            return expired;
        }
        let span = call_span(&pending.tool, &pending.id);
        let Some(entry) = self.entry(&pending.tool) else {
            let result = self.unknown(pending.tool.clone(), &pending.id, &[]);
            record_outcome(&span, result.kind);
            return result;
        };
        let result = async {
            let (input, args) = match self.prepare(entry, &pending.id, edited.into(), true) {
                Ok(prepared) => prepared,
                Err(result) => return result,
            };
            match self.decide(entry, input.as_ref(), &pending.ctx).await {
                Err(refused) => self.undecided(entry, &pending.id, refused),
                Ok(Verdict::Deny { reason }) => {
                    span.record("verdict", "deny");
                    CallResult::failure(entry.name.clone(), pending.id, ResultKind::Denied, &lines::denied(reason.as_deref()))
                }
                _ => {
                    span.record("verdict", "approved");
                    self.execute(Staged { entry, input, call: pending.ctx.into(), args }, &span).await
                }
            }
        }
        .instrument(span.clone())
        .await;
        record_outcome(&span, result.kind);
        result
    }

    /// The result of a pending call whose approval came after the TTL.
    fn expired(&self, pending: &Pending<App>) -> Option<CallResult> {
        let ttl = self.approval_ttl();
        if pending.parked.elapsed() < ttl {
            return None;
        }
        let span = call_span(&pending.tool, &pending.id);
        span.record("verdict", "expired");
        span.record("outcome", ResultKind::Rejected.as_str());
        let error = lines::approval_expired(ttl);
        Some(CallResult::failure(pending.tool.clone(), pending.id.clone(), ResultKind::Rejected, &error))
    }

    /// Ends a pending call without running it; the model reads `text`, or
    /// the tool's rejection text, or a generic rejection.
    pub fn reject(&self, pending: PendingCall<App>, text: Option<&str>) -> CallResult {
        let pending = *pending.0;
        let text = text.or(pending.rejection_text.as_deref());
        let span = call_span(&pending.tool, &pending.id);
        span.record("verdict", "rejected");
        span.record("outcome", ResultKind::Rejected.as_str());
        CallResult::failure(pending.tool, pending.id, ResultKind::Rejected, &lines::rejected(text))
    }

    /// The whole pipeline for one call. `offered`, when set, is the list of
    /// tools offered in the current step: any other name is unknown.
    ///
    /// `args` and `info` are turned into the call's arguments and context
    /// at its first poll, so that the future holds no more than its inputs.
    pub(crate) fn process<'a, A, I>(
        &'a self,
        app: &'a Arc<App>,
        name: &'a str,
        args: A,
        info: I,
        offered: Option<&'a [String]>,
    ) -> Processing<'a, App, A, I>
    where
        A: Into<Arguments<'a>>,
        I: FnOnce() -> CallInfo,
    {
        Processing {
            registry: self,
            span: tracing::Span::none(),
            state: ProcessingState::Start { app, name, args, info, offered },
        }
    }

    /// Stages 1 to 3, as far as they go without awaiting; an allowed call
    /// of the fast lane is polled once too. `span` is the call's.
    #[allow(clippy::too_many_arguments)] // the call's inputs, and the poll's context
    fn stage<'s>(
        &'s self,
        app: &'s Arc<App>,
        name: &str,
        args: Arguments<'s>,
        info: CallInfo,
        offered: Option<&[String]>,
        cx: &mut std::task::Context<'_>,
        span: &tracing::Span,
    ) -> Stage<'s, App> {
        let entry = match self.entry(name) {
            Some(entry) if offered.is_none_or(|offered| offered.iter().any(|o| o == name)) => entry,
            _ => {
                let names: Vec<&str> = match offered {
                    Some(offered) => offered.iter().map(String::as_str).collect(),
                    None => self.names().collect(),
                };
                return Stage::Done(CallOutcome::Done(self.unknown(SmolStr::new(name), &info.call_id, &names)));
            }
        };
        let mut call = CallState::new(app, info);
        // The approval floor and a static policy depend on no input: both
        // are known before parsing.
        let floor = self.floor_applies(entry, call.info());
        let mut args = args;
        let mut fast_tried = false;
        // The fast lane of an allowed call: the text read straight into the
        // tool's input and the tool called with it, nothing boxed between
        // (see `prepare` for what the fast path checks).
        let limits = &self.inner.config.limits;
        if entry.def.policy == PolicyKind::Allow
            && !floor
            && entry.text_exact
            && !call.info().is_cancelled()
            && let Arguments::Text(text) = &args
            && guard::admits_exact_text(text, limits)
        {
            let Arguments::Text(text) = args else { unreachable!("matched above") };
            let parsed = ParsedFrom::Text(text);
            match std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.call_text(&parsed, &entry.properties, &mut call))) {
                Ok(Some(future)) => {
                    span.record("verdict", Verdict::Allow.as_str());
                    return match self.first_poll(entry, future, call, cx, span) {
                        FirstPoll::Ready(result) => Stage::Done(CallOutcome::Done(result)),
                        FirstPoll::Waiting(waiter) => Stage::Waiting(waiter),
                    };
                }
                Ok(None) => {
                    let ParsedFrom::Text(text) = parsed else { unreachable!("made above") };
                    (args, fast_tried) = (Arguments::Text(text), true);
                }
                Err(payload) => {
                    let result = self.internal(entry.name.clone(), call.call_id(), ErrorKind::Panic, panic_message(payload.as_ref()));
                    return Stage::Done(CallOutcome::Done(result));
                }
            }
        }
        let (input, args) = match self.prepare(entry, call.call_id(), args, !fast_tried) {
            Ok(prepared) => prepared,
            Err(result) => return Stage::Done(CallOutcome::Done(result)),
        };
        let call = Staged { entry, input, call, args };
        match entry.def.policy.static_verdict().map(|verdict| verdict.with_floor(floor)) {
            Some(verdict) => match self.settle(call, verdict, span) {
                Settled::Done(outcome) => Stage::Done(outcome),
                Settled::Run(call) => Stage::Run(call),
            },
            None => Stage::Decide(call),
        }
    }

    async fn decide_and_run(&self, mut call: Staged<'_, App>, span: tracing::Span) -> CallOutcome<App> {
        let verdict = match self.decide(call.entry, call.input.as_ref(), call.call.ctx()).await {
            Ok(verdict) => verdict,
            Err(refused) => return CallOutcome::Done(self.undecided(call.entry, call.call.call_id(), refused)),
        };
        match self.settle(call, verdict, &span) {
            Settled::Done(outcome) => outcome,
            Settled::Run(call) => CallOutcome::Done(self.execute(call, &span).await),
        }
    }

    /// What a verdict makes of a call: run it, refuse it, or park it for a
    /// human.
    fn settle<'s>(&self, call: Staged<'s, App>, verdict: Verdict, span: &tracing::Span) -> Settled<'s, App> {
        span.record("verdict", verdict.as_str());
        match verdict {
            Verdict::Allow => Settled::Run(call),
            Verdict::Deny { reason } => Settled::Done(CallOutcome::Done(CallResult::failure(
                call.entry.name.clone(),
                call.call.call_id().clone(),
                ResultKind::Denied,
                &lines::denied(reason.as_deref()),
            ))),
            Verdict::NeedsApproval { rejection_text } => {
                let Staged { entry, input, call, args } = call;
                let ctx = call.into_ctx();
                Settled::Done(CallOutcome::NeedsApproval(PendingCall(Box::new(Pending {
                    id: ctx.info().call_id.clone(),
                    tool: entry.name.clone(),
                    rejection_text,
                    input,
                    args: args.into_owned(),
                    ctx,
                    parked: tokio::time::Instant::now(),
                }))))
            }
        }
    }

    fn unknown(&self, name: SmolStr, call_id: &SmolStr, offered: &[&str]) -> CallResult {
        let error = lines::unknown_tool(&name, offered);
        CallResult::failure(name, call_id.clone(), ResultKind::UnknownTool, &error)
    }

    /// Stages 1 and 2: guard, JSON, schema, deserialisation. A parameter
    /// type whose `Deserialize` panics gives the generic 500 on every path
    /// (text or value, fast or full), never an unwinding `invoke`.
    #[allow(clippy::result_large_err)]
    fn prepare<'a>(
        &self,
        entry: &Entry<App>,
        call_id: &SmolStr,
        args: Arguments<'a>,
        try_fast: bool,
    ) -> Result<(Box<dyn Any + Send + Sync>, ParsedFrom<'a>), CallResult> {
        std::panic::catch_unwind(AssertUnwindSafe(|| self.parse_arguments(entry, call_id, args, try_fast))).unwrap_or_else(|payload| {
            Err(self.internal(entry.name.clone(), call_id, ErrorKind::Panic, panic_message(payload.as_ref())))
        })
    }

    #[allow(clippy::result_large_err)]
    fn parse_arguments<'a>(
        &self,
        entry: &Entry<App>,
        call_id: &SmolStr,
        args: Arguments<'a>,
        try_fast: bool,
    ) -> Result<(Box<dyn Any + Send + Sync>, ParsedFrom<'a>), CallResult> {
        let tool = entry.def.name.as_str();
        let invalid = |error: ToolError| CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::InvalidArguments, &error);
        let limits = &self.inner.config.limits;
        // Stage 1, the guard, on every path.
        let guarded = match &args {
            Arguments::Text(text) => guard::check_text(text, limits),
            Arguments::Value(value) => guard::check_value(value, limits),
        };
        match guarded {
            Ok(()) => {}
            Err(GuardError::TooLarge { bytes, max }) => return Err(invalid(lines::too_large(bytes, max))),
            Err(GuardError::TooManyValues { max }) => return Err(invalid(lines::too_many_values(max))),
            Err(GuardError::TooDeep { max }) => {
                if let Arguments::Value(value) = args {
                    guard::dismantle(value);
                }
                return Err(invalid(lines::too_deep(max)));
            }
        }
        // The fast path: where the schema makes it exact (parsing checks all
        // it says, every value has a type, none nests past the depth limit;
        // see `validation::text_exact`), text is read straight into the
        // tool's input. Whatever it refuses takes the full path, which words
        // the error: it decides nothing the full path would decide
        // otherwise.
        if try_fast
            && entry.text_exact
            && let Arguments::Text(text) = &args
            && let Some(input) = entry.tool.parse_text(text, &entry.properties)
        {
            let Arguments::Text(text) = args else { unreachable!("matched above") };
            return Ok((input, ParsedFrom::Text(text)));
        }
        let value = match args {
            Arguments::Text(text) if text.trim().is_empty() && !entry.has_parameters() => Value::Object(Map::new()),
            Arguments::Text(text) => match serde_json::from_str::<Value>(&text) {
                Ok(value) => value,
                Err(err) => return Err(invalid(lines::not_json(tool, &err))),
            },
            Arguments::Value(value) => value,
        };
        let mut value = match value {
            Value::Null if !entry.has_parameters() => Value::Object(Map::new()),
            other => other,
        };
        let found = crate::normalize::scan(&value);
        // A null for an optional property means "use the default" (OpenAI
        // strict mode sends one for every optional property left out).
        if found.nulls {
            crate::normalize::drop_defaulted_nulls(&mut value, &entry.def.input_schema);
        }
        // `5.0` is an integer to the schema, so it is one to the parser too.
        if found.integral_floats && entry.tool.parses_types() {
            crate::normalize::integers_from_integral_floats(&mut value);
        }
        // Where parsing checks all the schema says, a successful parse is
        // the validation; otherwise (and to word any error) the validator.
        if entry.parser_enforces
            && let Value::Object(map) = &value
            && crate::validation::unknown_property(map, &entry.properties).is_none()
            && let Ok(input) = entry.tool.parse(map)
        {
            let Value::Object(map) = value else { unreachable!("matched above") };
            return Ok((input, ParsedFrom::Map(map)));
        }
        let problems = crate::validation::problems(&entry.validator, &value);
        if !problems.is_empty() {
            return Err(invalid(lines::schema(tool, &problems)));
        }
        let Value::Object(map) = value else {
            return Err(invalid(lines::schema(tool, &["(root): not an object".to_owned()])));
        };
        match entry.tool.parse(&map) {
            Ok(input) => Ok((input, ParsedFrom::Map(map))),
            Err(err) => Err(invalid(lines::parse(tool, &err))),
        }
    }

    /// Stage 3: the tool's rule, then the user's floor. A predicate that
    /// panics or fails denies, and is reported. A predicate runs under the
    /// registry's policy timeout and stops when the call is cancelled: then
    /// there is no verdict, and the call ends as [`Undecided`] says.
    pub(crate) async fn decide(
        &self,
        entry: &Entry<App>,
        input: &(dyn Any + Send + Sync),
        ctx: &Ctx<App>,
    ) -> Result<Verdict, Undecided> {
        let verdict = match entry.def.policy.static_verdict() {
            Some(verdict) => verdict,
            None => {
                let decided = match std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.decide(input, ctx))) {
                    Ok(future) => {
                        let timeout = self.inner.config.policy_timeout;
                        let Some(timer) = runtime_timer(tokio::time::Instant::now() + timeout) else {
                            self.report_no_runtime(entry, &ctx.info().call_id);
                            return Err(Undecided::NoRuntime);
                        };
                        tokio::select! {
                            biased;
                            () = ctx.cancellation().cancelled() => return Err(Undecided::Cancelled),
                            decided = AssertUnwindSafe(future).catch_unwind() => decided,
                            () = timer => {
                                self.fail_closed(entry, ctx, format!("the policy predicate gave no verdict within {timeout:?}"));
                                return Err(Undecided::TimedOut(timeout));
                            }
                        }
                    }
                    Err(payload) => Err(payload),
                };
                match decided {
                    Ok(Ok(verdict)) => verdict,
                    Ok(Err(error)) => self.fail_closed(entry, ctx, error.to_string()),
                    Err(payload) => self.fail_closed(entry, ctx, format!("panic: {}", panic_message(payload.as_ref()))),
                }
            }
        };
        Ok(verdict.with_floor(self.floor_applies(entry, ctx.info())))
    }

    /// The result of a call whose policy predicate gave no verdict.
    fn undecided(&self, entry: &Entry<App>, call_id: &SmolStr, why: Undecided) -> CallResult {
        let tool = entry.name.clone();
        match why {
            Undecided::Cancelled => CallResult::failure(tool, call_id.clone(), ResultKind::Cancelled, &lines::cancelled()),
            Undecided::TimedOut(timeout) => {
                CallResult::failure(tool, call_id.clone(), ResultKind::Denied, &lines::policy_timed_out(timeout))
            }
            Undecided::NoRuntime => CallResult::failure(tool, call_id.clone(), ResultKind::Internal, &ToolError::internal()),
        }
    }

    /// Whether the user's approval floor covers the tool (an anonymous
    /// user has none).
    fn floor_applies(&self, entry: &Entry<App>, call: &CallInfo) -> bool {
        call.user.as_ref().is_some_and(|user| user.floor.applies(&entry.def.name, entry.def.tags.iter().map(String::as_str)))
    }

    fn fail_closed(&self, entry: &Entry<App>, ctx: &Ctx<App>, error: String) -> Verdict {
        self.report(ErrorReport::new(&entry.def.name, ctx.call_id(), ErrorKind::Policy, "POLICY_DENIED", error));
        Verdict::Deny { reason: None }
    }

    /// Stages 5 to 7: run under the timeout, render the output, decide
    /// `ends_run`. `span` is the call's.
    async fn execute(&self, call: Staged<'_, App>, span: &tracing::Span) -> CallResult {
        let mut call = Some(call);
        let mut waiter: Option<Waiter<'_>> = None;
        std::future::poll_fn(|cx| {
            if let Some(call) = call.take() {
                match self.start(call, cx, span) {
                    FirstPoll::Ready(result) => return Poll::Ready(result),
                    FirstPoll::Waiting(started) => waiter = Some(started),
                }
            }
            waiter.as_mut().expect("a call that waits has a waiter").as_mut().poll(cx)
        })
        .await
    }

    /// Makes the tool's future and polls it the first time.
    fn start<'a>(&'a self, call: Staged<'a, App>, cx: &mut std::task::Context<'_>, span: &tracing::Span) -> FirstPoll<'a> {
        let Staged { entry, input, mut call, args } = call;
        if call.info().is_cancelled() {
            return FirstPoll::Ready(CallResult::failure(entry.name.clone(), call.call_id().clone(), ResultKind::Cancelled, &lines::cancelled()));
        }
        match std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.call(input, &mut call, &args))) {
            Ok(future) => self.first_poll(entry, future, call, cx, span),
            Err(payload) => FirstPoll::Ready(self.internal(entry.name.clone(), call.call_id(), ErrorKind::Panic, panic_message(payload.as_ref()))),
        }
    }

    /// The first poll of a tool's future, in place: most tools finish
    /// without waiting, and then need no task of their own and no timer. A
    /// tool that waits is handed to a boxed waiter with its task and timer;
    /// its timeout counts from the end of this poll. `span` is the call's,
    /// entered by the caller.
    #[inline]
    fn first_poll<'a>(
        &'a self,
        entry: &'a Entry<App>,
        mut future: CallFuture,
        call: CallState<'a, App>,
        cx: &mut std::task::Context<'_>,
        span: &tracing::Span,
    ) -> FirstPoll<'a> {
        // Only a span records the duration of a tool that does not wait: no
        // clock read otherwise.
        let started = (!span.is_disabled()).then(Instant::now);
        let ended = match std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Ready(returned)) => Ended::Returned(returned),
            Err(payload) => Ended::Panicked(payload),
            Ok(Poll::Pending) => {
                let started = started.unwrap_or_else(Instant::now);
                let waiter = self.wait_and_conclude(entry, future, call, started, span.clone());
                return FirstPoll::Waiting(Box::pin(waiter.instrument(span.clone())));
            }
        };
        // Dropped first: the tool's context goes with it.
        drop(future);
        FirstPoll::Ready(self.conclude(entry, call, ended, started, span))
    }

    async fn wait_and_conclude(
        &self,
        entry: &Entry<App>,
        future: CallFuture,
        call: CallState<'_, App>,
        started: Instant,
        span: tracing::Span,
    ) -> CallResult {
        match self.wait(entry, future, call.info(), started, &span).await {
            Ok(ended) => self.conclude(entry, call, ended, Some(started), &span),
            Err(result) => result,
        }
    }

    /// A tool that waits gets a task of its own: a panic stays in it, and a
    /// tool that ignores its token is dropped at the timeout. The future
    /// moves boxed, so it is not moved in memory after its first poll.
    async fn wait(
        &self,
        entry: &Entry<App>,
        future: CallFuture,
        call: &CallInfo,
        started: Instant,
        span: &tracing::Span,
    ) -> Result<Ended, CallResult> {
        let tool = || entry.name.clone();
        let timeout = entry.def.timeout.unwrap_or(self.inner.config.default_timeout);
        let Some(timer) = runtime_timer((started + timeout).into()) else {
            self.report_no_runtime(entry, &call.call_id);
            return Err(CallResult::failure(tool(), call.call_id.clone(), ResultKind::Internal, &ToolError::internal()));
        };
        let cancel = call.cancellation();
        // A caller that drops the call mid-way cancels it: the token fires
        // and the task is dropped, as at the timeout.
        let mut task = Abandoned { task: tokio::spawn(future.instrument(span.clone())), cancel };
        let task = &mut task.task;
        tokio::select! {
            // Biased: a cancelled call reads as cancelled even when the
            // tool returned in reaction to its token in the same instant.
            biased;
            () = cancel.cancelled() => {
                task.abort();
                Err(CallResult::failure(tool(), call.call_id.clone(), ResultKind::Cancelled, &lines::cancelled()))
            }
            joined = &mut *task => Ok(match joined {
                Ok(returned) => Ended::Returned(returned),
                Err(join) if join.is_panic() => Ended::Panicked(join.into_panic()),
                Err(join) => Ended::Lost(join.to_string()),
            }),
            () = timer => {
                cancel.cancel();
                task.abort();
                let error = lines::timed_out(timeout);
                let detail = format!("no result after {timeout:?}");
                self.report(ErrorReport::new(&entry.def.name, call.call_id.as_str(), ErrorKind::Timeout, error.code(), detail));
                Err(CallResult::failure(tool(), call.call_id.clone(), ResultKind::TimedOut, &error))
            }
        }
    }

    /// The result of an execution that ended. `started` is when the tool
    /// was first polled, taken only where it is needed (the tool waited, or
    /// the span records the duration).
    fn conclude(&self, entry: &Entry<App>, call: CallState<'_, App>, ended: Ended, started: Option<Instant>, span: &tracing::Span) -> CallResult {
        let tool = entry.name.clone();
        let call_id = call.call_id();
        if call.info().is_cancelled() {
            return CallResult::failure(tool, call_id.clone(), ResultKind::Cancelled, &lines::cancelled());
        }
        if let Some(started) = started
            && !span.is_disabled()
        {
            span.record("duration_ms", started.elapsed().as_millis() as u64);
        }
        match ended {
            Ended::Returned(Ok(output)) => {
                let limit = entry.def.max_output_chars.unwrap_or(self.inner.config.default_max_output_chars);
                let (text, structured, truncated) = crate::output::render(output.value, limit);
                CallResult::success(tool, call_id.clone(), text, structured, truncated, output.ends_run)
            }
            Ended::Returned(Err(Failure::Tool(error))) => {
                self.report(ErrorReport {
                    message: error.message().map(str::to_owned),
                    data: error.data().cloned(),
                    ..ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::Tool, error.code(), error.model_line())
                });
                CallResult::failure(tool, call_id.clone(), ResultKind::ToolError, &error)
            }
            Ended::Returned(Err(Failure::Internal(error))) => self.internal(tool, call_id, ErrorKind::Internal, describe(&error)),
            Ended::Panicked(payload) => self.internal(tool, call_id, ErrorKind::Panic, panic_message(payload.as_ref())),
            Ended::Lost(error) => self.internal(tool, call_id, ErrorKind::Internal, error),
        }
    }

    /// A call that must wait (a tool that waits, a policy predicate) was
    /// polled outside a Tokio runtime with timers: the model reads the
    /// generic 500, the developer what to do.
    fn report_no_runtime(&self, entry: &Entry<App>, call_id: &SmolStr) {
        let needs = "a call that waits needs a Tokio runtime with timers enabled (its timeout and its task are \
                     Tokio's): await it inside #[tokio::main] or Runtime::block_on, on a runtime built with \
                     enable_time() or enable_all()";
        let code = crate::error::INTERNAL_ERROR_CODE;
        self.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::Internal, code, needs));
    }

    fn internal(&self, tool: SmolStr, call_id: &SmolStr, kind: ErrorKind, error: String) -> CallResult {
        let public = ToolError::internal();
        self.report(ErrorReport::new(tool.as_str(), call_id.as_str(), kind, public.code(), error));
        CallResult::failure(tool, call_id.clone(), ResultKind::Internal, &public)
    }

    /// Full detail to `tracing` and the hook; never to the model.
    pub(crate) fn report(&self, report: ErrorReport) {
        tracing::error!(
            tool = %report.tool,
            call_id = %Escaped(&report.call_id),
            kind = report.kind.as_str(),
            code = %report.code,
            error = %Escaped(&report.error),
            message = report.message.as_deref(),
            "tool call failed"
        );
        if let Some(hook) = &self.inner.config.on_tool_error {
            hook(&report);
        }
    }
}

fn call_span(tool: &str, call_id: &str) -> tracing::Span {
    tracing::info_span!(
        "tool_call",
        tool = %Escaped(&lines::shorten(tool, 64)),
        call_id = %Escaped(call_id),
        verdict = tracing::field::Empty,
        outcome = tracing::field::Empty,
        duration_ms = tracing::field::Empty,
    )
}

/// A Tokio timer until `deadline`, or `None` when this thread is in no
/// Tokio runtime, or in one without timers (where making one panics).
fn runtime_timer(deadline: tokio::time::Instant) -> Option<tokio::time::Sleep> {
    tokio::runtime::Handle::try_current().ok()?;
    std::panic::catch_unwind(|| tokio::time::sleep_until(deadline)).ok()
}

/// Text the model chose (a tool name, a call id, an error that may quote
/// its input), written into a log field with its control characters
/// escaped: a newline in a tool name must not forge a log line.
struct Escaped<'a>(&'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            if c.is_control() {
                write!(f, "{}", c.escape_default())?;
            } else {
                fmt::Write::write_char(f, c)?;
            }
        }
        Ok(())
    }
}

/// Records how the call ended on its span.
fn record_outcome(span: &tracing::Span, kind: ResultKind) {
    if !span.is_disabled() {
        span.record("outcome", kind.as_str());
    }
}

/// The future of one call through the whole pipeline, made by
/// `Registry::process`.
///
/// Written by hand rather than as an `async fn`: an `async fn`'s future is
/// as large as its largest state, every caller's future embeds it, and it
/// is copied each time one is built around it. Here the common call (a
/// static policy, a tool that returns without waiting) goes from start to
/// result in one poll, with no state larger than its inputs; whatever
/// waits (a policy predicate, a tool that waits) is boxed.
pub(crate) struct Processing<'a, App, A, I> {
    registry: &'a Registry<App>,
    /// The call's `tool_call` span, entered around each poll.
    span: tracing::Span,
    state: ProcessingState<'a, App, A, I>,
}

// Nothing in a `Processing` is pinned in place: its inputs are moved out at
// the first poll, and the futures it holds are boxed.
impl<App, A, I> Unpin for Processing<'_, App, A, I> {}

enum ProcessingState<'a, App, A, I> {
    Start { app: &'a Arc<App>, name: &'a str, args: A, info: I, offered: Option<&'a [String]> },
    /// A tool that waits.
    Executing(Waiter<'a>),
    /// A policy predicate, then the rest of the call.
    Boxed(Pin<Box<dyn Future<Output = CallOutcome<App>> + Send + 'a>>),
    Done,
}

impl<'a, App, A, I> Future for Processing<'a, App, A, I>
where
    App: Send + Sync + 'static,
    A: Into<Arguments<'a>>,
    I: FnOnce() -> CallInfo,
{
    type Output = CallOutcome<App>;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let outcome = loop {
            match std::mem::replace(&mut this.state, ProcessingState::Done) {
                ProcessingState::Start { app, name, args, info, offered } => {
                    let (args, info) = (args.into(), info());
                    this.span = call_span(name, &info.call_id);
                    let _entered = this.span.enter();
                    let registry = this.registry;
                    let waiter = match registry.stage(app, name, args, info, offered, cx, &this.span) {
                        Stage::Done(outcome) => break outcome,
                        Stage::Waiting(waiter) => waiter,
                        Stage::Run(call) => match registry.start(call, cx, &this.span) {
                            FirstPoll::Ready(result) => break CallOutcome::Done(result),
                            FirstPoll::Waiting(waiter) => waiter,
                        },
                        Stage::Decide(call) => {
                            let decided = registry.decide_and_run(call, this.span.clone());
                            this.state = ProcessingState::Boxed(Box::pin(decided.instrument(this.span.clone())));
                            continue;
                        }
                    };
                    // Polled at once: its task is spawned at its first poll.
                    this.state = ProcessingState::Executing(waiter);
                }
                ProcessingState::Executing(mut waiter) => match waiter.as_mut().poll(cx) {
                    Poll::Ready(result) => break CallOutcome::Done(result),
                    Poll::Pending => {
                        this.state = ProcessingState::Executing(waiter);
                        return Poll::Pending;
                    }
                },
                ProcessingState::Boxed(mut future) => match future.as_mut().poll(cx) {
                    Poll::Ready(outcome) => break outcome,
                    Poll::Pending => {
                        this.state = ProcessingState::Boxed(future);
                        return Poll::Pending;
                    }
                },
                ProcessingState::Done => panic!("a tool call polled after it completed"),
            }
        };
        let kind = match &outcome {
            CallOutcome::Done(result) => result.kind,
            CallOutcome::NeedsApproval(_) => ResultKind::PendingApproval,
        };
        record_outcome(&this.span, kind);
        Poll::Ready(outcome)
    }
}

/// A tool that waits, after its first poll: its task, its timer and its
/// conclusion, boxed (instrumented with the call's span).
type Waiter<'a> = Pin<Box<dyn Future<Output = CallResult> + Send + 'a>>;

/// How the first poll of a tool left it.
enum FirstPoll<'a> {
    Ready(CallResult),
    Waiting(Waiter<'a>),
}

/// The task of a tool that waits, with its token: dropped before the task
/// ends (the caller dropped the call), it cancels the token and the task.
struct Abandoned<'a> {
    task: tokio::task::JoinHandle<Result<ToolOutput, Failure>>,
    cancel: &'a CancellationToken,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if !self.task.is_finished() {
            self.cancel.cancel();
            self.task.abort();
        }
    }
}

/// A call that passed stages 1 and 2.
struct Staged<'r, App> {
    entry: &'r Entry<App>,
    input: Box<dyn Any + Send + Sync>,
    call: CallState<'r, App>,
    args: ParsedFrom<'r>,
}

/// How far a call got without awaiting.
enum Stage<'r, App> {
    Done(CallOutcome<App>),
    /// Allowed, and the tool polled once: it waits.
    Waiting(Waiter<'r>),
    /// Allowed: execute it.
    Run(Staged<'r, App>),
    /// Its policy predicate must be awaited.
    Decide(Staged<'r, App>),
}

/// A call after its verdict.
enum Settled<'r, App> {
    Done(CallOutcome<App>),
    Run(Staged<'r, App>),
}

/// Why a policy predicate gave no verdict.
pub(crate) enum Undecided {
    /// The call was cancelled while the predicate ran.
    Cancelled,
    /// The predicate took longer than the registry's policy timeout (it
    /// is reported, and the call is denied: fail closed).
    TimedOut(Duration),
    /// No Tokio runtime with timers to run it under (reported).
    NoRuntime,
}

/// How a tool's execution ended, wherever it ran.
enum Ended {
    Returned(Result<ToolOutput, Failure>),
    Panicked(Box<dyn Any + Send>),
    /// Its task ended without a result (not a panic).
    Lost(String),
}

/// An error and its sources, for the developer.
fn describe(error: &BoxError) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

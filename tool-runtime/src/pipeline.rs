//! One call through every stage, in the order SPEC §2 gives: guard,
//! validation and parsing, policy, approval, execution, output, `ends_run`.

use std::any::Any;
use std::fmt;
use std::future::{Future, IntoFuture};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use futures_util::FutureExt;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::context::{CallInfo, Ctx, ProgressSink, UserContext};
use crate::error::ToolError;
use crate::guard::{self, GuardError};
use crate::policy::Verdict;
use crate::registry::{Entry, Registry};
use crate::report::{panic_message, ErrorKind, ErrorReport};
use crate::result::{lines, CallResult, ResultKind};
use crate::definition::{BoxError, Failure, ToolOutput};

/// The arguments of a call, as text (provider payloads) or already parsed
/// (MCP).
#[derive(Clone, Debug, PartialEq)]
pub enum Arguments {
    /// Raw JSON text.
    Text(String),
    /// A parsed JSON value.
    Value(Value),
}

impl From<&str> for Arguments {
    fn from(text: &str) -> Self {
        Arguments::Text(text.to_owned())
    }
}

impl From<String> for Arguments {
    fn from(text: String) -> Self {
        Arguments::Text(text)
    }
}

impl From<Value> for Arguments {
    fn from(value: Value) -> Self {
        Arguments::Value(value)
    }
}

impl From<Map<String, Value>> for Arguments {
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

/// A call that passed validation and policy and waits for a human.
pub struct PendingCall<App> {
    /// The call id (also the approval id).
    pub id: String,
    /// The tool.
    pub tool: String,
    /// The validated arguments, for the human to review.
    pub arguments: Value,
    /// What the model reads if the human rejects without a text.
    pub rejection_text: Option<String>,
    input: Box<dyn Any + Send + Sync>,
    args: Map<String, Value>,
    ctx: Ctx<App>,
}

impl<App> fmt::Debug for PendingCall<App> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingCall")
            .field("id", &self.id)
            .field("tool", &self.tool)
            .field("arguments", &self.arguments)
            .finish_non_exhaustive()
    }
}

impl<App> PendingCall<App> {
    /// The result the model reads while the call waits.
    pub fn pending_result(&self) -> CallResult {
        CallResult::failure(&self.tool, &self.id, ResultKind::PendingApproval, &lines::pending())
    }
}

/// A call being set up; `.await` it. Made by [`Registry::call`].
#[must_use = "a call does nothing until it is awaited"]
pub struct Call<'r, App> {
    registry: &'r Registry<App>,
    app: Arc<App>,
    name: String,
    args: Arguments,
    info: CallInfo,
    offered: Option<Vec<String>>,
}

impl<'r, App: Send + Sync + 'static> Call<'r, App> {
    /// Who is calling (default: an anonymous user).
    pub fn user(mut self, user: impl Into<Arc<UserContext>>) -> Self {
        self.info.user = user.into();
        self
    }

    /// The conversation thread.
    pub fn thread_id(mut self, thread_id: impl Into<Arc<str>>) -> Self {
        self.info.thread_id = Some(thread_id.into());
        self
    }

    /// The call id (default: a fresh `call_N`).
    pub fn call_id(mut self, call_id: impl Into<String>) -> Self {
        self.info.call_id = call_id.into();
        self
    }

    /// A token the caller cancels to cancel the call. The tool sees a child
    /// of it, which the runtime also cancels at the timeout.
    pub fn cancellation(mut self, token: &CancellationToken) -> Self {
        self.info.cancel = token.child_token();
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
            self.registry.process(self.app, &self.name, self.args, self.info, self.offered.as_deref()).await
        })
    }
}

static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

pub(crate) fn fresh_call_id() -> String {
    // Written by hand: `format!` costs a call as much as the rest of its setup.
    let mut n = NEXT_CALL.fetch_add(1, Ordering::Relaxed);
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut id = String::with_capacity(5 + digits.len() - start);
    id.push_str("call_");
    id.extend(digits[start..].iter().map(|&digit| char::from(digit)));
    id
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
    ///     .call(Arc::new(()), "echo", r#"{"text": "hi"}"#)
    ///     .user(UserContext::new("u-1"))
    ///     .call_id("toolu_01")
    ///     .await;
    /// assert_eq!(outcome.into_result().unwrap().text, "hi");
    /// # }
    /// ```
    pub fn call(&self, app: Arc<App>, name: &str, args: impl Into<Arguments>) -> Call<'_, App> {
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
    pub async fn invoke(&self, app: Arc<App>, name: &str, args: impl Into<Arguments>) -> CallResult {
        let info = CallInfo::anonymous(fresh_call_id());
        match self.process(app, name, args.into(), info, None).await {
            CallOutcome::Done(result) => result,
            CallOutcome::NeedsApproval(pending) => pending.pending_result(),
        }
    }

    /// Runs a pending call as it is, since a human approved it.
    pub async fn approve(&self, pending: PendingCall<App>) -> CallResult {
        let Some(entry) = self.entry(&pending.tool) else {
            return self.unknown(&pending.tool, &pending.id, &[]);
        };
        let span = call_span(&pending.tool, &pending.id);
        span.record("verdict", "approved");
        // Boxed here and below: the execution's future (a timer, a task
        // handle, a cancellation waiter) would otherwise sit inside every
        // future that awaits an approval, and be copied with it each time
        // it moves (an MCP server spawns one per request).
        Box::pin(self.execute(entry, pending.input, pending.ctx, pending.args)).instrument(span).await
    }

    /// Runs a pending call with the input a human edited. The edited input
    /// is validated and decided again: a `Deny` refuses it; `NeedsApproval`
    /// runs it, since a human approved exactly that input.
    pub async fn approve_with(&self, pending: PendingCall<App>, edited: impl Into<Arguments>) -> CallResult {
        let Some(entry) = self.entry(&pending.tool) else {
            return self.unknown(&pending.tool, &pending.id, &[]);
        };
        let span = call_span(&pending.tool, &pending.id);
        async move {
            let (input, args) = match self.prepare(entry, &pending.id, edited.into()) {
                Ok(prepared) => prepared,
                Err(result) => return result,
            };
            match self.decide(entry, input.as_ref(), &pending.ctx).await {
                Verdict::Deny { reason } => {
                    tracing::Span::current().record("verdict", "deny");
                    self.finish(CallResult::failure(&entry.def.name, &pending.id, ResultKind::Denied, &lines::denied(reason.as_deref())))
                }
                _ => {
                    tracing::Span::current().record("verdict", "approved");
                    Box::pin(self.execute(entry, input, pending.ctx, args)).await
                }
            }
        }
        .instrument(span)
        .await
    }

    /// Ends a pending call without running it; the model reads `text`, or
    /// the tool's rejection text, or a generic rejection.
    pub fn reject(&self, pending: PendingCall<App>, text: Option<&str>) -> CallResult {
        let text = text.or(pending.rejection_text.as_deref());
        let span = call_span(&pending.tool, &pending.id);
        let _enter = span.enter();
        span.record("verdict", "rejected");
        self.finish(CallResult::failure(&pending.tool, &pending.id, ResultKind::Rejected, &lines::rejected(text)))
    }

    /// The whole pipeline for one call. `offered`, when set, is the list of
    /// tools offered in the current step: any other name is unknown.
    pub(crate) async fn process(
        &self,
        app: Arc<App>,
        name: &str,
        args: Arguments,
        info: CallInfo,
        offered: Option<&[String]>,
    ) -> CallOutcome<App> {
        let span = call_span(name, &info.call_id);
        async move {
            let ctx = Ctx::from_parts(app, info);
            let call_id = ctx.call_id();
            let entry = match self.entry(name) {
                Some(entry) if offered.is_none_or(|offered| offered.iter().any(|o| o == name)) => entry,
                _ => {
                    let names: Vec<&str> = match offered {
                        Some(offered) => offered.iter().map(String::as_str).collect(),
                        None => self.names().collect(),
                    };
                    return CallOutcome::Done(self.unknown(name, call_id, &names));
                }
            };
            let (input, args) = match self.prepare(entry, call_id, args) {
                Ok(prepared) => prepared,
                Err(result) => return CallOutcome::Done(result),
            };
            let verdict = self.decide(entry, input.as_ref(), &ctx).await;
            tracing::Span::current().record("verdict", verdict.as_str());
            match verdict {
                Verdict::Allow => CallOutcome::Done(Box::pin(self.execute(entry, input, ctx, args)).await),
                Verdict::Deny { reason } => CallOutcome::Done(self.finish(CallResult::failure(
                    &entry.def.name,
                    ctx.call_id(),
                    ResultKind::Denied,
                    &lines::denied(reason.as_deref()),
                ))),
                Verdict::NeedsApproval { rejection_text } => {
                    tracing::Span::current().record("outcome", ResultKind::PendingApproval.as_str());
                    CallOutcome::NeedsApproval(PendingCall {
                        id: ctx.call_id().to_owned(),
                        tool: entry.def.name.clone(),
                        arguments: Value::Object(args.clone()),
                        rejection_text,
                        input,
                        args,
                        ctx,
                    })
                }
            }
        }
        .instrument(span)
        .await
    }

    fn unknown(&self, name: &str, call_id: &str, offered: &[&str]) -> CallResult {
        self.finish(CallResult::failure(name, call_id, ResultKind::UnknownTool, &lines::unknown_tool(name, offered)))
    }

    /// Stages 1 and 2: guard, JSON, schema, deserialisation.
    #[allow(clippy::result_large_err)]
    fn prepare(
        &self,
        entry: &Entry<App>,
        call_id: &str,
        args: Arguments,
    ) -> Result<(Box<dyn Any + Send + Sync>, Map<String, Value>), CallResult> {
        let tool = entry.def.name.as_str();
        let invalid = |error: ToolError| self.finish(CallResult::failure(tool, call_id, ResultKind::InvalidArguments, &error));
        let limits = &self.inner.config.limits;
        let guarded = match &args {
            Arguments::Text(text) => guard::check_text(text, limits),
            Arguments::Value(value) => guard::check_value(value, limits),
        };
        match guarded {
            Ok(()) => {}
            Err(GuardError::TooLarge { bytes, max }) => return Err(invalid(lines::too_large(bytes, max))),
            Err(GuardError::TooDeep { max }) => {
                if let Arguments::Value(value) = args {
                    guard::dismantle(value);
                }
                return Err(invalid(lines::too_deep(max)));
            }
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
        let found = crate::validation::scan(&value);
        // A null for an optional property means "use the default" (SPEC §4).
        if found.nulls {
            crate::nulls::drop_defaulted_nulls(&mut value, &entry.def.input_schema);
        }
        // `5.0` is an integer to the schema, so it is one to the parser too.
        if found.integral_floats && entry.tool.parses_types() {
            crate::validation::integers_from_integral_floats(&mut value);
        }
        // Where parsing checks all the schema says, a successful parse is
        // the validation; otherwise (and to word any error) the validator.
        if entry.parser_enforces
            && let Value::Object(map) = &value
            && crate::validation::unknown_property(map, &entry.properties).is_none()
            && let Ok(input) = entry.tool.parse(map)
        {
            let Value::Object(map) = value else { unreachable!("matched above") };
            return Ok((input, map));
        }
        let problems = crate::validation::problems(&entry.validator, &value);
        if !problems.is_empty() {
            return Err(invalid(lines::schema(tool, &problems)));
        }
        let Value::Object(map) = value else {
            return Err(invalid(lines::schema(tool, &["(root): not an object".to_owned()])));
        };
        match entry.tool.parse(&map) {
            Ok(input) => Ok((input, map)),
            Err(err) => Err(invalid(lines::parse(tool, &err))),
        }
    }

    /// Stage 3: the tool's rule, then the user's floor. A predicate that
    /// panics or fails denies, and is reported.
    pub(crate) async fn decide(&self, entry: &Entry<App>, input: &(dyn Any + Send + Sync), ctx: &Ctx<App>) -> Verdict {
        let verdict = match entry.def.policy.static_verdict() {
            Some(verdict) => verdict,
            None => {
                let decided = match std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.decide(input, ctx))) {
                    Ok(future) => AssertUnwindSafe(future).catch_unwind().await,
                    Err(payload) => Err(payload),
                };
                match decided {
                    Ok(Ok(verdict)) => verdict,
                    Ok(Err(error)) => self.fail_closed(entry, ctx, error.to_string()),
                    Err(payload) => self.fail_closed(entry, ctx, format!("panic: {}", panic_message(payload.as_ref()))),
                }
            }
        };
        verdict.with_floor(ctx.user().floor.applies(&entry.def.name, entry.def.tags.iter().map(String::as_str)))
    }

    fn fail_closed(&self, entry: &Entry<App>, ctx: &Ctx<App>, error: String) -> Verdict {
        self.report(ErrorReport {
            tool: entry.def.name.clone(),
            call_id: ctx.call_id().to_owned(),
            kind: ErrorKind::Policy,
            code: "POLICY_DENIED".to_owned(),
            error,
            message: None,
            data: None,
        });
        Verdict::Deny { reason: None }
    }

    /// Stages 5 to 7: run under the timeout, render the output, decide
    /// `ends_run`.
    pub(crate) async fn execute(
        &self,
        entry: &Entry<App>,
        input: Box<dyn Any + Send + Sync>,
        ctx: Ctx<App>,
        args: Map<String, Value>,
    ) -> CallResult {
        let tool = entry.def.name.as_str();
        let timeout = entry.def.timeout.unwrap_or(self.inner.config.default_timeout);
        // The tool consumes its context; this clone keeps the call id and
        // the token for the result.
        let call = ctx.clone();
        let (call_id, cancel) = (call.call_id(), call.cancellation());
        let started = Instant::now();
        if cancel.is_cancelled() {
            return self.finish(CallResult::failure(tool, call_id, ResultKind::Cancelled, &lines::cancelled()));
        }
        let mut future = match std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.call(input, ctx, &args))) {
            Ok(future) => future,
            Err(payload) => return self.internal(tool, call_id, ErrorKind::Panic, panic_message(payload.as_ref())),
        };
        // The first poll runs in place: most tools finish without waiting,
        // and then need no task of their own and no timer.
        let first = std::future::poll_fn(|cx| {
            Poll::Ready(std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))))
        })
        .await;
        let ended = match first {
            Ok(Poll::Ready(returned)) => Ended::Returned(returned),
            Err(payload) => Ended::Panicked(payload),
            Ok(Poll::Pending) => {
                // A tool that waits gets a task of its own: a panic stays in
                // it, and a tool that ignores its token is dropped at the
                // timeout. The future moves boxed, so it is not moved in
                // memory after its first poll.
                let mut task = tokio::spawn(future);
                tokio::select! {
                    // Biased: a cancelled call reads as cancelled even when the
                    // tool returned in reaction to its token in the same instant.
                    biased;
                    () = cancel.cancelled() => {
                        task.abort();
                        return self.finish(CallResult::failure(tool, call_id, ResultKind::Cancelled, &lines::cancelled()));
                    }
                    joined = &mut task => match joined {
                        Ok(returned) => Ended::Returned(returned),
                        Err(join) if join.is_panic() => Ended::Panicked(join.into_panic()),
                        Err(join) => Ended::Lost(join.to_string()),
                    },
                    () = tokio::time::sleep_until((started + timeout).into()) => {
                        cancel.cancel();
                        task.abort();
                        let error = lines::timed_out(timeout);
                        self.report(ErrorReport {
                            tool: tool.to_owned(),
                            call_id: call_id.to_owned(),
                            kind: ErrorKind::Timeout,
                            code: error.code().to_owned(),
                            error: format!("no result after {timeout:?}"),
                            message: None,
                            data: None,
                        });
                        return self.finish(CallResult::failure(tool, call_id, ResultKind::TimedOut, &error));
                    }
                }
            }
        };
        if cancel.is_cancelled() {
            return self.finish(CallResult::failure(tool, call_id, ResultKind::Cancelled, &lines::cancelled()));
        }
        tracing::Span::current().record("duration_ms", started.elapsed().as_millis() as u64);
        match ended {
            Ended::Returned(Ok(output)) => {
                let limit = entry.def.max_output_chars.unwrap_or(self.inner.config.default_max_output_chars);
                let (text, truncated) = crate::output::render(&output.value, limit);
                // The structured value stays whole: MCP requires `structuredContent`
                // to match a declared output schema even when the text was cut.
                self.finish(CallResult::success(tool, call_id, text, Some(output.value), truncated, output.ends_run))
            }
            Ended::Returned(Err(Failure::Tool(error))) => {
                self.report(ErrorReport {
                    tool: tool.to_owned(),
                    call_id: call_id.to_owned(),
                    kind: ErrorKind::Tool,
                    code: error.code().to_owned(),
                    error: error.model_line(),
                    message: error.message().map(str::to_owned),
                    data: error.data().cloned(),
                });
                self.finish(CallResult::failure(tool, call_id, ResultKind::ToolError, &error))
            }
            Ended::Returned(Err(Failure::Internal(error))) => {
                self.internal(tool, call_id, ErrorKind::Internal, describe(&error))
            }
            Ended::Panicked(payload) => self.internal(tool, call_id, ErrorKind::Panic, panic_message(payload.as_ref())),
            Ended::Lost(error) => self.internal(tool, call_id, ErrorKind::Internal, error),
        }
    }

    fn internal(&self, tool: &str, call_id: &str, kind: ErrorKind, error: String) -> CallResult {
        let public = ToolError::internal();
        self.report(ErrorReport {
            tool: tool.to_owned(),
            call_id: call_id.to_owned(),
            kind,
            code: public.code().to_owned(),
            error,
            message: None,
            data: None,
        });
        self.finish(CallResult::failure(tool, call_id, ResultKind::Internal, &public))
    }

    /// Full detail to `tracing` and the hook; never to the model.
    pub(crate) fn report(&self, report: ErrorReport) {
        tracing::error!(
            tool = %report.tool,
            call_id = %report.call_id,
            kind = report.kind.as_str(),
            code = %report.code,
            error = %report.error,
            message = report.message.as_deref(),
            "tool call failed"
        );
        if let Some(hook) = &self.inner.config.on_tool_error {
            hook(&report);
        }
    }

    fn finish(&self, result: CallResult) -> CallResult {
        tracing::Span::current().record("outcome", result.kind.as_str());
        result
    }
}

fn call_span(tool: &str, call_id: &str) -> tracing::Span {
    tracing::info_span!(
        "tool_call",
        tool = %lines::shorten(tool, 64),
        call_id = %call_id,
        verdict = tracing::field::Empty,
        outcome = tracing::field::Empty,
        duration_ms = tracing::field::Empty,
    )
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

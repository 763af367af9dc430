//! One call through every stage, in this order:
//!
//! 0. **Name**: the tool is looked up among those offered; any other name
//!    is an unknown tool.
//! 1. **Guard**: the size, the number of JSON values and the depth of the
//!    raw arguments, before anything parses them (`guard`).
//! 2. **Parse**: the text becomes a JSON value, its nulls and integral
//!    floats normalised (`normalize`). Where the tool's schema makes the
//!    text exact (`validation::text_exact`), the tool's reader reads the
//!    text straight into the input instead (`__private::Args`), checking a
//!    constrained scalar's value against its own schema; what it
//!    does not take is parsed here, so that stage 3 words the error.
//! 3. **Validate**: the value is checked against the input schema and read
//!    into the tool's input. Where parsing into the Rust types checks all
//!    the schema says (`validation::parser_enforces`), a successful read is
//!    the check, and the validator only words a failure.
//! 4. **Judge**: the tool's policy, then the user's approval floor. A
//!    predicate runs under the policy timeout and the call's cancellation,
//!    and fails closed; a synchronous one runs on a blocking thread, so
//!    that the timeout applies to it too.
//! 5. **Approve**: a call that needs approval is parked as a
//!    [`PendingCall`]; the host later approves it (as it is, or with an
//!    edited input, which goes through stages 1 to 4 again) or rejects it.
//! 6. **Execute**: the tool runs under its timeout and cancellation. It is
//!    polled once in place; a tool that waits gets a task and a timer,
//!    and sends its interim text once if it is still running after the
//!    delay (`wait`).
//! 7. **Conclude**: the output becomes the model's text, cut at the output
//!    limit; a failure becomes its one line, and anything the model must
//!    not read (an internal error, a panic) is reported to the developer.
//!
//! A call whose verdict does not depend on its input goes through stages 1
//! to 7 at once (`at_once`) on its first poll: its text read straight into
//! the tool's input and the tool run on it, with no input boxed between
//! them, and no future boxed for a tool that never waits.
//!
//! In a run, the run's memory is asked about the call's effect before
//! stage 4 (a finished one is replayed), and stage 6 records the call as
//! started before the tool runs and as finished after (`effects`): a
//! durable run does so for every call, in its journal; one that is not
//! durable only for a call keyed by an `idempotency_key`.
//!
//! Each stage is one function below, in that order, over the registry's
//! tool table (`table`): the [`Registry`](crate::Registry) is the face
//! they stand under. A call that goes down the stages is one boxed future
//! ([`Registry::call`](crate::Registry::call) boxes every call); one that
//! goes at once is not boxed, and a tool that waits is boxed once more,
//! with its task and its timer.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use serde_json::{Map, Value};
use smol_str::SmolStr;
use tracing::Instrument;

mod at_once;
mod builder;
mod checks;
mod effects;
mod observed;
mod wait;

use effects::{execute_journaled, hand_journaled, journaled};
use wait::run_waiting;

pub(crate) use checks::out_of_scope;
use checks::{validate, wrong_failure, wrong_output};

use crate::call::{Arguments, CallOutcome, Pending, PendingCall};
use crate::call_report::Watch;
use crate::context::{CallInfo, CallState, Ctx};
use crate::definition::FailureMode;
use crate::error::ToolError;
use crate::error_report::{ErrorKind, ErrorReport, Escaped, describe, panic_message};
use crate::guard::{self, GuardError};
use crate::ids::fresh_call_id;
use crate::policy::Verdict;
use crate::result::{CallResult, ResultKind, lines};
use crate::table::{Entry, ToolTable};
use crate::tool::{BoxError, BoxFuture, CallFuture, Failure, Output, ParsedFrom, PolicyCall, ToolOutput};
pub use builder::{Call, OutputError};

/// A call's input: the tool's parsed input, and what it was read from
/// (kept for an `ends_run` predicate and for a human to review).
pub(crate) struct Input<'a> {
    pub(crate) value: Box<dyn Any + Send + Sync>,
    pub(crate) from: ParsedFrom<'a>,
}

/// What stage 2 makes of the arguments.
enum Parsed<'a> {
    /// The text, read straight into the input: nothing left to check.
    Input(Input<'a>),
    /// A JSON value, for stage 3.
    Value(Value),
}

/// Why a policy predicate gave no verdict.
pub(crate) enum NoVerdict {
    /// The call was cancelled while the predicate ran.
    Cancelled,
    /// The predicate took longer than the registry's policy timeout (it
    /// is reported, and the call is denied: fail closed).
    TimedOut(Duration),
    /// No Tokio runtime with timers to run it under (reported).
    NoRuntime,
}

/// How a tool's execution ended, wherever it ran.
pub(crate) enum Ended {
    Returned(Result<ToolOutput, Failure>),
    Panicked(Box<dyn Any + Send>),
    /// Its task ended without a result (not a panic).
    Lost(String),
    /// It stopped at a question it parked (`question`): the call waits for
    /// the answer, and runs again from the top.
    Asked,
}

/// A call of `name` outside a run, as an anonymous user
/// ([`Registry::invoke`](crate::Registry::invoke)): a call that needs
/// approval is not run, and reads that it is pending.
pub(crate) fn invoke<'a, App: Send + Sync + 'static>(
    tools: &'a ToolTable<App>,
    app: &'a Arc<App>,
    name: &str,
    args: Arguments<'a>,
) -> impl Future<Output = CallResult> + 'a {
    let info = CallInfo::anonymous(fresh_call_id());
    process(tools, app, name, args, info, None, None).map(|outcome| match outcome {
        CallOutcome::Done(result) => result,
        CallOutcome::NeedsApproval(pending) => pending.pending_result(),
    })
}

/// The whole path of one call. `offered`, when set, is the list of
/// tools offered in the current step: any other name is unknown.
/// `scoped`, when set, is the validator of the tool's schema as its
/// scope rebuilt it for the turn: the input must pass it too.
///
/// Stages 0 to 3 need no waiting: they run here, at once, and a call
/// they end is a ready future. Stages 4 to 7 are the returned future;
/// for a call that goes at once (`at_once`), only stage 0 and the guard
/// run here, and the returned future's first poll does the rest.
pub(crate) fn process<'a, App: Send + Sync + 'static>(
    tools: &'a ToolTable<App>,
    app: &'a Arc<App>,
    name: &str,
    args: Arguments<'a>,
    info: CallInfo,
    offered: Option<&[String]>,
    scoped: Option<&jsonschema::Validator>,
) -> Processing<'a, App> {
    // 0. Name.
    let entry = offered_entry(tools, name, offered);
    // A call a result hook sees is timed, and reported when it ends.
    if tools.observes(entry) {
        let watch = Watch::start(&info);
        return observed::Observed::wrap(tools, watch, || stages(tools, app, name, entry, args, info, offered, scoped));
    }
    stages(tools, app, name, entry, args, info, offered, scoped)
}

/// [`process`] from stage 0's answer on: the tool's `entry`, if it is
/// registered and offered.
#[allow(clippy::too_many_arguments, reason = "the call's parts, as `process` takes them, and stage 0's answer")]
#[inline]
fn stages<'a, App: Send + Sync + 'static>(
    tools: &'a ToolTable<App>,
    app: &'a Arc<App>,
    name: &str,
    entry: Option<&'a Entry<App>>,
    args: Arguments<'a>,
    info: CallInfo,
    offered: Option<&[String]>,
    scoped: Option<&jsonschema::Validator>,
) -> Processing<'a, App> {
    let Some(entry) = entry else {
        let span = call_span(name, &info.call_id);
        let _entered = span.enter();
        let result = unknown(tools, name, &info.call_id, offered);
        record_outcome(&span, result.kind);
        return Processing::Ended(Some(CallOutcome::Done(result)));
    };
    // 1 to 7 at once on the first poll, where the verdict does not depend
    // on the input.
    let args = match at_once::text(tools, entry, args, &info, scoped) {
        Ok(text) => return Processing::AtOnce(at_once::Running::new(tools, entry, app, name, info, text)),
        Err(args) => args,
    };
    let span = call_span(name, &info.call_id);
    let entered = span.enter();
    let call = CallState::new(app, info);
    // 1 to 3. Guard, parse, validate.
    let input = match read_input(tools, entry, call.call_id(), args) {
        Ok(input)
            if let Some(validator) = scoped
                && let Some(result) = out_of_scope(entry, call.call_id(), validator, &input) =>
        {
            record_outcome(&span, result.kind);
            return Processing::Ended(Some(CallOutcome::Done(result)));
        }
        Ok(input) => input,
        Err(result) => {
            record_outcome(&span, result.kind);
            return Processing::Ended(Some(CallOutcome::Done(result)));
        }
    };
    drop(entered);
    Processing::Stages(Box::pin(run_validated(tools, entry, input, call, span.clone()).instrument(span)))
}

/// The future of one call ([`process`]): its outcome where stages 0 to 3
/// ended it, the call made at once, or the stages from 4 on; or, for a
/// call a result hook sees, one of those, timed and reported.
pub(crate) enum Processing<'a, App> {
    /// Ended before anything waits; taken by the first poll.
    Ended(Option<CallOutcome<App>>),
    /// A call made at once: not boxed.
    AtOnce(at_once::Running<'a, App>),
    /// Stages 4 to 7, one by one.
    Stages(BoxFuture<'a, CallOutcome<App>>),
    /// A call some result hook sees (boxed: the others stay as small).
    Observed(Box<observed::Observed<'a, App>>),
}

impl<App: Send + Sync + 'static> Future for Processing<'_, App> {
    type Output = CallOutcome<App>;

    #[inline]
    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<CallOutcome<App>> {
        match self.get_mut() {
            Processing::Ended(outcome) => Poll::Ready(outcome.take().expect("a call's future polled after it ended")),
            Processing::AtOnce(running) => std::pin::Pin::new(running).poll(cx),
            Processing::Stages(stages) => stages.as_mut().poll(cx),
            Processing::Observed(observed) => std::pin::Pin::new(&mut **observed).poll(cx),
        }
    }
}

/// Stages 4 to 7, for a call whose input was read.
///
/// (The stages that wait are `async` blocks returned by plain
/// functions, here and in `execute`: an `async fn` keeps a second copy
/// of its arguments in its future, and every call allocates this one.)
#[allow(clippy::manual_async_fn, reason = "an `async fn` would keep a second copy of its arguments in its future")]
fn run_validated<'s, App: Send + Sync + 'static>(
    tools: &'s ToolTable<App>,
    entry: &'s Entry<App>,
    mut input: Input<'s>,
    mut call: CallState<'s, App>,
    span: tracing::Span,
) -> impl Future<Output = CallOutcome<App>> + Send + 's {
    async move {
        // The run's memory may hold this call's effect already.
        if let Some(remembered) = effects::memory_of(entry, call.info()).cloned()
            && let Some(result) = Box::pin(journaled(tools, &remembered, entry, &input, &mut call)).await
        {
            return outcome(&span, CallOutcome::Done(result));
        }
        // 4. Judge.
        let verdict = match judge(tools, entry, &mut input, &mut call).await {
            Ok(verdict) => verdict,
            Err(why) => return outcome(&span, CallOutcome::Done(no_verdict(entry, call.call_id(), why))),
        };
        span.record("verdict", verdict.as_str());
        // 5. Approve.
        match verdict {
            Verdict::Allow => {}
            Verdict::Deny { reason } => return outcome(&span, CallOutcome::Done(denied(entry, call.call_id(), reason.as_deref()))),
            Verdict::NeedsApproval { rejection_text } => {
                return outcome(&span, CallOutcome::NeedsApproval(pending_call(entry, input, call, rejection_text)));
            }
        }
        // 6 and 7. Execute, conclude.
        let result = run_tool(tools, entry, input, &mut call, &span).await;
        outcome(&span, ran(tools, entry, call, result))
    }
}

/// The outcome of a call whose tool ran: one that stopped at its questions
/// waits for their answers (its input read again from what it was read
/// from, which the call's asking state kept), any other is done.
#[inline]
pub(crate) fn ran<App>(tools: &ToolTable<App>, entry: &Entry<App>, call: CallState<'_, App>, result: CallResult) -> CallOutcome<App>
where
    App: Send + Sync + 'static,
{
    if result.kind != ResultKind::PendingApproval {
        return CallOutcome::Done(result);
    }
    pending_again(tools, entry, call, result)
}

/// [`ran`] for a call whose tool ran and is pending: stopped at its
/// questions, or pending for another reason (then done).
fn pending_again<App>(tools: &ToolTable<App>, entry: &Entry<App>, call: CallState<'_, App>, result: CallResult) -> CallOutcome<App>
where
    App: Send + Sync + 'static,
{
    let Some(stopped) = call.info().asking().and_then(crate::question::Asking::take_stopped) else { return CallOutcome::Done(result) };
    let arguments = match stopped.arguments {
        Some(ParsedFrom::Text(text)) => Arguments::Text(text),
        Some(ParsedFrom::Value(value)) => Arguments::Value(*value),
        None => {
            return CallOutcome::Done(internal(
                tools,
                entry.name.clone(),
                call.call_id(),
                ErrorKind::Internal,
                "a call stopped at a question kept no input".to_owned(),
            ));
        }
    };
    match read_input(tools, entry, &call.call_id().clone(), arguments) {
        Ok(input) => {
            let mut pending = pending_call(entry, input, call, None);
            pending.0.questions = stopped.questions;
            CallOutcome::NeedsApproval(pending)
        }
        // Read once already, so read again; a reader that says otherwise
        // says why.
        Err(result) => CallOutcome::Done(result),
    }
}

/// Stages 6 and 7, started and finished in the run's memory where the
/// call belongs to a run.
/// (A plain function: the call's future holds `execute`'s as it is,
/// and a durable call's journaling boxed beside it.)
pub(crate) fn run_tool<'s, App: Send + Sync + 'static>(
    tools: &'s ToolTable<App>,
    entry: &'s Entry<App>,
    input: Input<'s>,
    call: &'s mut CallState<'_, App>,
    span: &'s tracing::Span,
) -> impl Future<Output = CallResult> + Send + 's {
    // An external tool whose input does not convert into the host's
    // proposal is refused, not handed over.
    if entry.def.resolve
        && let Some(refused) = unresolved(tools, entry, &input, call.call_id())
    {
        return futures_util::future::Either::Left(Box::pin(std::future::ready(refused)) as BoxFuture<'s, CallResult>);
    }
    // An external tool is handed to the host, with its input (recorded
    // first in a run's memory).
    if entry.def.external
        && let Some(remembered) = effects::memory_of(entry, call.info()).cloned()
    {
        let call_id = call.call_id().clone();
        let handed: BoxFuture<'s, CallResult> = Box::pin(async move { hand_journaled(tools, &remembered, entry, input, &call_id).await });
        return futures_util::future::Either::Left(handed);
    }
    if entry.def.external {
        let handed = CallResult::handed(entry.name.clone(), call.call_id().clone(), input.from.to_value());
        return futures_util::future::Either::Left(Box::pin(std::future::ready(handed)) as BoxFuture<'s, CallResult>);
    }
    if let Some(remembered) = effects::memory_of(entry, call.info()).cloned() {
        let journaled: BoxFuture<'s, CallResult> = Box::pin(async move { execute_journaled(tools, &remembered, entry, input, call, span).await });
        return futures_util::future::Either::Left(journaled);
    }
    futures_util::future::Either::<BoxFuture<'s, CallResult>, _>::Right(execute(tools, entry, input, call, span))
}

/// The refusal of an external tool's call whose input its `resolve` does
/// not convert (the model reads the conversion's error), or the generic
/// 500 where the conversion panicked; `None` for a call to hand over.
fn unresolved<App: Send + Sync + 'static>(tools: &ToolTable<App>, entry: &Entry<App>, input: &Input<'_>, call_id: &SmolStr) -> Option<CallResult> {
    match std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.resolve(input.value.as_ref()))) {
        Ok(Some(Ok(_))) | Ok(None) => None,
        Ok(Some(Err(reason))) => Some(denied(entry, call_id, Some(&reason))),
        Err(payload) => Some(internal(tools, entry.name.clone(), call_id, ErrorKind::Panic, panic_message(payload.as_ref()))),
    }
}

/// Records how the call ended on its span.
fn outcome<App>(span: &tracing::Span, outcome: CallOutcome<App>) -> CallOutcome<App> {
    let kind = match &outcome {
        CallOutcome::Done(result) => result.kind,
        CallOutcome::NeedsApproval(_) => ResultKind::PendingApproval,
    };
    record_outcome(span, kind);
    outcome
}

/// Stage 0: the tool called, if it is registered and offered (a
/// provider's built-in may be called by the provider's name for it).
fn offered_entry<'t, App: Send + Sync + 'static>(tools: &'t ToolTable<App>, name: &str, offered: Option<&[String]>) -> Option<&'t Entry<App>> {
    let entry = tools.entry(name)?;
    offered.is_none_or(|offered| offered.contains(&entry.def.name)).then_some(entry)
}

pub(crate) fn unknown<App: Send + Sync + 'static>(tools: &ToolTable<App>, name: &str, call_id: &SmolStr, offered: Option<&[String]>) -> CallResult {
    let names: Vec<&str> = match offered {
        Some(offered) => offered.iter().map(String::as_str).collect(),
        None => tools.names().collect(),
    };
    let error = lines::unknown_tool(name, &names);
    CallResult::failure(SmolStr::new(name), call_id.clone(), ResultKind::UnknownTool, &error)
}

/// Stages 1 to 3: the arguments become the tool's input, or the model
/// reads why not. A parameter type whose `Deserialize` panics gives the
/// generic 500 line, never an unwinding call.
#[allow(clippy::result_large_err)]
pub(crate) fn read_input<'a, App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    entry: &Entry<App>,
    call_id: &SmolStr,
    args: Arguments<'a>,
) -> Result<Input<'a>, CallResult> {
    let stages = || {
        let args = guard(tools, args)?;
        match parse(entry, args)? {
            Parsed::Input(input) => Ok(input),
            Parsed::Value(value) => validate(entry, value),
        }
    };
    match std::panic::catch_unwind(AssertUnwindSafe(stages)) {
        Ok(Ok(input)) => Ok(input),
        Ok(Err(error)) => Err(CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::InvalidArguments, &error)),
        Err(payload) => Err(internal(tools, entry.name.clone(), call_id, ErrorKind::Panic, panic_message(payload.as_ref()))),
    }
}

/// Stage 1: the guard. It never recurses, so it is safe on any input.
fn guard<'a, App: Send + Sync + 'static>(tools: &ToolTable<App>, args: Arguments<'a>) -> Result<Arguments<'a>, ToolError> {
    let limits = &tools.config.limits;
    let guarded = match &args {
        Arguments::Text(text) => guard::check_text(text, limits),
        Arguments::Value(value) => guard::check_value(value, limits),
    };
    match guarded {
        Ok(()) => Ok(args),
        Err(GuardError::TooLarge { bytes, max }) => Err(lines::too_large(bytes, max)),
        Err(GuardError::TooManyValues { max }) => Err(lines::too_many_values(max)),
        Err(GuardError::TooDeep { max }) => {
            // Dropping a value nested this deep would recurse as deep.
            if let Arguments::Value(value) = args {
                guard::dismantle(value);
            }
            Err(lines::too_deep(max))
        }
    }
}

/// Stage 2: parsing.
fn parse<'a, App>(entry: &Entry<App>, args: Arguments<'a>) -> Result<Parsed<'a>, ToolError> {
    let value = match args {
        Arguments::Value(value) => value,
        // Read exactly: the reader takes only text it reads as stage 3
        // would, and refuses the rest, which stage 3 words.
        Arguments::Text(text)
            if entry.text_exact
                && let Some(input) = entry.tool.parse_text(&text, &entry.properties) =>
        {
            return Ok(Parsed::Input(Input { value: input, from: ParsedFrom::Text(text) }));
        }
        Arguments::Text(text) if text.trim().is_empty() && !entry.has_parameters() => Value::Object(Map::new()),
        Arguments::Text(text) => serde_json::from_str(&text).map_err(|err| lines::not_json(&entry.def.name, &err))?,
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
    Ok(Parsed::Value(value))
}

/// Stage 4: the tool's rule, then the user's floor. A predicate that
/// panics or fails denies, and is reported. A predicate runs under the
/// registry's policy timeout and stops when the call is cancelled: then
/// there is no verdict, and the call ends as [`NoVerdict`] says.
///
/// A synchronous predicate may block its thread, so it is called on a
/// blocking thread (`spawn_blocking`) with the input, which comes back
/// with its verdict; one still running at the timeout or the
/// cancellation is left to finish there, and the input goes with it
/// (the call ends with no verdict, so nothing needs it).
pub(crate) async fn judge<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    entry: &Entry<App>,
    input: &mut Input<'_>,
    call: &mut CallState<'_, App>,
) -> Result<Verdict, NoVerdict> {
    let verdict = match entry.def.policy.static_verdict() {
        Some(verdict) => verdict,
        // Boxed: only predicates wait here, and their timer would make
        // every call's future larger.
        None => Box::pin(predicate(tools, entry, input, call.ctx())).await?,
    };
    Ok(verdict.with_floor(floor_applies(entry, call.info())))
}

async fn predicate<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    entry: &Entry<App>,
    input: &mut Input<'_>,
    ctx: &Ctx<App>,
) -> Result<Verdict, NoVerdict> {
    let timeout = tools.config.policy_timeout;
    let Some(timer) = runtime_timer(tokio::time::Instant::now() + timeout) else {
        report_no_runtime(tools, entry, &ctx.info().call_id);
        return Err(NoVerdict::NoRuntime);
    };
    // Making the call runs none of a `#[tool]`'s predicate yet.
    match std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.verdict(input.value.as_ref(), ctx))) {
        Err(payload) => return Ok(fail_closed(tools, entry, ctx, format!("panic: {}", panic_message(payload.as_ref())))),
        Ok(PolicyCall::Async(future)) => return within_limits(tools, entry, ctx, timer, AssertUnwindSafe(future).catch_unwind()).await,
        // Made again on the blocking thread, with the input moved there.
        Ok(PolicyCall::Blocking(_)) => {}
    }
    let value = std::mem::replace(&mut input.value, Box::new(()));
    let (tool, blocking_ctx) = (entry.tool.clone(), ctx.clone());
    let task = tokio::task::spawn_blocking(move || {
        let verdict = std::panic::catch_unwind(AssertUnwindSafe(|| match tool.verdict(value.as_ref(), &blocking_ctx) {
            PolicyCall::Blocking(judge) => judge(),
            PolicyCall::Async(_) => Err("the policy predicate was synchronous, then async".into()),
        }));
        (value, verdict)
    });
    let judged = async {
        match task.await {
            Ok((value, verdict)) => {
                input.value = value;
                verdict
            }
            Err(joined) => match joined.try_into_panic() {
                Ok(payload) => Err(payload),
                Err(joined) => Ok(Err(Box::new(joined) as BoxError)),
            },
        }
    };
    within_limits(tools, entry, ctx, timer, judged).await
}

/// A predicate's verdict, raced against the call's cancellation and the
/// policy timeout.
async fn within_limits<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    entry: &Entry<App>,
    ctx: &Ctx<App>,
    timer: tokio::time::Sleep,
    judged: impl Future<Output = Result<Result<Verdict, BoxError>, Box<dyn Any + Send>>>,
) -> Result<Verdict, NoVerdict> {
    let timeout = tools.config.policy_timeout;
    tokio::select! {
        biased;
        () = ctx.cancellation().cancelled() => Err(NoVerdict::Cancelled),
        judged = judged => Ok(match judged {
            Ok(Ok(verdict)) => verdict,
            Ok(Err(error)) => fail_closed(tools, entry, ctx, error.to_string()),
            Err(payload) => fail_closed(tools, entry, ctx, format!("panic: {}", panic_message(payload.as_ref()))),
        }),
        () = timer => {
            fail_closed(tools, entry, ctx, format!("the policy predicate gave no verdict within {timeout:?}"));
            Err(NoVerdict::TimedOut(timeout))
        }
    }
}

fn fail_closed<App: Send + Sync + 'static>(tools: &ToolTable<App>, entry: &Entry<App>, ctx: &Ctx<App>, error: String) -> Verdict {
    tools.report(ErrorReport::new(&entry.def.name, ctx.call_id(), ErrorKind::Policy, "POLICY_DENIED", error));
    Verdict::Deny { reason: None }
}

/// Whether the user's approval floor covers the tool (an anonymous
/// user has none).
fn floor_applies<App>(entry: &Entry<App>, call: &CallInfo) -> bool {
    call.user.as_ref().is_some_and(|user| user.floor.applies_to(&entry.def.name, entry.def.tags.iter().map(String::as_str), entry.def.origin))
}

/// The result of a call whose policy predicate gave no verdict.
pub(crate) fn no_verdict<App>(entry: &Entry<App>, call_id: &SmolStr, why: NoVerdict) -> CallResult {
    let (kind, error) = match why {
        NoVerdict::Cancelled => (ResultKind::Cancelled, lines::cancelled()),
        NoVerdict::TimedOut(timeout) => (ResultKind::Denied, lines::policy_timed_out(timeout)),
        NoVerdict::NoRuntime => (ResultKind::Internal, ToolError::internal()),
    };
    CallResult::failure(entry.name.clone(), call_id.clone(), kind, &error)
}

/// Stage 6: the tool runs. Its future is polled once in place: most
/// tools finish without waiting, and then need no task of their own
/// and no timer. A tool that waits gets them (`wait`);
/// its timeout counts from the end of that first poll. `span` is the
/// call's.
pub(crate) fn execute<'s, App: Send + Sync + 'static>(
    tools: &'s ToolTable<App>,
    entry: &'s Entry<App>,
    input: Input<'_>,
    call: &'s mut CallState<'_, App>,
    span: &'s tracing::Span,
) -> impl Future<Output = CallResult> + Send + 's {
    let started = if call.info().is_cancelled() {
        Err(None)
    } else {
        if !entry.def.interruptible {
            call.detach();
        }
        call.set_output_limit(output_limit(tools, entry));
        let Input { value, from } = input;
        if let Some(asking) = call.info().asking() {
            asking.begin();
        }
        let made = std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.call(value, call, &from))).map_err(Some);
        // Kept while the tool runs: should it stop at a question, the call
        // is read again from it (a move: a run's arguments are owned).
        if let Some(asking) = call.info().asking() {
            asking.keep_arguments(from.into_owned());
        }
        made
    };
    run_started(tools, entry, started, call, span)
}

/// The tool's output limit, in characters.
fn output_limit<App>(tools: &ToolTable<App>, entry: &Entry<App>) -> usize {
    entry.def.max_output_chars.unwrap_or(tools.config.default_max_output_chars)
}

/// Stage 6 once the tool's call was made: its future (`Ok`), or why not
/// (`Err`: the call was cancelled before, or making it panicked).
#[allow(clippy::manual_async_fn, reason = "an `async fn` would keep a second copy of its arguments in its future")]
fn run_started<'s, App: Send + Sync + 'static>(
    tools: &'s ToolTable<App>,
    entry: &'s Entry<App>,
    started: Result<CallFuture, Option<Box<dyn Any + Send>>>,
    call: &'s mut CallState<'_, App>,
    span: &'s tracing::Span,
) -> impl Future<Output = CallResult> + Send + 's {
    async move {
        let mut future = match started {
            Ok(future) => future,
            Err(None) => return CallResult::failure(entry.name.clone(), call.call_id().clone(), ResultKind::Cancelled, &lines::cancelled()),
            Err(Some(payload)) => {
                return internal(tools, entry.name.clone(), call.call_id(), ErrorKind::Panic, panic_message(payload.as_ref()));
            }
        };
        // Only a span records the duration of a tool that does not
        // wait: no clock read otherwise.
        let started = (!span.is_disabled()).then(Instant::now);
        if let Some(ended) = std::future::poll_fn(|cx| Poll::Ready(first_poll(&mut future, cx))).await {
            // Dropped before concluding: the tool's context goes with it.
            drop(future);
            return conclude(tools, entry, call, ended, started, Some(span));
        }
        if stopped_at_question(call.info()) {
            drop(future);
            return conclude(tools, entry, call, Ended::Asked, started, Some(span));
        }
        waited(tools, entry, future, call, started, span).await
    }
}

/// Stage 6 for a tool still waiting after its first poll (`started` is
/// when that poll began, if it was taken), then stage 7.
async fn waited<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    entry: &Entry<App>,
    future: CallFuture,
    call: &CallState<'_, App>,
    started: Option<Instant>,
    span: &tracing::Span,
) -> CallResult {
    let started = started.unwrap_or_else(Instant::now);
    match Box::pin(run_waiting(tools, entry, future, call.info(), started, span)).await {
        Ok(ended) => conclude(tools, entry, call, ended, Some(started), Some(span)),
        Err(result) => result,
    }
}

/// Stage 7: the result of an execution that ended. `started` is when
/// the tool was first polled, taken only where it is needed (the tool
/// waited, or the span records the duration).
#[inline]
fn conclude<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    entry: &Entry<App>,
    call: &CallState<'_, App>,
    ended: Ended,
    started: Option<Instant>,
    span: Option<&tracing::Span>,
) -> CallResult {
    let tool = entry.name.clone();
    let call_id = call.call_id();
    if call.info().is_cancelled() {
        return CallResult::failure(tool, call_id.clone(), ResultKind::Cancelled, &lines::cancelled());
    }
    if let Some(started) = started
        && let Some(span) = span
        && !span.is_disabled()
    {
        span.record("duration_ms", started.elapsed().as_millis() as u64);
    }
    concluded(tools, entry, call_id, ended)
}

/// Stage 7 proper: the result of an execution that ended, with its
/// output checked and rendered, or its failure worded (and reported).
#[inline]
pub(crate) fn concluded<App: Send + Sync + 'static>(tools: &ToolTable<App>, entry: &Entry<App>, call_id: &SmolStr, ended: Ended) -> CallResult {
    let tool = entry.name.clone();
    match ended {
        Ended::Returned(Ok(ToolOutput { mut output, ends_run })) => {
            if let Some(wrong) = wrong_output(entry, &mut output) {
                return internal(tools, tool, call_id, ErrorKind::Output, wrong);
            }
            let limit = output_limit(tools, entry);
            let (text, structured, truncated) = match output {
                Output::Text(text) => crate::output::render_text(text, limit),
                Output::Value(value) => crate::output::render_value(value, limit),
                Output::Blocks(blocks) => return blocks_result(tools, entry, call_id, blocks, ends_run),
            };
            CallResult::success(tool, call_id.clone(), text, structured, truncated, ends_run)
        }
        Ended::Returned(Err(Failure::Tool(error))) if let Some(wrong) = wrong_failure(entry, &error) => {
            internal(tools, tool, call_id, ErrorKind::Output, wrong)
        }
        Ended::Returned(Err(Failure::Tool(error))) => {
            tools.report(ErrorReport {
                message: error.message().map(str::to_owned),
                data: error.data().cloned(),
                ..ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::Tool, error.code(), error.model_line())
            });
            match entry.def.failure_mode {
                FailureMode::Return => CallResult::failure(tool, call_id.clone(), ResultKind::ToolError, &error),
                FailureMode::Error => CallResult::host_error(tool, call_id.clone(), &error),
            }
        }
        Ended::Returned(Err(Failure::Internal(error))) => internal(tools, tool, call_id, ErrorKind::Internal, describe(error.as_ref())),
        Ended::Panicked(payload) => internal(tools, tool, call_id, ErrorKind::Panic, panic_message(payload.as_ref())),
        Ended::Lost(error) => internal(tools, tool, call_id, ErrorKind::Internal, error),
        Ended::Asked => CallResult::failure(tool, call_id.clone(), ResultKind::PendingApproval, &lines::question_pending()),
    }
}

/// Stage 7 for a tool that returned content blocks: rendered within the
/// output limit and the content limits, or a tool error where they are
/// over a limit (reported).
fn blocks_result<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    entry: &Entry<App>,
    call_id: &SmolStr,
    blocks: Vec<crate::content::Block>,
    ends_run: bool,
) -> CallResult {
    match crate::content::render(blocks, output_limit(tools, entry), tools.config.content_limits) {
        Ok((blocks, text, truncated)) => {
            CallResult::success(entry.name.clone(), call_id.clone(), text, None, truncated, ends_run).with_content(blocks)
        }
        Err(error) => {
            let detail = format!("the tool's content blocks are over a size limit: {}", error.model_line());
            tools.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::Output, error.code(), detail));
            CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::ToolError, &error)
        }
    }
}

/// The generic 500 line for the model; `error` to the developer.
fn internal<App: Send + Sync + 'static>(tools: &ToolTable<App>, tool: SmolStr, call_id: &SmolStr, kind: ErrorKind, error: String) -> CallResult {
    let public = ToolError::internal();
    tools.report(ErrorReport::new(tool.as_str(), call_id.as_str(), kind, public.code(), error));
    CallResult::failure(tool, call_id.clone(), ResultKind::Internal, &public)
}

/// A call that must wait (a tool that waits, a policy predicate) was
/// polled outside a Tokio runtime with timers: the model reads the
/// generic 500, the developer what to do.
fn report_no_runtime<App: Send + Sync + 'static>(tools: &ToolTable<App>, entry: &Entry<App>, call_id: &SmolStr) {
    let needs = "a call that waits needs a Tokio runtime with timers enabled (its timeout and its task are \
                     Tokio's): await it inside #[tokio::main] or Runtime::block_on, on a runtime built with \
                     enable_time() or enable_all()";
    let code = crate::error::INTERNAL_ERROR_CODE;
    tools.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::Internal, code, needs));
}

/// Whether the call's tool parked a question: it is stopped there.
pub(crate) fn stopped_at_question(info: &CallInfo) -> bool {
    info.asking().is_some_and(crate::question::Asking::has_parked)
}

/// The first poll of a tool's future; `None` while it waits.
#[inline]
fn first_poll(future: &mut CallFuture, cx: &mut std::task::Context<'_>) -> Option<Ended> {
    match std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
        Ok(Poll::Ready(returned)) => Some(Ended::Returned(returned)),
        Ok(Poll::Pending) => None,
        Err(payload) => Some(Ended::Panicked(payload)),
    }
}

/// Stage 5: a call that needs approval, parked for the host.
pub(crate) fn pending_call<App>(entry: &Entry<App>, input: Input<'_>, call: CallState<'_, App>, rejection_text: Option<String>) -> PendingCall<App> {
    let ctx = call.into_ctx();
    PendingCall(Box::new(Pending {
        id: ctx.info().call_id.clone(),
        tool: entry.name.clone(),
        rejection_text,
        input: input.value,
        args: input.from.into_owned(),
        ctx,
        parked: tokio::time::Instant::now(),
        questions: Vec::new(),
    }))
}

pub(crate) fn denied<App>(entry: &Entry<App>, call_id: &SmolStr, reason: Option<&str>) -> CallResult {
    CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::Denied, &lines::denied(reason))
}

pub(crate) fn call_span(tool: &str, call_id: &str) -> tracing::Span {
    // Without any subscriber, a span would only feed `tracing`'s `log`
    // feature (which sqlx turns on), formatting a record at each poll of
    // every call: about 950 instructions a call, for logs nobody reads.
    if !tracing::dispatcher::has_been_set() {
        return tracing::Span::none();
    }
    tracing::info_span!(
        "tool_call",
        tool = %Escaped(&lines::shorten(tool, 64)),
        call_id = %Escaped(call_id),
        verdict = tracing::field::Empty,
        outcome = tracing::field::Empty,
        duration_ms = tracing::field::Empty,
    )
}

/// Records how the call ended on its span.
pub(crate) fn record_outcome(span: &tracing::Span, kind: ResultKind) {
    if !span.is_disabled() {
        span.record("outcome", kind.as_str());
    }
}

/// A Tokio timer until `deadline`, or `None` when this thread is in no
/// Tokio runtime, or in one without timers (where making one panics).
pub(crate) fn runtime_timer(deadline: tokio::time::Instant) -> Option<tokio::time::Sleep> {
    tokio::runtime::Handle::try_current().ok()?;
    std::panic::catch_unwind(|| tokio::time::sleep_until(deadline)).ok()
}

/// The raw arguments as a JSON value, once they passed stage 1's guard;
/// `None` when they do not, or are not JSON. For what reads arguments
/// outside a call (a `parallel_safe` predicate, an edited input journaled
/// before it is read).
pub(crate) fn guarded_value<'a, App>(tools: &ToolTable<App>, arguments: &'a Arguments<'_>) -> Option<std::borrow::Cow<'a, Value>> {
    let limits = &tools.config.limits;
    match arguments {
        Arguments::Value(value) if guard::check_value(value, limits).is_ok() => Some(std::borrow::Cow::Borrowed(value)),
        Arguments::Text(text) if guard::check_text(text, limits).is_ok() => serde_json::from_str(text).ok().map(std::borrow::Cow::Owned),
        _ => None,
    }
}

//! Stages 1 to 7 at once, for a call whose verdict does not depend on its
//! input: a tool whose policy is a plain `Allow`, with no approval floor
//! over it, nothing of its effect remembered, run by the registry (not
//! external) and interruptible, called with text its reader reads whole.
//! On the call's first poll its text is read straight into the tool's
//! input and the tool is run on it there, so the input is never boxed
//! between stage 3 and stage 6; stages 4 and 5 have nothing to do. A tool
//! that never waits runs in that poll with no future boxed; one that waits
//! goes on boxed, with its task and its timer. Any other call goes down
//! the stages one by one (`pipeline::process`), and so does text the
//! reader leaves to the value path, from the first poll: the same rules
//! word the same errors.

use std::borrow::Cow;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use super::{
    Ended, call_span, conclude, effects, first_poll, floor_applies, output_limit, ran, read_input, record_outcome, run_validated,
    stopped_at_question, waited,
};
use crate::call::{Arguments, CallOutcome};
use crate::context::{CallInfo, CallState};
use crate::policy::Verdict;
use crate::result::{CallResult, ResultKind, lines};
use crate::table::{Entry, ToolTable};
use crate::tool::{BoxFuture, CallFuture, ParsedFrom, TextCall};

/// The call's text, where the call is one for this path (see the module
/// docs); else its arguments, as given.
pub(super) fn text<'a, App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    entry: &Entry<App>,
    args: Arguments<'a>,
    info: &CallInfo,
    scoped: Option<&jsonschema::Validator>,
) -> Result<Cow<'a, str>, Arguments<'a>> {
    let def = &entry.def;
    let verdict_known = matches!(def.policy.static_verdict(), Some(Verdict::Allow)) && !floor_applies(entry, info);
    let runs_here = def.interruptible && !def.external && scoped.is_none() && effects::memory_of(entry, info).is_none();
    match args {
        Arguments::Text(text) if entry.text_exact && verdict_known && runs_here && crate::guard::check_text(&text, &tools.config.limits).is_ok() => {
            Ok(text)
        }
        args => Err(args),
    }
}

/// A call for this path, as a future of its own (not boxed): its first
/// poll reads the text and runs the tool (see the module docs). The
/// call's span is entered on each poll.
///
/// (Kept within 128 bytes, and so is the future of
/// [`Registry::invoke`](crate::Registry::invoke) around it: a larger one
/// is moved by a `memcpy` call, twice a call. So the span is boxed, and
/// made only where something may record it, and the call's state is made
/// from its information on the first poll.)
pub(crate) struct Running<'s, App> {
    tools: &'s ToolTable<App>,
    entry: &'s Entry<App>,
    app: &'s Arc<App>,
    span: Option<Box<tracing::Span>>,
    state: State<'s, App>,
}

enum State<'s, App> {
    /// Nothing polled the call yet.
    Unread { info: CallInfo, text: Cow<'s, str> },
    /// The tool waits, on its task.
    Waiting(BoxFuture<'s, CallOutcome<App>>),
    /// The reader left the text to the value path: the stages from 3 on.
    Stages(BoxFuture<'s, CallOutcome<App>>),
    /// The outcome was taken.
    Ended,
}

impl<'s, App: Send + Sync + 'static> Running<'s, App> {
    /// The call of `name` (as the model spelled it), not yet polled.
    #[inline]
    pub(super) fn new(tools: &'s ToolTable<App>, entry: &'s Entry<App>, app: &'s Arc<App>, name: &str, info: CallInfo, text: Cow<'s, str>) -> Self {
        let span = tracing::dispatcher::has_been_set().then(|| Box::new(call_span(name, &info.call_id)));
        Running { tools, entry, app, span, state: State::Unread { info, text } }
    }
}

impl<'s, App: Send + Sync + 'static> State<'s, App> {
    /// The first poll: the call's verdict recorded, its state made, the
    /// text read and the tool run on it (or nothing run, where the call
    /// was cancelled before it). The call's state is dropped here, unless
    /// the tool waits or the text goes down the stages: those take it.
    fn first(
        &mut self,
        tools: &'s ToolTable<App>,
        entry: &'s Entry<App>,
        app: &'s Arc<App>,
        span: Option<&tracing::Span>,
        cx: &mut Context<'_>,
    ) -> Poll<CallOutcome<App>> {
        if let Some(span) = span {
            let verdict = Verdict::Allow;
            span.record("verdict", verdict.as_str());
        }
        let State::Unread { info, text } = std::mem::replace(self, State::Ended) else { unreachable!("only a call nothing polled is polled first") };
        if info.is_cancelled() {
            let result = CallResult::failure(entry.name.clone(), info.call_id.clone(), ResultKind::Cancelled, &lines::cancelled());
            return Poll::Ready(CallOutcome::Done(result));
        }
        let mut call = CallState::new(app, info);
        call.set_output_limit(output_limit(tools, entry));
        // Only a span records the duration of a tool that does not
        // wait: no clock read otherwise.
        let started = span.is_some_and(|span| !span.is_disabled()).then(Instant::now);
        let from = ParsedFrom::Text(Cow::Borrowed(&*text));
        let made = std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.run_text(&text, &entry.properties, &mut call, &from)));
        let ended = match made {
            Ok(Some(TextCall::Returned(returned))) => Ended::Returned(returned),
            Ok(Some(TextCall::Made(mut future))) => match first_poll(&mut future, cx) {
                // Dropped before concluding: the tool's context goes with it.
                Some(ended) => ended,
                None if stopped_at_question(call.info()) => Ended::Asked,
                None => return self.wait(tools, entry, call, (future, text), started, span, cx),
            },
            Err(payload) => Ended::Panicked(payload),
            // Read nothing, made no call.
            Ok(None) => return self.stages(tools, entry, call, text, span, cx),
        };
        Poll::Ready(ended_with(tools, entry, call, ended, started, span, text))
    }

    /// A tool that waits after its first poll goes on boxed, with the
    /// call's state, its text, its task and its timer.
    #[allow(clippy::too_many_arguments, reason = "the call's parts, each borrowed apart from the others")]
    fn wait(
        &mut self,
        tools: &'s ToolTable<App>,
        entry: &'s Entry<App>,
        call: CallState<'s, App>,
        (future, text): (CallFuture, Cow<'s, str>),
        started: Option<Instant>,
        span: Option<&tracing::Span>,
        cx: &mut Context<'_>,
    ) -> Poll<CallOutcome<App>> {
        let span = span.cloned().unwrap_or_else(tracing::Span::none);
        let mut waiting: BoxFuture<'s, CallOutcome<App>> = Box::pin(async move {
            let result = waited(tools, entry, future, &call, started, &span).await;
            if result.kind == ResultKind::PendingApproval {
                keep_text(&call, text);
            }
            ran(tools, entry, call, result)
        });
        let polled = waiting.as_mut().poll(cx);
        *self = State::Waiting(waiting);
        polled
    }

    /// Text the reader left to the value path: read there, or the error
    /// worded there, and the stages from 4 on.
    fn stages(
        &mut self,
        tools: &'s ToolTable<App>,
        entry: &'s Entry<App>,
        call: CallState<'s, App>,
        text: Cow<'s, str>,
        span: Option<&tracing::Span>,
        cx: &mut Context<'_>,
    ) -> Poll<CallOutcome<App>> {
        let input = match read_input(tools, entry, call.call_id(), Arguments::Text(text)) {
            Ok(input) => input,
            Err(result) => return Poll::Ready(CallOutcome::Done(result)),
        };
        let mut stages: BoxFuture<'s, CallOutcome<App>> =
            Box::pin(run_validated(tools, entry, input, call, span.cloned().unwrap_or_else(tracing::Span::none)));
        let polled = stages.as_mut().poll(cx);
        *self = State::Stages(stages);
        polled
    }
}

/// The outcome of a call whose tool ran here: concluded, and for a tool
/// that stopped at a question, the call read again from its text.
fn ended_with<'s, App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    entry: &Entry<App>,
    call: CallState<'s, App>,
    ended: Ended,
    started: Option<Instant>,
    span: Option<&tracing::Span>,
    text: Cow<'s, str>,
) -> CallOutcome<App> {
    let result = conclude(tools, entry, &call, ended, started, span);
    if result.kind == ResultKind::PendingApproval {
        keep_text(&call, text);
    }
    ran(tools, entry, call, result)
}

/// Keeps the call's text in its asking state, for a tool that stopped at
/// a question: the call is read again from it.
fn keep_text<App>(call: &CallState<'_, App>, text: Cow<'_, str>) {
    if let Some(asking) = call.info().asking() {
        asking.keep_arguments(ParsedFrom::Text(Cow::Owned(text.into_owned())));
    }
}

impl<App: Send + Sync + 'static> Future for Running<'_, App> {
    type Output = CallOutcome<App>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<CallOutcome<App>> {
        let Running { tools, entry, app, span, state } = self.get_mut();
        let span = span.as_deref();
        let entered = span.map(tracing::Span::enter);
        let polled = match state {
            State::Unread { .. } => state.first(tools, entry, app, span, cx),
            State::Waiting(waiting) => waiting.as_mut().poll(cx),
            State::Stages(stages) => stages.as_mut().poll(cx),
            State::Ended => panic!("a call's future polled after it ended"),
        };
        let Poll::Ready(outcome) = polled else { return Poll::Pending };
        *state = State::Ended;
        drop(entered);
        if let Some(span) = span
            && let CallOutcome::Done(result) = &outcome
        {
            record_outcome(span, result.kind);
        }
        Poll::Ready(outcome)
    }
}

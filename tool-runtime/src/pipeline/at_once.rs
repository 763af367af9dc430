//! Stages 1 to 6 at once, for a call whose verdict does not depend on its
//! input: a tool whose policy is a plain `Allow`, with no approval floor
//! over it, nothing of its effect remembered, run by the registry (not
//! external) and interruptible, called with text its reader reads whole.
//! Its text is read straight into the tool's input and the tool's call is
//! made on it at once, so the input is never boxed between stage 3 and
//! stage 6; stages 4 and 5 have nothing to do. Any other call, and text
//! the reader leaves to the value path, goes down the stages one by one
//! (`pipeline::process`), where the same rules word the same errors.

use std::borrow::Cow;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use super::{conclude, effects, first_poll, floor_applies, internal, output_limit, record_outcome, waited};
use crate::call::{Arguments, CallOutcome};
use crate::context::CallState;
use crate::error_report::{ErrorKind, panic_message};
use crate::policy::Verdict;
use crate::result::{CallResult, ResultKind, lines};
use crate::table::{Entry, ToolTable};
use crate::tool::{BoxFuture, CallFuture, ParsedFrom};

/// What [`start`] made of a call.
pub(super) enum AtOnce<'a> {
    /// The tool's call, made on the call's state: its future.
    Started(CallFuture),
    /// Making the call panicked (a parameter's `Deserialize`, say).
    Ended(CallResult),
    /// Not a call for this path: its arguments, as given. No context was
    /// made from the call's state (at most its output limit was set, which
    /// stage 6 sets again).
    Stages(Arguments<'a>),
}

/// Reads the input and makes the call, where the call is one for this
/// path (see the module docs).
pub(super) fn start<'a, App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    entry: &Entry<App>,
    args: Arguments<'a>,
    call: &mut CallState<'_, App>,
    scoped: Option<&jsonschema::Validator>,
) -> AtOnce<'a> {
    let def = &entry.def;
    let verdict_known = matches!(def.policy.static_verdict(), Some(Verdict::Allow)) && !floor_applies(entry, call.info());
    let runs_here = def.interruptible && !def.external && scoped.is_none() && effects::memory_of(entry, call.info()).is_none();
    let text = match args {
        Arguments::Text(text) if entry.text_exact && verdict_known && runs_here && crate::guard::check_text(&text, &tools.config.limits).is_ok() => {
            text
        }
        args => return AtOnce::Stages(args),
    };
    call.set_output_limit(output_limit(tools, entry));
    let from = ParsedFrom::Text(Cow::Borrowed(&text));
    match std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.call_text(&text, &entry.properties, call, &from))) {
        Ok(Some(future)) => AtOnce::Started(future),
        // Read nothing, made no call: the state is as it was.
        Ok(None) => AtOnce::Stages(Arguments::Text(text)),
        Err(payload) => AtOnce::Ended(internal(tools, entry.name.clone(), call.call_id(), ErrorKind::Panic, panic_message(payload.as_ref()))),
    }
}

/// Stages 6 and 7 of a call [`start`] made, as a future of its own (not
/// boxed): its first poll polls the tool's; a tool that finishes there is
/// concluded in it, and one that waits goes on boxed, with its task and
/// its timer (`waited`). The call's span is entered on each poll.
pub(crate) struct Running<'s, App> {
    tools: &'s ToolTable<App>,
    entry: &'s Entry<App>,
    span: tracing::Span,
    state: State<'s, App>,
}

enum State<'s, App> {
    /// The tool's call is made; nothing polled it yet.
    Made { call: CallState<'s, App>, future: CallFuture },
    /// The tool waits, on its task.
    Waiting(BoxFuture<'s, CallResult>),
    /// The result was taken.
    Ended,
}

impl<'s, App: Send + Sync + 'static> Running<'s, App> {
    pub(super) fn new(tools: &'s ToolTable<App>, entry: &'s Entry<App>, call: CallState<'s, App>, future: CallFuture, span: tracing::Span) -> Self {
        Running { tools, entry, span, state: State::Made { call, future } }
    }
}

impl<'s, App: Send + Sync + 'static> State<'s, App> {
    /// The first poll: the call's verdict recorded, the tool's future
    /// polled once (or dropped unpolled, where the call was cancelled
    /// before it).
    fn first(&mut self, tools: &'s ToolTable<App>, entry: &'s Entry<App>, span: &tracing::Span, cx: &mut Context<'_>) -> Poll<CallResult> {
        let verdict = Verdict::Allow;
        span.record("verdict", verdict.as_str());
        let State::Made { call, mut future } = std::mem::replace(self, State::Ended) else {
            unreachable!("only a call that is made is polled first")
        };
        if call.info().is_cancelled() {
            return Poll::Ready(CallResult::failure(entry.name.clone(), call.call_id().clone(), ResultKind::Cancelled, &lines::cancelled()));
        }
        // Only a span records the duration of a tool that does not
        // wait: no clock read otherwise.
        let started = (!span.is_disabled()).then(Instant::now);
        match first_poll(&mut future, cx) {
            Some(ended) => {
                // Dropped before concluding: the tool's context goes with it.
                drop(future);
                Poll::Ready(conclude(tools, entry, &call, ended, started, span))
            }
            None => {
                let span = span.clone();
                *self = State::Waiting(Box::pin(async move { waited(tools, entry, future, &call, started, &span).await }));
                self.waiting(cx)
            }
        }
    }

    fn waiting(&mut self, cx: &mut Context<'_>) -> Poll<CallResult> {
        let State::Waiting(waiting) = self else { unreachable!("only a call that waits is polled on") };
        waiting.as_mut().poll(cx)
    }
}

impl<App: Send + Sync + 'static> Future for Running<'_, App> {
    type Output = CallOutcome<App>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<CallOutcome<App>> {
        let Running { tools, entry, span, state } = self.get_mut();
        let entered = span.enter();
        let polled = match state {
            State::Made { .. } => state.first(tools, entry, span, cx),
            State::Waiting(_) => state.waiting(cx),
            State::Ended => panic!("a call's future polled after it ended"),
        };
        let Poll::Ready(result) = polled else { return Poll::Pending };
        *state = State::Ended;
        drop(entered);
        record_outcome(span, result.kind);
        Poll::Ready(CallOutcome::Done(result))
    }
}

//! Stage 6 for a tool that waits: its own task, raced against the call's
//! cancellation and the tool's timeout, and its interim text. A tool that is
//! not interruptible has a token of its own here (`CallState::detach`),
//! which only the timeout cancels; dropped by its caller, its task runs on
//! to its end or its timeout.
//!
//! The interim text (`#[tool(interim = "...")]`) is one more branch of the
//! race that fires once, at its delay, and then never ends: the call keeps
//! waiting for the other branches. When any of them ends the call, the
//! branch is dropped with the race, so a call that returned, was cancelled
//! or timed out sends no interim text after it ended. A tool that finishes
//! on its first poll never gets here, and so never has a timer for it.

use std::convert::Infallible;
use std::future::Future;
use std::task::Poll;
use std::time::Instant;

use tracing::Instrument;

use super::{Ended, report_no_runtime};
use crate::context::CallInfo;
use crate::error::ToolError;
use crate::error_report::Escaped;
use crate::error_report::{ErrorKind, ErrorReport};
use crate::result::{CallResult, ResultKind, lines};
use crate::table::{Entry, ToolTable};
use crate::tool::{CallFuture, Failure, Interim, ToolOutput};

/// A tool that waits gets a task of its own: a panic stays in it, and a
/// tool that ignores its token is dropped at the timeout. The future
/// moves boxed, so it is not moved in memory after its first poll.
pub(super) async fn run_waiting<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    entry: &Entry<App>,
    future: CallFuture,
    call: &CallInfo,
    started: Instant,
    span: &tracing::Span,
) -> Result<Ended, CallResult> {
    let tool = || entry.name.clone();
    let timeout = entry.def.timeout.unwrap_or(tools.config.default_timeout);
    // The timers count on Tokio's clock, which a paused runtime (tests)
    // moves apart from the system's: `started` is carried over to it.
    let now = tokio::time::Instant::now();
    let started = now.checked_sub(started.elapsed()).unwrap_or(now);
    let Some(timer) = super::runtime_timer(started + timeout) else {
        report_no_runtime(tools, entry, &call.call_id);
        return Err(CallResult::failure(tool(), call.call_id.clone(), ResultKind::Internal, &ToolError::internal()));
    };
    let cancel = call.cancellation();
    // A caller that drops the call mid-way cancels it: the token fires
    // and the task is dropped, as at the timeout. One that is not
    // interruptible runs on to its end, or its timeout.
    let detached_until = (!entry.def.interruptible).then_some(started + timeout);
    // A typed call's output is kept from the task too.
    let future = crate::kept::in_scope(future);
    let mut task = Abandoned { task: tokio::spawn(future.instrument(span.clone())), cancel, detached_until };
    let task = &mut task.task;
    // Boxed, and made only for a tool with an interim text: the others
    // keep a null pointer in their call's future, and no timer.
    let mut interim = entry.def.interim.as_ref().map(|interim| Box::pin(send_interim(interim, call, started, span)));
    let interim = std::future::poll_fn(|cx| match &mut interim {
        Some(sending) => sending.as_mut().poll(cx),
        None => Poll::Pending,
    });
    tokio::select! {
        // Biased: a cancelled call reads as cancelled even when the
        // tool returned in reaction to its token in the same instant;
        // a call that ends in the instant of its interim delay sends
        // no interim text.
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
        // The tool parked a question: it is stopped there, and its task
        // ends here, so that nothing cancels the call's token, which the
        // call keeps while it waits and runs with again.
        () = parked(call) => {
            task.abort();
            let _ = (&mut *task).await;
            Ok(Ended::Asked)
        }
        () = timer => {
            cancel.cancel();
            task.abort();
            let error = lines::timed_out(timeout);
            let detail = format!("no result after {timeout:?}");
            tools.report(ErrorReport::new(&entry.def.name, call.call_id.as_str(), ErrorKind::Timeout, error.code(), detail));
            Err(CallResult::failure(tool(), call.call_id.clone(), ResultKind::TimedOut, &error))
        }
        never = interim => match never {},
    }
}

/// Once the call's tool parked a question; never for a call that cannot
/// ask.
async fn parked(call: &CallInfo) {
    match call.asking() {
        Some(asking) => asking.parked().await,
        None => std::future::pending().await,
    }
}

/// Sends the interim text once, at its delay from `started`, to the call's
/// progress sink and as an event on the call's span; then waits forever.
async fn send_interim(interim: &Interim, call: &CallInfo, started: tokio::time::Instant, span: &tracing::Span) -> Infallible {
    // `wait` made a timer already, so the runtime has timers.
    tokio::time::sleep_until(started + interim.after).await;
    tracing::info!(parent: span, interim = %Escaped(&interim.text), "the call is still running after {:?}", interim.after);
    call.interim(&interim.text);
    std::future::pending().await
}

/// The task of a tool that waits, with its token: dropped before the task
/// ends (the caller dropped the call), it cancels the token and the task.
struct Abandoned<'a> {
    task: tokio::task::JoinHandle<Result<ToolOutput, Failure>>,
    cancel: &'a tokio_util::sync::CancellationToken,
    /// For a tool that is not interruptible: its timeout, until which the
    /// task runs on.
    detached_until: Option<tokio::time::Instant>,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if self.task.is_finished() {
            return;
        }
        if let Some(deadline) = self.detached_until
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let (cancel, task) = (self.cancel.clone(), self.task.abort_handle());
            runtime.spawn(async move {
                tokio::time::sleep_until(deadline).await;
                cancel.cancel();
                task.abort();
            });
            return;
        }
        self.cancel.cancel();
        self.task.abort();
    }
}

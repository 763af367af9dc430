//! A call that a result hook sees (the tool's `on_result`, the registry's):
//! its processing timed, and its outcome reported when it ends
//! (`ToolTable::observe`). Only such a call takes the clocks, holds who
//! called, and copies its result for the report; any other goes through
//! `process` as it would with no hook anywhere.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::Processing;
use crate::call::CallOutcome;
use crate::call_report::Watch;
use crate::table::ToolTable;

/// A call's processing, with what its report needs besides its outcome.
pub(crate) struct Observed<'a, App> {
    tools: &'a ToolTable<App>,
    inner: Processing<'a, App>,
    /// Taken when the outcome is reported.
    watch: Option<Watch>,
}

impl<'a, App: Send + Sync + 'static> Observed<'a, App> {
    /// The processing `process` makes of a call a result hook sees,
    /// watched since `watch` began. Apart from `process` and never inlined
    /// in it, so that the processing of every other call is made where it
    /// always was.
    #[inline(never)]
    pub(super) fn wrap(tools: &'a ToolTable<App>, watch: Watch, process: impl FnOnce() -> Processing<'a, App>) -> Processing<'a, App> {
        Processing::Observed(Box::new(Observed { tools, inner: process(), watch: Some(watch) }))
    }
}

impl<App: Send + Sync + 'static> Future for Observed<'_, App> {
    type Output = CallOutcome<App>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<CallOutcome<App>> {
        let this = self.get_mut();
        let Poll::Ready(outcome) = Pin::new(&mut this.inner).poll(cx) else { return Poll::Pending };
        let result = match &outcome {
            CallOutcome::Done(result) => std::borrow::Cow::Borrowed(result),
            CallOutcome::NeedsApproval(pending) => std::borrow::Cow::Owned(pending.pending_result()),
        };
        this.tools.report_outcome(this.watch.take(), &result);
        Poll::Ready(outcome)
    }
}

//! A call that a result hook sees (the tool's `on_result`, the registry's):
//! its processing timed, and its outcome reported when it ends
//! (`ToolTable::observe`). Only such a call takes the clocks, holds who
//! called, and copies its result for the report; any other goes through
//! `process` as it would with no hook anywhere.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::{Processing, stages};
use crate::call::{Arguments, CallOutcome};
use crate::call_report::Watch;
use crate::context::CallInfo;
use crate::table::{Entry, ToolTable};

/// A call's processing, with what its report needs besides its outcome.
pub(crate) struct Observed<'a, App> {
    tools: &'a ToolTable<App>,
    inner: Processing<'a, App>,
    /// Taken when the outcome is reported.
    watch: Option<Watch>,
}

impl<'a, App: Send + Sync + 'static> Observed<'a, App> {
    /// `process` of a call a result hook sees, from stage 0's answer on.
    #[allow(clippy::too_many_arguments, reason = "the call's parts, as `process` takes them, and stage 0's answer")]
    pub(super) fn process(
        tools: &'a ToolTable<App>,
        app: &'a Arc<App>,
        name: &str,
        entry: Option<&'a Entry<App>>,
        args: Arguments<'a>,
        info: CallInfo,
        offered: Option<&[String]>,
        scoped: Option<&jsonschema::Validator>,
    ) -> Processing<'a, App> {
        let watch = Some(Watch::start(&info));
        let inner = stages(tools, app, name, entry, args, info, offered, scoped);
        Processing::Observed(Box::new(Observed { tools, inner, watch }))
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

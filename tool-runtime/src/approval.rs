//! Stage 5 of a call, the host's side: a parked [`PendingCall`] is run as
//! it is, run with an input a human edited (which goes through stages 1 to
//! 4 again), or rejected. The call's own side (parking it) is in
//! `pipeline`. [`Registry::approve`](crate::Registry::approve),
//! [`approve_with`](crate::Registry::approve_with) and
//! [`reject`](crate::Registry::reject) are these functions' public face; a
//! run's approvals and the MCP server call them too.

use smol_str::SmolStr;
use tracing::Instrument;

use crate::call::{Arguments, Pending, PendingCall};
use crate::context::{CallState, Ctx};
use crate::pipeline::{Input, call_span, denied, judge, no_verdict, read_input, record_outcome, run_tool, unknown};
use crate::policy::Verdict;
use crate::result::{CallResult, ResultKind, lines};
use crate::table::{Entry, ToolTable};

/// Runs a pending call as it is, since a human approved it; one that
/// waited longer than the approval TTL is not run, and reads
/// `APPROVAL_EXPIRED`.
pub(crate) async fn approve<App: Send + Sync + 'static>(tools: &ToolTable<App>, pending: PendingCall<App>) -> CallResult {
    approved(tools, pending, None, true).await
}

/// Runs a pending call with the input a human edited, which goes through
/// stages 1 to 4 again (a `Deny` refuses it; `NeedsApproval` runs it, since
/// a human approved exactly that input); after the approval TTL, as
/// [`approve`].
pub(crate) async fn approve_with<App: Send + Sync + 'static>(tools: &ToolTable<App>, pending: PendingCall<App>, edited: Arguments<'_>) -> CallResult {
    approved(tools, pending, Some(edited), true).await
}

/// Runs a pending call whose approval the journal accepted (as it is,
/// or with `edited` input): the journal's clock decided that it came
/// within the time to live, so this process's clock is not asked again.
pub(crate) async fn approve_decided<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    pending: PendingCall<App>,
    edited: Option<Arguments<'_>>,
) -> CallResult {
    approved(tools, pending, edited, false).await
}

/// Runs an approved call, with its edited input if any; `timed` checks
/// the approval TTL by this process's clock first.
async fn approved<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    pending: PendingCall<App>,
    edited: Option<Arguments<'_>>,
    timed: bool,
) -> CallResult {
    let Pending { id, tool, input, args, ctx, parked, .. } = *pending.0;
    let watch = tools.watch(&tool, ctx.info());
    let span = call_span(&tool, &id);
    let expired = if timed { expired(tools, &tool, &id, parked, &span) } else { None };
    let result = match (expired, tools.entry(&tool), edited) {
        (Some(expired), _, _) => expired,
        (None, None, _) => unknown(tools, &tool, &id, Some(&[][..])),
        (None, Some(entry), Some(edited)) => run_edited(tools, entry, &id, edited, ctx, &span).instrument(span.clone()).await,
        (None, Some(entry), None) => {
            span.record("verdict", "approved");
            let input = Input { value: input, from: args };
            run_tool(tools, entry, input, &mut CallState::shared(&ctx), &span).instrument(span.clone()).await
        }
    };
    record_outcome(&span, result.kind);
    tools.report_outcome(watch, &result);
    result
}

async fn run_edited<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    entry: &Entry<App>,
    id: &SmolStr,
    edited: Arguments<'_>,
    ctx: Ctx<App>,
    span: &tracing::Span,
) -> CallResult {
    let mut input = match read_input(tools, entry, id, edited) {
        Ok(input) => input,
        Err(result) => return result,
    };
    let mut call = CallState::shared(&ctx);
    match judge(tools, entry, &mut input, &mut call).await {
        Err(why) => no_verdict(entry, id, why),
        Ok(Verdict::Deny { reason }) => {
            span.record("verdict", "deny");
            denied(entry, id, reason.as_deref())
        }
        Ok(_) => {
            span.record("verdict", "approved");
            run_tool(tools, entry, input, &mut call, span).await
        }
    }
}

/// The result of a pending call whose approval came after the TTL.
fn expired<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    tool: &SmolStr,
    id: &SmolStr,
    parked: tokio::time::Instant,
    span: &tracing::Span,
) -> Option<CallResult> {
    let ttl = tools.approval_ttl();
    if parked.elapsed() < ttl {
        return None;
    }
    span.record("verdict", "expired");
    Some(CallResult::failure(tool.clone(), id.clone(), ResultKind::Rejected, &lines::approval_expired(ttl)))
}

/// Whether `pending` waited longer than the approval TTL, by Tokio's
/// clock (a durable run's journal decides by its own).
pub(crate) fn has_expired<App: Send + Sync + 'static>(tools: &ToolTable<App>, pending: &PendingCall<App>) -> bool {
    pending.0.parked.elapsed() >= tools.approval_ttl()
}

/// Ends a pending call whose approval expired, without running it: the
/// model reads `APPROVAL_EXPIRED`, as for an approval after the TTL.
pub(crate) fn expire<App: Send + Sync + 'static>(tools: &ToolTable<App>, pending: PendingCall<App>) -> CallResult {
    let Pending { id, tool, ctx, .. } = *pending.0;
    let watch = tools.watch(&tool, ctx.info());
    let span = call_span(&tool, &id);
    span.record("verdict", "expired");
    record_outcome(&span, ResultKind::Rejected);
    let result = CallResult::failure(tool, id, ResultKind::Rejected, &lines::approval_expired(tools.approval_ttl()));
    tools.report_outcome(watch, &result);
    result
}

/// Ends a pending call without running it; the model reads `text`, or
/// the tool's rejection text, or a generic rejection.
pub(crate) fn reject<App: Send + Sync + 'static>(tools: &ToolTable<App>, pending: PendingCall<App>, text: Option<&str>) -> CallResult {
    let Pending { id, tool, rejection_text, ctx, .. } = *pending.0;
    let watch = tools.watch(&tool, ctx.info());
    let span = call_span(&tool, &id);
    span.record("verdict", "rejected");
    record_outcome(&span, ResultKind::Rejected);
    let result = CallResult::failure(tool, id, ResultKind::Rejected, &lines::rejected(text.or(rejection_text.as_deref())));
    tools.report_outcome(watch, &result);
    result
}

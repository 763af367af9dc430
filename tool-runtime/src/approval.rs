//! Stage 5 of a call, the host's side: a parked [`PendingCall`] is carried
//! out as decided. The call's own side (parking it) is in `pipeline`.
//!
//! [`carry_out`] is the one place a decision the run's memory holds is
//! carried out, whatever door decided it (a run's host, the inbox, an MCP
//! client): an approval runs its call (as it is, or with the input a human
//! edited, which goes through stages 1 to 4 again) once its permit is
//! checked against the call (`question::check_permit`); a rejection, a
//! cancel or an expiry ends the call without running it; a call that
//! waited for the answers to its tool's questions runs again from the top
//! ([`rerun`]). [`Registry::approve`](crate::Registry::approve),
//! [`approve_with`](crate::Registry::approve_with) and
//! [`reject`](crate::Registry::reject) decide a pending call held by the
//! host itself, outside any memory.

use smol_str::SmolStr;
use tracing::Instrument;

use crate::call::{Arguments, CallOutcome, Pending, PendingCall};
use crate::context::{CallState, Ctx};
use crate::error_report::{ErrorKind, ErrorReport};
use crate::memory::{Approval, Decision, EXPIRED_BY, Question};
use crate::pipeline::{Input, call_span, denied, judge, no_verdict, ran, read_input, record_outcome, run_tool, unknown};
use crate::policy::Verdict;
use crate::result::{CallResult, ResultKind, lines};
use crate::table::{Entry, ToolTable};

/// Who carries a decision out: the principal the call runs for now, and
/// whether this process's clock checks the approval's time to live (a
/// memory of this process only, whose parked calls carry no expiry the
/// memory decides by).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Carrier<'a> {
    pub(crate) principal: Option<&'a str>,
    pub(crate) timed: bool,
}

/// Carries out the decision `approval` holds on `pending` (see the module
/// docs). A call still undecided stays pending.
pub(crate) async fn carry_out<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    pending: PendingCall<App>,
    approval: &Approval,
    carrier: Carrier<'_>,
) -> CallOutcome<App> {
    let Some(decided) = &approval.decided else { return CallOutcome::NeedsApproval(pending) };
    if pending.asks() {
        // No one answered in time: the call stops where it asked.
        if decided.by == EXPIRED_BY {
            return CallOutcome::Done(ended(tools, pending, &lines::question_expired(tools.approval_ttl()), "expired"));
        }
        return rerun(tools, pending).await;
    }
    // The memory's own expiry: its line, not a rejection quoting it.
    if decided.by == EXPIRED_BY {
        return CallOutcome::Done(expire(tools, pending));
    }
    let edited = match &decided.decision {
        Decision::Reject(text) => return CallOutcome::Done(reject(tools, pending, Some(text.as_str()).filter(|text| !text.is_empty()))),
        Decision::Cancel | Decision::Answer(_) => return CallOutcome::Done(reject(tools, pending, None)),
        Decision::Approve => None,
        Decision::ApproveEdited(input) => Some(input),
    };
    let pending = match permitted(tools, pending, approval, edited.is_some(), carrier.principal) {
        Ok(pending) => pending,
        Err(refused) => return CallOutcome::Done(refused),
    };
    approved(tools, pending, edited.map(|input| Arguments::Value(input.clone())), carrier.timed).await
}

/// `pending`, when its permit still matches it (or it was parked with no
/// binding); else its refusal: the model reads why (`PERMIT_MISMATCH`),
/// and so does the error report.
fn permitted<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    pending: PendingCall<App>,
    approval: &Approval,
    edited: bool,
    principal: Option<&str>,
) -> Result<PendingCall<App>, CallResult> {
    let (Question::Approval(binding), Some(definition)) = (&approval.call.question, tools.definition(pending.tool())) else { return Ok(pending) };
    let arguments = (!edited).then(|| pending.arguments());
    let Err(mismatch) = crate::question::check_permit(binding, approval.call.user_id.as_deref(), definition, arguments.as_ref(), principal) else {
        return Ok(pending);
    };
    let why = mismatch.to_string();
    let error = lines::permit_mismatch(&why);
    let detail = format!("the approval of call {} of run {} was not carried out: {why}", approval.call.call_id, approval.call.run_id);
    tools.report(ErrorReport::new(pending.tool().as_str(), pending.id().as_str(), ErrorKind::PermitMismatch, error.code(), detail));
    Err(ended(tools, pending, &error, "permit_mismatch"))
}

/// Runs a pending call as it is, since a human approved it; one that
/// waited longer than the approval TTL is not run, and reads
/// `APPROVAL_EXPIRED`.
pub(crate) async fn approve<App: Send + Sync + 'static>(tools: &ToolTable<App>, pending: PendingCall<App>) -> CallOutcome<App> {
    approved(tools, pending, None, true).await
}

/// Runs a pending call with the input a human edited, which goes through
/// stages 1 to 4 again (a `Deny` refuses it; `NeedsApproval` runs it, since
/// a human approved exactly that input); after the approval TTL, as
/// [`approve`].
pub(crate) async fn approve_with<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    pending: PendingCall<App>,
    edited: Arguments<'_>,
) -> CallOutcome<App> {
    approved(tools, pending, Some(edited), true).await
}

/// Runs an approved call, with its edited input if any; `timed` checks
/// the approval TTL by this process's clock first.
async fn approved<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    pending: PendingCall<App>,
    edited: Option<Arguments<'_>>,
    timed: bool,
) -> CallOutcome<App> {
    let Pending { id, tool, input, args, ctx, parked, .. } = *pending.0;
    let watch = tools.watch(&tool, ctx.info());
    let span = call_span(&tool, &id);
    let expired = if timed { expired(tools, &tool, &id, parked, &span) } else { None };
    let outcome = match (expired, tools.entry(&tool), edited) {
        (Some(expired), _, _) => CallOutcome::Done(expired),
        (None, None, _) => CallOutcome::Done(unknown(tools, &tool, &id, Some(&[][..]))),
        (None, Some(entry), Some(edited)) => run_edited(tools, entry, &id, edited, ctx, &span).instrument(span.clone()).await,
        (None, Some(entry), None) => {
            span.record("verdict", "approved");
            let input = Input { value: input, from: args };
            run(tools, entry, input, &ctx, &span).instrument(span.clone()).await
        }
    };
    if let CallOutcome::Done(result) = &outcome {
        record_outcome(&span, result.kind);
        tools.report_outcome(watch, result);
    }
    outcome
}

/// Runs a call that waited for the answers to its tool's questions again,
/// from the top (stages 6 and 7, as it was judged): each question it asks
/// again is answered from its run's memory, and one not answered yet parks
/// it again.
pub(crate) async fn rerun<App: Send + Sync + 'static>(tools: &ToolTable<App>, pending: PendingCall<App>) -> CallOutcome<App> {
    let Pending { id, tool, input, args, ctx, .. } = *pending.0;
    let Some(entry) = tools.entry(&tool) else { return CallOutcome::Done(unknown(tools, &tool, &id, Some(&[][..]))) };
    let watch = tools.watch(&tool, ctx.info());
    let span = call_span(&tool, &id);
    span.record("verdict", "answered");
    let outcome = run(tools, entry, Input { value: input, from: args }, &ctx, &span).instrument(span.clone()).await;
    if let CallOutcome::Done(result) = &outcome {
        record_outcome(&span, result.kind);
        tools.report_outcome(watch, result);
    }
    outcome
}

/// Stages 6 and 7 of a call with this context.
async fn run<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    entry: &Entry<App>,
    input: Input<'_>,
    ctx: &Ctx<App>,
    span: &tracing::Span,
) -> CallOutcome<App> {
    let mut call = CallState::shared(ctx);
    let result = run_tool(tools, entry, input, &mut call, span).await;
    ran(tools, entry, call, result)
}

async fn run_edited<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    entry: &Entry<App>,
    id: &SmolStr,
    edited: Arguments<'_>,
    ctx: Ctx<App>,
    span: &tracing::Span,
) -> CallOutcome<App> {
    let mut input = match read_input(tools, entry, id, edited) {
        Ok(input) => input,
        Err(result) => return CallOutcome::Done(result),
    };
    let mut call = CallState::shared(&ctx);
    match judge(tools, entry, &mut input, &mut call).await {
        Err(why) => CallOutcome::Done(no_verdict(entry, id, why)),
        Ok(Verdict::Deny { reason }) => {
            span.record("verdict", "deny");
            CallOutcome::Done(denied(entry, id, reason.as_deref()))
        }
        Ok(_) => {
            span.record("verdict", "approved");
            let result = run_tool(tools, entry, input, &mut call, span).await;
            ran(tools, entry, call, result)
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

/// Ends a pending call whose approval (or question) expired, without
/// running it: the model reads `APPROVAL_EXPIRED` (`QUESTION_EXPIRED`).
pub(crate) fn expire<App: Send + Sync + 'static>(tools: &ToolTable<App>, pending: PendingCall<App>) -> CallResult {
    let error = match pending.asks() {
        true => lines::question_expired(tools.approval_ttl()),
        false => lines::approval_expired(tools.approval_ttl()),
    };
    ended(tools, pending, &error, "expired")
}

/// Ends a pending call without running it; the model reads `text`, or
/// the tool's rejection text, or a generic rejection.
pub(crate) fn reject<App: Send + Sync + 'static>(tools: &ToolTable<App>, pending: PendingCall<App>, text: Option<&str>) -> CallResult {
    let error = lines::rejected(text.or(pending.rejection_text()));
    ended(tools, pending, &error, "rejected")
}

/// Ends a pending call without running it, as `verdict`: the model reads
/// `error`.
fn ended<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    pending: PendingCall<App>,
    error: &crate::error::ToolError,
    verdict: &'static str,
) -> CallResult {
    let Pending { id, tool, ctx, .. } = *pending.0;
    let watch = tools.watch(&tool, ctx.info());
    let span = call_span(&tool, &id);
    span.record("verdict", verdict);
    record_outcome(&span, ResultKind::Rejected);
    let result = CallResult::failure(tool, id, ResultKind::Rejected, error);
    tools.report_outcome(watch, &result);
    result
}

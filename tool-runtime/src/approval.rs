//! Stage 5 of a call, the host's side: a parked [`PendingCall`] is run as
//! it is, run with an input a human edited (which goes through stages 1 to
//! 4 again), or rejected. The call's own side (parking it) is in
//! `pipeline`.

use smol_str::SmolStr;
use tracing::Instrument;

use crate::call::{Arguments, Pending, PendingCall};
use crate::context::{CallState, Ctx};
use crate::pipeline::{Input, call_span, denied, record_outcome};
use crate::policy::Verdict;
use crate::registry::{Entry, Registry};
use crate::result::{CallResult, ResultKind, lines};

impl<App: Send + Sync + 'static> Registry<App> {
    /// Runs a pending call as it is, since a human approved it.
    ///
    /// A call that waited longer than [`approval_ttl`](Self::approval_ttl)
    /// is not run: the result is [`Rejected`](ResultKind::Rejected) with
    /// the code `APPROVAL_EXPIRED`.
    pub async fn approve(&self, pending: PendingCall<App>) -> CallResult {
        self.approved(pending, None, true).await
    }

    /// Runs a pending call with the input a human edited. The edited input
    /// goes through stages 1 to 4 again: a `Deny` refuses it;
    /// `NeedsApproval` runs it, since a human approved exactly that input.
    ///
    /// A call that waited longer than [`approval_ttl`](Self::approval_ttl)
    /// is not run, as by [`approve`](Self::approve).
    pub async fn approve_with(&self, pending: PendingCall<App>, edited: impl Into<Arguments<'_>>) -> CallResult {
        self.approved(pending, Some(edited.into()), true).await
    }

    /// Runs a pending call whose approval the journal accepted (as it is,
    /// or with `edited` input): the journal's clock decided that it came
    /// within the time to live, so this process's clock is not asked again.
    pub(crate) async fn approve_decided(&self, pending: PendingCall<App>, edited: Option<Arguments<'_>>) -> CallResult {
        self.approved(pending, edited, false).await
    }

    /// Runs an approved call, with its edited input if any; `timed` checks
    /// the approval TTL by this process's clock first.
    async fn approved(&self, pending: PendingCall<App>, edited: Option<Arguments<'_>>, timed: bool) -> CallResult {
        let Pending { id, tool, input, args, ctx, parked, .. } = *pending.0;
        let span = call_span(&tool, &id);
        let expired = if timed { self.expired(&tool, &id, parked, &span) } else { None };
        let result = match (expired, self.entry(&tool), edited) {
            (Some(expired), _, _) => expired,
            (None, None, _) => self.unknown(&tool, &id, Some(&[][..])),
            (None, Some(entry), Some(edited)) => self.run_edited(entry, &id, edited, ctx, &span).instrument(span.clone()).await,
            (None, Some(entry), None) => {
                span.record("verdict", "approved");
                let input = Input { value: input, from: args };
                self.run_tool(entry, input, &mut CallState::shared(&ctx), &span).instrument(span.clone()).await
            }
        };
        record_outcome(&span, result.kind);
        result
    }

    async fn run_edited(&self, entry: &Entry<App>, id: &SmolStr, edited: Arguments<'_>, ctx: Ctx<App>, span: &tracing::Span) -> CallResult {
        let mut input = match self.read_input(entry, id, edited) {
            Ok(input) => input,
            Err(result) => return result,
        };
        let mut call = CallState::shared(&ctx);
        match self.decide(entry, &mut input, &mut call).await {
            Err(why) => self.undecided(entry, id, why),
            Ok(Verdict::Deny { reason }) => {
                span.record("verdict", "deny");
                denied(entry, id, reason.as_deref())
            }
            Ok(_) => {
                span.record("verdict", "approved");
                self.run_tool(entry, input, &mut call, span).await
            }
        }
    }

    /// The result of a pending call whose approval came after the TTL.
    fn expired(&self, tool: &SmolStr, id: &SmolStr, parked: tokio::time::Instant, span: &tracing::Span) -> Option<CallResult> {
        let ttl = self.approval_ttl();
        if parked.elapsed() < ttl {
            return None;
        }
        span.record("verdict", "expired");
        Some(CallResult::failure(tool.clone(), id.clone(), ResultKind::Rejected, &lines::approval_expired(ttl)))
    }

    /// Whether `pending` waited longer than the approval TTL, by Tokio's
    /// clock (a durable run's journal decides by its own).
    pub(crate) fn has_expired(&self, pending: &PendingCall<App>) -> bool {
        pending.0.parked.elapsed() >= self.approval_ttl()
    }

    /// Ends a pending call whose approval expired, without running it: the
    /// model reads `APPROVAL_EXPIRED`, as for an approval after the TTL.
    pub(crate) fn expire(&self, pending: PendingCall<App>) -> CallResult {
        let Pending { id, tool, .. } = *pending.0;
        let span = call_span(&tool, &id);
        span.record("verdict", "expired");
        record_outcome(&span, ResultKind::Rejected);
        CallResult::failure(tool, id, ResultKind::Rejected, &lines::approval_expired(self.approval_ttl()))
    }

    /// Ends a pending call without running it; the model reads `text`, or
    /// the tool's rejection text, or a generic rejection.
    pub fn reject(&self, pending: PendingCall<App>, text: Option<&str>) -> CallResult {
        let Pending { id, tool, rejection_text, .. } = *pending.0;
        let span = call_span(&tool, &id);
        span.record("verdict", "rejected");
        record_outcome(&span, ResultKind::Rejected);
        CallResult::failure(tool, id, ResultKind::Rejected, &lines::rejected(text.or(rejection_text.as_deref())))
    }
}

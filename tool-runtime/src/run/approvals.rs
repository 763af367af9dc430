//! The host's decisions on a run's pending calls: approve, approve with an
//! edited input, reject. In a durable run each decision is journaled first,
//! so that of two processes deciding one call, one wins.
//!
//! An approval runs a call only while the run may still run it: not past
//! the run's deadline, and not once its tool failed `max_retries` times
//! since the call was parked (checked at approval, as an edited input's
//! policy is). And a call waits only within the approval TTL: expired ones
//! are swept when they would keep a newer call from waiting.

use crate::call::{Arguments, PendingCall};
use crate::result::{CallResult, Deadline, ResultKind, lines};

use super::{Run, RunError};

impl<App: Send + Sync + 'static> Run<App> {
    /// Runs a pending call as the model sent it: a human approved it. In a
    /// durable run the decision is journaled first (who: the run's user).
    ///
    /// Past the run's deadline ([`with_deadline`](Self::with_deadline)) the
    /// call is not run and reads `RUN_DEADLINE`; once its tool failed
    /// `max_retries` times in this run, it reads `TOOL_EXHAUSTED`; after the
    /// approval TTL, `APPROVAL_EXPIRED`. Either way the call is settled.
    ///
    /// # Errors
    ///
    /// [`RunError::UnknownApproval`] when no call with this id waits; in a
    /// durable run, [`RunError::AlreadyDecided`] when another process
    /// decided it first, [`RunError::Journal`] when the journal failed.
    pub async fn approve(&mut self, id: &str) -> Result<CallResult, RunError> {
        let pending = self.take_decided(id, || HostDecision::Approve).await?;
        let result = match self.refused_at_approval(&pending) {
            Some(refused) => refused,
            None => self.run_approved(pending, None).await,
        };
        self.settled(&result).await;
        Ok(result)
    }

    /// Runs a pending call with the input a human edited; the edited input
    /// is validated and decided again (a `Deny` refuses it). In a turn
    /// that scoped the tool ([`select`](Self::select)), it must fit the
    /// turn's schema too.
    ///
    /// # Errors
    ///
    /// As [`approve`](Self::approve).
    pub async fn approve_with(&mut self, id: &str, edited: impl Into<Arguments<'_>>) -> Result<CallResult, RunError> {
        let edited = edited.into();
        let pending = self.take_decided(id, || HostDecision::Edited(&edited)).await?;
        let result = match self.refused_at_approval(&pending).or_else(|| self.outside_the_turns_scope(&pending, &edited)) {
            Some(refused) => refused,
            None => self.run_approved(pending, Some(edited)).await,
        };
        self.settled(&result).await;
        Ok(result)
    }

    /// Rejects a pending call; the model reads `text` (or the tool's
    /// rejection text, or a generic one).
    ///
    /// # Errors
    ///
    /// As [`approve`](Self::approve).
    pub async fn reject(&mut self, id: &str, text: Option<&str>) -> Result<CallResult, RunError> {
        let pending = self.take_decided(id, || HostDecision::Rejected(text)).await?;
        let result = self.registry.reject(pending, text);
        self.settled(&result).await;
        Ok(result)
    }

    /// Runs a call the host approved: in a durable run the journal accepted
    /// the decision, and its clock, not this process's, decided that it
    /// came within the approval TTL.
    async fn run_approved(&self, pending: PendingCall<App>, edited: Option<Arguments<'_>>) -> CallResult {
        if self.memory.durable {
            return self.registry.approve_decided(pending, edited).await;
        }
        match edited {
            Some(edited) => self.registry.approve_with(pending, edited).await,
            None => self.registry.approve(pending).await,
        }
    }

    /// What a pending call reads instead of running when this run may no
    /// longer run it, whatever a human decided: the run's deadline passed
    /// (`RUN_DEADLINE`), or its tool failed `max_retries` times since the
    /// call was parked (`TOOL_EXHAUSTED`).
    pub(crate) fn refused_at_approval(&self, pending: &PendingCall<App>) -> Option<CallResult> {
        let (tool, id) = (pending.tool().clone(), pending.id().clone());
        if self.deadline.is_some_and(|deadline| tokio::time::Instant::now() >= deadline) {
            return Some(CallResult::failure(tool, id, ResultKind::TimedOut, &lines::deadline(Deadline::Run)));
        }
        let error = self.steps.exhausted(self.registry.definition(&tool)?)?;
        Some(CallResult::failure(tool, id, ResultKind::Denied, &error))
    }

    /// Settles the pending calls whose approval expired, as expired: they
    /// are not run, give up their places under
    /// [`max_pending_approvals`](crate::RegistryBuilder::max_pending_approvals),
    /// and read `APPROVAL_EXPIRED`. In a durable run the journal's clock
    /// decides, and a call another process decided meanwhile stays pending
    /// for [`settle_decided`](Self::settle_decided).
    pub(crate) async fn sweep_expired(&mut self) -> Vec<CallResult> {
        if self.memory.durable {
            return self.sweep_journaled().await;
        }
        let (expired, waiting): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.pending).into_iter().partition(|pending| self.registry.has_expired(pending));
        self.pending = waiting;
        let mut results = Vec::with_capacity(expired.len());
        for pending in expired {
            self.settle_or_report(pending.id()).await;
            results.push(self.registry.expire(pending));
        }
        results
    }

    /// What an edited input reads when it fits the tool but not the scope
    /// the current turn gave it; `None` when it fits, or the tool is not
    /// scoped (what does not fit the tool is worded by `approve_with`).
    fn outside_the_turns_scope(&self, pending: &PendingCall<App>, edited: &Arguments<'_>) -> Option<CallResult> {
        let validator = &self.turn.as_ref()?.scoped(pending.tool())?.validator;
        let entry = self.registry.entry(pending.tool())?;
        let input = self.registry.read_input(entry, pending.id(), edited.clone()).ok()?;
        crate::pipeline::out_of_scope(entry, pending.id(), validator, &input)
    }

    /// Takes the pending call `id` that the host decided; in a durable run
    /// the decision is journaled first, and the call stays pending when
    /// that fails.
    async fn take_decided<'d>(&mut self, id: &str, decision: impl FnOnce() -> HostDecision<'d>) -> Result<PendingCall<App>, RunError> {
        let Some(index) = self.pending.iter().position(|pending| pending.id() == id) else {
            return Err(RunError::UnknownApproval(id.to_owned()));
        };
        let decision = decision().into_journal(self);
        self.record_decision(id, decision).await?;
        Ok(self.pending.remove(index))
    }

    /// Records the result of a decided call in the run's bookkeeping (and
    /// journal).
    async fn settled(&mut self, result: &CallResult) {
        self.steps.record(result, self.ends_turn(result));
        self.track_external(result);
        self.settle_or_report(&result.call_id).await;
        self.save_or_report().await;
    }
}

/// A host's decision on a pending call, as [`Run::take_decided`] records it.
enum HostDecision<'a> {
    Approve,
    Edited(&'a Arguments<'a>),
    Rejected(Option<&'a str>),
}

impl HostDecision<'_> {
    /// The decision as the journal keeps it. An edited input goes through
    /// the guard before it is read, as every input does: one the guard
    /// refuses (or that is not JSON) is journaled as a rejection, and the
    /// call, which cannot run with it, reads why.
    fn into_journal<App: Send + Sync + 'static>(self, run: &Run<App>) -> crate::memory::Decision {
        use crate::memory::Decision;
        match self {
            HostDecision::Approve => Decision::Approve,
            HostDecision::Edited(edited) => match run.guarded_value(edited) {
                Some(value) => Decision::ApproveEdited(value.into_owned()),
                None => Decision::Reject("The edited input was refused before it was read.".to_owned()),
            },
            HostDecision::Rejected(text) => Decision::Reject(text.unwrap_or_default().to_owned()),
        }
    }
}

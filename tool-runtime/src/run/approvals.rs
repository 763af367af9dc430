//! A run's approvals: the calls of its steps that wait for a human, parked
//! (in the run's memory first), decided by the host (approve, approve with
//! an edited input, reject), decided out of band and settled, expired, or
//! dropped when the run finishes. [`Approvals`] is the host's handle on
//! them ([`Run::approvals`]). In a durable run each decision is journaled
//! first, so that of two processes deciding one call, one wins.
//!
//! An approval runs a call only while the run may still run it: not past
//! the run's deadline, and not once its tool failed `max_retries` times
//! since the call was parked (checked at approval, as an edited input's
//! policy is). And a call waits only within the approval TTL: expired ones
//! are swept when they would keep a newer call from waiting.

use std::time::{Duration, SystemTime};

use super::remembered::check_fits;
use super::{DurableError, Run, RunError};
use crate::approval;
use crate::call::{Arguments, PendingCall};
use crate::context::CallState;
use crate::error_report::{ErrorKind, ErrorReport, Escaped};
use crate::memory::{Approval, Decided, Decision, EXPIRED_BY, GONE_BY, JournalError, ParkedCall};
use crate::pipeline::{guarded_value, out_of_scope, pending_call, read_input};
use crate::result::{CallResult, Deadline, ResultKind, lines};

/// What a call that waited in a run that finished reads.
pub(super) const FINISHED_TEXT: &str = "The run finished before a decision.";

/// The host's handle on a run's pending calls ([`Run::approvals`]): each
/// decision settles the call, records its result in the run, and returns
/// it for the model (replace the call's result in its step with
/// [`StepResults::settle`](crate::StepResults::settle)).
#[must_use = "a handle does nothing until one of its methods is called"]
pub struct Approvals<'r, App> {
    run: &'r mut Run<App>,
}

impl<'r, App: Send + Sync + 'static> Approvals<'r, App> {
    pub(super) fn new(run: &'r mut Run<App>) -> Self {
        Approvals { run }
    }

    /// Runs a pending call as the model sent it: a human approved it. In a
    /// durable run the decision is journaled first (who: the run's user).
    ///
    /// Past the run's deadline ([`with_deadline`](Run::with_deadline)) the
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
    /// is validated and judged again (a `Deny` refuses it). In a turn that
    /// scoped the tool ([`select`](Run::select)), it must fit the turn's
    /// schema too.
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
        let result = approval::reject(&self.run.tools, pending, text);
        self.settled(&result).await;
        Ok(result)
    }

    /// Parks a call of a step that needs approval, and returns what the
    /// model reads of it for now. Beyond
    /// [`max_pending_approvals`](crate::RegistryBuilder::max_pending_approvals)
    /// the expired calls give up their places first (their results go to
    /// `expired`); a call still without one is refused (`TOO_MANY_PENDING`).
    /// In a durable run the call is journaled before it is shown as
    /// waiting: one the journal could not record is not run, and no one is
    /// asked to decide what could never be carried out.
    pub(super) async fn park(&mut self, pending: PendingCall<App>, expired: &mut Vec<CallResult>) -> CallResult {
        let max = self.run.tools.config.max_pending;
        if self.run.pending.len() >= max {
            expired.extend(self.sweep_expired().await);
        }
        if self.run.pending.len() >= max {
            tracing::warn!(tool = %Escaped(pending.tool()), max, "too many calls wait for approval in this run; refused");
            let (tool, id) = (pending.tool().clone(), pending.id().clone());
            return CallResult::failure(tool, id, ResultKind::Denied, &lines::too_many_pending(max));
        }
        if let Err(error) = self.remember(&pending).await {
            if let JournalError::RunFinished { .. } = error {
                return CallResult::failure(pending.tool().clone(), pending.id().clone(), ResultKind::Denied, &lines::run_finished());
            }
            let detail = format!("the pending call could not be journaled, so it was not run: {error}");
            self.run.tools.report(ErrorReport::new(pending.tool().as_str(), pending.id().as_str(), ErrorKind::Journal, "JOURNAL", detail));
            return CallResult::unrecorded(pending.tool().clone(), pending.id().clone());
        }
        let waiting = pending.pending_result();
        self.run.pending.push(pending);
        waiting
    }

    /// Settles the pending calls decided out of band (by any process) or
    /// expired in a durable run's journal, in the order they were parked;
    /// calls still waiting stay pending ([`Run::settle_decided`]).
    pub(super) async fn settle_decided(&mut self) -> Result<Vec<CallResult>, DurableError> {
        let remembered = self.run.memory.clone();
        let expired = lines::approval_expired(self.run.tools.approval_ttl());
        remembered.memory.expire(&remembered.run_id, expired.model_line().as_str()).await?;
        let mut results = Vec::new();
        let mut index = 0;
        while index < self.run.pending.len() {
            let id = self.run.pending[index].id().clone();
            let Some(decided) = remembered.memory.approval(&remembered.run_id, &id).await?.and_then(|approval| approval.decided) else {
                index += 1;
                continue;
            };
            let pending = self.run.pending.remove(index);
            let result = self.carry_out(pending, decided).await;
            self.run.steps.record(&result, self.run.ends_turn(&result));
            remembered.memory.settle(&remembered.run_id, &id).await?;
            results.push(result);
        }
        Ok(results)
    }

    /// Drops every pending call of a run that finished; in a durable run
    /// each is rejected in the journal (so no one is asked to decide it any
    /// more) and settled.
    pub(super) async fn drop_all(&mut self) {
        let remembered = self.run.memory.clone();
        for pending in std::mem::take(&mut self.run.pending) {
            let reject = Decision::Reject(FINISHED_TEXT.into());
            let rejected = remembered.memory.decide(&remembered.run_id, pending.id(), reject, GONE_BY).await;
            if let Err(error) = rejected.map(drop).or_else(|error| match error {
                JournalError::AlreadyDecided { .. } => Ok(()),
                other => Err(other),
            }) {
                tracing::error!(call_id = %Escaped(pending.id()), error = %Escaped(&error), "a dropped pending call could not be journaled as rejected");
            }
            remembered.settle_or_report(pending.id()).await;
        }
    }

    /// Takes back the calls a durable run's journal holds as waiting
    /// (decided or not: a decision made elsewhere is settled by
    /// [`Run::settle_decided`]), each read back into this registry's tool.
    pub(super) fn resume(&mut self, unsettled: &[Approval]) -> Result<(), DurableError> {
        for approval in unsettled {
            let parked = &approval.call;
            let (entry, input) = check_fits(&self.run.tools, &parked.run_id, &parked.call_id, &parked.tool, &parked.input)?;
            let info = self.run.call_info(parked.call_id.as_str().into(), &self.run.cancel, None);
            let pending = pending_call(entry, input, CallState::new(&self.run.app, info), None);
            self.run.pending.push(pending);
        }
        Ok(())
    }

    /// Runs a call the host approved: in a durable run the journal accepted
    /// the decision, and its clock, not this process's, decided that it
    /// came within the approval TTL.
    async fn run_approved(&self, pending: PendingCall<App>, edited: Option<Arguments<'_>>) -> CallResult {
        let tools = &self.run.tools;
        if self.run.memory.durable {
            return approval::approve_decided(tools, pending, edited).await;
        }
        match edited {
            Some(edited) => approval::approve_with(tools, pending, edited).await,
            None => approval::approve(tools, pending).await,
        }
    }

    /// What a pending call reads instead of running when this run may no
    /// longer run it, whatever a human decided: the run finished
    /// (`RUN_FINISHED`; a process that has not learnt it yet is told by the
    /// journal when the call's effect would start), the run's deadline
    /// passed (`RUN_DEADLINE`), or its tool failed `max_retries` times
    /// since the call was parked (`TOOL_EXHAUSTED`).
    fn refused_at_approval(&self, pending: &PendingCall<App>) -> Option<CallResult> {
        let (tool, id) = (pending.tool().clone(), pending.id().clone());
        if matches!(self.run.steps.state, crate::memory::RunState::Finished { .. }) {
            return Some(CallResult::failure(tool, id, ResultKind::Denied, &lines::run_finished()));
        }
        if self.run.deadline.is_some_and(|deadline| tokio::time::Instant::now() >= deadline) {
            return Some(CallResult::failure(tool, id, ResultKind::TimedOut, &lines::deadline(Deadline::Run)));
        }
        let error = self.run.steps.exhausted(self.run.tools.definition(&tool)?)?;
        Some(CallResult::failure(tool, id, ResultKind::Denied, &error))
    }

    /// Settles the pending calls whose approval expired, as expired: they
    /// are not run, give up their places under
    /// [`max_pending_approvals`](crate::RegistryBuilder::max_pending_approvals),
    /// and read `APPROVAL_EXPIRED`. In a durable run the journal's clock
    /// decides (a journal that fails sweeps nothing, reported), and a call
    /// another process decided meanwhile stays pending for
    /// [`Run::settle_decided`].
    async fn sweep_expired(&mut self) -> Vec<CallResult> {
        let (tools, remembered) = (self.run.tools.clone(), self.run.memory.clone());
        let mut expired = Vec::new();
        if !remembered.durable {
            let (due, waiting): (Vec<_>, Vec<_>) =
                std::mem::take(&mut self.run.pending).into_iter().partition(|pending| approval::has_expired(&tools, pending));
            self.run.pending = waiting;
            for pending in due {
                remembered.settle_or_report(pending.id()).await;
                expired.push(approval::expire(&tools, pending));
            }
            return expired;
        }
        let text = lines::approval_expired(tools.approval_ttl()).model_line();
        if let Err(error) = remembered.memory.expire(&remembered.run_id, &text).await {
            tracing::error!(run_id = %Escaped(&remembered.run_id), error = %Escaped(&error), "expired approvals could not be swept");
            return expired;
        }
        let mut index = 0;
        while index < self.run.pending.len() {
            let id = self.run.pending[index].id().clone();
            match remembered.memory.approval(&remembered.run_id, &id).await {
                Ok(Some(approval)) if approval.decided.as_ref().is_some_and(|decided| decided.by == EXPIRED_BY) => {
                    expired.push(approval::expire(&tools, self.run.pending.remove(index)));
                    remembered.settle_or_report(&id).await;
                }
                Ok(_) => index += 1,
                Err(error) => {
                    tracing::error!(call_id = %Escaped(&id), error = %Escaped(&error), "an expired approval could not be read back");
                    index += 1;
                }
            }
        }
        expired
    }

    /// Carries out a decision the journal holds on `pending`.
    async fn carry_out(&self, pending: PendingCall<App>, decided: Decided) -> CallResult {
        let tools = &self.run.tools;
        // The journal's own expiry: its line, not a rejection quoting it.
        if decided.by == EXPIRED_BY {
            return approval::expire(tools, pending);
        }
        if let Decision::Reject(text) = &decided.decision {
            return approval::reject(tools, pending, Some(text.as_str()).filter(|text| !text.is_empty()));
        }
        if let Some(refused) = self.refused_at_approval(&pending) {
            return refused;
        }
        // The journal accepted the decision: its clock decided it came in
        // time, not this process's.
        match decided.decision {
            Decision::ApproveEdited(input) => approval::approve_decided(tools, pending, Some(Arguments::Value(input))).await,
            _ => approval::approve_decided(tools, pending, None).await,
        }
    }

    /// What an edited input reads when it fits the tool but not the scope
    /// the current turn gave it; `None` when it fits, or the tool is not
    /// scoped (what does not fit the tool is worded by `approve_with`).
    fn outside_the_turns_scope(&self, pending: &PendingCall<App>, edited: &Arguments<'_>) -> Option<CallResult> {
        let validator = &self.run.turn.as_ref()?.scoped(pending.tool())?.validator;
        let entry = self.run.tools.entry(pending.tool())?;
        let input = read_input(&self.run.tools, entry, pending.id(), edited.clone()).ok()?;
        out_of_scope(entry, pending.id(), validator, &input)
    }

    /// Takes the pending call `id` that the host decided; the decision is
    /// recorded in the run's memory first (who: the run's user), and the
    /// call stays pending when that fails (`AlreadyDecided` when another
    /// process decided it first).
    async fn take_decided<'d>(&mut self, id: &str, decision: impl FnOnce() -> HostDecision<'d>) -> Result<PendingCall<App>, RunError> {
        let Some(index) = self.run.pending.iter().position(|pending| pending.id() == id) else {
            return Err(RunError::UnknownApproval(id.to_owned()));
        };
        let decision = decision().into_journal(self.run);
        let remembered = &self.run.memory;
        let by = self.run.user.id.as_deref().unwrap_or("host");
        remembered.memory.decide(&remembered.run_id, id, decision, by).await?;
        Ok(self.run.pending.remove(index))
    }

    /// Records the result of a decided call in the run's bookkeeping (and
    /// journal).
    async fn settled(&mut self, result: &CallResult) {
        self.run.record(result);
        self.run.memory.settle_or_report(&result.call_id).await;
        self.run.steps.save_or_report(&self.run.memory).await;
    }

    /// Records a call that now waits for approval in the run's memory.
    async fn remember(&self, pending: &PendingCall<App>) -> Result<(), JournalError> {
        let remembered = &self.run.memory;
        let now = SystemTime::now();
        // A run that is not durable checks the approval TTL by its own
        // clock (`approval::approve`); a durable one by its memory's.
        let ttl: Option<Duration> = remembered.durable.then(|| self.run.tools.approval_ttl());
        // A run that is not durable keeps the arguments once, in the
        // pending call: its memory is read by no other process, and a JSON
        // value of them beside it cost 39 times their text (72 bytes a
        // number; `tests/hostile.rs`).
        let input = if remembered.durable { pending.arguments() } else { serde_json::Value::Null };
        let parked = ParkedCall {
            run_id: remembered.run_id.to_string(),
            call_id: pending.id().to_string(),
            tool: pending.tool().to_string(),
            input,
            user_id: self.run.user.id.clone(),
            parked_at: now,
            expires_at: ttl.and_then(|ttl| now.checked_add(ttl)),
        };
        remembered.memory.park(&parked).await
    }
}

/// A host's decision on a pending call, as [`Approvals::take_decided`]
/// records it.
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
    fn into_journal<App>(self, run: &Run<App>) -> Decision {
        match self {
            HostDecision::Approve => Decision::Approve,
            HostDecision::Edited(edited) => match guarded_value(&run.tools, edited) {
                Some(value) => Decision::ApproveEdited(value.into_owned()),
                None => Decision::Reject("The edited input was refused before it was read.".to_owned()),
            },
            HostDecision::Rejected(text) => Decision::Reject(text.unwrap_or_default().to_owned()),
        }
    }
}

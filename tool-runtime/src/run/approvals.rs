//! A run's pending calls: the calls of its steps that wait for a human's
//! approval or for the answers to their tools' questions, parked (in the
//! run's memory first: [`question`](crate::question)), decided by the host
//! (approve, approve with an edited input, reject, answer), decided out of
//! band and settled, expired, or dropped when the run finishes.
//! [`Approvals`] is the host's handle on them ([`Run::approvals`]). Every
//! decision goes through [`question::decide`](crate::question::decide)
//! first, so that of two processes deciding one question, one wins, and is
//! carried out by `approval::carry_out`.
//!
//! A decision runs a call only while the run may still run it: not past
//! the run's deadline, and not once its tool failed `max_retries` times
//! since the call was parked (checked at approval, as an edited input's
//! policy is). And a call waits only within the approval TTL: expired ones
//! are swept when they would keep a newer call from waiting. A call that
//! asked several questions at once runs again once each is decided.

use super::remembered::check_fits;
use super::{DurableError, Run, RunError};
use crate::approval::{self, Carrier};
use crate::call::{Arguments, CallOutcome, PendingCall};
use crate::context::CallState;
use crate::error_report::{ErrorKind, ErrorReport, Escaped};
use crate::memory::{Approval, Decision, EXPIRED_BY, GONE_BY, JournalError, ParkedCall, Question};
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

    /// Runs a pending call as the model sent it: a human approved it. The
    /// decision is recorded in the run's memory first (who: the run's
    /// user).
    ///
    /// Past the run's deadline ([`with_deadline`](Run::with_deadline)) the
    /// call is not run and reads `RUN_DEADLINE`; once its tool failed
    /// `max_retries` times in this run, it reads `TOOL_EXHAUSTED`; after the
    /// approval TTL, `APPROVAL_EXPIRED`; when its permit no longer matches
    /// it (its tool's definition changed since it was parked, say),
    /// `PERMIT_MISMATCH`. Either way the call is settled.
    ///
    /// # Errors
    ///
    /// [`RunError::UnknownApproval`] when no call with this id waits; in a
    /// durable run, [`RunError::AlreadyDecided`] when another process
    /// decided it first, [`RunError::Journal`] when the journal failed.
    pub async fn approve(&mut self, id: &str) -> Result<CallResult, RunError> {
        self.decide(id, Decision::Approve).await
    }

    /// Runs a pending call with the input a human edited; the edited input
    /// is validated and judged again (a `Deny` refuses it). In a turn that
    /// scoped the tool ([`select`](Run::select)), it must fit the turn's
    /// schema too. An edited input goes through the guard before it is
    /// read, as every input does: one the guard refuses (or that is not
    /// JSON) is recorded as a rejection, and the call, which cannot run
    /// with it, reads why.
    ///
    /// # Errors
    ///
    /// As [`approve`](Self::approve).
    pub async fn approve_with(&mut self, id: &str, edited: impl Into<Arguments<'_>>) -> Result<CallResult, RunError> {
        let edited = edited.into();
        let decision = match guarded_value(&self.run.tools, &edited) {
            Some(value) => Decision::ApproveEdited(value.into_owned()),
            None => Decision::Reject("The edited input was refused before it was read.".to_owned()),
        };
        // Refused here, where the edited input is at hand: by the guard (the
        // call reads its line), or by the turn's scope.
        if let Some(index) = self.index_of(id)
            && !self.run.pending[index].asks()
            && self.refused_at_approval(&self.run.pending[index]).is_none()
            && let Some(refused) = self.unfit(&self.run.pending[index], &decision, &edited)
        {
            self.record(id, decision).await?;
            self.run.pending.remove(index);
            self.settled(&refused, None).await;
            return Ok(refused);
        }
        self.decide(id, decision).await
    }

    /// Rejects a pending call, or declines a tool's question; the model
    /// reads `text` (or the tool's rejection text, or a generic one), the
    /// tool [`Reply::Declined`](crate::question::Reply::Declined).
    ///
    /// # Errors
    ///
    /// As [`approve`](Self::approve).
    pub async fn reject(&mut self, id: &str, text: Option<&str>) -> Result<CallResult, RunError> {
        self.decide(id, Decision::Reject(text.unwrap_or_default().to_owned())).await
    }

    /// Answers the question `id` a call's tool asked (one of
    /// [`PendingCall::questions`]): a form's values, a
    /// [`Sampled`](crate::question::Sampled), or a list of
    /// [`Root`](crate::question::Root)s, as JSON. Once each question the
    /// call stopped at is decided, the call runs again from the top, and
    /// its result is returned; until then, what it reads while it waits.
    ///
    /// # Errors
    ///
    /// [`RunError::Unanswerable`] for an answer that does not fit the
    /// question (a form's schema); otherwise as [`approve`](Self::approve).
    pub async fn answer(&mut self, id: &str, answer: serde_json::Value) -> Result<CallResult, RunError> {
        self.decide(id, Decision::Answer(answer)).await
    }

    /// Decides the question `id` of a pending call (an approval's id is its
    /// call's, a tool's question's is one of [`PendingCall::questions`]),
    /// as [`question::decide`](crate::question::decide) records it, and
    /// carries it out: the call's result, or what it reads while it still
    /// waits (another of its questions undecided, or a new one asked).
    ///
    /// # Errors
    ///
    /// As [`answer`](Self::answer).
    pub async fn decide(&mut self, id: &str, decision: Decision) -> Result<CallResult, RunError> {
        let Some(index) = self.index_of(id) else { return Err(RunError::UnknownApproval(id.to_owned())) };
        let approval = self.record(id, decision).await?;
        let pending = self.run.pending.remove(index);
        Ok(self.carry_out(pending, approval).await?)
    }

    /// Parks a call of a step that needs approval, or whose tool stopped at
    /// its questions (parked by its tool already), and returns what the
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
            self.withdraw_questions(&pending, "Too many calls of the run waited.").await;
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
            let Some(approval) = self.decided(&self.run.pending[index]).await? else {
                index += 1;
                continue;
            };
            // A call that asks again waits at the end; the next is here.
            let pending = self.run.pending.remove(index);
            results.push(self.carry_out(pending, approval).await?);
        }
        Ok(results)
    }

    /// Drops every pending call of a run that finished: each of its
    /// questions is rejected in the run's memory (so no one is asked to
    /// decide it any more) and settled.
    pub(super) async fn drop_all(&mut self) {
        for pending in std::mem::take(&mut self.run.pending) {
            self.withdraw_questions(&pending, FINISHED_TEXT).await;
        }
    }

    /// Takes back the calls a durable run's journal holds as waiting
    /// (decided or not: a decision made elsewhere is settled by
    /// [`Run::settle_decided`]), each read back into this registry's tool:
    /// an approval's call, and a call whose tool stopped at its questions
    /// (one call for all its questions).
    pub(super) fn resume(&mut self, unsettled: &[Approval]) -> Result<(), DurableError> {
        for approval in unsettled {
            let parked = &approval.call;
            let (call_id, question) = match &parked.question {
                Question::Approval(_) => (parked.call_id.as_str(), None),
                Question::Tool { call_id, ask, .. } => (call_id.as_str(), Some((parked.call_id.clone(), ask.clone()))),
            };
            if let Some(question) = question.clone()
                && let Some(held) = self.run.pending.iter_mut().find(|pending| pending.asks() && pending.id() == call_id)
            {
                held.0.questions.push(question);
                continue;
            }
            let (entry, input) = check_fits(&self.run.tools, &parked.run_id, call_id, &parked.tool, &parked.input)?;
            let info = self.run.call_info(call_id.into(), &parked.tool, &self.run.cancel, None);
            let mut pending = pending_call(entry, input, CallState::new(&self.run.app, info), None);
            pending.0.questions.extend(question);
            self.run.pending.push(pending);
        }
        Ok(())
    }

    /// The position of the pending call `id` decides: the call waiting for
    /// approval of that id, or the call that asked the question of that id.
    fn index_of(&self, id: &str) -> Option<usize> {
        self.run.pending.iter().position(|pending| match pending.asks() {
            false => pending.id() == id,
            true => pending.questions().any(|(question, _)| question == id),
        })
    }

    /// Records `decision` on the question `id` of this run, through the one
    /// API (who: the run's user).
    async fn record(&self, id: &str, decision: Decision) -> Result<Approval, RunError> {
        let remembered = &self.run.memory;
        let by = self.run.user.id.as_deref().unwrap_or("host");
        Ok(crate::question::decide(&*remembered.memory, &remembered.run_id, id, decision, by).await?)
    }

    /// The decision `pending` waits for, once it is all made: an approval's,
    /// or, for a call that asked, the last of its questions' (`None` while
    /// one is undecided; one that expired stands for them all).
    async fn decided(&self, pending: &PendingCall<App>) -> Result<Option<Approval>, JournalError> {
        let remembered = &self.run.memory;
        if !pending.asks() {
            return Ok(remembered.memory.approval(&remembered.run_id, pending.id()).await?.filter(|approval| approval.decided.is_some()));
        }
        let mut last = None;
        for (id, _) in pending.questions() {
            let Some(approval) = remembered.memory.approval(&remembered.run_id, id).await?.filter(|approval| approval.decided.is_some()) else {
                return Ok(None);
            };
            if approval.decided.as_ref().is_some_and(|decided| decided.by == EXPIRED_BY) {
                return Ok(Some(approval));
            }
            last = Some(approval);
        }
        Ok(last)
    }

    /// Carries out a decision the run's memory holds on `pending` (taken
    /// from the pending calls): its result, settled in the run, or what it
    /// reads while it still waits (put back among the pending calls).
    async fn carry_out(&mut self, pending: PendingCall<App>, approval: Approval) -> Result<CallResult, JournalError> {
        if pending.asks() && self.decided(&pending).await?.is_none() {
            let waiting = pending.pending_result();
            self.run.pending.push(pending);
            return Ok(waiting);
        }
        let asking = pending.asks().then(|| pending.0.ctx.clone());
        let decided = approval.decided.as_ref();
        let runs = pending.asks() || decided.is_some_and(|decided| matches!(decided.decision, Decision::Approve | Decision::ApproveEdited(_)));
        let expired = decided.is_some_and(|decided| decided.by == EXPIRED_BY);
        let outcome = match (runs && !expired).then(|| self.refused_at_approval(&pending)).flatten() {
            Some(refused) => {
                self.withdraw_questions(&pending, "The run could no longer carry the call out.").await;
                CallOutcome::Done(refused)
            }
            None => {
                let principal = self.principal();
                let carrier = Carrier { principal: principal.as_deref(), timed: !self.run.memory.durable };
                approval::carry_out(&self.run.tools, pending, &approval, carrier).await
            }
        };
        match outcome {
            CallOutcome::Done(result) => {
                let asked = asking.as_ref().and_then(|ctx| ctx.info().asking().map(crate::question::Asking::asked));
                self.settled(&result, asked).await;
                Ok(result)
            }
            // Its tool stopped at a question (again), and it waits for the
            // answer; an approval that ran it is used.
            CallOutcome::NeedsApproval(pending) => {
                if asking.is_none() {
                    self.run.memory.settle_or_report(&approval.call.call_id).await;
                }
                let waiting = pending.pending_result();
                self.run.pending.push(pending);
                Ok(waiting)
            }
        }
    }

    /// Who the run's calls run for, and so whom a permit is bound to: the
    /// run's user in this process ([`Run::with_user`]), whose context its
    /// calls carry.
    fn principal(&self) -> Option<String> {
        self.run.user.id.clone()
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

    /// Settles the pending calls whose approval (or question) expired, as
    /// expired: they are not run, give up their places under
    /// [`max_pending_approvals`](crate::RegistryBuilder::max_pending_approvals),
    /// and read `APPROVAL_EXPIRED` (`QUESTION_EXPIRED`). In a durable run the
    /// journal's clock decides (a journal that fails sweeps nothing,
    /// reported), and a call another process decided meanwhile stays
    /// pending for [`Run::settle_decided`].
    async fn sweep_expired(&mut self) -> Vec<CallResult> {
        let (tools, remembered) = (self.run.tools.clone(), self.run.memory.clone());
        let mut expired = Vec::new();
        if !remembered.durable {
            let (due, waiting): (Vec<_>, Vec<_>) =
                std::mem::take(&mut self.run.pending).into_iter().partition(|pending| approval::has_expired(&tools, pending));
            self.run.pending = waiting;
            for pending in due {
                self.withdraw_questions(&pending, "No one answered in time.").await;
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
            match self.decided(&self.run.pending[index]).await {
                Ok(Some(approval)) if approval.decided.as_ref().is_some_and(|decided| decided.by == EXPIRED_BY) => {
                    let pending = self.run.pending.remove(index);
                    self.withdraw_questions(&pending, "No one answered in time.").await;
                    expired.push(approval::expire(&tools, pending));
                }
                Ok(_) => index += 1,
                Err(error) => {
                    tracing::error!(call_id = %Escaped(self.run.pending[index].id()), error = %Escaped(&error), "an expired approval could not be read back");
                    index += 1;
                }
            }
        }
        expired
    }

    /// What a call reads of an edited input it cannot run with: one the
    /// guard refused (`decision` rejects it), its line; one that fits the
    /// tool but not the scope the current turn gave it, why. `None` when it
    /// fits (what else does not fit the tool is worded when it runs).
    fn unfit(&self, pending: &PendingCall<App>, decision: &Decision, edited: &Arguments<'_>) -> Option<CallResult> {
        let entry = self.run.tools.entry(pending.tool())?;
        if let Decision::Reject(_) = decision {
            return read_input(&self.run.tools, entry, pending.id(), edited.clone()).err();
        }
        let validator = &self.run.turn.as_ref()?.scoped(pending.tool())?.validator;
        let input = read_input(&self.run.tools, entry, pending.id(), edited.clone()).ok()?;
        out_of_scope(entry, pending.id(), validator, &input)
    }

    /// Records the result of a settled call in the run's bookkeeping, and
    /// marks its questions settled in the run's memory: its approval, or
    /// the `asked` questions its tool asked.
    async fn settled(&mut self, result: &CallResult, asked: Option<u32>) {
        self.run.record(result);
        match asked {
            None => self.run.memory.settle_or_report(&result.call_id).await,
            Some(asked) => {
                for n in 1..=asked {
                    self.run.memory.settle_or_report(&Question::id_of(&result.call_id, n)).await;
                }
            }
        }
        self.run.steps.save_or_report(&self.run.memory).await;
    }

    /// Rejects the questions of a pending call the run no longer carries
    /// out, by [`GONE_BY`] with `text` (a decision made first stands), and
    /// settles them.
    async fn withdraw_questions(&self, pending: &PendingCall<App>, text: &str) {
        let remembered = &self.run.memory;
        let ids: Vec<&str> = match pending.asks() {
            false => vec![pending.id().as_str()],
            true => pending.questions().map(|(id, _)| id).collect(),
        };
        for id in ids {
            let rejected = crate::question::decide(&*remembered.memory, &remembered.run_id, id, Decision::Reject(text.to_owned()), GONE_BY).await;
            if let Err(error) = rejected.map(drop).or_else(|error| match error {
                JournalError::AlreadyDecided { .. } | JournalError::UnknownApproval { .. } => Ok(()),
                other => Err(other),
            }) {
                tracing::error!(call_id = %Escaped(id), error = %Escaped(&error), "a dropped pending call could not be journaled as rejected");
            }
            remembered.settle_or_report(id).await;
        }
    }

    /// Records a call that now waits for approval in the run's memory (a
    /// call whose tool asked was parked by its ask), bound as a permit to
    /// its arguments, its tool's definition and the run's user.
    async fn remember(&self, pending: &PendingCall<App>) -> Result<(), JournalError> {
        if pending.asks() {
            return Ok(());
        }
        let remembered = &self.run.memory;
        let Some(definition) = self.run.tools.definition(pending.tool()) else { return Ok(()) };
        let arguments = pending.arguments();
        let question = Question::approval(definition, &arguments);
        // A run that is not durable keeps the arguments once, in the
        // pending call: its memory is read by no other process, and a JSON
        // value of them beside it cost 39 times their text (72 bytes a
        // number; `tests/hostile.rs`).
        let input = if remembered.durable { arguments } else { serde_json::Value::Null };
        let parked = ParkedCall::new(&remembered.run_id, pending.id(), definition, input, question).for_user(self.principal());
        // A run that is not durable checks the approval TTL by its own
        // clock (`approval::approve`); a durable one by its memory's.
        let parked = parked.expiring(remembered.durable.then(|| self.run.tools.approval_ttl()));
        crate::question::park(&*remembered.memory, &parked).await
    }
}

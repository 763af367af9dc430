//! A run's memory ([`RunMemory`]): a durable run started or resumed by its
//! id, its decisions made out of band settled, and the run's steps, parked
//! calls and decisions recorded. Every run has a memory: one that is not
//! durable keeps it in the process ([`LocalMemory`](crate::memory::LocalMemory)).
//!
//! After each step (and each approval settled), what the run changed since
//! its last save is added to its record in the memory, in one step of it:
//! the steps taken, the tools executed for the first time, the failures per
//! tool (`max_retries` counts, so they survive a resume), and the state,
//! which only moves forward. The run then takes its record as the memory
//! holds it, so that processes stepping one durable run at once each see
//! the others' steps, and one that steps a run another finished learns that
//! it is finished. A step that re-sends exactly the call ids of the run's
//! last step (a host retrying after a crash) replays its calls and is not
//! counted again.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::Value;
use smol_str::SmolStr;

use super::{Run, ToolCall};
use crate::call::{Arguments, PendingCall};
use crate::context::CallState;
use crate::error_report::{ErrorKind, ErrorReport, Escaped};
use crate::memory::{CallStart, Decided, Decision, EXPIRED_BY, GONE_BY, JournalError, ParkedCall, Remembered, RunMemory};
use crate::pipeline::Input;
use crate::registry::Entry;
use crate::result::{CallResult, lines};

/// Why a durable run could not be started, resumed or kept.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DurableError {
    /// The run's memory (its journal) could not be read or written.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The run's journal holds a call this registry cannot take any more:
    /// its tool is gone or renamed, or its input schema no longer accepts
    /// the journaled input. Resume it with a registry compatible with the
    /// one that started it.
    #[error("the journaled call `{call_id}` of run `{run_id}` cannot be resumed with this registry: tool `{tool}` {reason}")]
    Incompatible {
        /// The run.
        run_id: String,
        /// The journaled call.
        call_id: String,
        /// Its tool.
        tool: String,
        /// What changed.
        reason: String,
    },
}

impl<App: Send + Sync + 'static> Run<App> {
    /// Makes this run durable under `run_id` in `journal`: a run the
    /// journal knows is resumed (its step, tools executed, failures per
    /// tool, how it ended and its pending approvals), a new one is
    /// recorded. From then on each step, each call's effect and each
    /// approval are journaled (see the [module docs](crate::memory)).
    /// Several processes may resume and step one run at once: each step is
    /// added to the journal's record, and after it the run holds the steps
    /// and tools of all of them. Set the run's user and thread first:
    /// resumed pending calls run as that user.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use tool_runtime::prelude::*;
    /// # use tool_runtime::{journal::Journal, ToolCall};
    /// /// Refund an order.
    /// #[tool(policy = needs_approval)]
    /// async fn refund(order_id: String) -> String { format!("refunded {order_id}") }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = std::env::temp_dir().join(format!("durable-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let journal = Journal::open(dir.join("runs.db").to_str().unwrap()).await?;
    /// let registry = Registry::<()>::builder().tools(tools![refund]).build()?;
    ///
    /// // One process parks the refund...
    /// let mut run = registry.run(Arc::new(())).durable(&journal, "thread-7").await?;
    /// run.execute(vec![ToolCall::new("c1", "refund", r#"{"order_id": "A-1"}"#)]).await;
    ///
    /// // ...a human approves it from another (an admin page)...
    /// journal.approvals().decide("thread-7", "c1", tool_runtime::journal::Decision::Approve, "alice").await?;
    ///
    /// // ...and the run, resumed anywhere, runs it.
    /// let mut run = registry.run(Arc::new(())).durable(&journal, "thread-7").await?;
    /// let settled = run.settle_decided().await?;
    /// assert_eq!(settled[0].text, "refunded A-1");
    /// # journal.close().await; std::fs::remove_dir_all(&dir)?; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`DurableError::Journal`] when the journal cannot be read or
    /// written; [`DurableError::Incompatible`] when a pending call's tool is
    /// gone or no longer accepts its journaled input.
    pub async fn durable(mut self, memory: &(impl RunMemory + Clone), run_id: &str) -> Result<Self, DurableError> {
        self.memory = Remembered { memory: Arc::new(memory.clone()), run_id: run_id.into(), durable: true };
        let memory = self.memory.memory.clone();
        // A run the journal knows is taken as it holds it; a new one is
        // recorded (with whatever this run did before).
        self.steps.journaled = (0, 0);
        self.save().await?;
        // The journaled calls must still fit this registry: a re-sent step
        // replays them.
        for call in memory.calls_of_run(run_id).await? {
            let (entry, _) = self.check_fits(run_id, &call.call_id, &call.tool, &call.input)?;
            // An external call not completed is still with the host.
            if entry.def.external && matches!(call.outcome, CallStart::UnknownOutcome { .. }) {
                self.external.push(crate::call::ExternalCall { id: call.call_id.into(), tool: call.tool.into(), input: call.input });
            }
        }
        // Decided or not: a decision made elsewhere is settled by
        // `settle_decided`.
        for approval in memory.unsettled_for_run(run_id).await? {
            let pending = self.unpark(&approval.call)?;
            self.pending.push(pending);
        }
        Ok(self)
    }

    /// The run's id in its journal, for a durable run.
    pub fn run_id(&self) -> Option<&str> {
        self.memory.durable.then_some(&*self.memory.run_id)
    }

    /// Settles the pending calls that were decided out of band (by any
    /// process, with [`RunMemory::decide`]) or that expired: an approved call
    /// runs (with its edited input, validated and decided again) unless the
    /// run may no longer run it (past its deadline, or its tool exhausted
    /// by `max_retries`, as [`approve`](Self::approve) says), a rejected one
    /// reads its rejection, an expired one `APPROVAL_EXPIRED`. Returns their results,
    /// in the order they were parked, then those of the external calls
    /// another process completed ([`Run::complete`] on the resumed run);
    /// calls still waiting stay pending.
    /// A run that is not durable has nothing to settle.
    ///
    /// # Errors
    ///
    /// [`DurableError::Journal`] when the journal cannot be read or written.
    pub async fn settle_decided(&mut self) -> Result<Vec<CallResult>, DurableError> {
        if !self.memory.durable {
            return Ok(Vec::new());
        }
        let durable = self.memory.clone();
        let expired = lines::approval_expired(self.registry.approval_ttl());
        durable.memory.expire(SystemTime::now(), expired.model_line().as_str()).await?;
        let mut results = Vec::new();
        let mut index = 0;
        while index < self.pending.len() {
            let id = self.pending[index].id().clone();
            let Some(decided) = durable.memory.approval(&durable.run_id, &id).await?.and_then(|approval| approval.decided) else {
                index += 1;
                continue;
            };
            let pending = self.pending.remove(index);
            let result = self.carry_out(pending, decided).await;
            self.steps.record(&result, self.ends_turn(&result));
            durable.memory.settle(&durable.run_id, &id).await?;
            results.push(result);
        }
        // External calls another process completed.
        let mut index = 0;
        while index < self.external.len() {
            let call = &self.external[index];
            let Some(CallStart::Finished(journaled)) = durable.memory.find_call(&durable.call_key(&call.id)).await?.map(|found| found.outcome) else {
                index += 1;
                continue;
            };
            let call = self.external.remove(index);
            let result = journaled.to_call_result(&call.tool, &call.id);
            self.steps.record(&result, self.ends_turn(&result));
            results.push(result);
        }
        self.save().await?;
        Ok(results)
    }

    /// Carries out a decision the journal holds on `pending`.
    async fn carry_out(&self, pending: PendingCall<App>, decided: Decided) -> CallResult {
        // The journal's own expiry: its line, not a rejection quoting it.
        if decided.by == EXPIRED_BY {
            return self.registry.expire(pending);
        }
        if let Decision::Reject(text) = &decided.decision {
            return self.registry.reject(pending, Some(text.as_str()).filter(|text| !text.is_empty()));
        }
        if let Some(refused) = self.refused_at_approval(&pending) {
            return refused;
        }
        // The journal accepted the decision: its clock decided it came in
        // time, not this process's.
        match decided.decision {
            Decision::ApproveEdited(input) => self.registry.approve_decided(pending, Some(Arguments::Value(input))).await,
            _ => self.registry.approve_decided(pending, None).await,
        }
    }

    /// [`sweep_expired`](Self::sweep_expired) in a durable run: the journal
    /// expires what is due by its clock, and this run's calls it expired
    /// are settled. A journal that fails sweeps nothing (reported).
    pub(crate) async fn sweep_journaled(&mut self) -> Vec<CallResult> {
        let durable = self.memory.clone();
        let text = lines::approval_expired(self.registry.approval_ttl()).model_line();
        if let Err(error) = durable.memory.expire(SystemTime::now(), &text).await {
            tracing::error!(run_id = %Escaped(&durable.run_id), error = %Escaped(&error), "expired approvals could not be swept");
            return Vec::new();
        }
        let mut expired = Vec::new();
        let mut index = 0;
        while index < self.pending.len() {
            let id = self.pending[index].id().clone();
            match durable.memory.approval(&durable.run_id, &id).await {
                Ok(Some(approval)) if approval.decided.as_ref().is_some_and(|decided| decided.by == EXPIRED_BY) => {
                    expired.push(self.registry.expire(self.pending.remove(index)));
                    self.settle_or_report(&id).await;
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

    /// A call that needs approval, parked in the journal of a durable run
    /// before it is shown as waiting: `Err` with the result the model reads
    /// when the journal could not record it (the call is not run, and no
    /// one is asked to decide what could never be carried out).
    pub(crate) async fn park_durably(&self, pending: PendingCall<App>) -> Result<PendingCall<App>, CallResult> {
        match self.park(&pending).await {
            Ok(()) => Ok(pending),
            Err(error) => {
                let detail = format!("the pending call could not be journaled, so it was not run: {error}");
                self.registry.report(ErrorReport::new(pending.tool().as_str(), pending.id().as_str(), ErrorKind::Journal, "JOURNAL", detail));
                Err(CallResult::unrecorded(pending.tool().clone(), pending.id().clone()))
            }
        }
    }

    /// Journals a finished run: its dropped pending calls rejected and
    /// settled, its state saved (failures logged).
    pub(crate) async fn journal_finish(&mut self, dropped: &[PendingCall<App>]) {
        let durable = self.memory.clone();
        for pending in dropped {
            let rejected =
                durable.memory.decide(&durable.run_id, pending.id(), Decision::Reject("The run finished before a decision.".into()), GONE_BY).await;
            if let Err(error) = rejected.map(drop).or_else(|error| match error {
                JournalError::AlreadyDecided { .. } => Ok(()),
                other => Err(other),
            }) {
                tracing::error!(call_id = %Escaped(pending.id()), error = %Escaped(&error), "a dropped pending call could not be journaled as rejected");
            }
            self.settle_or_report(pending.id()).await;
        }
        self.save_or_report().await;
    }

    /// [`save`](Self::save), a failure logged.
    pub(crate) async fn save_or_report(&mut self) {
        if let Err(error) = self.save().await {
            tracing::error!(run_id = %Escaped(self.run_id().unwrap_or_default()), error = %Escaped(&error), "the run's state could not be journaled");
        }
    }

    /// Journals that a call decided in this process was settled.
    pub(crate) async fn settle_or_report(&self, call_id: &str) {
        let durable = &self.memory;
        if let Err(error) = durable.memory.settle(&durable.run_id, call_id).await {
            tracing::error!(run_id = %Escaped(&durable.run_id), call_id = %Escaped(call_id), error = %Escaped(&error), "a settled call could not be journaled as settled");
        }
    }

    /// Records how the run stands, after a step or an approval, and takes
    /// the other processes' steps from the journal ([`Durable::save`]).
    pub(crate) async fn save(&mut self) -> Result<(), JournalError> {
        let save = self.steps.take_save();
        let answer = save.send(&self.memory).await;
        self.steps.saved(save, answer)
    }

    /// The digest of a step's call ids in a durable run, by which a step
    /// re-sent after a crash is told from a new one; `None` when the run
    /// is not durable, or a call has no id of the host's.
    pub(crate) fn step_digest(&self, calls: &[ToolCall]) -> Option<String> {
        use sha2::{Digest, Sha256};

        if !self.memory.durable || calls.is_empty() || calls.iter().any(|call| call.id.is_empty()) {
            return None;
        }
        let ids: Vec<&str> = calls.iter().map(|call| call.id.as_str()).collect();
        let digest = Sha256::digest(serde_json::to_string(&ids).unwrap_or_default().as_bytes());
        Some(digest.iter().map(|byte| format!("{byte:02x}")).collect())
    }

    /// Journals a call that now waits for approval.
    pub(crate) async fn park(&self, pending: &PendingCall<App>) -> Result<(), JournalError> {
        let durable = &self.memory;
        let now = SystemTime::now();
        // A run that is not durable checks the approval TTL by its own
        // clock (`Registry::approve`); a durable one by its memory's.
        let ttl: Option<Duration> = durable.durable.then(|| self.registry.approval_ttl());
        durable
            .memory
            .park(&ParkedCall {
                run_id: durable.run_id.to_string(),
                call_id: pending.id().to_string(),
                tool: pending.tool().to_string(),
                input: pending.arguments(),
                user_id: self.user.id.clone(),
                parked_at: now,
                expires_at: ttl.and_then(|ttl| now.checked_add(ttl)),
            })
            .await
    }

    /// Journals the host's decision on a pending call, made in this
    /// process; `AlreadyDecided` when another process decided it first.
    pub(crate) async fn record_decision(&self, id: &str, decision: Decision) -> Result<(), JournalError> {
        let durable = &self.memory;
        let by = self.user.id.as_deref().unwrap_or("host");
        durable.memory.decide(&durable.run_id, id, decision, by).await.map(drop)
    }

    /// A journaled pending call, read back into this registry's tool.
    fn unpark(&self, parked: &ParkedCall) -> Result<PendingCall<App>, DurableError> {
        let (entry, input) = self.check_fits(&parked.run_id, &parked.call_id, &parked.tool, &parked.input)?;
        let info = self.call_info(&parked.call_id, &self.cancel);
        Ok(crate::pipeline::pending_call(entry, input, CallState::new(&self.app, info), None))
    }

    /// The tool of a journaled call, and the call's input read by it; an
    /// error naming the tool when it is gone or refuses the input.
    fn check_fits(&self, run_id: &str, call_id: &str, tool: &str, input: &Value) -> Result<(&Entry<App>, Input<'static>), DurableError> {
        let incompatible =
            |reason: String| DurableError::Incompatible { run_id: run_id.to_owned(), call_id: call_id.to_owned(), tool: tool.to_owned(), reason };
        let Some(entry) = self.registry.entry(tool) else {
            return Err(incompatible("is not in this registry (removed or renamed)".to_owned()));
        };
        let input = self
            .registry
            .read_input(entry, &SmolStr::new(call_id), Arguments::Value(input.clone()))
            .map_err(|refused| incompatible(format!("no longer accepts the journaled input: {}", refused.text)))?;
        Ok((entry, input))
    }
}

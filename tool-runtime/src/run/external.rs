//! A run's external calls: the calls of external tools its steps handed to
//! the host, completed by the host's result ([`ExternalCalls`], the
//! handle [`Run::external_calls`] gives). The host's output is checked by
//! `external` as the MCP runner's is; a run records it (in a durable run,
//! in the journal first, where of two processes one wins) and keeps the
//! call's id taken until then.

use serde_json::Value;

use super::{DurableError, Run, RunError};
use crate::error::ToolError;
use crate::external::ProposalError;
use crate::memory::{CallStart, JournalError, JournaledResult};
use crate::result::CallResult;

/// The host's handle on a run's external calls ([`Run::external_calls`]):
/// each result is checked, recorded in the run (it counts as executed, and
/// may end the run), and returned for the model (replace the call's result
/// in its step with [`StepResults::settle`](crate::StepResults::settle)).
#[must_use = "a handle does nothing until one of its methods is called"]
pub struct ExternalCalls<'r, App> {
    run: &'r mut Run<App>,
}

impl<'r, App: Send + Sync + 'static> ExternalCalls<'r, App> {
    pub(super) fn new(run: &'r mut Run<App>) -> Self {
        ExternalCalls { run }
    }

    /// Completes the external call `id` with the output the host's run of
    /// it gave, checked against the tool's output schema.
    ///
    /// # Errors
    ///
    /// [`RunError::UnknownExternal`] when no external call with this id
    /// waits; [`RunError::InvalidOutput`] when the output does not match
    /// the tool's output schema (the call still waits). In a durable run,
    /// where the result is journaled first, [`RunError::AlreadyDecided`]
    /// when another process completed the call first (settle it with
    /// [`Run::settle_decided`]), [`RunError::Journal`] when the journal
    /// failed (the call still waits).
    pub async fn complete(&mut self, id: &str, output: Value) -> Result<CallResult, RunError> {
        let index = self.index(id)?;
        let result = crate::external::complete(&self.run.tools, &self.run.external[index].tool, id, output)?;
        self.settle(index, result).await
    }

    /// Completes the external call `id` as failed where the host ran it;
    /// the model reads `error`'s line, and the failure counts toward the
    /// tool's `max_retries`.
    ///
    /// # Errors
    ///
    /// [`RunError::UnknownExternal`] when no external call with this id
    /// waits; in a durable run, as [`complete`](Self::complete).
    pub async fn fail(&mut self, id: &str, error: &ToolError) -> Result<CallResult, RunError> {
        let index = self.index(id)?;
        let result = crate::external::fail(&self.run.tools, &self.run.external[index].tool, id, error)?;
        self.settle(index, result).await
    }

    /// The results of the external calls another process completed in a
    /// durable run's journal ([`Run::settle_decided`]); calls still with
    /// the host keep waiting.
    pub(super) async fn settle_completed(&mut self) -> Result<Vec<CallResult>, DurableError> {
        let remembered = self.run.memory.clone();
        let mut results = Vec::new();
        let mut index = 0;
        while index < self.run.external.len() {
            let key = remembered.call_key(&self.run.external[index].id);
            let Some(CallStart::Finished(journaled)) = remembered.memory.find_call(&key).await?.map(|found| found.outcome) else {
                index += 1;
                continue;
            };
            let call = self.run.external.remove(index);
            let result = journaled.to_call_result(&call.tool, &call.id);
            self.run.steps.record(&result, self.run.ends_turn(&result));
            results.push(result);
        }
        Ok(results)
    }

    /// The typed proposal of the external call `id` that waits, as its
    /// tool's `resolve` converts its input ([`Registry::proposal`](crate::Registry::proposal)).
    ///
    /// # Errors
    ///
    /// [`ProposalError::NoResolve`] when no external call with this id
    /// waits, or its tool has no `resolve`; otherwise as
    /// [`Registry::proposal`](crate::Registry::proposal).
    pub fn proposal<P: 'static>(&self, id: &str) -> Result<P, ProposalError> {
        let call = self.run.external.iter().find(|call| call.id == id).ok_or_else(|| ProposalError::NoResolve(id.to_owned()))?;
        crate::external::proposal(&self.run.tools, call)
    }

    /// Records the result of the external call at `index` (journaled
    /// first in a durable run, where of two processes one wins).
    async fn settle(&mut self, index: usize, result: CallResult) -> Result<CallResult, RunError> {
        let watch = self.run.tools.watch_for(&result.tool, Some(&self.run.user), self.run.thread_id.as_ref());
        let key = self.run.memory.call_key(&result.call_id);
        match self.run.memory.memory.finish_call(&key, &JournaledResult::from(&result)).await {
            // Not started: a call handed over before the run had a memory
            // of it (a run made durable after the call was handed).
            Ok(()) | Err(JournalError::CallNotStarted { .. }) => {}
            Err(JournalError::CallAlreadyFinished { .. }) => {
                return Err(RunError::AlreadyDecided { call_id: result.call_id.to_string(), by: "another process".into() });
            }
            Err(error) => return Err(RunError::Journal(error.to_string())),
        }
        self.run.external.remove(index);
        self.run.record(&result);
        self.run.steps.save_or_report(&self.run.memory).await;
        self.run.tools.report_outcome(watch, &result);
        Ok(result)
    }

    fn index(&self, id: &str) -> Result<usize, RunError> {
        self.run.external.iter().position(|call| call.id == id).ok_or_else(|| RunError::UnknownExternal(id.to_owned()))
    }
}

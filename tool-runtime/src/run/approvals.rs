//! The host's decisions on a run's pending calls: approve, approve with an
//! edited input, reject. In a durable run each decision is journaled first,
//! so that of two processes deciding one call, one wins.

use crate::call::{Arguments, PendingCall};
use crate::result::CallResult;

use super::{Run, RunError};

impl<App: Send + Sync + 'static> Run<App> {
    /// Runs a pending call as the model sent it: a human approved it. In a
    /// durable run the decision is journaled first (who: the run's user).
    ///
    /// # Errors
    ///
    /// [`RunError::UnknownApproval`] when no call with this id waits; in a
    /// durable run, [`RunError::AlreadyDecided`] when another process
    /// decided it first, [`RunError::Journal`] when the journal failed.
    pub async fn approve(&mut self, id: &str) -> Result<CallResult, RunError> {
        let pending = self.decide(id, || Decided::Approve).await?;
        let result = self.registry.approve(pending).await;
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
        let pending = self.decide(id, || Decided::Edited(&edited)).await?;
        let result = match self.outside_the_turns_scope(&pending, &edited) {
            Some(refused) => refused,
            None => self.registry.approve_with(pending, edited).await,
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
        let pending = self.decide(id, || Decided::Rejected(text)).await?;
        let result = self.registry.reject(pending, text);
        self.settled(&result).await;
        Ok(result)
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
    async fn decide<'d>(&mut self, id: &str, decision: impl FnOnce() -> Decided<'d>) -> Result<PendingCall<App>, RunError> {
        let Some(index) = self.pending.iter().position(|pending| pending.id() == id) else {
            return Err(RunError::UnknownApproval(id.to_owned()));
        };
        #[cfg(feature = "journal")]
        self.record_decision(id, decision().into_journal()).await?;
        #[cfg(not(feature = "journal"))]
        let _ = decision;
        Ok(self.pending.remove(index))
    }

    /// Records the result of a decided call in the run's bookkeeping (and
    /// journal).
    async fn settled(&mut self, result: &CallResult) {
        self.steps.record(result, self.ends_turn(result));
        self.track_external(result);
        #[cfg(feature = "journal")]
        {
            self.settle_or_report(&result.call_id).await;
            self.save_or_report().await;
        }
    }
}

/// A host's decision on a pending call, as [`Run::decide`] journals it.
#[cfg_attr(not(feature = "journal"), allow(dead_code))]
enum Decided<'a> {
    Approve,
    Edited(&'a Arguments<'a>),
    Rejected(Option<&'a str>),
}

#[cfg(feature = "journal")]
impl Decided<'_> {
    fn into_journal(self) -> crate::journal::Decision {
        use crate::journal::Decision;
        match self {
            Decided::Approve => Decision::Approve,
            Decided::Edited(Arguments::Value(value)) => Decision::ApproveEdited(value.clone()),
            Decided::Edited(Arguments::Text(text)) => {
                Decision::ApproveEdited(serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.to_string())))
            }
            Decided::Rejected(text) => Decision::Reject(text.unwrap_or_default().to_owned()),
        }
    }
}

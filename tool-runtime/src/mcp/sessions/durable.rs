//! Approvals of a durable session ([`McpServer::with_journal`](crate::mcp::McpServer::with_journal)):
//! a pending call is parked in the journal, and waits for the first of the
//! client's answer (elicitation, where the client supports it) and a
//! decision made out of band by any process. The client's answer is
//! journaled as a decision; when another process decided first, its
//! decision stands.
//!
//! One clock decides expiry, the journal's: when the approval's time to
//! live has passed here, the journal is asked to expire the call, which it
//! does only if no decision came first; a decision it accepted, even in
//! the last moment, is carried out. A call whose client goes away while it
//! waits is rejected in the journal (by [`GONE_BY`]), so a person deciding
//! it later is told it is gone, never handed a success that runs nothing.

use std::time::{Duration, SystemTime};

use rmcp::RoleServer;
use rmcp::model::ElicitationAction;
use rmcp::service::{ElicitationMode, RequestContext};

use crate::approval::{self, Carrier};
use crate::call::{CallOutcome, PendingCall};
use crate::error_report::Escaped;
use crate::error_report::{ErrorKind, ErrorReport};
use crate::memory::{Approval, Decided, Decision, EXPIRED_BY, GONE_BY, JournalError, ParkedCall, Question, Remembered};
use crate::question;
use crate::registry::Registry;
use crate::result::{CallResult, ResultKind, lines};

/// How often a waiting call looks for a decision made out of band.
const POLL: Duration = Duration::from_millis(200);

/// What a call waiting here reads when its client went away.
const GONE_TEXT: &str = "The client went away before a decision.";

/// What a durable session's call waiting for approval needs of its
/// session: the registry, the session's memory, who the caller is, and the
/// question the client's user is asked.
pub(super) struct Asking<'a, App> {
    pub(super) registry: &'a Registry<App>,
    pub(super) durable: &'a Remembered,
    pub(super) user_id: Option<String>,
    pub(super) message: String,
}

/// Waits for a human's decision on `pending`, from the client or from any
/// process, and applies it: its outcome (an approved call whose tool then
/// asks a question stops there). The session counted the call as waiting.
pub(super) async fn ask<App: Send + Sync + 'static>(
    asking: Asking<'_, App>,
    pending: PendingCall<App>,
    context: &RequestContext<RoleServer>,
) -> CallOutcome<App> {
    let Asking { registry, durable, user_id, message } = asking;
    let (tool, id) = (pending.tool().clone(), pending.id().clone());
    let ttl = registry.approval_ttl();
    let Some(definition) = registry.definition(&tool) else { return CallOutcome::Done(registry.reject(pending, None)) };
    let arguments = pending.arguments();
    let question = Question::approval(definition, &arguments);
    let parked = ParkedCall::new(&durable.run_id, &id, definition, arguments, question).for_user(user_id.clone()).expiring(Some(ttl));
    // Held by this process: should it die, no decision on the call is
    // accepted (nothing would carry it out).
    if let Err(error) = question::park_held(&*durable.memory, &parked).await {
        let detail = format!("the pending call could not be journaled, so it was not run: {error}");
        registry.tools().report(ErrorReport::new(tool.as_str(), id.as_str(), ErrorKind::Journal, "JOURNAL", detail));
        return CallOutcome::Done(CallResult::unrecorded(tool, id));
    }
    // From here until a decision is carried out, a call whose wait is
    // dropped (its client's stream or session gone) is rejected in the
    // journal.
    let mut gone = Gone { durable, id: id.clone(), armed: true };
    let decision = tokio::select! {
        decision = by_client(durable, &pending, message, user_id.as_deref(), context) => decision,
        decision = out_of_band(durable, &id) => decision,
        () = tokio::time::sleep(ttl) => match expire(durable, &id, ttl).await {
            Ok(Some(decision)) => Ok(decision),
            Ok(None) => {
                gone.armed = false;
                tracing::info!(tool = %Escaped(&tool), call_id = %Escaped(&id), "no decision on the approval in time");
                settle_in_memory(durable, &id).await;
                return CallOutcome::Done(CallResult::failure(tool, id, ResultKind::Rejected, &lines::approval_expired(ttl)));
            }
            Err(error) => Err(error),
        },
        () = context.ct.cancelled() => match gone.reject().await {
            Ok(None) => return CallOutcome::Done(CallResult::failure(tool, id, ResultKind::Cancelled, &lines::cancelled())),
            // Decided before the client went: the decision is carried
            // out (a tool that can be interrupted reads the cancellation).
            Ok(Some(decision)) => Ok(decision),
            Err(error) => Err(error),
        },
    };
    gone.armed = false;
    let outcome = match decision {
        // The journal accepted the decision: its clock decided that it
        // came in time, not this process's.
        Ok(decided) => {
            let approval = Approval { call: parked, decided: Some(decided) };
            let carrier = Carrier { principal: user_id.as_deref(), timed: false };
            approval::carry_out(registry.tools(), pending, &approval, carrier).await
        }
        Err(error) => {
            registry.tools().report(ErrorReport::new(tool.as_str(), id.as_str(), ErrorKind::Journal, "JOURNAL", error.to_string()));
            CallOutcome::Done(registry.reject(pending, Some("The approval could not be read, so the call was not run.")))
        }
    };
    settle_in_memory(durable, &id).await;
    outcome
}

/// The client's answer, where it supports elicitation, journaled as the
/// decision; pending forever otherwise (the decision comes out of band).
async fn by_client<App: Send + Sync + 'static>(
    durable: &Remembered,
    pending: &PendingCall<App>,
    message: String,
    user_id: Option<&str>,
    context: &RequestContext<RoleServer>,
) -> Result<Decided, JournalError> {
    let (tool, id) = (pending.tool(), pending.id());
    if !context.peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
        return std::future::pending().await;
    }
    let decision = match context.peer.create_elicitation(crate::mcp::approval::elicitation(message)).await {
        Ok(answer) if answer.action == ElicitationAction::Accept => Decision::Approve,
        Ok(_) => Decision::Reject(String::new()),
        Err(error) => {
            tracing::warn!(tool = %Escaped(tool), call_id = %Escaped(id), error = %Escaped(&error), "the approval request failed; waiting for a decision out of band");
            return std::future::pending().await;
        }
    };
    let by = user_id.unwrap_or("mcp-client");
    match question::decide(&*durable.memory, &durable.run_id, id, decision, by).await {
        Ok(Approval { decided: Some(decided), .. }) => Ok(decided),
        // Another process decided first: its decision stands.
        Ok(_) | Err(JournalError::AlreadyDecided { .. }) => decided(durable, id).await.map(|decided| decided.unwrap_or_else(|| rejected_now(by))),
        Err(error) => Err(error),
    }
}

/// A rejection by `by` now, where the memory lost a decision it reported.
fn rejected_now(by: &str) -> Decided {
    Decided { decision: Decision::Reject(String::new()), by: by.to_owned(), at: SystemTime::now() }
}

/// A decision made out of band, polled for.
async fn out_of_band(durable: &Remembered, id: &str) -> Result<Decided, JournalError> {
    loop {
        tokio::time::sleep(POLL).await;
        if let Some(decision) = decided(durable, id).await? {
            return Ok(decision);
        }
    }
}

/// At the end of the approval's time to live here: the journal expires the
/// call unless a decision came first, which is returned (`None`: expired).
async fn expire(durable: &Remembered, id: &str, ttl: Duration) -> Result<Option<Decided>, JournalError> {
    durable.memory.expire(&durable.run_id, &lines::approval_expired(ttl).model_line()).await?;
    let approval = durable.memory.approval(&durable.run_id, id).await?;
    match approval.and_then(|approval| approval.decided) {
        Some(decided) if decided.by != EXPIRED_BY => Ok(Some(decided)),
        Some(_) => Ok(None),
        // Not due by the journal's clock yet (this process's timer ran
        // ahead of it): expired all the same, in the journal first.
        None => {
            match question::decide(&*durable.memory, &durable.run_id, id, Decision::Reject(lines::approval_expired(ttl).model_line()), EXPIRED_BY)
                .await
            {
                Ok(_) => Ok(None),
                Err(JournalError::AlreadyDecided { by, .. }) if by == EXPIRED_BY => Ok(None),
                Err(JournalError::AlreadyDecided { .. }) => decided(durable, id).await,
                Err(JournalError::ApprovalExpired { .. }) => Ok(None),
                Err(error) => Err(error),
            }
        }
    }
}

/// A waiting call's rejection in the journal when its wait ends without a
/// decision carried out: its client went away (the wait was cancelled, or
/// dropped with its stream or session).
struct Gone<'d> {
    durable: &'d Remembered,
    id: smol_str::SmolStr,
    armed: bool,
}

impl Gone<'_> {
    /// Rejects the call by [`GONE_BY`] and settles it; `Some` with the
    /// decision someone made first, which stands.
    async fn reject(&mut self) -> Result<Option<Decided>, JournalError> {
        self.armed = false;
        let gone = Decision::Reject(GONE_TEXT.to_owned());
        let rejected = question::decide(&*self.durable.memory, &self.durable.run_id, &self.id, gone, GONE_BY).await;
        match rejected {
            Ok(_) | Err(JournalError::ApprovalExpired { .. }) => {
                settle_in_memory(self.durable, &self.id).await;
                Ok(None)
            }
            Err(JournalError::AlreadyDecided { by, .. }) if by == EXPIRED_BY || by == GONE_BY => {
                settle_in_memory(self.durable, &self.id).await;
                Ok(None)
            }
            Err(JournalError::AlreadyDecided { .. }) => decided(self.durable, &self.id).await,
            Err(error) => Err(error),
        }
    }
}

impl Drop for Gone<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        // The wait was dropped mid-way: reject the call on the runtime, as
        // `reject` would, since no one here can carry a decision out.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (journal, run_id, id) = (self.durable.memory.clone(), self.durable.run_id.clone(), self.id.clone());
        runtime.spawn(async move {
            match question::decide(&*journal, &run_id, &id, Decision::Reject(GONE_TEXT.to_owned()), GONE_BY).await {
                Ok(_) | Err(JournalError::AlreadyDecided { .. } | JournalError::ApprovalExpired { .. }) => {}
                Err(error) => {
                    tracing::error!(run_id = %Escaped(&run_id), call_id = %Escaped(&id), error = %Escaped(&error), "a call whose client went away could not be journaled as rejected");
                }
            }
            if let Err(error) = journal.settle(&run_id, &id).await {
                tracing::error!(call_id = %Escaped(&id), error = %Escaped(&error), "a settled call could not be journaled as settled");
            }
        });
    }
}

/// The decision recorded on a call of this session's run; `None` while
/// there is none.
async fn decided(durable: &Remembered, id: &str) -> Result<Option<Decided>, JournalError> {
    let approval = durable.memory.approval(&durable.run_id, id).await?;
    Ok(approval.and_then(|approval| approval.decided))
}

async fn settle_in_memory(durable: &Remembered, id: &str) {
    if let Err(error) = durable.memory.settle(&durable.run_id, id).await {
        tracing::error!(call_id = %Escaped(id), error = %Escaped(&error), "a settled call could not be journaled as settled");
    }
}

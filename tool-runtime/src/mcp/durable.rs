//! Approvals of a durable session ([`McpServer::with_journal`](super::McpServer::with_journal)):
//! a pending call is parked in the journal, and waits for the first of the
//! client's answer (elicitation, where the client supports it) and a
//! decision made out of band by any process, within the approval's time to
//! live. The client's answer is journaled as a decision; when another
//! process decided first, its decision stands.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::RoleServer;

use super::session::{approval_message, McpSession, Waiting};
use crate::call::{Arguments, PendingCall};
use crate::durable::Durable;
use crate::error_report::{ErrorKind, ErrorReport};
use crate::error_report::Escaped;
use crate::journal::{Decision, JournalError, ParkedCall};
use crate::result::{lines, CallResult, ResultKind};

/// How often a waiting call looks for a decision made out of band.
const POLL: Duration = Duration::from_millis(200);

/// Waits for a human's decision on `pending`, from the client or from any
/// process, and applies it.
pub(super) async fn ask<App: Send + Sync + 'static>(
    session: &McpSession<App>,
    durable: &Durable,
    pending: PendingCall<App>,
    context: &RequestContext<RoleServer>,
) -> CallResult {
    let registry = &session.server().registry;
    let (tool, id) = (pending.tool().clone(), pending.id().clone());
    let _waiting = match Waiting::enter(session, context) {
        Ok(waiting) => waiting,
        Err(refused) => return CallResult::failure(tool, id, ResultKind::Denied, &refused),
    };
    let ttl = registry.approval_ttl();
    let now = SystemTime::now();
    let parked = ParkedCall {
        run_id: durable.run_id.to_string(),
        call_id: id.to_string(),
        tool: tool.to_string(),
        input: pending.arguments(),
        user_id: context_user(session, context),
        parked_at: now,
        expires_at: now.checked_add(ttl),
    };
    if let Err(error) = durable.journal.park(&parked).await {
        let detail = format!("the pending call could not be journaled, so it was not run: {error}");
        registry.report(ErrorReport::new(tool.as_str(), id.as_str(), ErrorKind::Journal, "JOURNAL", detail));
        return CallResult::failure(tool, id, ResultKind::Rejected, &lines::rejected(Some("The approval could not be recorded, so the call was not run.")));
    }
    let by_client = async {
        if !context.peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
            return std::future::pending().await;
        }
        let ask = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: approval_message(&pending, registry.definition(&tool)),
            requested_schema: ElicitationSchema::new(BTreeMap::new()),
        };
        let decision = match context.peer.create_elicitation(ask).await {
            Ok(answer) if answer.action == ElicitationAction::Accept => Decision::Approve,
            Ok(_) => Decision::Reject(String::new()),
            Err(error) => {
                tracing::warn!(tool = %Escaped(&tool), call_id = %Escaped(&id), error = %Escaped(&error), "the approval request failed; waiting for a decision out of band");
                return std::future::pending().await;
            }
        };
        let by = context_user(session, context).unwrap_or_else(|| "mcp-client".to_owned());
        match durable.journal.decide(&id, decision.clone(), &by).await {
            Ok(_) => Ok(decision),
            // Another process decided first: its decision stands.
            Err(JournalError::AlreadyDecided { .. }) => decided(durable, &id).await,
            Err(error) => Err(error),
        }
    };
    let out_of_band = async {
        loop {
            tokio::time::sleep(POLL).await;
            match decided(durable, &id).await {
                Ok(decision) => return Ok(decision),
                Err(JournalError::CallNotStarted { .. }) => continue,
                Err(error) => return Err(error),
            }
        }
    };
    let decision = tokio::select! {
        decision = by_client => decision,
        decision = out_of_band => decision,
        () = tokio::time::sleep(ttl) => {
            tracing::info!(tool = %Escaped(&tool), call_id = %Escaped(&id), "no decision on the approval in time");
            let _ = durable.journal.expire(SystemTime::now(), &lines::approval_expired(ttl).model_line()).await;
            settle(durable, &id).await;
            return CallResult::failure(tool, id, ResultKind::Rejected, &lines::approval_expired(ttl));
        }
        () = context.ct.cancelled() => {
            return CallResult::failure(tool, id, ResultKind::Cancelled, &lines::cancelled());
        }
    };
    let result = match decision {
        Ok(Decision::Approve) => registry.approve(pending).await,
        Ok(Decision::ApproveEdited(input)) => registry.approve_with(pending, Arguments::Value(input)).await,
        Ok(Decision::Reject(text)) => registry.reject(pending, Some(text.as_str()).filter(|text| !text.is_empty())),
        Err(error) => {
            registry.report(ErrorReport::new(tool.as_str(), id.as_str(), ErrorKind::Journal, "JOURNAL", error.to_string()));
            registry.reject(pending, Some("The approval could not be read, so the call was not run."))
        }
    };
    settle(durable, &id).await;
    result
}

/// The decision recorded on a call; `CallNotStarted` while there is none.
async fn decided(durable: &Durable, id: &str) -> Result<Decision, JournalError> {
    match durable.journal.approval(id).await? {
        Some(approval) => match approval.decided {
            Some(decided) => Ok(decided.decision),
            None => Err(JournalError::CallNotStarted { effect_key: id.to_owned() }),
        },
        None => Err(JournalError::CallNotStarted { effect_key: id.to_owned() }),
    }
}

async fn settle(durable: &Durable, id: &str) {
    if let Err(error) = durable.journal.settle(id).await {
        tracing::error!(call_id = %Escaped(id), error = %Escaped(&error), "a settled call could not be journaled as settled");
    }
}

fn context_user<App: Send + Sync + 'static>(session: &McpSession<App>, context: &RequestContext<RoleServer>) -> Option<String> {
    session.caller(&context.extensions).id.clone()
}

//! Approvals at revision 2026-07-28, as multi round-trip requests: a call
//! that needs a human's approval answers `input_required`, asking the
//! client to elicit an accept or a decline (form mode, nothing to fill in)
//! and handing it a sealed `requestState` (`state.rs`); the client retries
//! the same call with the answer (`inputResponses["approval"]`) and that
//! state, on any instance that holds the key.
//!
//! The retried call goes through the pipeline again (guard, validation,
//! policy): a policy that now allows or denies it is followed; one that
//! still asks for approval is carried out as the human decided. With a
//! journal, the waiting call is parked there before the answer goes out,
//! the client's answer is journaled as its decision, and of that answer and
//! a decision made out of band ([`ApprovalRecords::decide`](crate::journal::ApprovalRecords::decide))
//! exactly one wins and is carried out; the call's effect is journaled too,
//! so it runs at most once. A state that does not open, or an approval
//! already answered, is refused (`REQUEST_STATE_REFUSED`) and runs nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolResponse, ClientCapabilities, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequiredResult, InputResponses,
};
use rmcp::service::RequestContext;
use serde_json::Value;

use super::answers::{APPROVAL_INPUT, complete, offered};
use super::state::{Sealed, binding};
use crate::call::{CallOutcome, PendingCall};
use crate::context::UserContext;
use crate::error::ToolError;
use crate::error_report::Escaped;
use crate::mcp::McpServer;
use crate::mcp::session::{approval_message, approval_unavailable};
use crate::result::{CallResult, ResultKind};

/// Who a decision the client's answer made is recorded as, in the journal.
#[cfg(feature = "journal")]
const DECIDED_BY_CLIENT: &str = "mcp-client";

/// Answers a call that needs approval with `input_required`: the human is
/// asked through the client, and the call waits nowhere but in the sealed
/// state (and, with a journal, its parked row).
pub(super) async fn ask<App: Send + Sync + 'static>(
    server: &McpServer<App>,
    pending: PendingCall<App>,
    user: &UserContext,
    context: &RequestContext<RoleServer>,
) -> CallToolResponse {
    if !can_elicit(context.client_capabilities()) {
        tracing::info!(tool = %Escaped(pending.tool()), call_id = %Escaped(pending.id()), "needs approval; the request declares no elicitation");
        let refused = CallResult::failure(pending.tool().clone(), pending.id().clone(), ResultKind::Rejected, &approval_unavailable());
        return complete(server, refused);
    }
    let ttl = server.registry.approval_ttl();
    // The arguments as the client sent them, which its retry sends again.
    let arguments = &pending.arguments();
    let sealed = Sealed { run_id: run_id_for(pending.id()), call_id: pending.id().to_string() };
    #[cfg(feature = "journal")]
    if let Some(journal) = &server.journal
        && let Err(error) = park(journal, &sealed, pending.tool(), arguments, user, ttl).await
    {
        tracing::error!(call_id = %Escaped(pending.id()), error = %Escaped(&error), "the waiting call could not be parked in the journal");
        let refused = ToolError::new(
            503,
            "APPROVAL_NOT_RECORDED",
            "This call needs approval, which could not be recorded, so it was not run. Try again in a moment.",
        );
        return complete(server, CallResult::failure(pending.tool().clone(), pending.id().clone(), ResultKind::Rejected, &refused));
    }
    let state = server.sealing.seal(&sealed, &binding(pending.tool(), user.id.as_deref(), arguments), ttl);
    let ask = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: approval_message(&pending, server.registry.definition(pending.tool())),
        // Nothing to fill in: accepting or declining is the answer.
        requested_schema: ElicitationSchema::new(BTreeMap::new()),
    };
    let requests = BTreeMap::from([(APPROVAL_INPUT.to_owned(), InputRequest::Elicitation(ElicitRequest::new(ask)))]);
    CallToolResponse::InputRequired(InputRequiredResult::new(Some(requests), Some(state)))
}

/// Whether the request's client declared form elicitation (a bare
/// `elicitation` capability means form, as in the revisions before).
fn can_elicit(capabilities: Option<ClientCapabilities>) -> bool {
    capabilities.and_then(|capabilities| capabilities.elicitation).is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

/// The run an approval of this revision is parked under: one of its own
/// (the call id is unique across processes, `ids`).
fn run_id_for(call_id: &str) -> String {
    format!("mcp-mrtr-{call_id}")
}

#[cfg(feature = "journal")]
async fn park(
    journal: &crate::journal::Journal,
    sealed: &Sealed,
    tool: &str,
    arguments: &Value,
    user: &UserContext,
    ttl: std::time::Duration,
) -> Result<(), crate::journal::JournalError> {
    let now = std::time::SystemTime::now();
    let call = crate::journal::ParkedCall {
        run_id: sealed.run_id.clone(),
        call_id: sealed.call_id.clone(),
        tool: tool.to_owned(),
        input: arguments.clone(),
        user_id: user.id.clone(),
        parked_at: now,
        expires_at: Some(now + ttl),
    };
    journal.approvals().park(&call).await
}

/// What the human decided, as the retried call carries it out.
enum Answer {
    Approve,
    Reject(Option<String>),
}

/// The second round: the state opened against the retried call, the
/// answer read, recorded once (journal, or this process), and carried out.
pub(super) async fn resume<App: Send + Sync + 'static>(
    server: &McpServer<App>,
    tool: &str,
    arguments: Value,
    (state, responses): (Option<String>, Option<InputResponses>),
    user: &Arc<UserContext>,
    context: &RequestContext<RoleServer>,
) -> CallToolResponse {
    let Some(state) = state.as_deref() else {
        return refused(server, tool, "inputResponses came without the requestState they answer");
    };
    let sealed = match server.sealing.open(state, &binding(tool, user.id.as_deref(), &arguments)) {
        Ok(sealed) => sealed,
        Err(error) => return refused(server, tool, &error.to_string()),
    };
    let answer = responses.as_ref().and_then(|responses| responses.get(APPROVAL_INPUT));
    let Some(answer) = answer.and_then(|answer| serde_json::from_value::<ElicitResult>(answer.clone()).ok()) else {
        return refused(server, tool, "no answer to the approval request in inputResponses");
    };
    let answer = match answer.action {
        ElicitationAction::Accept => Answer::Approve,
        _ => Answer::Reject(None),
    };
    let answer = match record(server, &sealed, answer, user).await {
        Ok(answer) => answer,
        Err(response) => return response,
    };
    carry_out(server, &sealed, tool, arguments, answer, user, context).await
}

/// Records the client's answer as the approval's one decision; the answer
/// to carry out (another decider's, when one came first).
async fn record<App: Send + Sync + 'static>(
    server: &McpServer<App>,
    sealed: &Sealed,
    answer: Answer,
    user: &UserContext,
) -> Result<Answer, CallToolResponse> {
    let ttl = server.registry.approval_ttl();
    #[cfg(feature = "journal")]
    if let Some(journal) = &server.journal {
        return record_in_journal(server, journal, sealed, answer, user).await;
    }
    let _ = user;
    match server.sealing.answer_once(&sealed.call_id, ttl) {
        true => Ok(answer),
        false => Err(refused(server, "", "this approval was answered already (a replayed requestState)")),
    }
}

#[cfg(feature = "journal")]
async fn record_in_journal<App: Send + Sync + 'static>(
    server: &McpServer<App>,
    journal: &crate::journal::Journal,
    sealed: &Sealed,
    answer: Answer,
    user: &UserContext,
) -> Result<Answer, CallToolResponse> {
    use crate::journal::{Decision, JournalError};
    let decision = match &answer {
        Answer::Approve => Decision::Approve,
        Answer::Reject(_) => Decision::Reject(crate::result::lines::rejected(None).user_message().to_owned()),
    };
    let by = format!("{DECIDED_BY_CLIENT}:{}", user.id.as_deref().unwrap_or(""));
    match journal.approvals().decide(&sealed.run_id, &sealed.call_id, decision, &by).await {
        Ok(_) => Ok(answer),
        Err(JournalError::AlreadyDecided { by, .. }) if by.starts_with(DECIDED_BY_CLIENT) => {
            Err(refused(server, "", "this approval was answered already (a replayed requestState)"))
        }
        Err(JournalError::AlreadyDecided { by, .. }) => {
            // Decided out of band first: that decision is the one carried out.
            let decided = journal.approvals().get(&sealed.run_id, &sealed.call_id).await.ok().flatten().and_then(|approval| approval.decided);
            tracing::info!(call_id = %Escaped(&sealed.call_id), by = %Escaped(&by), "the approval was decided before the client answered");
            match decided.map(|decided| decided.decision) {
                Some(Decision::Reject(text)) => Ok(Answer::Reject(Some(text))),
                Some(_) => Ok(Answer::Approve),
                None => Err(refused(server, "", "the journal lost the approval's decision")),
            }
        }
        Err(JournalError::ApprovalExpired { .. }) => Err(refused(server, "", "the approval expired before the answer came")),
        Err(error) => {
            tracing::error!(call_id = %Escaped(&sealed.call_id), error = %Escaped(&error), "the client's answer could not be journaled");
            let failed = ToolError::new(
                503,
                "APPROVAL_NOT_RECORDED",
                "The answer to this approval could not be recorded, so the call was not run. Retry the call with the same answer in a moment.",
            );
            Err(complete(server, CallResult::failure("".into(), sealed.call_id.as_str().into(), ResultKind::Rejected, &failed)))
        }
    }
}

/// Runs the call again under the approval's call id and carries out
/// `answer` when the pipeline still parks it.
async fn carry_out<App: Send + Sync + 'static>(
    server: &McpServer<App>,
    sealed: &Sealed,
    tool: &str,
    arguments: Value,
    answer: Answer,
    user: &Arc<UserContext>,
    context: &RequestContext<RoleServer>,
) -> CallToolResponse {
    let names = offered(server, user).into_iter().map(|def| def.name.clone()).collect();
    let call = server
        .registry
        .call(&server.app, tool, arguments)
        .user(user.clone())
        .cancellation(&context.ct)
        .offered(names)
        .call_id(sealed.call_id.as_str());
    #[cfg(feature = "journal")]
    let call = match &server.journal {
        Some(journal) => call.remembered(crate::memory::Remembered::durable(Arc::new(journal.clone()), sealed.run_id.as_str())),
        None => call,
    };
    let result = match (call.await, answer) {
        (CallOutcome::Done(result), _) => result,
        (CallOutcome::NeedsApproval(pending), Answer::Approve) => server.registry.approve(pending).await,
        (CallOutcome::NeedsApproval(pending), Answer::Reject(text)) => server.registry.reject(pending, text.as_deref()),
    };
    #[cfg(feature = "journal")]
    if let Some(journal) = &server.journal
        && let Err(error) = journal.approvals().settle(&sealed.run_id, &sealed.call_id).await
    {
        tracing::warn!(call_id = %Escaped(&sealed.call_id), error = %Escaped(&error), "the approval could not be marked settled");
    }
    complete(server, result)
}

/// The refusal of a retried call whose state or answer is not good: one
/// line for every reason (`why` goes to the log only, as a sealed state's
/// failures must not tell a forger which check failed).
fn refused<App: Send + Sync + 'static>(server: &McpServer<App>, tool: &str, why: &str) -> CallToolResponse {
    tracing::warn!(tool = %Escaped(tool), why = %Escaped(why), "refused a requestState");
    let error = ToolError::bad_request(
        "REQUEST_STATE_REFUSED",
        "This call's requestState is not valid for it (altered, made for another call or user, expired, or already \
         answered), so nothing was run. Call the tool again without requestState to ask for approval again.",
    )
    .no_retry();
    complete(server, CallResult::failure(tool.into(), crate::ids::fresh_call_id(), ResultKind::Rejected, &error))
}

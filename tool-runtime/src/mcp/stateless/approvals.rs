//! Approvals at revision 2026-07-28, as multi round-trip requests: a call
//! that needs a human's approval answers `input_required`, asking the
//! client to elicit an accept or a decline (form mode, nothing to fill in)
//! and handing it a sealed `requestState` (`state.rs`); the client retries
//! the same call with the answer (`inputResponses["approval"]`) and that
//! state.
//!
//! Where an approval is kept:
//!
//! - **With a journal**, the waiting call is parked there before the
//!   answer goes out, under a run of its own (`mcp-mrtr-<call id>`, a call
//!   id the server made), or, for a call with an idempotency key, under the
//!   caller's keyed run and the key (`retries.rs`), so that a key the
//!   client chose never names another caller's approval. The retried call
//!   must be the parked one: its user, tool and arguments are compared with
//!   the row, whatever the state names. The client's answer is journaled as
//!   the call's one decision; of it and a decision made out of band
//!   ([`question::decide`](crate::question::decide),
//!   the inbox) exactly one wins and is carried out as it was made (an
//!   edited input runs edited); the call's effect is journaled too, so it
//!   runs at most once, and the approval is settled once carried out. Any
//!   instance finishes it.
//! - **Without one**, the approval lives in its state and in the process
//!   that asked, which alone finishes it (`state.rs`).
//!
//! Either way the waiting calls are capped as a session's are: per user and
//! in all (`McpServer::with_max_waiting_approvals_per_user`,
//! `with_max_waiting_approvals`), counted in the journal when there is one
//! (undecided rows of this revision's runs, on every instance), else in the
//! process. A caller the authentication hook accepted without naming a
//! user cannot be asked: nothing would tell their approvals from another
//! anonymous caller's.
//!
//! The retried call goes through the pipeline again (guard, validation,
//! policy): a policy that now allows or denies it is followed; one that
//! still asks for approval is carried out as decided. A state that does not
//! open, or an approval already answered, is refused
//! (`REQUEST_STATE_REFUSED`) and runs nothing; but a keyed call re-sent
//! with the answer it was already given (its client lost the response)
//! reads the journaled result.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolResponse, ClientCapabilities, ElicitRequest, ElicitResult, ElicitationAction, InputRequest, InputRequiredResult, InputResponses,
};
use rmcp::service::RequestContext;
use serde_json::Value;

use super::Stateless;
use super::state::{Sealed, binding};
use crate::approval::Carrier;
use crate::call::{CallOutcome, PendingCall};
use crate::context::UserContext;
use crate::error::ToolError;
use crate::error_report::Escaped;
use crate::mcp::approval::{approval_message, approval_unavailable, elicitation};
use crate::mcp::caller::Caller;
use crate::mcp::server::Server;
use crate::mcp::{results, tool_list};
use crate::memory::{Approval, Decision, JournalError, ParkedCall, Question, RunMemory};
use crate::result::{CallResult, ResultKind};
use crate::steps::Steps;

/// The key of the elicitation in `inputRequests` and of its answer in
/// `inputResponses`.
pub(crate) const APPROVAL_INPUT: &str = "approval";

/// Who a decision the client's answer made is recorded as, in the memory.
const DECIDED_BY_CLIENT: &str = "mcp-client";

/// Answers a call that needs approval with `input_required`: the human is
/// asked through the client, and the call waits nowhere but in the sealed
/// state (and its parked row, or its place under this process's caps).
/// `keyed`: the call carries an idempotency key (its id), and is parked
/// under its caller's keyed run.
pub(super) async fn ask<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    pending: PendingCall<App>,
    caller: &Caller,
    keyed: bool,
    context: &RequestContext<RoleServer>,
) -> CallToolResponse {
    let refuse = |error: &ToolError| -> CallToolResponse {
        results::answer(server, CallResult::failure(pending.tool().clone(), pending.id().clone(), ResultKind::Rejected, error)).into()
    };
    if !can_elicit(context.client_capabilities()) {
        tracing::info!(tool = %Escaped(pending.tool()), call_id = %Escaped(pending.id()), "needs approval; the request declares no elicitation");
        return refuse(&approval_unavailable());
    }
    if caller.nameless {
        return refuse(&approval_nameless());
    }
    let ttl = server.registry.approval_ttl();
    // The arguments as the client sent them, which its retry sends again.
    let arguments = pending.arguments();
    let (user, id) = (caller.user.id.as_deref(), pending.id().as_str());
    let sealed = match (keyed, server.durable_memory().is_some()) {
        (true, _) => Sealed { run_id: super::retries::run_id(&caller.user), call_id: id.to_owned(), ..Sealed::default() },
        (false, true) => Sealed { run_id: run_id_for(id), call_id: id.to_owned(), ..Sealed::default() },
        (false, false) => {
            let instance = Some(stateless.sealing.instance().to_owned());
            Sealed { run_id: run_id_for(id), call_id: id.to_owned(), instance, ..Sealed::default() }
        }
    };
    let kept = match server.durable_memory() {
        Some(memory) => park(server, &**memory, &sealed, (pending.tool(), &arguments), user, ttl).await,
        None => stateless.sealing.ask(id, user, ttl, &server.waiting),
    };
    if let Err(error) = kept {
        return refuse(&error);
    }
    let state = stateless.sealing.seal(&sealed, &binding(pending.tool(), user, &arguments), ttl);
    let ask = elicitation(approval_message(&pending, server.registry.definition(pending.tool())));
    let requests = BTreeMap::from([(APPROVAL_INPUT.to_owned(), InputRequest::Elicitation(ElicitRequest::new(ask)))]);
    CallToolResponse::InputRequired(InputRequiredResult::new(Some(requests), Some(state)))
}

/// Whether the request's client declared form elicitation (a bare
/// `elicitation` capability means form, as in the revisions before).
fn can_elicit(capabilities: Option<ClientCapabilities>) -> bool {
    capabilities.and_then(|capabilities| capabilities.elicitation).is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

/// The line the model reads when a call needs approval and its caller has
/// no name the server could keep the approval under.
fn approval_nameless() -> ToolError {
    ToolError::forbidden(
        "APPROVAL_UNAVAILABLE",
        "This call needs a human's approval, which this server can only ask for a caller it knows by name (its \
         authentication named no user), so it was not run. Tell the user it needs approval and cannot be done here.",
    )
    .no_retry()
}

/// The run an approval of a call without a key is parked under: one of its
/// own (the call id is one the server made, unique across processes, `ids`).
pub(super) fn run_id_for(call_id: &str) -> String {
    format!("mcp-mrtr-{call_id}")
}

/// Whether `parked` is the call `tool` with `arguments` of `user`: what a
/// retry or a re-sent keyed call must be to finish it.
fn same_call(parked: &crate::memory::ParkedCall, tool: &str, user: Option<&str>, arguments: &Value) -> bool {
    use super::state::canonical;
    parked.tool == tool && parked.user_id.as_deref() == user && canonical(&parked.input) == canonical(arguments)
}

/// Parks the waiting call in the server's durable `memory`, within the
/// caps; a keyed call re-sent while it waits finds its row and is asked
/// again.
async fn park<App: Send + Sync + 'static>(
    server: &Server<App>,
    memory: &dyn RunMemory,
    sealed: &Sealed,
    (tool, arguments): (&str, &Value),
    user: Option<&str>,
    ttl: std::time::Duration,
) -> Result<(), ToolError> {
    let not_recorded = |error: &JournalError| {
        tracing::error!(call_id = %Escaped(&sealed.call_id), error = %Escaped(error), "the waiting call could not be parked in the journal");
        ToolError::new(
            503,
            "APPROVAL_NOT_RECORDED",
            "This call needs approval, which could not be recorded, so it was not run. Try again in a moment.",
        )
    };
    let (all, of_user) = memory.waiting_in(&[STATELESS_RUNS, super::retries::KEYED_RUNS], user).await.map_err(|error| not_recorded(&error))?;
    server.waiting.admits(all, of_user, user)?;
    let Some(definition) = server.registry.definition(tool) else {
        return Err(not_recorded(&JournalError::Refused { field: "tool", why: "not in the registry".into() }));
    };
    let question = Question::approval(definition, arguments);
    let call = ParkedCall::new(&sealed.run_id, &sealed.call_id, definition, arguments.clone(), question)
        .for_user(user.map(str::to_owned))
        .expiring(Some(ttl));
    match crate::question::park(memory, &call).await {
        Ok(()) => Ok(()),
        Err(JournalError::AlreadyParked { .. }) => match memory.approval(&sealed.run_id, &sealed.call_id).await {
            Ok(Some(approval)) if same_call(&approval.call, tool, user, arguments) => Ok(()),
            Ok(_) => Err(crate::result::lines::call_id_reused(&sealed.call_id)),
            Err(error) => Err(not_recorded(&error)),
        },
        Err(error) => Err(not_recorded(&error)),
    }
}

/// The prefix of the runs that calls without a key are parked under.
const STATELESS_RUNS: &str = "mcp-mrtr-";

/// The second round: the state opened against the retried call, the
/// answer read, recorded once (journal, or this process), and carried out.
pub(super) async fn resume<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    tool: &str,
    arguments: Value,
    (state, responses): (Option<String>, Option<InputResponses>),
    caller: &Caller,
    context: &RequestContext<RoleServer>,
) -> CallToolResponse {
    let Some(state) = state.as_deref() else {
        return refused(server, tool, "inputResponses came without the requestState they answer");
    };
    if caller.nameless {
        return refused(server, tool, "a caller without a user id cannot answer an approval");
    }
    let user = caller.user.id.as_deref();
    let sealed = match stateless.sealing.open(state, &binding(tool, user, &arguments)) {
        Ok(sealed) => sealed,
        Err(error) => return refused(server, tool, &error.to_string()),
    };
    let answer = responses.as_ref().and_then(|responses| responses.get(APPROVAL_INPUT));
    let Some(answer) = answer.and_then(|answer| serde_json::from_value::<ElicitResult>(answer.clone()).ok()) else {
        return refused(server, tool, "no answer to the approval request in inputResponses");
    };
    let answer = match answer.action {
        ElicitationAction::Accept => Decision::Approve,
        _ => Decision::Reject(String::new()),
    };
    let recorded = match record(server, stateless, &sealed, answer, (tool, &arguments), caller).await {
        Ok(recorded) => recorded,
        Err(response) => return response,
    };
    carry_out(server, &sealed, tool, arguments, recorded, &caller.user, context).await
}

/// A decision to carry out: as the journal holds it (its row, decided), or,
/// without a journal, as this process recorded it.
enum Recorded {
    Journaled(Box<Approval>),
    InProcess(Decision),
}

/// Records the client's answer as the approval's one decision; the
/// decision to carry out (another decider's, when one came first).
async fn record<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    sealed: &Sealed,
    answer: Decision,
    call: (&str, &Value),
    caller: &Caller,
) -> Result<Recorded, CallToolResponse> {
    if let Some(memory) = server.durable_memory() {
        return record_durably(server, &**memory, sealed, answer, call, caller).await;
    }
    if sealed.instance.as_deref() != Some(stateless.sealing.instance()) {
        return Err(refused(server, call.0, "the approval was asked by another process, and no journal shares it"));
    }
    match stateless.sealing.answer_once(&sealed.call_id, server.registry.approval_ttl()) {
        true => Ok(Recorded::InProcess(answer)),
        false => Err(refused(server, call.0, "this approval was answered already (a replayed requestState)")),
    }
}

/// Records the client's answer in the server's durable `memory`, where
/// the state's row must be this caller's call.
async fn record_durably<App: Send + Sync + 'static>(
    server: &Server<App>,
    memory: &dyn RunMemory,
    sealed: &Sealed,
    answer: Decision,
    (tool, arguments): (&str, &Value),
    caller: &Caller,
) -> Result<Recorded, CallToolResponse> {
    let user = caller.user.id.as_deref();
    let failed = |error: &JournalError| {
        tracing::error!(call_id = %Escaped(&sealed.call_id), error = %Escaped(error), "the client's answer could not be journaled");
        let failed = ToolError::new(
            503,
            "APPROVAL_NOT_RECORDED",
            "The answer to this approval could not be recorded, so the call was not run. Retry the call with the same answer in a moment.",
        );
        results::answer(server, CallResult::failure(tool.into(), sealed.call_id.as_str().into(), ResultKind::Rejected, &failed)).into()
    };
    // The state names a row; the row must be this caller's call.
    match memory.approval(&sealed.run_id, &sealed.call_id).await {
        Ok(Some(approval)) if same_call(&approval.call, tool, user, arguments) => {}
        Ok(_) => return Err(refused(server, tool, "the requestState names an approval of another call or user")),
        Err(error) => return Err(failed(&error)),
    }
    let answer = match answer {
        Decision::Reject(_) => Decision::Reject(crate::result::lines::rejected(None).user_message().to_owned()),
        answer => answer,
    };
    let by = format!("{DECIDED_BY_CLIENT}:{}", user.unwrap_or(""));
    match crate::question::decide(memory, &sealed.run_id, &sealed.call_id, answer, &by).await {
        Ok(approval) => Ok(Recorded::Journaled(Box::new(approval))),
        // The same client answered before: a replay, unless the call is
        // keyed, whose re-sent request reads what its first one did.
        Err(JournalError::AlreadyDecided { by: first, .. }) if first == by && sealed.run_id != super::retries::run_id(&caller.user) => {
            Err(refused(server, tool, "this approval was answered already (a replayed requestState)"))
        }
        Err(JournalError::AlreadyDecided { by: first, .. }) => {
            // Decided first (out of band, or by this client before): that
            // decision is the one carried out, as it was made.
            tracing::info!(call_id = %Escaped(&sealed.call_id), by = %Escaped(&first), "the approval was decided before this answer");
            match memory.approval(&sealed.run_id, &sealed.call_id).await {
                Ok(Some(approval @ Approval { decided: Some(_), .. })) => Ok(Recorded::Journaled(Box::new(approval))),
                Ok(_) => Err(refused(server, tool, "the journal lost the approval's decision")),
                Err(error) => Err(failed(&error)),
            }
        }
        Err(JournalError::ApprovalExpired { .. }) => Err(refused(server, tool, "the approval expired before the answer came")),
        Err(error) => Err(failed(&error)),
    }
}

/// Runs the call again under the approval's run and call id and carries
/// out `decision` when the pipeline still parks it; with a journal, the
/// approval is then settled.
async fn carry_out<App: Send + Sync + 'static>(
    server: &Server<App>,
    sealed: &Sealed,
    tool: &str,
    arguments: Value,
    recorded: Recorded,
    user: &Arc<UserContext>,
    context: &RequestContext<RoleServer>,
) -> CallToolResponse {
    let names = tool_list::restriction(server, &Steps::default(), user, false, tool);
    let call = server
        .registry
        .call(&server.app, tool, arguments)
        .user(user.clone())
        .cancellation(&context.ct)
        .offered(names)
        .call_id(sealed.call_id.as_str());
    let call = match server.durable_memory() {
        Some(memory) => call.remembered(crate::memory::Remembered::durable(memory.clone(), sealed.run_id.as_str())),
        None => call,
    };
    let tools = server.registry.tools();
    let result = match (call.await, recorded) {
        (CallOutcome::Done(result), _) => result,
        // The journal accepted the decision: its clock decided it came in
        // time, and the permit is checked against the call.
        (CallOutcome::NeedsApproval(pending), Recorded::Journaled(approval)) => {
            let carrier = Carrier { principal: user.id.as_deref(), timed: false };
            match crate::approval::carry_out(tools, pending, &approval, carrier).await {
                CallOutcome::Done(result) => result,
                CallOutcome::NeedsApproval(pending) => pending.pending_result(),
            }
        }
        (CallOutcome::NeedsApproval(pending), Recorded::InProcess(Decision::Approve)) => server.registry.approve(pending).await,
        (CallOutcome::NeedsApproval(pending), Recorded::InProcess(Decision::Reject(text))) => {
            server.registry.reject(pending, Some(text.as_str()).filter(|text| !text.is_empty()))
        }
        (CallOutcome::NeedsApproval(pending), Recorded::InProcess(_)) => server.registry.reject(pending, None),
    };
    if let Some(memory) = server.durable_memory()
        && let Err(error) = memory.settle(&sealed.run_id, &sealed.call_id).await
    {
        tracing::warn!(call_id = %Escaped(&sealed.call_id), error = %Escaped(&error), "the approval could not be marked settled");
    }
    results::answer(server, result).into()
}

/// The refusal of a retried call whose state or answer is not good: one
/// line for every reason (`why` goes to the log only, as a sealed state's
/// failures must not tell a forger which check failed).
fn refused<App: Send + Sync + 'static>(server: &Server<App>, tool: &str, why: &str) -> CallToolResponse {
    tracing::warn!(tool = %Escaped(tool), why = %Escaped(why), "refused a requestState");
    let error = ToolError::bad_request(
        "REQUEST_STATE_REFUSED",
        "This call's requestState is not valid for it (altered, made for another call or user, expired, or already \
         answered), so nothing was run. Call the tool again without requestState to ask for approval again.",
    )
    .no_retry();
    results::answer(server, CallResult::failure(tool.into(), crate::ids::fresh_call_id(), ResultKind::Rejected, &error)).into()
}

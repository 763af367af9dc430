//! A task whose call needs a human's approval: its call is parked in the
//! server's memory (run `mcp-task:<task id>`, call `<task id>`), the task reads
//! `input_required` with a form elicitation, and `tasks/update` carries the
//! human's answer, recorded as the call's one decision (a decision made
//! out of band first wins, and the task moves on by it at its next
//! `tasks/get`). The call then runs again through the pipeline, which
//! parks it again, and the decision is carried out; its effect is kept in
//! the memory, so it runs at most once.

use std::collections::BTreeMap;

use rmcp::ErrorData;
use rmcp::model::{ElicitRequest, ElicitResult, ElicitationAction, InputRequest, InputRequests, InputResponses};

use super::approvals::APPROVAL_INPUT;
use crate::approval::Carrier;
use crate::call::{CallOutcome, PendingCall};
use crate::context::UserContext;
use crate::error_report::Escaped;
use crate::mcp::approval::elicitation;
use crate::mcp::server::Server;
use crate::memory::{Decision, JournalError, ParkedCall, Question, RunMemory, TaskRecord, TaskState};
use crate::result::CallResult;

/// The run a task's call belongs to in the server's memory.
pub(super) fn run_id(task_id: &str) -> String {
    format!("mcp-task:{task_id}")
}

/// What the runner does with a task's call that needs approval: the result
/// to end the task with, once decided; `None` while it waits (parked now,
/// or still), the task then reading `input_required`.
pub(super) async fn decided<App: Send + Sync + 'static>(
    server: &Server<App>,
    task: &TaskRecord,
    pending: PendingCall<App>,
) -> Result<Option<CallResult>, JournalError> {
    let run_id = run_id(&task.task_id);
    let memory = &*server.memory;
    match memory.approval(&run_id, &task.task_id).await? {
        // Decided: carried out as the memory holds it (its clock decided
        // it came in time), its permit checked against the call.
        Some(approval) if approval.decided.is_some() => {
            let carrier = Carrier { principal: task.user_id.as_deref(), timed: false };
            return Ok(Some(match crate::approval::carry_out(server.registry.tools(), pending, &approval, carrier).await {
                CallOutcome::Done(result) => result,
                CallOutcome::NeedsApproval(pending) => pending.pending_result(),
            }));
        }
        Some(_) => {}
        None => {
            let Some(definition) = server.registry.definition(&task.tool) else { return Ok(Some(server.registry.reject(pending, None))) };
            let question = Question::approval(definition, &task.input);
            let call = ParkedCall::new(&run_id, &task.task_id, definition, task.input.clone(), question)
                .for_user(task.user_id.clone())
                .expiring(Some(server.registry.approval_ttl()));
            crate::question::park(memory, &call).await?;
        }
    }
    let store = server.tasks().expect("a task runs only where its memory keeps tasks");
    store.move_task(&task.task_id, TaskState::InputRequired, Some("waiting for a human's approval"), None).await?;
    Ok(None)
}

/// Whether the parked call of a task waiting for input was decided (out of
/// band, or by an answer another instance took).
pub(super) async fn is_decided(memory: &dyn RunMemory, task: &TaskRecord) -> bool {
    let approval = memory.approval(&run_id(&task.task_id), &task.task_id).await;
    approval.ok().flatten().is_some_and(|approval| approval.decided.is_some())
}

/// The elicitation a task waiting for approval asks its client for.
pub(super) fn input_requests(task: &TaskRecord) -> InputRequests {
    let arguments = serde_json::to_string_pretty(&task.input).unwrap_or_default();
    let message = format!(
        "The assistant wants to call `{}` with these arguments:\n\n{arguments}\n\nThis call needs your approval. Accept to run it; decline \
         to refuse it.",
        task.tool
    );
    BTreeMap::from([(APPROVAL_INPUT.to_owned(), InputRequest::Elicitation(ElicitRequest::new(elicitation(message))))])
}

/// Records the client's answer (`tasks/update`) as the decision of the
/// task's parked call; `false` when there was none to record. As the tasks
/// extension asks, responses that answer nothing outstanding are ignored:
/// a task not waiting for input, no response under `"approval"`, an
/// approval the client answered already.
///
/// # Errors
///
/// `-32602` for a response under `"approval"` that is not an elicitation
/// result; `-32603` when the memory fails.
pub(super) async fn answer(memory: &dyn RunMemory, task: &TaskRecord, responses: &InputResponses, user: &UserContext) -> Result<bool, ErrorData> {
    let Some(answer) = responses.get(APPROVAL_INPUT).filter(|_| task.state == TaskState::InputRequired) else { return Ok(false) };
    let Ok(answer) = serde_json::from_value::<ElicitResult>(answer.clone()) else {
        return Err(ErrorData::invalid_params("inputResponses[\"approval\"] is not an elicitation result ({\"action\": \"accept\"}, ...)", None));
    };
    let decision = match answer.action {
        ElicitationAction::Accept => Decision::Approve,
        _ => Decision::Reject(crate::result::lines::rejected(None).user_message().to_owned()),
    };
    let by = format!("mcp-client:{}", user.id.as_deref().unwrap_or(""));
    match crate::question::decide(memory, &run_id(&task.task_id), &task.task_id, decision, &by).await {
        Ok(_) => Ok(true),
        Err(JournalError::AlreadyDecided { by: first, .. }) if first.starts_with("mcp-client") => Ok(false),
        // Decided out of band, or expired: that decision is carried out.
        Err(JournalError::AlreadyDecided { .. } | JournalError::ApprovalExpired { .. }) => Ok(true),
        Err(error) => {
            tracing::error!(task_id = %Escaped(&task.task_id), error = %Escaped(&error), "a task's answer could not be recorded");
            Err(ErrorData::internal_error("the answer could not be recorded; send it again in a moment", None))
        }
    }
}

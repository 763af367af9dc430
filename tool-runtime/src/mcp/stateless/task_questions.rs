//! A task whose tool asks its own questions ([`Ctx::elicit`](crate::Ctx::elicit),
//! [`Ctx::sample`](crate::Ctx::sample), [`Ctx::roots`](crate::Ctx::roots)):
//! the task's call parks each question in the server's memory under the task's run
//! (`mcp-task:<task id>`, the question's id `<task id>#<n>`) and the task
//! reads `input_required`, its `inputRequests` the questions still
//! undecided, keyed by their ids. `tasks/update` decides those it answers
//! through [`question::decide`](crate::question::decide) (a client may
//! answer them one at a time: the task waits until every one is decided);
//! then the call runs again from the top, each question answered from the
//! memory. A call that stops at two questions of one name (only one of
//! which could be answered by it) fails its task, saying so.

use rmcp::ErrorData;
use rmcp::model::{InputRequests, InputResponses};

use super::task_approvals::run_id;
use crate::context::UserContext;
use crate::error_report::Escaped;
use crate::mcp::asked;
use crate::memory::{Ask, JournalError, Question, RunMemory, TaskRecord, TaskState};

/// The questions the task's tool asked and that wait for an answer; `None`
/// when it asked none (a task that waits, waits for approval).
pub(super) async fn waiting(memory: &dyn RunMemory, task: &TaskRecord) -> Result<Option<Vec<(String, Ask)>>, JournalError> {
    let parked = memory.unsettled_for_run(&run_id(&task.task_id)).await?;
    let mut asked = false;
    let mut waiting = Vec::new();
    for approval in parked {
        if let Question::Tool { ask, .. } = approval.call.question {
            asked = true;
            if approval.decided.is_none() {
                waiting.push((approval.call.call_id, ask));
            }
        }
    }
    Ok(asked.then_some(waiting))
}

/// The name two of `questions` share, if any: a task's questions are
/// keyed by their names, so of two with one name only one could be
/// answered.
pub(super) fn named_twice<'a>(questions: impl Iterator<Item = (&'a str, &'a Ask)>) -> Option<&'a str> {
    let mut seen = std::collections::HashSet::new();
    questions.map(|(id, ask)| ask.key(id)).find(|key| !seen.insert(*key))
}

/// The `inputRequests` of a task waiting for `questions`.
pub(super) fn input_requests(questions: &[(String, Ask)]) -> InputRequests {
    let mut requests = InputRequests::new();
    for (id, ask) in questions {
        match asked::input_request(ask) {
            Ok(request) => {
                requests.insert(ask.key(id).to_owned(), request);
            }
            Err(why) => tracing::error!(question = %Escaped(id), why = %Escaped(&why), "a task's question could not be asked"),
        }
    }
    requests
}

/// Decides each of `questions` that `responses` answers (`tasks/update`),
/// as the client's; whether every one is decided now. Responses that
/// answer nothing outstanding are ignored.
///
/// # Errors
///
/// `-32602` for an answer that does not answer its question (not the
/// result it asks for, or a form's answer that does not fit it);
/// `-32603` when the memory fails.
pub(super) async fn answer(
    memory: &dyn RunMemory,
    task: &TaskRecord,
    questions: &[(String, Ask)],
    responses: &InputResponses,
    user: &UserContext,
) -> Result<bool, ErrorData> {
    if task.state != TaskState::InputRequired {
        return Ok(false);
    }
    let by = format!("mcp-client:{}", user.id.as_deref().unwrap_or(""));
    let mut left = 0;
    for (id, ask) in questions {
        let Some(response) = responses.get(ask.key(id)) else {
            left += 1;
            continue;
        };
        let invalid = |why: String| ErrorData::invalid_params(format!("inputResponses[{:?}]: {why}", ask.key(id)), None);
        let decision = asked::answered(ask, response).map_err(invalid)?;
        match crate::question::decide(memory, &run_id(&task.task_id), id, decision, &by).await {
            Ok(_) | Err(JournalError::AlreadyDecided { .. }) => {}
            Err(JournalError::Unanswerable { why, .. }) => return Err(invalid(why)),
            Err(error) => {
                tracing::error!(task_id = %Escaped(&task.task_id), error = %Escaped(&error), "a task's answer could not be recorded");
                return Err(ErrorData::internal_error("the answer could not be recorded; send it again in a moment", None));
            }
        }
    }
    Ok(left == 0)
}

/// Settles the questions of a task whose call ended.
pub(super) async fn settle(memory: &dyn RunMemory, task: &TaskRecord) -> Result<(), JournalError> {
    let run_id = run_id(&task.task_id);
    for approval in memory.unsettled_for_run(&run_id).await? {
        if matches!(approval.call.question, Question::Tool { .. }) {
            memory.settle(&run_id, &approval.call.call_id).await?;
        }
    }
    Ok(())
}

//! The approver's actions: approve, reject with a reason, approve an
//! edited input; answer a tool's question with its form's values, or
//! decline it (a rejection). Each checks, in this order: who the approver is (the auth
//! hook), that the form came from the inbox's own page of this session
//! (`csrf`), that the call exists and the approver may decide it (a call
//! they may not decide is answered as one that does not exist), and for an
//! edit, the input (the form, then the registry: `recheck`). Only then is
//! the decision sent to [`question::decide`](crate::question::decide),
//! and the page says what the journal answered: done once it recorded the
//! decision, who won when another decider came first, failed when the write
//! failed. Nothing is shown as done that the journal did not record.

use std::sync::Arc;

use axum::Form;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;

use super::auth::Approver;
use super::form::{self, Problem};
use super::pages::{EditPage, Notice, page, refused};
use super::recheck::{Recheck, recheck};
use super::respond::{inbox_page, signed_in, with_session};
use super::{Shared, csrf, view};
use crate::journal::{Approval, Decision, JournalError};
use crate::memory::{Ask, Question};

/// The most a rejection's reason may hold, in bytes.
const MAX_REASON_BYTES: usize = 2000;

/// A submitted form's pairs, in order.
type Pairs = Vec<(String, String)>;

fn value<'a>(pairs: &'a Pairs, name: &str) -> &'a str {
    pairs.iter().find(|(key, _)| key == name).map_or("", |(_, value)| value.as_str())
}

pub(crate) async fn approve<App: Send + Sync + 'static>(
    State(shared): State<Arc<Shared<App>>>,
    headers: HeaderMap,
    Form(pairs): Form<Pairs>,
) -> Response {
    let (approver, approval) = match checked(&shared, &headers, &pairs).await {
        Ok(checked) => checked,
        Err(response) => return response,
    };
    decide(&shared, &headers, &approver, &approval, Decision::Approve, "Approved").await
}

pub(crate) async fn reject<App: Send + Sync + 'static>(
    State(shared): State<Arc<Shared<App>>>,
    headers: HeaderMap,
    Form(pairs): Form<Pairs>,
) -> Response {
    let (approver, approval) = match checked(&shared, &headers, &pairs).await {
        Ok(checked) => checked,
        Err(response) => return response,
    };
    let reason = value(&pairs, "reason").trim();
    if reason.len() > MAX_REASON_BYTES || reason.contains('\0') {
        let text = format!("A reason holds at most {MAX_REASON_BYTES} bytes and no NUL character; shorten it and reject again.");
        return inbox_page(&shared, &headers, &approver, StatusCode::UNPROCESSABLE_ENTITY, Some(Notice::new("refused", text))).await;
    }
    let done = if matches!(approval.call.question, Question::Approval(_)) { "Rejected" } else { "Declined" };
    decide(&shared, &headers, &approver, &approval, Decision::Reject(reason.to_owned()), done).await
}

/// A tool's question answered: its form's fields read back (a JSON field
/// through the guard), then recorded through `question::decide`, which
/// checks the answer against the form's schema first.
pub(crate) async fn answer<App: Send + Sync + 'static>(
    State(shared): State<Arc<Shared<App>>>,
    headers: HeaderMap,
    Form(pairs): Form<Pairs>,
) -> Response {
    let (approver, approval) = match checked(&shared, &headers, &pairs).await {
        Ok(checked) => checked,
        Err(response) => return response,
    };
    let Question::Tool { ask: Ask::Form { schema, .. }, .. } = &approval.call.question else {
        let text = format!("Call {} of run {} asks no form to answer; approve or reject it.", approval.call.call_id, approval.call.run_id);
        return refused(&shared.base, &approver.id, StatusCode::NOT_FOUND, &text);
    };
    let fields = form::fields(schema, &serde_json::Value::Null);
    match form::read(&fields, &pairs, &shared.registry.argument_limits()) {
        Ok(answer) => decide(&shared, &headers, &approver, &approval, Decision::Answer(answer), "Answered").await,
        Err(problems) => {
            let named: Vec<String> = problems.into_iter().map(|problem| problem.message).collect();
            let text = format!("The answer could not be read, so nothing was recorded: {}. Answer again.", named.join("; "));
            inbox_page(&shared, &headers, &approver, StatusCode::UNPROCESSABLE_ENTITY, Some(Notice::new("refused", text))).await
        }
    }
}

pub(crate) async fn edit<App: Send + Sync + 'static>(
    State(shared): State<Arc<Shared<App>>>,
    headers: HeaderMap,
    Form(pairs): Form<Pairs>,
) -> Response {
    let (approver, approval) = match checked(&shared, &headers, &pairs).await {
        Ok(checked) => checked,
        Err(response) => return response,
    };
    let Some(definition) = shared.registry.definition(&approval.call.tool) else {
        let text = format!("The tool {} is not in this inbox's registry, so its input cannot be edited here.", approval.call.tool);
        return refused(&shared.base, &approver.id, StatusCode::NOT_FOUND, &text);
    };
    let fields = form::fields(&definition.input_schema, &approval.call.input);
    let edited = match form::read(&fields, &pairs, &shared.registry.argument_limits()) {
        Ok(edited) => edited,
        Err(problems) => {
            let notice = Notice::new("refused", "Some fields could not be read; correct them and approve again. Nothing was decided.");
            return edit_again(&shared, &headers, &approver, &approval, &pairs, problems, notice, StatusCode::UNPROCESSABLE_ENTITY);
        }
    };
    let notice = match recheck(&shared.registry, &shared.app, &approval.call, &edited).await {
        Recheck::Accepted => {
            return decide(&shared, &headers, &approver, &approval, Decision::ApproveEdited(edited), "Approved with your edits").await;
        }
        Recheck::Invalid(text) => (StatusCode::UNPROCESSABLE_ENTITY, format!("The tool does not accept this input; nothing was decided. {text}")),
        Recheck::Refused(text) => {
            (StatusCode::FORBIDDEN, format!("The tool's policy refuses this input, so it cannot be approved; nothing was decided. {text}"))
        }
        Recheck::UnknownTool => (StatusCode::NOT_FOUND, format!("The tool {} is not in this inbox's registry.", approval.call.tool)),
    };
    let (status, text) = notice;
    edit_again(&shared, &headers, &approver, &approval, &pairs, Vec::new(), Notice::new("refused", text), status)
}

/// The edit form again, holding what was submitted, with what was wrong.
#[allow(clippy::too_many_arguments, reason = "one page's parts, each named")]
fn edit_again<App: Send + Sync + 'static>(
    shared: &Shared<App>,
    headers: &HeaderMap,
    approver: &Approver,
    approval: &Approval,
    pairs: &Pairs,
    problems: Vec<Problem>,
    notice: Notice,
    status: StatusCode,
) -> Response {
    let Some(definition) = shared.registry.definition(&approval.call.tool) else {
        return refused(&shared.base, &approver.id, StatusCode::NOT_FOUND, &notice.text);
    };
    let mut fields = form::fields(&definition.input_schema, &approval.call.input);
    for field in &mut fields {
        let submitted = pairs.iter().find(|(key, _)| key.strip_prefix("arg.") == Some(field.name.as_str())).map(|(_, value)| value.clone());
        match field.kind {
            "boolean" => field.checked = submitted.is_some(),
            "choice" => field.options.iter_mut().for_each(|(option, chosen)| *chosen = submitted.as_deref() == Some(option.as_str())),
            _ => field.value = submitted.unwrap_or_default(),
        }
    }
    let (token, cookie) = with_session(headers, &shared.base, &shared.secret, approver);
    let call = view::waiting(&shared.registry, approval, view::Shown::Preview);
    let mut response =
        page(status, &EditPage { base: &shared.base, approver: &approver.id, token: &token, call, fields, problems, notice: Some(notice) });
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// The approver, and the call the form names, once the form is known to
/// come from the inbox's own page and the approver may decide the call.
async fn checked<App: Send + Sync + 'static>(shared: &Shared<App>, headers: &HeaderMap, pairs: &Pairs) -> Result<(Approver, Approval), Response> {
    let approver = signed_in(shared, headers)?;
    if let Err(why) = csrf::check(headers, &shared.secret, &approver.id, value(pairs, "csrf")) {
        return Err(refused(&shared.base, &approver.id, StatusCode::FORBIDDEN, why));
    }
    let approval = visible(shared, &approver, value(pairs, "run"), value(pairs, "call")).await?;
    Ok((approver, approval))
}

/// The call `call_id` of `run_id`, if the approver may see it; else the
/// page a missing call gets (the two are not told apart).
pub(crate) async fn visible<App: Send + Sync + 'static>(
    shared: &Shared<App>,
    approver: &Approver,
    run_id: &str,
    call_id: &str,
) -> Result<Approval, Response> {
    let missing = || {
        let text = format!("No call {call_id:?} of run {run_id:?} waits for you; it may belong to another approver, or the link is wrong.");
        refused(&shared.base, &approver.id, StatusCode::NOT_FOUND, &text)
    };
    match shared.journal.approvals().get(run_id, call_id).await {
        Ok(Some(approval)) if (shared.may_decide)(&approver.user, &approval.call) => Ok(approval),
        Ok(_) | Err(JournalError::Refused { .. }) => Err(missing()),
        Err(error) => {
            let text = format!("The journal could not be read ({error}); nothing was decided. Try again.");
            Err(refused(&shared.base, &approver.id, StatusCode::SERVICE_UNAVAILABLE, &text))
        }
    }
}

/// Sends the decision to the journal and shows what it answered.
async fn decide<App: Send + Sync + 'static>(
    shared: &Shared<App>,
    headers: &HeaderMap,
    approver: &Approver,
    approval: &Approval,
    decision: Decision,
    done: &str,
) -> Response {
    let (run_id, call_id) = (&approval.call.run_id, &approval.call.call_id);
    let (status, notice) = match crate::question::decide(&shared.journal, run_id, call_id, decision, &approver.id).await {
        Ok(decided) => {
            let at = decided.decided.map(|d| view::time(d.at)).unwrap_or_default();
            let text = format!(
                "{done}: call {call_id} of run {run_id} ({}), recorded at {at}. Its run carries the decision out when it next runs.",
                approval.call.tool
            );
            (StatusCode::OK, Notice::new("done", text))
        }
        Err(JournalError::AlreadyDecided { by, at, .. }) => {
            let text = format!("Call {call_id} of run {run_id} was already decided by {by} at {}; your decision was not recorded.", view::time(at));
            (StatusCode::CONFLICT, Notice::new("conflict", text))
        }
        Err(JournalError::Unanswerable { why, .. }) => {
            let text = format!("Your decision on call {call_id} of run {run_id} was not recorded: {why}. Decide again.");
            (StatusCode::UNPROCESSABLE_ENTITY, Notice::new("refused", text))
        }
        Err(JournalError::ApprovalExpired { expires_at, .. }) => {
            let text = format!("Call {call_id} of run {run_id} expired at {} before your decision; it was not recorded.", view::time(expires_at));
            (StatusCode::CONFLICT, Notice::new("conflict", text))
        }
        Err(error) => {
            let text = format!(
                "Your decision on call {call_id} of run {run_id} was NOT recorded: the journal failed ({error}). Nothing was decided; try again."
            );
            (StatusCode::SERVICE_UNAVAILABLE, Notice::new("failed", text))
        }
    };
    inbox_page(shared, headers, approver, status, Some(notice)).await
}

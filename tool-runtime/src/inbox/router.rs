//! The routes, and the pages a `GET` shows: the inbox, one call with its
//! arguments whole, and the edit form; the actions are posted to
//! `/approve`, `/reject`, `/edit` and `/answer` (`actions`).
//! Every response carries the security headers (`assets::secure`); every
//! page first asks the auth hook who the approver is.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use super::auth::Approver;
use super::pages::{CallPage, EditPage, Notice, page, refused};
use super::respond::{inbox_page, signed_in, with_session};
use super::view::Shown;
use super::{Shared, actions, assets, events, form, view};
use crate::journal::Approval;

/// The inbox's router over `shared`.
pub(crate) fn router<App: Send + Sync + 'static>(shared: Arc<Shared<App>>) -> Router {
    Router::new()
        .route("/", get(inbox::<App>))
        .route("/call", get(call_page::<App>))
        .route("/edit", get(edit_form::<App>).post(actions::edit::<App>))
        .route("/approve", post(actions::approve::<App>))
        .route("/reject", post(actions::reject::<App>))
        .route("/answer", post(actions::answer::<App>))
        .route("/events", get(events::events::<App>))
        .route("/inbox.js", get(assets::script))
        .route("/inbox.css", get(assets::style))
        .route("/favicon.svg", get(assets::icon))
        .layer(axum::middleware::map_response(assets::secure))
        .with_state(shared)
}

async fn inbox<App: Send + Sync + 'static>(State(shared): State<Arc<Shared<App>>>, headers: HeaderMap) -> Response {
    match signed_in(&shared, &headers) {
        Ok(approver) => inbox_page(&shared, &headers, &approver, StatusCode::OK, None).await,
        Err(response) => response,
    }
}

/// The call an edit form names.
#[derive(Deserialize)]
pub(crate) struct CallRef {
    run: String,
    call: String,
}

/// One call with its arguments whole: what a list's preview leaves out.
async fn call_page<App: Send + Sync + 'static>(State(shared): State<Arc<Shared<App>>>, headers: HeaderMap, Query(call): Query<CallRef>) -> Response {
    let (approver, approval) = match named_call(&shared, &headers, &call).await {
        Ok(named) => named,
        Err(response) => return response,
    };
    let (token, cookie) = with_session(&headers, &shared.base, &shared.secret, &approver);
    let call = view::waiting(&shared.registry, &approval, Shown::Whole);
    let notice = decided_notice(&approval, "decided");
    let mut response = page(StatusCode::OK, &CallPage { base: &shared.base, approver: &approver.id, token: &token, call, notice });
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// The approver, and the call a page names if they may see it; else the
/// page that says why not.
async fn named_call<App: Send + Sync + 'static>(shared: &Shared<App>, headers: &HeaderMap, call: &CallRef) -> Result<(Approver, Approval), Response> {
    let approver = signed_in(shared, headers)?;
    let approval = actions::visible(shared, &approver, &call.run, &call.call).await?;
    Ok((approver, approval))
}

/// What a page of a call already decided says: it can no longer be `what`.
fn decided_notice(approval: &Approval, what: &str) -> Option<Notice> {
    approval.decided.as_ref().map(|decided| {
        Notice::new("conflict", format!("This call was already decided by {} at {}; it can no longer be {what}.", decided.by, view::time(decided.at)))
    })
}

async fn edit_form<App: Send + Sync + 'static>(State(shared): State<Arc<Shared<App>>>, headers: HeaderMap, Query(call): Query<CallRef>) -> Response {
    let (approver, approval) = match named_call(&shared, &headers, &call).await {
        Ok(named) => named,
        Err(response) => return response,
    };
    let Some(definition) = shared.registry.definition(&approval.call.tool) else {
        let text =
            format!("The tool {} is not in this inbox's registry, so its input cannot be edited here; approve or reject it.", approval.call.tool);
        return refused(&shared.base, &approver.id, StatusCode::NOT_FOUND, &text);
    };
    let fields = form::fields(&definition.input_schema, &approval.call.input);
    let (token, cookie) = with_session(&headers, &shared.base, &shared.secret, &approver);
    let call = view::waiting(&shared.registry, &approval, Shown::Preview);
    let notice = decided_notice(&approval, "edited");
    let mut response =
        page(StatusCode::OK, &EditPage { base: &shared.base, approver: &approver.id, token: &token, call, fields, problems: Vec::new(), notice });
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response.into_response()
}

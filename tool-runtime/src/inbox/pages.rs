//! The pages, as askama templates (`tool-runtime/templates/inbox/`),
//! checked when the crate compiles. Every value is escaped by askama's
//! HTML escaping; the one value inserted unescaped is the lists' HTML,
//! which askama itself rendered from [`Lists`].

use askama::Template;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use super::form::{Field, Problem};
use super::view::{Made, Waiting};
use crate::error_report::Escaped;

/// A line at the top of a page saying what became of an action.
pub(crate) struct Notice {
    /// `done`, `conflict`, `refused` or `failed` (the line's style).
    pub(crate) kind: &'static str,
    pub(crate) text: String,
}

impl Notice {
    pub(crate) fn new(kind: &'static str, text: impl Into<String>) -> Self {
        Notice { kind, text: text.into() }
    }
}

/// The calls waiting for an approver and the decisions made: the part of
/// the inbox that the events stream sends again when it changes.
#[derive(Template)]
#[template(path = "inbox/lists.html")]
pub(crate) struct Lists<'a> {
    pub(crate) base: &'a str,
    pub(crate) token: &'a str,
    pub(crate) waiting: Vec<Waiting>,
    pub(crate) made: Vec<Made>,
    /// Why some waiting calls may not be shown, when some may not.
    pub(crate) cut: Option<String>,
}

/// The inbox: the lists, and what became of the last action.
#[derive(Template)]
#[template(path = "inbox/inbox.html")]
pub(crate) struct InboxPage<'a> {
    pub(crate) base: &'a str,
    pub(crate) approver: &'a str,
    pub(crate) notice: Option<Notice>,
    /// [`Lists`], rendered.
    pub(crate) lists: String,
    pub(crate) live: bool,
}

/// The form that edits a call's input before approving it.
#[derive(Template)]
#[template(path = "inbox/edit.html")]
pub(crate) struct EditPage<'a> {
    pub(crate) base: &'a str,
    pub(crate) approver: &'a str,
    pub(crate) token: &'a str,
    pub(crate) call: Waiting,
    pub(crate) fields: Vec<Field>,
    pub(crate) problems: Vec<Problem>,
    pub(crate) notice: Option<Notice>,
}

/// One call on its own, its arguments whole.
#[derive(Template)]
#[template(path = "inbox/call.html")]
pub(crate) struct CallPage<'a> {
    pub(crate) base: &'a str,
    pub(crate) approver: &'a str,
    pub(crate) token: &'a str,
    pub(crate) call: Waiting,
    pub(crate) notice: Option<Notice>,
}

/// A page that only says why the request was refused.
#[derive(Template)]
#[template(path = "inbox/refused.html")]
pub(crate) struct RefusedPage<'a> {
    pub(crate) base: &'a str,
    pub(crate) approver: &'a str,
    pub(crate) heading: &'a str,
    pub(crate) text: &'a str,
}

/// A rendered page with its status; a template that fails to render (it
/// cannot, but for a failing `Display` of a value) is a 500 that says so.
pub(crate) fn page(status: StatusCode, template: &impl Template) -> Response {
    match template.render() {
        Ok(html) => (status, Html(html)).into_response(),
        Err(error) => {
            tracing::error!(error = %Escaped(&error), "an inbox page failed to render");
            (StatusCode::INTERNAL_SERVER_ERROR, "The page could not be rendered; see the server's log.").into_response()
        }
    }
}

/// A page that says why the request was refused.
pub(crate) fn refused(base: &str, approver: &str, status: StatusCode, text: &str) -> Response {
    let heading = status.canonical_reason().unwrap_or("refused");
    page(status, &RefusedPage { base, approver, heading, text })
}

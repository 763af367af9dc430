//! What every page of the inbox answers with: the approver of a request
//! (or the page that says how to sign in), the form token of its session,
//! and the inbox page itself.

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;

use super::auth::{Approver, approver};
use super::pages::{InboxPage, Notice, page, refused};
use super::{Shared, csrf, listing};

/// The approver of a request, or the 401 page that says how to sign in.
pub(crate) fn signed_in<App>(shared: &Shared<App>, headers: &HeaderMap) -> Result<Approver, Response> {
    approver(&*shared.auth, headers).map_err(|why| refused(&shared.base, "nobody", StatusCode::UNAUTHORIZED, &why.to_string()))
}

/// The form token of this request's session (a new session's cookie set
/// on `response`).
pub(crate) fn with_session(
    headers: &HeaderMap,
    shared_base: &str,
    secret: &[u8; 32],
    approver: &Approver,
) -> (String, Option<axum::http::HeaderValue>) {
    let session = csrf::session(headers);
    (csrf::token(secret, &session.id, &approver.id), csrf::set_cookie(&session, shared_base))
}

/// The inbox page with `notice` on top, and `status`.
pub(crate) async fn inbox_page<App: Send + Sync + 'static>(
    shared: &Shared<App>,
    headers: &HeaderMap,
    approver: &Approver,
    status: StatusCode,
    notice: Option<Notice>,
) -> Response {
    let (token, cookie) = with_session(headers, &shared.base, &shared.secret, approver);
    let mut response = match listing::lists(shared, approver, &token).await {
        Ok(lists) => page(status, &InboxPage { base: &shared.base, approver: &approver.id, notice, lists, live: true }),
        Err(error) => {
            let text = match notice {
                Some(notice) => format!("{} The journal could not be read to list the calls ({error}); reload to try again.", notice.text),
                None => format!("The journal could not be read to list the calls ({error}); reload to try again."),
            };
            refused(&shared.base, &approver.id, StatusCode::SERVICE_UNAVAILABLE, &text)
        }
    };
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

//! The page's script, style sheet and icon, served by the router from
//! files compiled into the crate (no build step), and the headers every response
//! carries: a Content-Security-Policy that allows only the inbox's own
//! script and style (no inline script, no `eval`, no other origin), and no
//! framing, sniffing or referrer leaks.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const SCRIPT: &str = include_str!("../../templates/inbox/inbox.js");
const STYLE: &str = include_str!("../../templates/inbox/inbox.css");
const ICON: &str = include_str!("../../templates/inbox/favicon.svg");

/// The Content-Security-Policy of every response.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; \
     form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

pub(crate) async fn script() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], SCRIPT).into_response()
}

pub(crate) async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], STYLE).into_response()
}

/// The pages' icon (each page names it, so the browser asks nothing else).
pub(crate) async fn icon() -> Response {
    ([(header::CONTENT_TYPE, "image/svg+xml"), (header::CACHE_CONTROL, "max-age=86400")], ICON).into_response()
}

/// Adds the security headers to a response.
pub(crate) async fn secure(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    response
}

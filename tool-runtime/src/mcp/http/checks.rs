//! The checks every streamable-HTTP request passes before rmcp reads it:
//! its `Host` and `Origin`, who is calling, and the size of its body. These
//! read the headers only, so a request refused by them costs the server no
//! more than its headers; the body is then read, within its deadline, the
//! size limit and the server's limit on bodies arriving at once, and its
//! JSON values counted before rmcp parses it.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, CONNECTION, CONTENT_LENGTH, HOST, HeaderName, ORIGIN, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::uri::Authority;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use tokio::sync::{Semaphore, SemaphorePermit};

use super::sessions::BoundedSessions;
use crate::context::UserContext;
use crate::error_report::Escaped;

/// The JSON-RPC envelope a request body may carry besides a tool's
/// arguments (method, id, tool name, `_meta`), by default: 64 KiB.
pub const DEFAULT_ENVELOPE_BYTES: usize = 64 * 1024;

/// The JSON values a request body may hold besides a tool's arguments
/// (the envelope's members and `_meta`).
pub(crate) const ENVELOPE_VALUES: usize = 1024;

/// How many HTTP sessions are kept at most, by default.
pub const DEFAULT_MAX_SESSIONS: usize = 500;

/// How long an HTTP session may go without a request before it is closed,
/// by default: 5 minutes.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a request's headers may take to arrive, by default: 10
/// seconds.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a request's body may take to arrive after its headers, by
/// default: 30 seconds (1 MiB in that time is 35 KB a second).
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How many connections `serve_http` serves at once, by default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// How many bytes of request bodies still arriving the server holds at
/// once, by default (besides [`FREE_BODY_BYTES`] of each): 64 MiB.
pub const DEFAULT_MAX_ARRIVING_BODY_BYTES: usize = 64 << 20;

/// The bytes of each request body not counted against the
/// [arriving bodies' limit](crate::mcp::McpServer::with_max_arriving_body_bytes):
/// 64 KiB, room for every request but the calls with large arguments.
pub const FREE_BODY_BYTES: usize = 64 << 10;

/// Decides who is calling from a request's headers; see
/// [`McpServer::with_auth`](crate::mcp::McpServer::with_auth).
pub(crate) type AuthHook = dyn Fn(&HeaderMap) -> Result<UserContext, Unauthorized> + Send + Sync;

pub use crate::context::Unauthorized;

/// The user an authentication hook gave for one HTTP request; rmcp carries
/// it to the handler inside the request's `http::request::Parts`.
#[derive(Clone, Debug)]
pub(crate) struct Authenticated(pub(crate) Arc<UserContext>);

/// The header naming a request's session.
const SESSION_ID: &str = "mcp-session-id";

/// What the HTTP checks need, shared by every request.
pub(crate) struct Checks {
    pub(crate) max_body_bytes: usize,
    /// The registry's value limit plus [`ENVELOPE_VALUES`].
    pub(crate) max_body_values: usize,
    pub(crate) envelope_bytes: usize,
    /// How long a body may take to arrive once its headers have.
    pub(crate) body_read_timeout: Duration,
    /// A permit per byte of bodies still arriving, past [`FREE_BODY_BYTES`]
    /// of each.
    pub(crate) arriving: Semaphore,
    pub(crate) allowed_origins: Vec<String>,
    /// The `Host` names (`name` or `name:port`) requests may address.
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) auth: Option<Arc<AuthHook>>,
    pub(crate) sessions: Arc<BoundedSessions>,
}

/// The middleware: `Host` and `Origin` (403), then authentication (401),
/// each refusal closing its connection, and the session's owner (404 for another user), then the declared body
/// size (413); then the body is read within its deadline (408) and the
/// limit on bodies arriving at once (503), cut off as soon as it passes the
/// size limit (a body sent without its length), and its JSON values
/// counted (413 beyond the registry's value limit plus the envelope's; 400
/// for a body that is not UTF-8, which could not be counted). A passing
/// request goes on to rmcp with its caller in its extensions; one that
/// opens a session is admitted under the session caps first, and the
/// session is its caller's. A session's end (`DELETE`) that rmcp accepts
/// answers `204 No Content`.
pub(crate) async fn check(State(checks): State<Arc<Checks>>, mut request: Request, next: Next) -> Response {
    // A refused request closes its connection: a client without the right
    // to be served does not keep a connection for its next attempt.
    if let Err((status, text)) = check_host_and_origin(&checks, &request) {
        return (status, [(CONNECTION, "close")], text).into_response();
    }
    let mut caller = None;
    if let Some(auth) = &checks.auth {
        match auth(request.headers()) {
            Ok(user) => caller = Some(Arc::new(user)),
            Err(refused) => {
                let headers = [(WWW_AUTHENTICATE, "Bearer"), (CONNECTION, "close")];
                return (StatusCode::UNAUTHORIZED, headers, refused.to_string()).into_response();
            }
        }
    }
    let session = request.headers().get(SESSION_ID).and_then(|id| id.to_str().ok()).map(str::to_owned);
    if let (Some(user), Some(session)) = (&caller, &session)
        && checks.sessions.owned_by_other(session, user.id.as_deref())
    {
        let text = "Not Found: there is no such session for this user. Start a new session with `initialize`.";
        return (StatusCode::NOT_FOUND, text).into_response();
    }
    if let Some(user) = &caller {
        request.extensions_mut().insert(Authenticated(user.clone()));
    }
    let declared = request.headers().get(CONTENT_LENGTH).and_then(|length| length.to_str().ok()?.parse::<u64>().ok());
    if let Some(length) = declared.filter(|&length| length > checks.max_body_bytes as u64) {
        return too_large(&checks, &format!("this request body is {length} bytes")).into_response();
    }
    let (parts, body) = request.into_parts();
    let ends_session = parts.method == axum::http::Method::DELETE;
    let bytes = match read_body(&checks, body).await {
        Ok(bytes) => bytes,
        Err(refused) => return refused,
    };
    // A request without a session that may open one (an `initialize`; a
    // request at revision 2026-07-28 opens none) is admitted under the
    // session caps first, for the user who opens it.
    let opens = session.is_none() && parts.method == axum::http::Method::POST && may_open_session(&bytes);
    let admission = match opens {
        true => match checks.sessions.admit(checks.auth.as_ref().and(caller.as_deref())).await {
            Ok(admission) => Some(admission),
            Err(refused) => return refused.into_response(),
        },
        false => None,
    };
    let request = Request::from_parts(parts, axum::body::Body::from(bytes));
    let mut response = super::sessions::opening(admission, next.run(request)).await;
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
        // rmcp cut a body sent without its length: say the same.
        return too_large(&checks, "this request body is larger").into_response();
    }
    if ends_session && response.status() == StatusCode::ACCEPTED {
        // rmcp answers a session's end `202 Accepted`; the transport names
        // no status for it, and clients read `200` and `204` as done (the
        // official Python SDK logs "Session termination failed: 202" for
        // anything else). Its body is empty either way.
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}

/// Reads a request's body within its deadline (`408`), the size limit
/// (`413`) and the limit on bodies arriving at once (`503`), then checks
/// that it is UTF-8 (`400`) and counts its JSON values (`413`) before rmcp
/// parses it: parsed JSON costs hundreds of bytes a value, so a body of
/// 1 MiB of `[0],[0],...` under the byte limit would cost 150 MB.
async fn read_body(checks: &Checks, body: axum::body::Body) -> Result<Bytes, Response> {
    // A body sent a byte at a time would hold its buffer (up to the size
    // limit) for as long as its client likes.
    let bytes = match tokio::time::timeout(checks.body_read_timeout, collect(checks, body)).await {
        Ok(read) => read?,
        Err(_) => {
            let text = format!(
                "Request Timeout: this request body did not arrive within {:?} of its headers. Send the whole \
                 body at once.",
                checks.body_read_timeout
            );
            return Err((StatusCode::REQUEST_TIMEOUT, [(CONNECTION, "close")], text).into_response());
        }
    };
    // JSON is UTF-8: a body that is not could not be counted, and rmcp
    // would parse all of it before failing.
    let text = match std::str::from_utf8(&bytes) {
        Ok(text) => text,
        Err(error) => {
            let text = format!(
                "Bad Request: this request body is not valid UTF-8 (at byte {}). Send the JSON-RPC message as \
                 UTF-8 JSON.",
                error.valid_up_to()
            );
            return Err((StatusCode::BAD_REQUEST, text).into_response());
        }
    };
    let limits = crate::guard::ArgumentLimits { max_bytes: usize::MAX, max_depth: usize::MAX, max_values: checks.max_body_values };
    if crate::guard::check_text(text, &limits).is_err() {
        let text = format!(
            "Payload Too Large: this request body holds more than {} JSON values (the tools' limit plus \
             {ENVELOPE_VALUES} for the JSON-RPC envelope). Send fewer items in one call.",
            checks.max_body_values
        );
        return Err((StatusCode::PAYLOAD_TOO_LARGE, text).into_response());
    }
    Ok(bytes)
}

/// Collects a body as it arrives, within the size limit (`413`) and the
/// limit on bytes of bodies still arriving (`503`): past the first
/// [`FREE_BODY_BYTES`], each chunk reserves its size, until the body is
/// whole. The chunks are kept as they came, and joined at the end.
async fn collect(checks: &Checks, body: axum::body::Body) -> Result<Bytes, Response> {
    let mut stream = body.into_data_stream();
    let (mut chunks, mut length) = (Vec::new(), 0usize);
    let mut reserved = None;
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else {
            let text = "Bad Request: this request body broke off before its end. Send it again.";
            return Err((StatusCode::BAD_REQUEST, text).into_response());
        };
        let total = length + chunk.len();
        if total > checks.max_body_bytes {
            return Err(too_large(checks, "this request body is larger").into_response());
        }
        let counted = total.saturating_sub(FREE_BODY_BYTES) - length.saturating_sub(FREE_BODY_BYTES);
        if counted > 0 {
            let permit = u32::try_from(counted).ok().and_then(|counted| checks.arriving.try_acquire_many(counted).ok());
            let Some(permit) = permit else { return Err(busy()) };
            match &mut reserved {
                Some(reserved) => SemaphorePermit::merge(reserved, permit),
                None => reserved = Some(permit),
            }
        }
        length = total;
        chunks.push(chunk);
    }
    Ok(match chunks.len() {
        1 => chunks.swap_remove(0),
        _ => chunks.concat().into(),
    })
}

/// The `503` answer when the bodies arriving at once hold their limit.
fn busy() -> Response {
    tracing::debug!("refused an MCP request body: the bodies arriving at once hold their limit");
    let text = "Service Unavailable: this server is receiving too many large request bodies at once. Retry in a \
                moment.";
    (StatusCode::SERVICE_UNAVAILABLE, [(RETRY_AFTER, "1"), (CONNECTION, "close")], text).into_response()
}

/// Where the request was sent (`Host`, against DNS rebinding: a page on a
/// name the attacker controls, resolved to this server) and where it comes
/// from (`Origin`), from the headers alone.
fn check_host_and_origin(checks: &Checks, request: &Request) -> Result<(), (StatusCode, &'static str)> {
    let host = match request.headers().get(HOST) {
        Some(host) => host.to_str().ok(),
        None => request.uri().authority().map(|authority| authority.as_str()),
    };
    let Some(host) = host.filter(|host| host.parse::<Authority>().is_ok()) else {
        let text = "Bad Request: this request has no valid `Host` header. Send the server's address in `Host`.";
        return Err((StatusCode::BAD_REQUEST, text));
    };
    if !host_allowed(host, &checks.allowed_hosts) {
        tracing::warn!(host = %Escaped(host), "refused an MCP request for a foreign Host (possible DNS rebinding)");
        let text = "Forbidden: this MCP server is not served under the name in `Host`. Address it by its own \
                    name or address; the operator can allow other names with `McpServer::with_allowed_hosts`.";
        return Err((StatusCode::FORBIDDEN, text));
    }
    if let Some(origin) = request.headers().get(ORIGIN) {
        let allowed = origin.to_str().is_ok_and(|origin| origin_allowed(origin, Some(host), &checks.allowed_origins));
        if !allowed {
            tracing::warn!(origin = ?Escaped(origin), "refused an MCP request from a disallowed Origin (possible DNS rebinding)");
            let text = "Forbidden: this Origin may not use this MCP server. Browser pages may call it from \
                        the server's own origin or a loopback one; the operator can allow others with \
                        `McpServer::with_allowed_origins`.";
            return Err((StatusCode::FORBIDDEN, text));
        }
    }
    Ok(())
}

/// Whether `host` (a `Host` header: a name or address, maybe a port) is
/// one of `allowed`: the same name (case aside, `[::1]` as `::1`) and,
/// where the entry names a port, the same port.
pub(crate) fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let Some((name, port)) = split_authority(host) else { return false };
    allowed.iter().filter_map(|entry| split_authority(entry.trim())).any(|(allowed_name, allowed_port)| {
        allowed_name.eq_ignore_ascii_case(name) && allowed_port.is_none_or(|allowed_port| port == Some(allowed_port))
    })
}

/// `host[:port]` as its name (without IPv6 brackets) and port; an entry
/// that is a bare IPv6 address (`::1`) is a name. A `Host` has no user.
fn split_authority(text: &str) -> Option<(&str, Option<u16>)> {
    if text.contains('@') {
        return None;
    }
    let (name, port) = match text.parse::<Authority>() {
        // The name as `text` spells it (the parsed one borrows the parse).
        Ok(authority) => (&text[..authority.host().len()], authority.port_u16()),
        Err(_) if text.parse::<IpAddr>().is_ok() => (text, None),
        Err(_) => return None,
    };
    Some((name.strip_prefix('[').and_then(|name| name.strip_suffix(']')).unwrap_or(name), port))
}

/// The `413` answer; `size` says how large the body was. The rest of the
/// body is not read, so the connection closes.
fn too_large(checks: &Checks, size: &str) -> (StatusCode, [(HeaderName, &'static str); 1], String) {
    let text = format!(
        "Payload Too Large: {size}; this server accepts at most {} bytes (the tools' argument limit plus {} \
         bytes of JSON-RPC envelope). Send smaller arguments.",
        checks.max_body_bytes, checks.envelope_bytes
    );
    (StatusCode::PAYLOAD_TOO_LARGE, [(CONNECTION, "close")], text)
}

/// Whether a browser page at `origin` may call the server: an origin on
/// the allow-list, a loopback origin (any port), or the server's own
/// origin, the authority the request was sent to (`host`). The `Host`
/// header itself is checked first, against the allowed hosts, so a
/// rebound name never reaches this point as the server's own.
pub(crate) fn origin_allowed(origin: &str, host: Option<&str>, allowed: &[String]) -> bool {
    let origin = origin.trim();
    if allowed.iter().any(|entry| entry.trim_end_matches('/').eq_ignore_ascii_case(origin)) {
        return true;
    }
    let Ok(uri) = origin.parse::<Uri>() else { return false };
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else { return false };
    if !matches!(scheme, "http" | "https") || !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        return false;
    }
    is_loopback_host(authority.host()) || host.is_some_and(|host| host.eq_ignore_ascii_case(authority.as_str()))
}

/// `localhost`, or an IPv4 or IPv6 loopback address (`[::1]` as in URLs).
fn is_loopback_host(host: &str) -> bool {
    let bare = host.strip_prefix('[').and_then(|host| host.strip_suffix(']')).unwrap_or(host);
    host.eq_ignore_ascii_case("localhost") || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// A hook that accepts one bearer token, as `user`.
pub(crate) fn bearer_token(token: String, user: UserContext) -> impl Fn(&HeaderMap) -> Result<UserContext, Unauthorized> {
    move |headers| match bearer(headers) {
        Some(sent) if same_secret(sent.as_bytes(), token.as_bytes()) => Ok(user.clone()),
        Some(_) => Err(Unauthorized::new(
            "Unauthorized: this bearer token is not valid for this MCP server. Send the token it was \
             configured with as `Authorization: Bearer <token>`.",
        )),
        None => Err(Unauthorized::missing_bearer_token()),
    }
}

/// The token of an `Authorization: Bearer <token>` header.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|token| !token.is_empty())
}

/// Compares two secrets in a time that does not depend on where they
/// differ (their lengths are not secret).
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |differ, (x, y)| differ | (x ^ y)) == 0
}

/// Whether an HTTP request body without a session id may open a session:
/// only an `initialize` request does, so only it is admitted under the
/// session caps. A body that does not read as one JSON-RPC request keeps
/// the cautious answer (admitted), and rmcp words its error.
fn may_open_session(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Method<'_>>(body).map_or(true, |request| request.method.is_none_or(|method| method == "initialize"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_initialize_request_may_open_a_session() {
        assert!(may_open_session(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#));
        assert!(!may_open_session(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#));
        assert!(!may_open_session(br#"{"jsonrpc":"2.0","id":1,"method":"server/discover"}"#));
        assert!(may_open_session(b"[1, 2]"), "not one request: rmcp answers it");
        assert!(may_open_session(br#"{"jsonrpc":"2.0","id":1}"#), "no method: rmcp answers it");
    }

    #[test]
    fn loopback_origins_and_the_servers_own_origin_are_allowed() {
        let none: &[String] = &[];
        for origin in ["http://localhost:6274", "http://127.0.0.1:8080", "https://[::1]", "http://LOCALHOST"] {
            assert!(origin_allowed(origin, Some("127.0.0.1:8080"), none), "{origin}");
        }
        assert!(origin_allowed("https://mcp.example.com", Some("mcp.example.com"), none));
        assert!(!origin_allowed("http://evil.example", Some("127.0.0.1:8080"), none));
        assert!(!origin_allowed("http://localhost.evil.example", Some("127.0.0.1:8080"), none));
        assert!(!origin_allowed("http://127.0.0.1.nip.io", Some("127.0.0.1:8080"), none));
        assert!(!origin_allowed("null", Some("127.0.0.1:8080"), none));
        assert!(!origin_allowed("file://", None, none));
        assert!(!origin_allowed("https://mcp.example.com", Some("mcp.example.com:8443"), none), "another port");
    }

    #[test]
    fn hosts_match_by_name_and_by_port_where_the_entry_names_one() {
        let allowed: Vec<String> = ["localhost", "127.0.0.1", "::1", "mcp.example.com:8443", "[::1]:9000"].into_iter().map(String::from).collect();
        for host in ["localhost", "LOCALHOST:80", "127.0.0.1:8080", "[::1]", "[::1]:5", "mcp.example.com:8443"] {
            assert!(host_allowed(host, &allowed), "{host}");
        }
        for host in ["evil.example", "mcp.example.com", "mcp.example.com:443", "localhost.evil.example", "127.0.0.2", "localhost@evil.example"] {
            assert!(!host_allowed(host, &allowed), "{host}");
        }
        assert!(!host_allowed("localhost", &[]), "no list, no host");
    }

    #[test]
    fn the_allow_list_adds_exact_origins() {
        let allowed = vec!["https://app.example.com".to_owned(), "null".to_owned()];
        assert!(origin_allowed("https://app.example.com", None, &allowed));
        assert!(origin_allowed("null", None, &allowed));
        assert!(!origin_allowed("http://app.example.com", None, &allowed), "another scheme");
    }

    #[test]
    fn bearer_tokens_are_read_and_compared_whole() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(&headers), None);
        headers.insert(AUTHORIZATION, "bearer  s3cret ".parse().unwrap());
        assert_eq!(bearer(&headers), Some("s3cret"));
        headers.insert(AUTHORIZATION, "Basic czNjcmV0".parse().unwrap());
        assert_eq!(bearer(&headers), None);
        assert!(same_secret(b"s3cret", b"s3cret"));
        assert!(!same_secret(b"s3cret", b"s3cres"));
        assert!(!same_secret(b"s3cret", b"s3cre"));
    }
}

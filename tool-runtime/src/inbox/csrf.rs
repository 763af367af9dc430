//! Forms against cross-site requests. A page's forms carry a token that
//! is the digest of the inbox's secret, the browser's session cookie and
//! the approver's id; an action is accepted only with the token of its own
//! session and approver, and only from the inbox's own origin (`Origin`,
//! else `Sec-Fetch-Site`, checked when the browser sends them). The
//! session cookie is `HttpOnly` and `SameSite=Strict`, so a cross-site
//! request does not carry it at all.

use axum::http::{HeaderMap, HeaderValue, header};
use sha2::{Digest, Sha256};

/// The session cookie's name.
const COOKIE: &str = "tool_runtime_inbox";

/// A browser's session: the cookie's value, and whether the response must
/// set it (the request came without one).
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) new: bool,
}

/// The session a request carries, or a new one.
pub(crate) fn session(headers: &HeaderMap) -> Session {
    match cookie(headers) {
        Some(id) => Session { id, new: false },
        None => {
            let mut bytes = [0u8; 16];
            getrandom::fill(&mut bytes).expect("the system's random number generator failed");
            Session { id: hex(&bytes), new: true }
        }
    }
}

/// The `Set-Cookie` value of a new session, scoped to the inbox's path.
pub(crate) fn set_cookie(session: &Session, base: &str) -> Option<HeaderValue> {
    let path = if base.is_empty() { "/" } else { base };
    session.new.then(|| HeaderValue::from_str(&format!("{COOKIE}={}; Path={path}; HttpOnly; SameSite=Strict", session.id)).ok()).flatten()
}

/// The form token of a session and approver.
pub(crate) fn token(secret: &[u8; 32], session: &str, approver: &str) -> String {
    let mut digest = Sha256::new();
    digest.update(secret);
    digest.update((session.len() as u64).to_be_bytes());
    digest.update(session.as_bytes());
    digest.update(approver.as_bytes());
    hex(&digest.finalize())
}

/// Why an action was refused as cross-site.
pub(crate) fn check(headers: &HeaderMap, secret: &[u8; 32], approver: &str, sent: &str) -> Result<(), &'static str> {
    same_origin(headers)?;
    let Some(session) = cookie(headers) else {
        return Err("This form came without the inbox's session cookie; reload the inbox and decide again.");
    };
    let expected = token(secret, &session, approver);
    // Compared in constant time: the token is a secret of the session.
    let differs = expected.len() != sent.len() || expected.bytes().zip(sent.bytes()).fold(0, |acc, (a, b)| acc | (a ^ b)) != 0;
    if differs {
        return Err("This form's token is not this session's (it was sent from another page or an old one); reload the inbox and decide again.");
    }
    Ok(())
}

/// Whether the browser says the request came from the inbox's own origin.
fn same_origin(headers: &HeaderMap) -> Result<(), &'static str> {
    let text = |name| headers.get(name).and_then(|value: &HeaderValue| value.to_str().ok());
    if let Some(origin) = text(header::ORIGIN) {
        let host = origin.split_once("://").map(|(_, rest)| rest);
        return match (host, text(header::HOST)) {
            (Some(origin_host), Some(host)) if origin_host.eq_ignore_ascii_case(host) => Ok(()),
            _ => Err("This form was sent from another site; decide from the inbox's own page."),
        };
    }
    match text(axum::http::HeaderName::from_static("sec-fetch-site")) {
        None | Some("same-origin" | "none") => Ok(()),
        Some(_) => Err("This form was sent from another site; decide from the inbox's own page."),
    }
}

fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, value)| *name == COOKIE && value.len() == 32 && value.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(|(_, value)| value.to_owned())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        pairs.iter().map(|(name, value)| (axum::http::HeaderName::from_static(name), HeaderValue::from_str(value).unwrap())).collect()
    }

    #[test]
    fn a_token_holds_only_for_its_session_and_approver() {
        let secret = [7; 32];
        let session = "0123456789abcdef0123456789abcdef";
        let good = token(&secret, session, "dana");
        let cookie = format!("{COOKIE}={session}");
        let same = headers(&[("cookie", &cookie), ("origin", "http://inbox.test:8080"), ("host", "inbox.test:8080")]);
        assert_eq!(check(&same, &secret, "dana", &good), Ok(()));
        assert!(check(&same, &secret, "erin", &good).is_err(), "another approver's token");
        assert!(check(&same, &[8; 32], "dana", &good).is_err(), "another inbox's token");
        assert!(check(&headers(&[("origin", "http://inbox.test:8080"), ("host", "inbox.test:8080")]), &secret, "dana", &good).is_err(), "no cookie");
    }

    #[test]
    fn another_origin_is_refused() {
        let secret = [7; 32];
        let session = "0123456789abcdef0123456789abcdef";
        let good = token(&secret, session, "dana");
        let cookie = format!("{COOKIE}={session}");
        let evil = headers(&[("cookie", &cookie), ("origin", "http://evil.test"), ("host", "inbox.test:8080")]);
        assert!(check(&evil, &secret, "dana", &good).is_err());
        let cross = headers(&[("cookie", &cookie), ("sec-fetch-site", "cross-site"), ("host", "inbox.test:8080")]);
        assert!(check(&cross, &secret, "dana", &good).is_err());
        let null = headers(&[("cookie", &cookie), ("origin", "null"), ("host", "inbox.test:8080")]);
        assert!(check(&null, &secret, "dana", &good).is_err());
    }
}

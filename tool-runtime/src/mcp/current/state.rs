//! The sealed `requestState` of an approval's round trip: what the server
//! needs to finish a call on the client's second request, held by the
//! client, integrity-protected by a keyed MAC (rmcp's
//! [`RequestStateCodec`]: HMAC-SHA256 with a key from configuration) and
//! bound to the call.
//!
//! The payload (readable, not secret) names the approval: its run and call
//! ids. The binding is the MAC's associated data, rebuilt from the retried
//! request and never stored in the state: the tool's name, the caller's
//! user id, and the arguments as sent; the expiry (the registry's approval
//! TTL) is sealed in. So a state altered in one byte, sent with another
//! call's tool or arguments, by another user, or after its expiry does not
//! open. A state that opens is used once: without a journal this process
//! remembers the approvals it saw answered until they expire; with one,
//! the approval's row in the journal is decided once.
//!
//! Every instance configured with the same key
//! ([`McpServer::with_request_state_key`](crate::mcp::McpServer::with_request_state_key))
//! opens the states of the others. Without one, a key is drawn at random
//! when the server is made: a state is then good on this process only.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use serde::{Deserialize, Serialize};

/// What an approval's `requestState` carries: the approval's run and call
/// ids (in the journal, when the server has one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Sealed {
    #[serde(rename = "r")]
    pub(crate) run_id: String,
    #[serde(rename = "c")]
    pub(crate) call_id: String,
}

/// The server's key and what it remembers of the states it saw answered.
pub(crate) struct Sealing {
    codec: RequestStateCodec,
    /// Call ids of answered approvals, with when their state expires: a
    /// second answer to one is refused (a replay), until the state itself
    /// could no longer be opened.
    answered: Mutex<HashMap<String, Instant>>,
}

/// Why a key cannot seal request states.
#[derive(Debug, thiserror::Error)]
#[error("the request-state key is {actual} bytes; it must be at least {minimum} bytes of random data (for example `openssl rand -hex 32`)")]
pub struct StateKeyError {
    actual: usize,
    minimum: usize,
}

impl Sealing {
    /// Seals with `key`, at least [`RequestStateCodec::MIN_KEY_LENGTH`]
    /// bytes.
    pub(crate) fn new(key: Vec<u8>) -> Result<Self, StateKeyError> {
        let actual = key.len();
        let codec = RequestStateCodec::try_new(key).map_err(|_| StateKeyError { actual, minimum: RequestStateCodec::MIN_KEY_LENGTH })?;
        Ok(Sealing { codec, answered: Mutex::default() })
    }

    /// Seals with a key drawn at random: good on this process only.
    pub(crate) fn random() -> Self {
        let mut key = vec![0; 32];
        getrandom::fill(&mut key).expect("the operating system gives random bytes");
        Sealing::new(key).expect("32 bytes is long enough")
    }

    /// The state of one approval, bound to `binding` (see [`binding`]),
    /// expiring after `ttl`.
    pub(crate) fn seal(&self, sealed: &Sealed, binding: &[u8], ttl: Duration) -> String {
        let payload = serde_json::to_vec(sealed).expect("two strings serialise");
        self.codec.seal_with(&payload, &SealOptions::new().associated_data(binding).ttl(ttl))
    }

    /// Opens a state sent back with a call whose binding is `binding`.
    pub(crate) fn open(&self, state: &str, binding: &[u8]) -> Result<Sealed, RequestStateError> {
        self.codec.open_json_with(state, binding)
    }

    /// Records that the approval `call_id` was answered, its state expiring
    /// `ttl` from now; `false` when it was answered before (a replay).
    pub(crate) fn answer_once(&self, call_id: &str, ttl: Duration) -> bool {
        let now = Instant::now();
        let mut answered = self.answered.lock().unwrap_or_else(PoisonError::into_inner);
        answered.retain(|_, expires| *expires > now);
        answered.insert(call_id.to_owned(), now + ttl).is_none()
    }
}

/// The associated data a state is bound to: the tool, the caller and the
/// arguments, each length-prefixed so no two calls give the same bytes.
pub(crate) fn binding(tool: &str, user: Option<&str>, arguments: &serde_json::Value) -> Vec<u8> {
    let arguments = arguments.to_string();
    let user = user.unwrap_or("");
    let mut bytes = Vec::with_capacity(arguments.len() + tool.len() + user.len() + 40);
    for part in [b"tools/call".as_slice(), tool.as_bytes(), user.as_bytes(), arguments.as_bytes()] {
        bytes.extend_from_slice(&(part.len() as u64).to_be_bytes());
        bytes.extend_from_slice(part);
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sealing() -> Sealing {
        Sealing::new(b"a key of thirty-two bytes or more!".to_vec()).unwrap()
    }

    #[test]
    fn a_state_opens_only_for_its_own_call_user_and_bytes() {
        let sealing = sealing();
        let approval = Sealed { run_id: "mcp-r".into(), call_id: "call-1".into() };
        let bound = binding("refund", Some("alice"), &json!({"amount": 5}));
        let state = sealing.seal(&approval, &bound, Duration::from_secs(60));
        assert_eq!(sealing.open(&state, &bound).unwrap(), approval);
        for other in [
            binding("refund", Some("bob"), &json!({"amount": 5})),
            binding("refund", Some("alice"), &json!({"amount": 500})),
            binding("issue_voucher", Some("alice"), &json!({"amount": 5})),
            binding("refund", None, &json!({"amount": 5})),
        ] {
            assert!(matches!(sealing.open(&state, &other), Err(RequestStateError::IntegrityCheckFailed)));
        }
        let mut flipped = state.clone().into_bytes();
        let last = flipped.len() - 1;
        flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
        assert!(sealing.open(std::str::from_utf8(&flipped).unwrap(), &bound).is_err(), "a flipped byte");
        let other_key = Sealing::new(b"another key of thirty-two bytes!!".to_vec()).unwrap();
        assert!(other_key.open(&state, &bound).is_err(), "another server's key");
    }

    #[test]
    fn an_expired_state_does_not_open() {
        let sealing = sealing();
        let bound = binding("refund", None, &json!({}));
        let state = sealing.seal(&Sealed { run_id: "r".into(), call_id: "c".into() }, &bound, Duration::ZERO);
        std::thread::sleep(Duration::from_millis(5));
        assert!(matches!(sealing.open(&state, &bound), Err(RequestStateError::Expired)));
    }

    #[test]
    fn an_approval_is_answered_once() {
        let sealing = sealing();
        assert!(sealing.answer_once("c", Duration::from_secs(60)));
        assert!(!sealing.answer_once("c", Duration::from_secs(60)));
        assert!(sealing.answer_once("d", Duration::from_secs(60)));
    }

    #[test]
    fn a_short_key_is_refused_saying_how_long_it_must_be() {
        let error = Sealing::new(b"short".to_vec()).err().unwrap();
        assert!(error.to_string().contains("at least 32 bytes"), "{error}");
    }
}

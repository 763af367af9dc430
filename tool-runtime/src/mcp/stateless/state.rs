//! The sealed `requestState` of an approval's round trip: what the server
//! needs to finish a call on the client's second request, held by the
//! client, integrity-protected by a keyed MAC (rmcp's
//! [`RequestStateCodec`]: HMAC-SHA256 with keys from configuration) and
//! bound to the call.
//!
//! The payload (readable, not secret) names the approval: its run and call
//! ids, and, where no journal keeps the approval, the process that asked.
//! The binding is the MAC's associated data, rebuilt from the retried
//! request and never stored in the state: the tool's name, the caller's
//! user id, and the arguments in a canonical form (members of every object
//! sorted by key, so a client that sends them in another order is the same
//! call); the expiry (the registry's approval TTL) is sealed in. So a state
//! altered in one byte, sent with another call's tool or arguments, by
//! another user, or after its expiry does not open.
//!
//! A state that opens is used once. With a journal, the approval's row is
//! decided once, on any instance, and the row itself must be the caller's
//! call (`approvals.rs` compares its user, tool and input with the
//! request). Without one, nothing is shared between processes that could
//! remember an answer, so a state is good on the process that asked only:
//! it carries that process's random tag, any other (another instance, the
//! same one after a restart) refuses it, and the asking process remembers
//! the approvals it saw answered until they expire.
//!
//! Keys: one ([`McpServer::with_request_state_key`](crate::mcp::McpServer::with_request_state_key)),
//! or a keyring for rotation ([`McpServer::with_request_state_keys`](crate::mcp::McpServer::with_request_state_keys)):
//! the active key seals, every key opens. Without either, a key is drawn at
//! random when the server is made: a state is then good on this process only.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ToolError;
use crate::mcp::waiting::{WaitingCall, WaitingCalls};

/// What an approval's `requestState` carries: the approval's run and call
/// ids (in the journal, when the server has one), and the tag of the
/// process that asked when no journal keeps the approval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Sealed {
    #[serde(rename = "r")]
    pub(crate) run_id: String,
    #[serde(rename = "c")]
    pub(crate) call_id: String,
    #[serde(rename = "i", default, skip_serializing_if = "Option::is_none")]
    pub(crate) instance: Option<String>,
    /// A tool's own questions so far, with the answers given (`questions.rs`);
    /// none for an approval.
    #[serde(rename = "q", default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) questions: Vec<Carried>,
    /// The effects the call's tool made once ([`Ctx::once`](crate::Ctx::once))
    /// in the rounds so far, by key: the next round returns them rather
    /// than make them again.
    #[serde(rename = "o", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) once: BTreeMap<String, Value>,
}

/// One question a call's tool asked at 2026-07-28, carried in its state:
/// its id (the key of its `inputRequests` entry), what it asks, and, once
/// the client answered it, the answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Carried {
    #[serde(rename = "k")]
    pub(crate) id: String,
    #[serde(rename = "a")]
    pub(crate) ask: crate::memory::Ask,
    #[serde(rename = "d", default, skip_serializing_if = "Option::is_none")]
    pub(crate) answer: Option<Answered>,
}

/// A question's answer as a state carries it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Answered {
    Answer(Value),
    Decline,
    Cancel,
}

/// The server's keys, its process's tag, and what it remembers of the
/// approvals it asked for without a journal.
pub(crate) struct Sealing {
    codec: RequestStateCodec,
    /// This process's tag, drawn at random when the server is made.
    instance: String,
    /// Approvals no journal keeps: asked here and not yet answered, each
    /// counted under the waiting caps until it is answered or expires, and
    /// answered ones, remembered until their state could no longer open so
    /// that a second answer (a replay) is refused.
    asked: Mutex<Asked>,
}

#[derive(Default)]
struct Asked {
    waiting: HashMap<String, (Instant, WaitingCall)>,
    answered: HashMap<String, Instant>,
}

impl Asked {
    /// Forgets what expired by `now`, which frees its place under the caps.
    fn forget_expired(&mut self, now: Instant) {
        self.waiting.retain(|_, (expires, _)| *expires > now);
        self.answered.retain(|_, expires| *expires > now);
    }
}

/// Why keys cannot seal request states.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateKeyError {
    /// A key is too short to be a secret.
    #[error(
        "the request-state key{} is {actual} bytes; it must be at least {minimum} bytes of random data (for example `openssl rand -hex 32`)",
        kid.as_ref().map(|kid| format!(" {kid:?}")).unwrap_or_default()
    )]
    TooShort {
        /// The key's id in a keyring.
        kid: Option<String>,
        /// Its length in bytes.
        actual: usize,
        /// The shortest key accepted.
        minimum: usize,
    },
    /// The keyring cannot be used as given.
    #[error("the request-state keyring cannot be used: {0} (give each key a distinct id of 1 to 255 bytes, and name one of them active)")]
    Keyring(String),
}

impl Sealing {
    /// Seals with `key`, at least [`RequestStateCodec::MIN_KEY_LENGTH`]
    /// bytes.
    pub(crate) fn new(key: Vec<u8>) -> Result<Self, StateKeyError> {
        let actual = key.len();
        let codec =
            RequestStateCodec::try_new(key).map_err(|_| StateKeyError::TooShort { kid: None, actual, minimum: RequestStateCodec::MIN_KEY_LENGTH })?;
        Ok(Sealing::with_codec(codec))
    }

    /// Seals with the key `active` of `keys` and opens with any of them,
    /// including states sealed by a server given a single key.
    pub(crate) fn with_keys(active: &str, keys: Vec<(String, Vec<u8>)>) -> Result<Self, StateKeyError> {
        if let Some((kid, key)) = keys.iter().find(|(_, key)| key.len() < RequestStateCodec::MIN_KEY_LENGTH) {
            return Err(StateKeyError::TooShort { kid: Some(kid.clone()), actual: key.len(), minimum: RequestStateCodec::MIN_KEY_LENGTH });
        }
        let kids: Vec<String> = keys.iter().map(|(kid, _)| kid.clone()).collect();
        let keyring = |error: RequestStateError| StateKeyError::Keyring(error.to_string());
        let mut codec = RequestStateCodec::new_with_keyring(active, keys).map_err(keyring)?;
        // A single key seals `rs1`: each key of the ring opens those too,
        // so moving from one key to a ring drops no state in flight.
        for kid in &kids {
            codec = codec.with_rs1_fallback(kid).map_err(keyring)?;
        }
        Ok(Sealing::with_codec(codec))
    }

    fn with_codec(codec: RequestStateCodec) -> Self {
        let mut tag = [0; 16];
        getrandom::fill(&mut tag).expect("the operating system gives random bytes");
        let instance = tag.iter().map(|byte| format!("{byte:02x}")).collect();
        Sealing { codec, instance, asked: Mutex::default() }
    }

    /// Seals with a key drawn at random: good on this process only.
    pub(crate) fn random() -> Self {
        let mut key = vec![0; 32];
        getrandom::fill(&mut key).expect("the operating system gives random bytes");
        Sealing::new(key).expect("32 bytes is long enough")
    }

    /// This process's tag, for a state only this process may finish.
    pub(crate) fn instance(&self) -> &str {
        &self.instance
    }

    /// The state of one approval, bound to `binding` (see [`binding`]),
    /// expiring after `ttl`.
    pub(crate) fn seal(&self, sealed: &Sealed, binding: &[u8], ttl: Duration) -> String {
        let payload = serde_json::to_vec(sealed).expect("strings serialise");
        self.codec.seal_with(&payload, &SealOptions::new().associated_data(binding).ttl(ttl))
    }

    /// Opens a state sent back with a call whose binding is `binding`.
    pub(crate) fn open(&self, state: &str, binding: &[u8]) -> Result<Sealed, RequestStateError> {
        self.codec.open_json_with(state, binding)
    }

    fn asked(&self) -> std::sync::MutexGuard<'_, Asked> {
        // Only maps are changed under the lock: a poisoned one is whole.
        self.asked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts the approval `call_id` of `user`, asked here without a
    /// journal, as waiting until it is answered or `ttl` passes; the
    /// refusal the model reads when a cap of `waiting` is reached.
    pub(crate) fn ask(&self, call_id: &str, user: Option<&str>, ttl: Duration, waiting: &Arc<WaitingCalls>) -> Result<(), ToolError> {
        let now = Instant::now();
        let mut asked = self.asked();
        asked.forget_expired(now);
        let counted = waiting.enter(user)?;
        asked.waiting.insert(call_id.to_owned(), (now + ttl, counted));
        Ok(())
    }

    /// Records that the approval `call_id` was answered, its state expiring
    /// `ttl` from now; `false` when it was answered before (a replay).
    pub(crate) fn answer_once(&self, call_id: &str, ttl: Duration) -> bool {
        let now = Instant::now();
        let mut asked = self.asked();
        asked.forget_expired(now);
        asked.waiting.remove(call_id);
        asked.answered.insert(call_id.to_owned(), now + ttl).is_none()
    }
}

/// `arguments` as one text whatever the order of their members: every
/// object's members sorted by key.
pub(crate) fn canonical(arguments: &Value) -> String {
    let mut sorted = arguments.clone();
    sorted.sort_all_objects();
    sorted.to_string()
}

/// The associated data a state is bound to: the tool, the caller and the
/// arguments (canonical), each length-prefixed so no two calls give the
/// same bytes.
pub(crate) fn binding(tool: &str, user: Option<&str>, arguments: &Value) -> Vec<u8> {
    let arguments = canonical(arguments);
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

    fn approval() -> Sealed {
        Sealed { run_id: "mcp-r".into(), call_id: "call-1".into(), ..Sealed::default() }
    }

    #[test]
    fn a_state_opens_only_for_its_own_call_user_and_bytes() {
        let sealing = sealing();
        let bound = binding("refund", Some("alice"), &json!({"amount": 5}));
        let state = sealing.seal(&approval(), &bound, Duration::from_secs(60));
        assert_eq!(sealing.open(&state, &bound).unwrap(), approval());
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
    fn the_binding_does_not_depend_on_the_order_of_members() {
        let arguments: Value = serde_json::from_str(r#"{"b": {"y": 1, "x": [ {"q": 1, "p": 2} ]}, "a": 2}"#).unwrap();
        let reordered: Value = serde_json::from_str(r#"{"a": 2, "b": {"x": [ {"p": 2, "q": 1} ], "y": 1}}"#).unwrap();
        assert_eq!(binding("t", None, &arguments), binding("t", None, &reordered));
        assert_ne!(binding("t", None, &arguments), binding("t", None, &json!({"a": 2, "b": {"x": [], "y": 1}})));
    }

    #[test]
    fn an_expired_state_does_not_open() {
        let sealing = sealing();
        let bound = binding("refund", None, &json!({}));
        let state = sealing.seal(&approval(), &bound, Duration::ZERO);
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
    fn approvals_asked_wait_under_the_caps_until_answered_or_expired() {
        let sealing = sealing();
        let waiting = Arc::new(WaitingCalls::new(10, 2));
        sealing.ask("a", Some("alice"), Duration::from_secs(60), &waiting).unwrap();
        sealing.ask("b", Some("alice"), Duration::from_millis(1), &waiting).unwrap();
        assert_eq!(sealing.ask("c", Some("alice"), Duration::from_secs(60), &waiting).unwrap_err().code(), "TOO_MANY_PENDING");
        std::thread::sleep(Duration::from_millis(5));
        // "b" expired: its place is free again.
        sealing.ask("c", Some("alice"), Duration::from_secs(60), &waiting).unwrap();
        assert!(sealing.answer_once("a", Duration::from_secs(60)));
        sealing.ask("d", Some("alice"), Duration::from_secs(60), &waiting).unwrap();
    }

    #[test]
    fn a_keyring_seals_with_its_active_key_and_opens_with_every_key() {
        let old = b"the old key of thirty-two bytes!!".to_vec();
        let new = b"the new key of thirty-two bytes!!".to_vec();
        let single = Sealing::new(old.clone()).unwrap();
        let ring = Sealing::with_keys("new", vec![("old".into(), old.clone()), ("new".into(), new.clone())]).unwrap();
        let bound = binding("refund", None, &json!({}));
        let before = single.seal(&approval(), &bound, Duration::from_secs(60));
        assert_eq!(ring.open(&before, &bound).unwrap(), approval(), "a state of the single key opens on the ring");
        let after = ring.seal(&approval(), &bound, Duration::from_secs(60));
        assert!(single.open(&after, &bound).is_err(), "the ring seals with its active key");
        let retired = Sealing::with_keys("new", vec![("new".into(), new)]).unwrap();
        assert_eq!(retired.open(&after, &bound).unwrap(), approval());
        assert!(retired.open(&before, &bound).is_err(), "a retired key opens nothing");
    }

    #[test]
    fn short_keys_and_broken_keyrings_are_refused_saying_why() {
        let error = Sealing::new(b"short".to_vec()).err().unwrap();
        assert!(error.to_string().contains("at least 32 bytes"), "{error}");
        let error = Sealing::with_keys("a", vec![("a".into(), b"short".to_vec())]).err().unwrap();
        assert!(error.to_string().contains("key \"a\" is 5 bytes"), "{error}");
        let error = Sealing::with_keys("b", vec![("a".into(), vec![7; 32])]).err().unwrap();
        assert!(error.to_string().contains("active"), "{error}");
        assert!(Sealing::with_keys("a", Vec::new()).is_err());
    }
}

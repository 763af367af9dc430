//! Idempotent retries at revision 2026-07-28. A client whose response
//! stream broke sends its request again; a `tools/call` that carries an
//! idempotency key in its `_meta`, under [`IDEMPOTENCY_KEY`], is then
//! answered from the journal: its effect is journaled under the key, for
//! the caller (the authentication hook's user), so a retry with the same
//! key, tool and arguments reads the first call's result instead of running
//! again (and waits for it while the first still runs). The same key with
//! another tool or other arguments is refused (`CALL_ID_REUSED`); another
//! user's key is theirs. A tool written `replay = false` runs again, as it
//! asks. A keyed call answers directly, never with a task (a retry must
//! find its effect, not start a second task); one that needs approval
//! answers `input_required`, and its second round runs at most once by its
//! sealed state; its approval is parked under the caller's keyed run and
//! the key, so a re-sent first round asks again and a re-sent answer reads
//! the journaled result. A caller that the authentication hook accepted
//! without naming a user cannot use a key (`IDEMPOTENCY_UNAVAILABLE`):
//! nothing would tell their results from another such caller's. This needs
//! a journal
//! ([`McpServer::with_journal`](crate::mcp::McpServer::with_journal)):
//! without one, a call with a key is refused (`IDEMPOTENCY_UNAVAILABLE`),
//! since nothing could keep the promise.

use rmcp::model::RequestMetaObject;
use smol_str::SmolStr;

use crate::context::UserContext;
use crate::error::ToolError;

/// The `_meta` key of a `tools/call`'s idempotency key: a string of 1 to
/// 256 characters without control characters, unique per intended effect
/// (a UUID, say).
pub const IDEMPOTENCY_KEY: &str = "dev.tool-runtime/idempotencyKey";

/// The request's idempotency key, if it carries one.
///
/// # Errors
///
/// The tool error the model reads for a key that is not a valid one.
pub(super) fn key(meta: &RequestMetaObject) -> Result<Option<SmolStr>, ToolError> {
    let Some(key) = meta.0.get(IDEMPOTENCY_KEY) else { return Ok(None) };
    match key.as_str() {
        Some(key) if (1..=256).contains(&key.chars().count()) && !key.chars().any(char::is_control) => Ok(Some(key.into())),
        _ => Err(ToolError::bad_request(
            "IDEMPOTENCY_KEY_INVALID",
            "The idempotency key in _meta must be a string of 1 to 256 characters without control characters; nothing was run. Send a fresh UUID.",
        )
        .no_retry()),
    }
}

/// The prefix of every run of keyed calls.
pub(super) const KEYED_RUNS: &str = "mcp-retry:";

/// The journal's run that a user's keyed calls (and their approvals)
/// belong to.
pub(super) fn run_id(user: &UserContext) -> String {
    match &user.id {
        Some(id) => format!("mcp-retry:user:{id}"),
        None => "mcp-retry:anonymous".to_owned(),
    }
}

/// The refusal of a keyed call whose caller the authentication hook did
/// not name: their results would be any other such caller's.
pub(super) fn nameless() -> ToolError {
    ToolError::forbidden(
        "IDEMPOTENCY_UNAVAILABLE",
        "This server keeps a call's result under its idempotency key for the caller who made it, and this \
         request's authentication named no user, so nothing was run. Call again without the key.",
    )
    .no_retry()
}

/// The refusal of a keyed call on a server without a journal.
pub(super) fn unavailable() -> ToolError {
    ToolError::new(
        501,
        "IDEMPOTENCY_UNAVAILABLE",
        "This server keeps no journal, so it cannot promise that a call with an idempotency key runs once; nothing \
         was run. Call again without the key.",
    )
    .no_retry()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(value: serde_json::Value) -> RequestMetaObject {
        serde_json::from_value(json!({ IDEMPOTENCY_KEY: value })).unwrap()
    }

    #[test]
    fn a_key_is_a_short_string_without_control_characters() {
        assert_eq!(key(&RequestMetaObject::default()).unwrap(), None);
        assert_eq!(key(&meta(json!("7c1e"))).unwrap().as_deref(), Some("7c1e"));
        for bad in [json!(""), json!(7), json!("a\nb"), json!("x".repeat(257))] {
            assert_eq!(key(&meta(bad.clone())).unwrap_err().code(), "IDEMPOTENCY_KEY_INVALID", "{bad}");
        }
    }

    #[test]
    fn each_user_has_a_run_of_their_own() {
        assert_ne!(run_id(&UserContext::new("alice")), run_id(&UserContext::new("bob")));
        assert_ne!(run_id(&UserContext::default()), run_id(&UserContext::new("anonymous")));
    }
}

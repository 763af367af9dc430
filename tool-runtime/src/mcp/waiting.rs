//! The calls of an MCP server waiting for a human's approval, counted
//! across its sessions and capped for each user and in all.
//!
//! Each waiting call holds its arguments (as they came, and parsed into
//! the tool's input) and the text that shows them to the human until it is
//! decided, so waiting calls are what a client can make a server hold at
//! will. A session already caps its own
//! ([`max_pending_approvals`](crate::RegistryBuilder::max_pending_approvals));
//! these caps keep one user's many sessions, or many users, from holding
//! more. A call past a cap is refused at once (`TOO_MANY_PENDING`, status
//! 429), asking no one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::ToolError;

/// How many calls of one user may wait for approval at once, by default,
/// over all their sessions.
pub const DEFAULT_MAX_WAITING_APPROVALS_PER_USER: usize = 32;

/// How many calls may wait for approval at once in one server, by default.
pub const DEFAULT_MAX_WAITING_APPROVALS: usize = 128;

/// The waiting calls of one server, by user.
#[derive(Debug)]
pub(crate) struct WaitingCalls {
    pub(crate) max: usize,
    pub(crate) per_user: usize,
    counts: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    by_user: HashMap<Arc<str>, usize>,
}

impl Default for WaitingCalls {
    fn default() -> Self {
        WaitingCalls::new(DEFAULT_MAX_WAITING_APPROVALS, DEFAULT_MAX_WAITING_APPROVALS_PER_USER)
    }
}

impl WaitingCalls {
    pub(crate) fn new(max: usize, per_user: usize) -> Self {
        WaitingCalls { max, per_user, counts: Mutex::default() }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        // Only counting runs under the lock: a poisoned one is whole.
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts one more call of `user` (by id; without one, only the
    /// server's cap applies) waiting, unless a cap is reached: then the
    /// refusal the model reads.
    pub(crate) fn enter(self: &Arc<Self>, user: Option<&str>) -> Result<WaitingCall, ToolError> {
        let mut counts = self.counts();
        let held = user.and_then(|user| counts.by_user.get(user)).copied().unwrap_or(0);
        self.admits(counts.total, held, user)?;
        counts.total += 1;
        let user: Option<Arc<str>> = user.map(Arc::from);
        if let Some(user) = &user {
            *counts.by_user.entry(user.clone()).or_default() += 1;
        }
        Ok(WaitingCall { calls: self.clone(), user })
    }

    /// Whether one more call of `user` may wait while `total` calls wait
    /// in all and `held` of that user's: the refusal the model reads when
    /// not. For waiting calls counted elsewhere (a journal's rows).
    pub(crate) fn admits(&self, total: usize, held: usize, user: Option<&str>) -> Result<(), ToolError> {
        if user.is_some() && held >= self.per_user {
            return Err(ToolError::rate_limited(
                "TOO_MANY_PENDING",
                format!(
                    "{held} calls of this user already wait for a human's approval (in all of the user's \
                     sessions and requests), so this one was not run. Ask the user to decide those first, then call it again."
                ),
            ));
        }
        if total >= self.max {
            return Err(ToolError::rate_limited(
                "TOO_MANY_PENDING",
                format!(
                    "{total} calls already wait for a human's approval on this server, its limit, so this one was \
                     not run. Try it again in a few minutes."
                ),
            ));
        }
        Ok(())
    }
}

/// One call waiting for approval, counted while it lives.
#[derive(Debug)]
pub(crate) struct WaitingCall {
    calls: Arc<WaitingCalls>,
    user: Option<Arc<str>>,
}

impl Drop for WaitingCall {
    fn drop(&mut self) {
        let mut counts = self.calls.counts();
        counts.total -= 1;
        if let Some(user) = &self.user
            && let Some(held) = counts.by_user.get_mut(user)
        {
            *held -= 1;
            if *held == 0 {
                counts.by_user.remove(user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_wait_up_to_the_users_cap_and_the_servers_and_leave_room_when_settled() {
        let calls = Arc::new(WaitingCalls::new(3, 2));
        let a1 = calls.enter(Some("alice")).unwrap();
        let _a2 = calls.enter(Some("alice")).unwrap();
        let refused = calls.enter(Some("alice")).unwrap_err();
        assert_eq!(refused.code(), "TOO_MANY_PENDING");
        assert!(refused.user_message().contains("2 calls of this user"), "{refused:?}");
        let _b1 = calls.enter(Some("bob")).unwrap();
        let full = calls.enter(None).unwrap_err();
        assert!(full.user_message().contains("3 calls already wait for a human's approval on this server"), "{full:?}");
        drop(a1);
        let _a3 = calls.enter(Some("alice")).unwrap();
        assert_eq!(calls.counts().total, 3);
    }
}

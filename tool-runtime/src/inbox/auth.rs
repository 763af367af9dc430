//! Who the approver is: the application's auth hook, the same shape as the
//! MCP server's (the request's headers to a [`UserContext`]).

use std::fmt;

use axum::http::HeaderMap;

use crate::context::UserContext;

/// The answer of an inbox's auth hook for a request it does not accept:
/// the page says this text, with status `401 Unauthorized`.
///
/// ```
/// use tool_runtime::inbox::Unauthorized;
/// let refused = Unauthorized::new("Your session has expired; sign in again.");
/// assert_eq!(refused.to_string(), "Your session has expired; sign in again.");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unauthorized {
    message: String,
}

impl Unauthorized {
    /// A refusal whose text tells the person how to sign in.
    pub fn new(message: impl Into<String>) -> Self {
        Unauthorized { message: message.into() }
    }
}

impl fmt::Display for Unauthorized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Unauthorized {}

/// A signed-in approver: a user the hook accepted, with the id that a
/// decision records as its decider.
pub(crate) struct Approver {
    pub(crate) user: UserContext,
    pub(crate) id: String,
}

/// The approver of a request, or why there is none.
pub(crate) fn approver(hook: &super::AuthHook, headers: &HeaderMap) -> Result<Approver, Unauthorized> {
    let user = hook(headers)?;
    match user.id.clone() {
        Some(id) if !id.is_empty() => Ok(Approver { user, id }),
        _ => Err(Unauthorized::new("This sign-in names no user, and a decision must record who made it; sign in as a named user.")),
    }
}

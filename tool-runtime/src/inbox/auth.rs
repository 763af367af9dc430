//! Who the approver is: the application's auth hook, the same shape as the
//! MCP server's (the request's headers to a [`UserContext`]).

use axum::http::HeaderMap;

use crate::context::UserContext;

pub use crate::context::Unauthorized;

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

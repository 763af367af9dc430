//! Who makes a request: the user the authentication hook gave for it, or
//! the server's own.

use std::sync::Arc;

use rmcp::model::Extensions;

use super::http::Authenticated;
use crate::context::UserContext;

/// Who makes a request, and whether the server can tell them from others.
pub(crate) struct Caller {
    /// The user the request runs as.
    pub(crate) user: Arc<UserContext>,
    /// The authentication hook accepted the request without naming a user:
    /// nothing tells this caller from another such one, so nothing kept for
    /// a caller (a keyed result, a task, an approval) can be theirs.
    pub(crate) nameless: bool,
}

impl Caller {
    /// Who makes the request whose `extensions` these are: the user the
    /// authentication hook gave for it (rmcp hands the handler the HTTP
    /// request's `Parts`, which carry it), else the server's `user` (over
    /// stdio, or HTTP without a hook: the one principal the server was
    /// configured with).
    pub(crate) fn of(user: &Arc<UserContext>, extensions: &Extensions) -> Caller {
        let authenticated = extensions.get::<axum::http::request::Parts>().and_then(|parts| parts.extensions.get::<Authenticated>());
        match authenticated {
            Some(authenticated) => Caller { user: authenticated.0.clone(), nameless: authenticated.0.id.is_none() },
            None => Caller { user: user.clone(), nameless: false },
        }
    }
}

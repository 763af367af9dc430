//! The HTTP sessions, bounded: rmcp's in-memory session manager with a
//! cap on how many it keeps in all and for each user, and a time after
//! which an idle one is closed.
//!
//! A session is *busy* while a request of its client is being answered:
//! a call in flight, or a call waiting for its human's approval (its
//! `tools/call` stream stays open until the result, and its handler runs
//! until then, even if the client dropped the stream). A busy session is
//! never idle and never evicted, so a long call or a slow human is never
//! cut off: its result always reaches the stream the client reads. The
//! idle time counts from the later of the last request and the end of the
//! last call.
//!
//! Opening a session is admitted by the HTTP checks before rmcp creates
//! it ([`BoundedSessions::admit`], then [`opening`] around the request):
//!
//! - with an authentication hook, a session belongs to the user (by
//!   [`UserContext::id`]) who opened it: another user's requests with its
//!   id are answered as if it did not exist, so a leaked session id gives
//!   no one else its run or its streams. A caller the hook names no user
//!   for cannot open one (`403`): such a session would belong to no one;
//! - a user at their own cap makes room by closing their least recently
//!   used session that is not busy; when all of theirs are busy, the new
//!   one is refused with `429` (`Retry-After`), and no one else pays;
//! - at the server's cap, the least recently used session that is not
//!   busy, among the sessions of the user who holds the most, is closed;
//!   when every session is busy, the new one is refused with `503`
//!   (`Retry-After`). Evicting an idle session rather than refusing costs
//!   its client only a new `initialize` (a closed session answers `404`,
//!   which tells MCP clients to start a new one), so a client that opens
//!   sessions in a loop locks no one out; the per-user cap keeps it from
//!   closing other users' sessions unless the server is full, and then it
//!   pays first.
//!
//! Without a hook there are no users to tell apart: only the server's cap
//! applies. A session its client ends (`DELETE`) while busy takes no new
//! requests, and is closed once its calls have answered.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

use axum::http::StatusCode;
use axum::http::header::RETRY_AFTER;
use axum::response::{IntoResponse, Response};
use futures_util::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId, SessionManager};
use tokio::time::Instant;

use crate::context::UserContext;
use crate::error_report::Escaped;

/// How many HTTP sessions one user may keep at most, by default.
pub const DEFAULT_MAX_SESSIONS_PER_USER: usize = 16;

/// The header naming a request's session.
const SESSION_ID: &str = "mcp-session-id";

/// What a refused newcomer is told to wait before trying again.
const RETRY_AFTER_SECS: u64 = 5;

/// How many sessions are kept, and for how long without a request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SessionLimits {
    /// At most this many sessions in all.
    pub(crate) max: usize,
    /// At most this many sessions of one user (with an authentication hook).
    pub(crate) per_user: usize,
    /// A session that is not busy is closed after this without a request.
    pub(crate) idle: Duration,
}

/// rmcp's [`LocalSessionManager`], holding at most [`SessionLimits`]
/// sessions; see the [module docs](self).
#[derive(Debug)]
pub(crate) struct BoundedSessions {
    shared: Arc<Shared>,
    /// The task that closes idle sessions, started with the first session.
    sweeper: OnceLock<()>,
}

#[derive(Debug)]
struct Shared {
    inner: LocalSessionManager,
    limits: SessionLimits,
    ledger: Mutex<Ledger>,
}

/// Each open session, and the sessions admitted but not yet created.
#[derive(Debug, Default)]
struct Ledger {
    open: HashMap<SessionId, Session>,
    /// Admitted sessions rmcp has not created yet, by owner.
    opening: HashMap<Option<Arc<str>>, usize>,
}

#[derive(Debug)]
struct Session {
    /// When it last had a request, or a call of it ended.
    used: Instant,
    /// The id of the authenticated user who opened it.
    owner: Option<Arc<str>>,
    /// Requests of it being answered now (their response streams open).
    busy: usize,
    /// Ended by its client while busy: closed when its calls have answered.
    ending: bool,
}

impl Session {
    fn evictable(&self) -> bool {
        self.busy == 0 && !self.ending
    }
}

impl Ledger {
    fn held_by(&self, owner: &Option<Arc<str>>) -> usize {
        self.open.values().filter(|session| session.owner == *owner).count() + self.opening.get(owner).copied().unwrap_or(0)
    }

    fn total(&self) -> usize {
        self.open.len() + self.opening.values().sum::<usize>()
    }

    /// Removes every session that is idle past `idle`; their ids.
    fn sweep(&mut self, idle: Duration) -> Vec<SessionId> {
        let now = Instant::now();
        let idle: Vec<SessionId> = self
            .open
            .iter()
            .filter(|(_, session)| session.evictable() && now.duration_since(session.used) >= idle)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &idle {
            self.open.remove(id);
        }
        idle
    }

    /// The least recently used session that is not busy, of `owner` when
    /// given, else of the user who holds the most sessions.
    fn victim(&self, owner: Option<&Option<Arc<str>>>) -> Option<SessionId> {
        let mut held: HashMap<&Option<Arc<str>>, usize> = HashMap::new();
        for session in self.open.values() {
            *held.entry(&session.owner).or_default() += 1;
        }
        self.open
            .iter()
            .filter(|(_, session)| session.evictable() && owner.is_none_or(|owner| session.owner == *owner))
            .max_by_key(|(_, session)| (held[&session.owner], std::cmp::Reverse(session.used)))
            .map(|(id, _)| id.clone())
    }

    /// Makes room for one more session of `owner` under `limits`: the ids
    /// of the sessions to close, or why it cannot be opened (the ids to
    /// close all the same).
    fn make_room(&mut self, owner: &Option<Arc<str>>, limits: &SessionLimits) -> (Vec<SessionId>, Option<Refusal>) {
        let mut closing = self.sweep(limits.idle);
        if owner.is_some() {
            while self.held_by(owner) >= limits.per_user {
                let Some(id) = self.victim(Some(owner)) else {
                    return (closing, Some(Refusal::UserFull { max: limits.per_user }));
                };
                self.open.remove(&id);
                closing.push(id);
            }
        }
        while self.total() >= limits.max {
            let Some(id) = self.victim(None) else {
                return (closing, Some(Refusal::Full { max: limits.max }));
            };
            let owner = self.open.remove(&id).and_then(|session| session.owner);
            tracing::info!(session = %Escaped(&id), owner = %Escaped(owner.as_deref().unwrap_or("")), max = limits.max,
                "closed the least recently used idle MCP session to open a new one");
            closing.push(id);
        }
        (closing, None)
    }
}

/// Why a new session is not opened: the answer the client reads.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The authentication hook named no user, so the session would belong
    /// to no one.
    Anonymous,
    /// The user holds `max` sessions, each busy.
    UserFull { max: usize },
    /// The server holds `max` sessions, each busy.
    Full { max: usize },
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let retry_after = [(RETRY_AFTER, RETRY_AFTER_SECS.to_string())];
        match self {
            Refusal::Anonymous => (
                StatusCode::FORBIDDEN,
                "Forbidden: the authentication hook accepted this request but named no user, so a session it \
                 opened would belong to no one (anyone could use or end it). The server's operator must give \
                 each user an id in the hook: `UserContext::new(id)`.",
            )
                .into_response(),
            Refusal::UserFull { max } => (
                StatusCode::TOO_MANY_REQUESTS,
                retry_after,
                format!(
                    "Too Many Requests: this user already has {max} MCP sessions open, each busy with a call or \
                     an approval ({max} is the limit for one user). End one (`DELETE` with its `Mcp-Session-Id`) \
                     or wait for a call to finish, then send `initialize` again."
                ),
            )
                .into_response(),
            Refusal::Full { max } => (
                StatusCode::SERVICE_UNAVAILABLE,
                retry_after,
                format!(
                    "Service Unavailable: all {max} MCP sessions of this server are busy with calls or \
                     approvals. Send `initialize` again in {RETRY_AFTER_SECS} seconds."
                ),
            )
                .into_response(),
        }
    }
}

/// A new session admitted for its owner, counted against the caps until
/// rmcp creates it (or the request ends without one).
#[derive(Debug)]
pub(crate) struct Admission {
    shared: Arc<Shared>,
    owner: Option<Arc<str>>,
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut ledger = self.shared.ledger();
        if let Some(count) = ledger.opening.get_mut(&self.owner) {
            *count -= 1;
            if *count == 0 {
                ledger.opening.remove(&self.owner);
            }
        }
    }
}

tokio::task_local! {
    /// The admission of the request being served, for `create_session`.
    static OPENING: RefCell<Option<Admission>>;
}

/// Serves `request` (rmcp's handling of one HTTP request) with `admission`
/// at hand: a session it creates is created for the admission's owner.
pub(crate) async fn opening<F: Future>(admission: Option<Admission>, request: F) -> F::Output {
    OPENING.scope(RefCell::new(admission), request).await
}

impl Shared {
    fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        // Only map operations run under the lock: a poisoned one is whole.
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn close_all(&self, ids: Vec<SessionId>) {
        for id in ids {
            if let Err(error) = self.inner.close_session(&id).await {
                tracing::debug!(session = %Escaped(&id), error = %Escaped(&error), "closing an MCP session failed");
            }
        }
    }
}

impl BoundedSessions {
    pub(crate) fn new(limits: SessionLimits) -> Self {
        let mut inner = LocalSessionManager::default();
        // rmcp's worker would end a session idle this long even with a call
        // in flight: the sweep here closes idle sessions instead, busy ones
        // never.
        inner.session_config.keep_alive = None;
        let limits = SessionLimits { max: limits.max.max(1), per_user: limits.per_user.max(1), ..limits };
        BoundedSessions { shared: Arc::new(Shared { inner, limits, ledger: Mutex::default() }), sweeper: OnceLock::new() }
    }

    /// Admits one more session for `caller` (`None`: the server has no
    /// authentication hook), closing idle sessions to make room; or why
    /// not, as the answer to send.
    pub(crate) async fn admit(&self, caller: Option<&UserContext>) -> Result<Admission, Refusal> {
        let owner: Option<Arc<str>> = match caller {
            None => None,
            Some(user) => Some(user.id.as_deref().ok_or(Refusal::Anonymous)?.into()),
        };
        let (closing, refused) = {
            let mut ledger = self.shared.ledger();
            let (closing, refused) = ledger.make_room(&owner, &self.shared.limits);
            if refused.is_none() {
                *ledger.opening.entry(owner.clone()).or_default() += 1;
            }
            (closing, refused)
        };
        self.shared.close_all(closing).await;
        if let Some(refused) = refused {
            tracing::warn!(owner = %Escaped(owner.as_deref().unwrap_or("")), refused = ?Escaped(&refused), "refused a new MCP session: every session is busy");
            return Err(refused);
        }
        Ok(Admission { shared: self.shared.clone(), owner })
    }

    /// Whether session `id` belongs to someone other than `user`.
    pub(crate) fn owned_by_other(&self, id: &str, user: Option<&str>) -> bool {
        let ledger = self.shared.ledger();
        ledger.open.get(id).and_then(|session| session.owner.as_deref()).is_some_and(|owner| Some(owner) != user)
    }

    fn touch(&self, id: &SessionId) {
        if let Some(session) = self.shared.ledger().open.get_mut(id) {
            session.used = Instant::now();
        }
    }

    /// Marks the session of the request whose `extensions` rmcp handed a
    /// handler (its HTTP `Parts`, with the `Mcp-Session-Id`) busy while the
    /// guard lives: a call in flight, whether or not its stream still is.
    pub(crate) fn call_in_flight(&self, extensions: &rmcp::model::Extensions) -> Option<Busy> {
        let parts = extensions.get::<axum::http::request::Parts>()?;
        let id = parts.headers.get(SESSION_ID)?.to_str().ok()?;
        Some(Busy::enter(&self.shared, &SessionId::from(id)))
    }

    /// Closes idle sessions every so often, from the first session on,
    /// while the store lives.
    fn start_sweeper(&self) {
        self.sweeper.get_or_init(|| {
            let shared: Weak<Shared> = Arc::downgrade(&self.shared);
            let every = (self.shared.limits.idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(30));
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    let Some(shared) = shared.upgrade() else { return };
                    let idle = shared.ledger().sweep(shared.limits.idle);
                    shared.close_all(idle).await;
                }
            });
        });
    }

    /// How many sessions are open.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.shared.ledger().open.len()
    }
}

/// One request of a session being answered: the session is busy while its
/// response stream lives, and while its handler runs.
pub(crate) struct Busy {
    shared: Arc<Shared>,
    id: SessionId,
}

impl Busy {
    fn enter(shared: &Arc<Shared>, id: &SessionId) -> Busy {
        if let Some(session) = shared.ledger().open.get_mut(id) {
            session.busy += 1;
            session.used = Instant::now();
        }
        Busy { shared: shared.clone(), id: id.clone() }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let ended = {
            let mut ledger = self.shared.ledger();
            let Some(session) = ledger.open.get_mut(&self.id) else { return };
            session.busy -= 1;
            session.used = Instant::now();
            session.ending && session.busy == 0 && ledger.open.remove(&self.id).is_some()
        };
        // The last call of a session its client ended has answered.
        if ended && let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (shared, id) = (self.shared.clone(), self.id.clone());
            runtime.spawn(async move { shared.close_all(vec![id]).await });
        }
    }
}

impl SessionManager for BoundedSessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.start_sweeper();
        // Served without the HTTP checks (which admit every new session),
        // a session is admitted here, ownerless, or made all the same.
        let admission = match OPENING.try_with(|admission| admission.borrow_mut().take()).ok().flatten() {
            Some(admission) => Some(admission),
            None => self.admit(None).await.ok(),
        };
        let owner = admission.as_ref().and_then(|admission| admission.owner.clone());
        let (id, transport) = self.shared.inner.create_session().await?;
        let session = Session { used: Instant::now(), owner, busy: 0, ending: false };
        self.shared.ledger().open.insert(id.clone(), session);
        drop(admission);
        Ok((id, transport))
    }

    async fn initialize_session(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        self.shared.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        // A session idle past its time is gone, even before a sweep; one its
        // client ended takes no new requests.
        let open = self
            .shared
            .ledger()
            .open
            .get(id)
            .is_some_and(|session| !session.ending && (session.busy > 0 || session.used.elapsed() < self.shared.limits.idle));
        Ok(open && self.shared.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        {
            let mut ledger = self.shared.ledger();
            // Busy: closed when its last call has answered (see `Busy`).
            if let Some(session) = ledger.open.get_mut(id).filter(|session| session.busy > 0) {
                session.ending = true;
                return Ok(());
            }
            ledger.open.remove(id);
        }
        self.shared.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let busy = Busy::enter(&self.shared, id);
        let stream = self.shared.inner.create_stream(id, message).await?;
        // The request's answer ends its stream; until then the session is busy.
        Ok(stream.map(move |message| {
            let _busy = &busy;
            message
        }))
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.touch(id);
        self.shared.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(&self, id: &SessionId) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.shared.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.shared.inner.resume(id, last_event_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(sessions: &[(&str, Option<&str>, usize)]) -> Ledger {
        let mut ledger = Ledger::default();
        for (id, owner, busy) in sessions {
            let session = Session { used: Instant::now(), owner: owner.map(Arc::from), busy: *busy, ending: false };
            ledger.open.insert(SessionId::from(*id), session);
        }
        ledger
    }

    fn limits(max: usize, per_user: usize) -> SessionLimits {
        SessionLimits { max, per_user, idle: Duration::from_secs(60) }
    }

    fn owner(name: &str) -> Option<Arc<str>> {
        Some(Arc::from(name))
    }

    #[tokio::test(start_paused = true)]
    async fn the_largest_holders_least_recently_used_idle_session_makes_room() {
        let mut ledger = ledger(&[("a1", Some("alice"), 0)]);
        for id in ["m1", "m2", "m3"] {
            tokio::time::advance(Duration::from_secs(1)).await;
            ledger.open.insert(id.into(), Session { used: Instant::now(), owner: owner("mallory"), busy: 0, ending: false });
        }
        // Alice's session is the oldest, but mallory holds the most.
        let (closing, refused) = ledger.make_room(&owner("bob"), &limits(4, 4));
        assert_eq!((closing.as_slice(), refused), ([SessionId::from("m1")].as_slice(), None));
        // A user at their own cap closes their own, even when the server has room.
        let (closing, refused) = ledger.make_room(&owner("mallory"), &limits(10, 2));
        assert_eq!((closing.as_slice(), refused), ([SessionId::from("m2")].as_slice(), None));
    }

    #[test]
    fn busy_sessions_are_never_chosen_and_a_full_house_of_them_refuses() {
        let mut ledger = ledger(&[("a1", Some("alice"), 1), ("m1", Some("mallory"), 2), ("m2", Some("mallory"), 1)]);
        assert_eq!(ledger.make_room(&owner("mallory"), &limits(10, 2)), (vec![], Some(Refusal::UserFull { max: 2 })));
        assert_eq!(ledger.make_room(&owner("bob"), &limits(3, 2)), (vec![], Some(Refusal::Full { max: 3 })));
        assert_eq!(ledger.open.len(), 3);
        // Admitted but not yet created sessions count too.
        let mut ledger = Ledger::default();
        ledger.opening.insert(owner("bob"), 1);
        assert_eq!(ledger.make_room(&owner("bob"), &limits(10, 1)), (vec![], Some(Refusal::UserFull { max: 1 })));
    }

    #[tokio::test(start_paused = true)]
    async fn the_sweep_closes_idle_sessions_but_not_busy_ones() {
        let mut ledger = ledger(&[("idle", None, 0), ("busy", None, 1)]);
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!(ledger.sweep(Duration::from_secs(60)), vec![SessionId::from("idle")]);
        assert!(ledger.open.contains_key("busy"));
    }

    #[tokio::test]
    async fn idle_sessions_are_swept_without_waiting_for_a_new_one() {
        let sessions = BoundedSessions::new(SessionLimits { max: 4, per_user: 4, idle: Duration::from_millis(100) });
        let (id, _transport) = sessions.create_session().await.unwrap();
        let busy = Busy::enter(&sessions.shared, &id);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(sessions.has_session(&id).await.unwrap(), "busy: not idle");
        drop(busy);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(sessions.len(), 0, "swept");
        assert!(!sessions.shared.inner.has_session(&id).await.unwrap(), "closed in rmcp's manager too");
    }

    #[tokio::test]
    async fn without_a_hook_only_the_servers_cap_applies_and_an_admission_counts_until_dropped() {
        let sessions = BoundedSessions::new(limits(2, 1));
        let first = sessions.admit(None).await.unwrap();
        let _second = sessions.admit(None).await.unwrap();
        assert_eq!(sessions.admit(None).await.unwrap_err(), Refusal::Full { max: 2 });
        drop(first);
        assert!(sessions.admit(None).await.is_ok());
        let anonymous = UserContext::default();
        assert_eq!(sessions.admit(Some(&anonymous)).await.unwrap_err(), Refusal::Anonymous);
        assert_eq!(sessions.len(), 0);
    }
}

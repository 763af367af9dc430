//! The HTTP sessions, bounded: rmcp's in-memory session manager with a
//! cap on how many it keeps and a time after which an idle one is closed.
//!
//! When a new session would pass the cap, the least recently used one is
//! closed to make room, rather than the new client being refused: a
//! refusal would let one client that opens sessions in a loop lock every
//! other client out until its sessions go idle, while an eviction costs
//! only the client that went quiet longest a new `initialize` (a closed
//! session answers `404`, which tells MCP clients to start a new one).
//!
//! With an authentication hook, a session belongs to the user who opened
//! it: another user's requests with its id are answered as if it did not
//! exist, so a leaked session id gives no one else its run or its streams.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId, SessionManager};
use tokio::time::Instant;

use crate::error_report::Escaped;

/// rmcp's [`LocalSessionManager`], holding at most `max` sessions, each
/// closed after `idle` without a request.
#[derive(Debug)]
pub(crate) struct BoundedSessions {
    inner: LocalSessionManager,
    max: usize,
    idle: Duration,
    /// Each open session: when it last had a request, and who owns it.
    last_used: Mutex<HashMap<SessionId, Session>>,
}

#[derive(Debug)]
struct Session {
    used: Instant,
    /// The id of the authenticated user who opened it.
    owner: Option<String>,
}

impl BoundedSessions {
    pub(crate) fn new(max: usize, idle: Duration) -> Self {
        let mut inner = LocalSessionManager::default();
        // rmcp's worker ends a session idle this long on its own; the
        // sweep below then drops what the manager still holds of it.
        inner.session_config.keep_alive = Some(idle);
        BoundedSessions { inner, max: max.max(1), idle, last_used: Mutex::new(HashMap::new()) }
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Session>> {
        // Only map operations run under the lock: a poisoned one is whole.
        self.last_used.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn touch(&self, id: &SessionId) {
        if let Some(session) = self.sessions().get_mut(id) {
            session.used = Instant::now();
        }
    }

    /// Makes `owner` the owner of session `id`, unless it has one.
    pub(crate) fn claim(&self, id: &str, owner: &str) {
        if let Some(session) = self.sessions().get_mut(id) {
            session.owner.get_or_insert_with(|| owner.to_owned());
        }
    }

    /// Whether session `id` belongs to someone other than `user`.
    pub(crate) fn owned_by_other(&self, id: &str, user: Option<&str>) -> bool {
        self.sessions().get(id).and_then(|session| session.owner.as_deref()).is_some_and(|owner| Some(owner) != user)
    }

    /// The sessions to close before one more is opened: every idle one,
    /// then the least recently used while the cap would be passed.
    fn make_room(&self) -> Vec<SessionId> {
        let mut sessions = self.sessions();
        let now = Instant::now();
        let mut closing: Vec<SessionId> = sessions
            .iter()
            .filter(|(_, session)| now.duration_since(session.used) >= self.idle)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &closing {
            sessions.remove(id);
        }
        while sessions.len() >= self.max {
            let Some(oldest) = sessions.iter().min_by_key(|(_, session)| session.used).map(|(id, _)| id.clone()) else {
                break;
            };
            tracing::info!(session = %Escaped(&oldest), max = self.max, "closed the least recently used MCP session to open a new one");
            sessions.remove(&oldest);
            closing.push(oldest);
        }
        closing
    }

    /// How many sessions are open.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.sessions().len()
    }
}

impl SessionManager for BoundedSessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        for id in self.make_room() {
            if let Err(error) = self.inner.close_session(&id).await {
                tracing::debug!(session = %Escaped(&id), error = %Escaped(&error), "closing an MCP session failed");
            }
        }
        let (id, transport) = self.inner.create_session().await?;
        self.sessions().insert(id.clone(), Session { used: Instant::now(), owner: None });
        Ok((id, transport))
    }

    async fn initialize_session(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        // A session idle past its time is gone, even before a sweep.
        let open = self.sessions().get(id).is_some_and(|session| session.used.elapsed() < self.idle);
        Ok(open && self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.sessions().remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.resume(id, last_event_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_least_recently_used_session_makes_room_and_idle_ones_are_swept() {
        let sessions = BoundedSessions::new(2, Duration::from_secs(60));
        let (first, _t1) = sessions.create_session().await.unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
        let (second, _t2) = sessions.create_session().await.unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
        sessions.touch(&first);
        let (third, _t3) = sessions.create_session().await.unwrap();
        assert_eq!(sessions.len(), 2);
        assert!(sessions.has_session(&first).await.unwrap(), "used most recently but one");
        assert!(!sessions.has_session(&second).await.unwrap(), "the least recently used went");
        assert!(sessions.has_session(&third).await.unwrap());

        tokio::time::advance(Duration::from_secs(60)).await;
        assert!(!sessions.has_session(&third).await.unwrap(), "idle past its time");
        let (_fourth, _t4) = sessions.create_session().await.unwrap();
        assert_eq!(sessions.len(), 1, "the idle sessions were swept");
    }

    #[tokio::test]
    async fn a_session_belongs_to_the_first_user_who_claims_it() {
        let sessions = BoundedSessions::new(2, Duration::from_secs(60));
        let (id, _transport) = sessions.create_session().await.unwrap();
        assert!(!sessions.owned_by_other(&id, Some("bob")), "no owner yet");
        sessions.claim(&id, "alice");
        sessions.claim(&id, "bob");
        assert!(!sessions.owned_by_other(&id, Some("alice")));
        assert!(sessions.owned_by_other(&id, Some("bob")));
        assert!(sessions.owned_by_other(&id, None));
        assert!(!sessions.owned_by_other("unknown", Some("bob")));
    }
}

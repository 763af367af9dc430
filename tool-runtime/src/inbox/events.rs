//! Live updates: the lists sent again, over server-sent events, whenever
//! the journal changes.
//!
//! One task per inbox watches the journal while some page listens: on
//! Postgres it listens to the journal's notifications
//! ([`InboxQueries::changes`](crate::journal::InboxQueries::changes)) and
//! reads the change mark at once; on SQLite, which cannot notify another
//! process, it reads the mark every poll interval. When the first waiting
//! call's expiry has passed it expires the calls due (the journal's
//! [`expire`](crate::journal::ApprovalRecords::expire), with the text a run gives
//! them), which is a change like any other. Each change wakes every page's
//! stream, which renders its approver's lists again and sends them when
//! they differ from what it sent last (it keeps their digest, not the
//! lists).
//!
//! A stream asks the auth hook again, with its request's headers, before
//! each update and every [`RECHECK_EVERY`] besides: an approver the hook
//! now refuses (or names as someone else) is sent a `signed-out` event and
//! the stream ends. One approver keeps at most
//! [`max_live_pages_per_approver`](super::Inbox::max_live_pages_per_approver)
//! streams open; one more is refused with `429`.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use super::auth::{Approver, approver};
use super::respond::signed_in;
use super::{Shared, csrf, listing};
use crate::caps::Place;
use crate::error_report::Escaped;
use crate::journal::InboxMark;
use crate::result::lines;

/// How often a stream asks the auth hook again while nothing changes.
pub(crate) const RECHECK_EVERY: Duration = Duration::from_secs(30);

pub(crate) async fn events<App: Send + Sync + 'static>(State(shared): State<Arc<Shared<App>>>, headers: HeaderMap) -> Response {
    let approver = match signed_in(&shared, &headers) {
        Ok(approver) => approver,
        Err(response) => return response,
    };
    let Some(place) = shared.live_pages.take(approver.id.clone()) else {
        let text = format!(
            "Too Many Requests: you have {} pages of this inbox open on live updates, the most one approver may. \
             Close one, then reload this page to see changes as they happen.",
            shared.live_pages.max()
        );
        return (StatusCode::TOO_MANY_REQUESTS, text).into_response();
    };
    let session = csrf::session(&headers);
    let token = csrf::token(&shared.secret, &session.id, &approver.id);
    let changes = subscribe(&shared);
    let listening = Listening { shared, headers, approver, token, changes, sent: None, ended: false, _place: place };
    Sse::new(stream(listening)).keep_alive(KeepAlive::default()).into_response()
}

/// One page's stream: whose it is, and what it sent.
struct Listening<App> {
    shared: Arc<Shared<App>>,
    /// The request's headers, for the auth hook asked again.
    headers: HeaderMap,
    approver: Approver,
    token: String,
    changes: watch::Receiver<u64>,
    /// The digest of the lists sent last.
    sent: Option<[u8; 32]>,
    /// Whether the approver was signed out: nothing more is sent.
    ended: bool,
    /// The approver's place among their live pages.
    _place: Place<String>,
}

/// The lists of one approver, each time they change, while the auth hook
/// still accepts them.
fn stream<App: Send + Sync + 'static>(listening: Listening<App>) -> impl Stream<Item = Result<Event, Infallible>> {
    futures_util::stream::unfold(listening, |mut state| async move {
        loop {
            if state.ended {
                return None;
            }
            if state.sent.is_some() {
                let changed = tokio::select! {
                    changed = state.changes.changed() => Some(changed.is_ok()),
                    () = tokio::time::sleep(RECHECK_EVERY) => None,
                };
                if changed == Some(false) {
                    // The watching task ended (no page listened for a
                    // moment): start it again.
                    state.changes = subscribe(&state.shared);
                    continue;
                }
                if let Some(signed_out) = state.signed_out() {
                    return Some((Ok(signed_out), state));
                }
                if changed.is_none() {
                    continue;
                }
            } else if let Some(signed_out) = state.signed_out() {
                return Some((Ok(signed_out), state));
            }
            state.changes.mark_unchanged();
            match listing::lists(&state.shared, &state.approver, &state.token).await {
                Ok(html) => {
                    let digest: [u8; 32] = Sha256::digest(html.as_bytes()).into();
                    if state.sent != Some(digest) {
                        state.sent = Some(digest);
                        return Some((Ok(Event::default().event("lists").data(html)), state));
                    }
                }
                Err(error) => {
                    tracing::warn!(error = %Escaped(&error), "the inbox could not read the journal for a page's update");
                    tokio::time::sleep(state.shared.poll_interval).await;
                    state.sent.get_or_insert([0; 32]);
                }
            }
        }
    })
}

impl<App> Listening<App> {
    /// Asks the auth hook again: the `signed-out` event, and the stream
    /// ended, when it refuses the approver or names someone else; else
    /// the approver as it gives them now.
    fn signed_out(&mut self) -> Option<Event> {
        let why = match approver(&*self.shared.auth, &self.headers) {
            Ok(now) if now.id == self.approver.id => {
                self.approver = now;
                return None;
            }
            Ok(_) => "This page's sign-in now names another approver. Reload the page.".to_owned(),
            Err(refused) => format!("{refused} Live updates stopped; reload the page once signed in."),
        };
        self.ended = true;
        Some(Event::default().event("signed-out").data(why))
    }
}

/// A receiver woken at each change of the journal, the watching task
/// started if none runs.
fn subscribe<App: Send + Sync + 'static>(shared: &Arc<Shared<App>>) -> watch::Receiver<u64> {
    let mut slot = shared.changes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(changes) = slot.as_ref()
        && changes.has_changed().is_ok()
    {
        return changes.clone();
    }
    let (sender, changes) = watch::channel(0);
    tokio::spawn(watch_journal(shared.clone(), sender));
    *slot = Some(changes.clone());
    changes
}

/// Tells the receivers of `sender` of each change of the journal, until
/// only the inbox's own receiver is left.
async fn watch_journal<App: Send + Sync + 'static>(shared: Arc<Shared<App>>, sender: watch::Sender<u64>) {
    let mut listener = match shared.journal.inbox().changes().await {
        Ok(listener) => listener,
        Err(error) => {
            tracing::warn!(error = %Escaped(&error), "the inbox cannot listen to the journal's notifications; it polls instead");
            None
        }
    };
    let mut poll = tokio::time::interval(shared.poll_interval);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last: Option<InboxMark> = None;
    while sender.receiver_count() > 1 {
        match listener.as_mut() {
            Some(changes) => tokio::select! {
                notified = changes.next() => if let Err(error) = notified {
                    tracing::warn!(error = %Escaped(&error), "the inbox lost the journal's notifications; it polls instead");
                    listener = None;
                },
                _ = poll.tick() => {}
            },
            None => {
                poll.tick().await;
            }
        }
        let mark = match shared.journal.inbox().mark().await {
            Ok(mark) => mark,
            Err(error) => {
                tracing::warn!(error = %Escaped(&error), "the inbox could not read the journal's change mark");
                continue;
            }
        };
        if mark.next_expiry().is_some_and(|expiry| expiry <= SystemTime::now()) {
            let text = lines::approval_expired(shared.registry.approval_ttl()).model_line();
            if let Err(error) = shared.journal.approvals().expire(&text).await {
                tracing::warn!(error = %Escaped(&error), "the inbox could not expire the calls due");
            }
            // The expiry is a write: the next mark tells of it.
            continue;
        }
        if last != Some(mark) {
            last = Some(mark);
            sender.send_modify(|generation| *generation += 1);
        }
    }
}

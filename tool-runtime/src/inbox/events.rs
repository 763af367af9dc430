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
//! they differ from what it sent last.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use tokio::sync::watch;

use super::auth::Approver;
use super::respond::signed_in;
use super::{Shared, csrf, listing};
use crate::error_report::Escaped;
use crate::journal::InboxMark;
use crate::result::lines;

pub(crate) async fn events<App: Send + Sync + 'static>(State(shared): State<Arc<Shared<App>>>, headers: HeaderMap) -> Response {
    let approver = match signed_in(&shared, &headers) {
        Ok(approver) => approver,
        Err(response) => return response,
    };
    let session = csrf::session(&headers);
    let token = csrf::token(&shared.secret, &session.id, &approver.id);
    let changes = subscribe(&shared);
    Sse::new(stream(shared, approver, token, changes)).keep_alive(KeepAlive::default()).into_response()
}

/// The lists of one approver, each time they change.
fn stream<App: Send + Sync + 'static>(
    shared: Arc<Shared<App>>,
    approver: Approver,
    token: String,
    changes: watch::Receiver<u64>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    struct Listening<App> {
        shared: Arc<Shared<App>>,
        approver: Approver,
        token: String,
        changes: watch::Receiver<u64>,
        sent: Option<String>,
    }
    let state = Listening { shared, approver, token, changes, sent: None };
    futures_util::stream::unfold(state, |mut state| async move {
        loop {
            if state.sent.is_some() && state.changes.changed().await.is_err() {
                // The watching task ended (no page listened for a moment):
                // start it again.
                state.changes = subscribe(&state.shared);
                continue;
            }
            state.changes.mark_unchanged();
            match listing::lists(&state.shared, &state.approver, &state.token).await {
                Ok(html) if state.sent.as_deref() != Some(&html) => {
                    let event = Event::default().event("lists").data(&html);
                    state.sent = Some(html);
                    return Some((Ok(event), state));
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(error = %Escaped(&error), "the inbox could not read the journal for a page's update");
                    tokio::time::sleep(state.shared.poll_interval).await;
                    if state.sent.is_none() {
                        state.sent = Some(String::new());
                    }
                }
            }
        }
    })
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

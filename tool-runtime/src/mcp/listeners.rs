//! The `subscriptions/listen` streams open on this process (revision
//! 2026-07-28), each with its caller and what its lists held when it last
//! heard; `subscriptions.rs` opens them and announces changes on them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleServer;
use rmcp::service::{RequestContext, SubscriptionSink};

use crate::context::UserContext;

/// The open streams.
#[derive(Default)]
pub(crate) struct Listeners {
    open: Mutex<Vec<Listener>>,
    next: AtomicU64,
    /// One reading of the lists at a time, so that a change is announced
    /// once.
    reading: tokio::sync::Mutex<()>,
}

/// One open stream.
#[derive(Clone)]
pub(crate) struct Listener {
    pub(crate) id: u64,
    pub(crate) user: Arc<UserContext>,
    /// The request that opened it, to read the composed lists with.
    pub(crate) context: RequestContext<RoleServer>,
    pub(crate) sink: SubscriptionSink,
    pub(crate) heard: Lists,
}

/// The names in each list a stream hears about (`None`: not asked for).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Lists {
    pub(crate) tools: Option<Vec<String>>,
    pub(crate) prompts: Option<Vec<String>>,
    pub(crate) resources: Option<Vec<String>>,
}

impl Listeners {
    fn open(&self) -> std::sync::MutexGuard<'_, Vec<Listener>> {
        // Only the vector changes under the lock: a poisoned one is whole.
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A fresh id for a stream.
    pub(crate) fn next_id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Keeps `listener` until it is removed.
    pub(crate) fn add(&self, listener: Listener) {
        self.open().push(listener);
    }

    /// Forgets the stream `id`.
    pub(crate) fn remove(&self, id: u64) {
        self.open().retain(|listener| listener.id != id);
    }

    /// The open streams, as they are now.
    pub(crate) fn all(&self) -> Vec<Listener> {
        self.open().clone()
    }

    /// Records that the stream `id` heard of `lists`.
    pub(crate) fn heard(&self, id: u64, lists: Lists) {
        if let Some(listener) = self.open().iter_mut().find(|listener| listener.id == id) {
            listener.heard = lists;
        }
    }

    /// Waits for the lists to be read by no one else.
    pub(crate) async fn reading(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.reading.lock().await
    }
}

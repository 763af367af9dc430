//! How long and for how many requests [`McpServer::serve_http`](crate::mcp::McpServer::serve_http)
//! keeps a connection alive: a client that sends a small request now and
//! then would otherwise hold its connection for ever.
//!
//! Each connection's service counts its requests: the last one it serves
//! is answered with `Connection: close`, after which hyper closes the
//! connection. The connection's task watches its [`Activity`]: once no
//! request has been in flight for the keep-alive timeout since the last
//! one was answered, it shuts the connection down gracefully (closed at
//! once when idle; when a response is still streaming, closed after it).
//! A new connection is not watched before its first request: the header
//! read timeout bounds it.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::http::header::CONNECTION;
use axum::http::{HeaderValue, Request};
use axum::response::Response;
use hyper::body::Incoming;
use hyper::service::Service;
use hyper_util::service::TowerToHyperService;
use tokio::time::Instant;

use crate::BoxFuture;

/// By default, how long a kept-alive connection may wait for its next
/// request: 5 seconds.
pub const DEFAULT_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(5);

/// By default, how many requests one connection serves before it is
/// closed.
pub const DEFAULT_MAX_REQUESTS_PER_CONNECTION: usize = 100;

/// What one connection is doing, shared by its service and its task.
#[derive(Default)]
pub(crate) struct Activity {
    requests: AtomicUsize,
    in_flight: AtomicUsize,
    /// When a request was last answered; `None` before the first.
    answered: Mutex<Option<Instant>>,
}

/// A request in flight, counted until it is answered or dropped.
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        *self.0.answered.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Activity {
    /// When the connection went idle: its last answer, while no request
    /// is in flight.
    fn idle_since(&self) -> Option<Instant> {
        let answered = *self.answered.lock().unwrap_or_else(PoisonError::into_inner);
        answered.filter(|_| self.in_flight.load(Ordering::Acquire) == 0)
    }
}

/// The service of one connection: `router`, each request counted in
/// `activity`, and the `max_requests`th answered with `Connection: close`.
pub(crate) fn counted(
    router: axum::Router,
    activity: Arc<Activity>,
    max_requests: usize,
) -> impl Service<Request<Incoming>, Response = Response, Error = Infallible, Future = BoxFuture<'static, Result<Response, Infallible>>> + Unpin {
    let router = TowerToHyperService::new(router);
    hyper::service::service_fn(move |request: Request<Incoming>| -> BoxFuture<'static, Result<Response, Infallible>> {
        let last = activity.requests.fetch_add(1, Ordering::AcqRel) + 1 >= max_requests;
        activity.in_flight.fetch_add(1, Ordering::AcqRel);
        let in_flight = InFlight(activity.clone());
        let answer = router.call(request);
        Box::pin(async move {
            let mut response = answer.await?;
            drop(in_flight);
            if last {
                response.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
            }
            Ok(response)
        })
    })
}

/// Resolves once the connection has had no request in flight for
/// `timeout` since it last answered one (never before its first answer).
pub(crate) async fn idle(activity: &Activity, timeout: Duration) {
    loop {
        match activity.idle_since() {
            Some(since) if since.elapsed() >= timeout => return,
            Some(since) => tokio::time::sleep_until(since + timeout).await,
            None => tokio::time::sleep(timeout).await,
        }
    }
}

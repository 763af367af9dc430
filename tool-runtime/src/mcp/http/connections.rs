//! The connections [`McpServer::serve_http`](crate::mcp::McpServer::serve_http)
//! accepts: HTTP/1.1 on hyper, as `axum::serve` serves it, with what a
//! server open to a network needs and `axum::serve` has no option for.
//!
//! - **A connection cap.** At most `max_connections` are served at once; at
//!   the cap no connection is accepted until one closes, so a new client
//!   waits in the listener's queue rather than being refused.
//! - **A cap per peer** (`peers.rs`). One peer (an IPv4 address, an IPv6
//!   `/64`) holds at most `max_connections_per_peer` of them: one more is
//!   answered `429` at once and closed, so no one client fills the
//!   connection cap.
//! - **Bounded keep-alive** (`keep_alive.rs`). A connection serves at most
//!   `max_requests` requests, and is closed when it waits longer than
//!   `keep_alive_timeout` for its next one.
//! - **A header read timeout.** A connection that has not sent a whole
//!   request head within `header_read_timeout` (a new one, or a kept-alive
//!   one between requests) is closed. The body's own deadline is one of the
//!   request checks (`http.rs`), so it holds for `http_service` too.
//! - **A lingering close.** When the server answers before it has read the
//!   whole request (a `413` from the declared length, a `408`, a `503`),
//!   closing the socket with the client's bytes unread makes the kernel
//!   reset the connection: a client still sending its body sees a broken
//!   pipe, and may never read the answer. So once hyper is done with a
//!   connection, the server shuts down its sending side (the client reads
//!   the answer, then the end) and reads and drops what the client still
//!   sends, until the client closes, for at most [`LINGER`].

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use super::keep_alive::{self, Activity};
use super::peers::{Peers, peer_of};
use crate::error_report::Escaped;

/// How long a closed connection still reads (and drops) what its client
/// sends, at most: time for a client to finish sending a refused body and
/// read the answer.
pub(crate) const LINGER: Duration = Duration::from_secs(5);

/// How often, at most, the server logs that it is at its connection cap.
const CAP_WARNING_EVERY: Duration = Duration::from_secs(60);

/// What bounds the connections.
pub(crate) struct Limits {
    pub(crate) header_read_timeout: Duration,
    pub(crate) max_connections: usize,
    pub(crate) max_connections_per_peer: usize,
    pub(crate) keep_alive_timeout: Duration,
    pub(crate) max_requests: usize,
}

/// Serves `router` on every connection `listener` accepts, within
/// `limits`; never returns. A failed accept (too many open files) is
/// logged and retried a second later, as `axum::serve` does.
pub(crate) async fn serve(listener: TcpListener, router: axum::Router, limits: Limits) -> io::Result<()> {
    let max_connections = limits.max_connections.clamp(1, Semaphore::MAX_PERMITS);
    let permits = Arc::new(Semaphore::new(max_connections));
    let peers = Peers::new(limits.max_connections_per_peer);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    let (mut at_cap, mut peer_at_cap) = (Warning::default(), Warning::default());
    loop {
        let permit = match permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                at_cap.warn(|| tracing::warn!(max_connections, "the MCP server is at its connection cap; new connections wait"));
                permits.clone().acquire_owned().await.expect("the connection semaphore is never closed")
            }
        };
        let (stream, address) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) if is_connection_error(&error) => continue,
            Err(error) => {
                tracing::error!(error = %Escaped(&error), "accepting an MCP connection failed; retrying in 1 s");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let Some(held) = peers.take(peer_of(address.ip())) else {
            let max = peers.max();
            peer_at_cap.warn(|| tracing::warn!(max, "a peer is at its MCP connection cap; its new connections are refused"));
            refuse_peer(&stream, max);
            continue;
        };
        let activity = Arc::new(Activity::default());
        let service = keep_alive::counted(router.clone(), activity.clone(), limits.max_requests);
        let mut connection = http.serve_connection(TokioIo::new(stream), service);
        let keep_alive_timeout = limits.keep_alive_timeout;
        tokio::spawn(async move {
            let mut shutting_down = false;
            let done = loop {
                tokio::select! {
                    done = std::future::poll_fn(|cx| connection.poll_without_shutdown(cx)) => break done,
                    () = keep_alive::idle(&activity, keep_alive_timeout), if !shutting_down => {
                        shutting_down = true;
                        std::pin::Pin::new(&mut connection).graceful_shutdown();
                    }
                }
            };
            // A connection that broke, or sent no head in time, is dropped
            // at once; one hyper is done with lingers, without hyper's read
            // buffer (up to 400 KB) and the rest of its parts.
            if done.is_ok() {
                linger(connection.into_parts().io.into_inner()).await;
            }
            drop((permit, held));
        });
    }
}

/// A warning logged at most once every [`CAP_WARNING_EVERY`].
#[derive(Default)]
struct Warning(Option<Instant>);

impl Warning {
    fn warn(&mut self, log: impl FnOnce()) {
        if self.0.is_none_or(|at| at.elapsed() >= CAP_WARNING_EVERY) {
            log();
            self.0 = Some(Instant::now());
        }
    }
}

/// Answers a connection over its peer's cap with `429`, as far as the
/// socket takes it at once (a new socket's buffer takes all of it), and
/// closes it: its request is not read, and nothing waits for the client.
fn refuse_peer(stream: &TcpStream, max: usize) {
    let text = format!(
        "Too Many Requests: your address already holds {max} connections to this MCP server, its limit per client. \
         Reuse an open connection, or close one and retry."
    );
    let answer = format!(
        "HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\nRetry-After: 1\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\n\r\n{text}",
        text.len()
    );
    let _ = stream.try_write(answer.as_bytes());
}

/// Shuts down the sending side, then reads and drops what the client still
/// sends until it closes, for at most [`LINGER`].
async fn linger(mut stream: TcpStream) {
    if stream.shutdown().await.is_err() {
        return;
    }
    let deadline = tokio::time::Instant::now() + LINGER;
    let mut dropped = [0u8; 8 * 1024];
    while let Ok(Ok(read)) = tokio::time::timeout_at(deadline, stream.read(&mut dropped)).await {
        if read == 0 {
            return;
        }
    }
}

/// An error of one connection (its client gave up before it was
/// accepted), not of the listener.
fn is_connection_error(error: &io::Error) -> bool {
    matches!(error.kind(), io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset)
}

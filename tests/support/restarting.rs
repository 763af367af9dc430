//! A reverse proxy in front of an example serving streamable HTTP that
//! kills the example and starts it again between two requests: after it
//! forwards a result that leaves something to come back to (a task, an
//! `input_required` result), it kills the server (SIGKILL), starts it
//! again (as it was started: on the same journal, with the same key) and
//! forwards the next request only once the new one listens. A client that
//! reads a task, or answers a question, then reads it from a server that
//! never saw it created.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::Response;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::sync::Mutex;

use crate::listening::Listening;

/// The results after which the server is restarted.
const RESTARTING: &[&str] = &["task", "input_required"];

/// The proxy, serving at [`Restarting::url`] until dropped (and with it
/// the server, killed with the runtime's tasks).
pub struct Restarting {
    /// The URL to give the client: the server's path on the proxy.
    pub url: String,
    restarts: Arc<AtomicUsize>,
    upstream: Arc<Mutex<Option<Listening>>>,
    runtime: tokio::runtime::Runtime,
}

impl Restarting {
    /// Starts the server through `start` and a proxy in front of it.
    pub fn start(start: impl Fn() -> Listening + Send + Sync + 'static) -> Restarting {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime for the proxy");
        let server = start();
        let path = server.url.parse::<Uri>().expect("the server's URL parses").path().to_owned();
        let restarts = Arc::new(AtomicUsize::new(0));
        let upstream = Arc::new(Mutex::new(Some(server)));
        let proxy = Proxy {
            upstream: upstream.clone(),
            start: Arc::new(start),
            restarts: restarts.clone(),
            client: Client::builder(TokioExecutor::new()).build_http(),
        };
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("the proxy binds a loopback port");
        let url = format!("http://{}{path}", listener.local_addr().expect("a bound listener has an address"));
        let app = axum::Router::new().fallback(forward).with_state(proxy);
        runtime.spawn(async move { axum::serve(listener, app).await });
        Restarting { url, restarts, upstream, runtime }
    }

    /// How many times the server was restarted so far, once a restart
    /// under way (after the last response) is done.
    pub fn restarts(&self) -> usize {
        drop(self.runtime.block_on(self.upstream.lock()));
        self.restarts.load(Ordering::SeqCst)
    }
}

/// What each request shares.
#[derive(Clone)]
struct Proxy {
    /// The server now running (none only while it restarts, locked).
    upstream: Arc<Mutex<Option<Listening>>>,
    start: Arc<dyn Fn() -> Listening + Send + Sync>,
    restarts: Arc<AtomicUsize>,
    client: Client<HttpConnector, Body>,
}

/// Forwards `request` to the server running now; restarts the server
/// once a result that leaves something to come back to is read whole.
async fn forward(State(proxy): State<Proxy>, request: Request) -> Result<Response, (StatusCode, String)> {
    let upstream = proxy.upstream.lock().await.as_ref().expect("a server runs").url.parse::<Uri>().expect("the server's URL parses");
    let (mut parts, body) = request.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |path| path.as_str());
    parts.uri = format!("http://{}{path}", upstream.authority().expect("the server's URL has an address")).parse().expect("a URI");
    without_hop_by_hop(&mut parts.headers);
    parts.headers.remove(header::HOST);
    let post = parts.method == Method::POST;
    let response = proxy.client.request(Request::from_parts(parts, body)).await.map_err(|error| (StatusCode::BAD_GATEWAY, error.to_string()))?;
    let (mut parts, body) = response.into_parts();
    if !post {
        return Ok(Response::from_parts(parts, Body::new(body)));
    }
    // A POST's response ends with its result (at the stateless revision a
    // stream ends too): read whole, it says whether to restart.
    let body = axum::body::to_bytes(Body::new(body), usize::MAX).await.map_err(|error| (StatusCode::BAD_GATEWAY, error.to_string()))?;
    if leaves_something(&body) {
        // Locked before the response is sent: the next request waits for
        // the new server.
        let mut server = proxy.upstream.clone().lock_owned().await;
        let (start, restarts) = (proxy.start.clone(), proxy.restarts.clone());
        tokio::task::spawn_blocking(move || {
            // The old one killed (SIGKILL) and waited for before the new one starts.
            drop(server.take());
            *server = Some(start());
            restarts.fetch_add(1, Ordering::SeqCst);
        });
    }
    without_hop_by_hop(&mut parts.headers);
    parts.headers.remove(header::CONTENT_LENGTH);
    Ok(Response::from_parts(parts, Body::from(body)))
}

/// `headers` without those of one connection, which the proxy's own
/// connections set for themselves.
fn without_hop_by_hop(headers: &mut HeaderMap) {
    for name in [header::CONNECTION, header::TRANSFER_ENCODING, header::TE, header::UPGRADE, header::TRAILER] {
        headers.remove(name);
    }
}

/// Whether `body` (JSON, or server-sent events of JSON) carries a result
/// of a type in [`RESTARTING`].
fn leaves_something(body: &Bytes) -> bool {
    let text = String::from_utf8_lossy(body);
    let messages = text.lines().filter_map(|line| line.strip_prefix("data:")).chain(std::iter::once(text.as_ref()));
    messages
        .filter_map(|message| serde_json::from_str::<serde_json::Value>(message.trim()).ok())
        .any(|message| message["result"]["resultType"].as_str().is_some_and(|kind| RESTARTING.contains(&kind)))
}

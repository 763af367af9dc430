//! The MCP server over streamable HTTP, spoken as raw HTTP/1.1 on a
//! loopback socket: what is refused before a body is read (a foreign
//! `Host` or `Origin`, a missing credential, an oversized body), what is
//! refused before a body is parsed (too many values, not UTF-8), how long a
//! request may take to arrive and how many connections are served, that a
//! refused upload still reads its answer, how many sessions are kept, and
//! who a session's calls run as.
//!
//! ```text
//! cargo test -p tool-runtime --features mcp --test suite mcp_http::
//! ```
#![cfg(feature = "mcp")]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tool_runtime::mcp::{McpServer, Unauthorized};
use tool_runtime::prelude::*;

/// Get one item.
#[tool(read_only)]
async fn get_item(id: u32) -> String {
    format!("item {id}")
}

fn server() -> McpServer<()> {
    let registry = Registry::<()>::builder().tools(tools![get_item]).build().unwrap();
    McpServer::new(registry, Arc::new(()))
}

/// Serves `server` on a free loopback port; its address.
async fn serve(server: McpServer<()>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(server.serve_http(listener));
    addr
}

#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }

    /// The JSON-RPC message answering request `id`, from a JSON or SSE body.
    fn message(&self, id: u64) -> Value {
        self.body
            .lines()
            .map(|line| line.strip_prefix("data:").unwrap_or(line).trim())
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .find(|message| message["id"] == json!(id))
            .unwrap_or_else(|| panic!("no answer to request {id} in {self:?}"))
    }
}

/// One HTTP/1.1 request on its own connection (`Connection: close`): the
/// head, then `body`; the reply, read to the end (at most 10 s).
async fn exchange(addr: SocketAddr, head: &str, body: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw)).await.expect("a reply within 10s").unwrap();
    parse(&raw)
}

fn parse(raw: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no HTTP reply: {text:?}"));
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> =
        lines.filter_map(|line| line.split_once(':')).map(|(key, value)| (key.trim().to_owned(), value.trim().to_owned())).collect();
    let chunked = headers.iter().any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked { dechunk(body) } else { body.to_owned() };
    Reply { status, headers, body }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else { break };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].strip_prefix("\r\n").unwrap_or(&rest[size..]);
    }
    out
}

/// The head of a POST to `/mcp` with `headers` and a body of `length` bytes.
fn post_head(addr: SocketAddr, headers: &[(&str, &str)], length: Option<usize>) -> String {
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n"
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    match length {
        Some(length) => head.push_str(&format!("Content-Length: {length}\r\n\r\n")),
        None => head.push_str("Transfer-Encoding: chunked\r\n\r\n"),
    }
    head
}

async fn post(addr: SocketAddr, headers: &[(&str, &str)], message: &Value) -> Reply {
    let body = message.to_string();
    exchange(addr, &post_head(addr, headers, Some(body.len())), body.as_bytes()).await
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
}

/// Opens a session with `headers` on every request; its id.
async fn open(addr: SocketAddr, headers: &[(&str, &str)]) -> String {
    let reply = post(addr, headers, &initialize()).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let session = reply.header("mcp-session-id").expect("a session id").to_owned();
    let mut headers = headers.to_vec();
    headers.extend([("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-06-18")]);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(addr, &headers, &initialized).await.status, 202);
    session
}

/// Sends request `id` in `session`.
async fn request(addr: SocketAddr, session: &str, headers: &[(&str, &str)], id: u64, method: &str, params: Value) -> Reply {
    let mut headers = headers.to_vec();
    headers.extend([("Mcp-Session-Id", session), ("MCP-Protocol-Version", "2025-06-18")]);
    post(addr, &headers, &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await
}

#[tokio::test]
async fn a_body_declared_too_large_is_refused_before_it_is_sent() {
    let addr = serve(server()).await;
    let session = open(addr, &[]).await;
    let three_mib = 3 << 20;
    for headers in [vec![], vec![("Mcp-Session-Id", session.as_str())]] {
        // Only the head goes out: a server that waited for the body would
        // never answer.
        let reply = exchange(addr, &post_head(addr, &headers, Some(three_mib)), b"").await;
        assert_eq!(reply.status, 413, "{reply:?}");
        assert!(reply.body.contains("this request body is 3145728 bytes"), "{reply:?}");
        assert!(reply.body.contains("at most 1114112 bytes"), "1 MiB of arguments plus 64 KiB: {reply:?}");
        assert!(reply.body.contains("Send smaller arguments"), "{reply:?}");
    }
}

#[tokio::test]
async fn a_body_under_the_byte_limit_with_too_many_values_is_refused_before_it_is_parsed() {
    let addr = serve(server()).await;
    let session = open(addr, &[]).await;
    // 1 MiB of `[0],[0],...`: 260,000 values, which rmcp's parsing would
    // turn into about 150 MB.
    let items = vec!["[0]"; 260_000].join(",");
    let message = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "get_item", "arguments": {"id": 1, "pad": serde_json::from_str::<Value>(&format!("[{items}]")).unwrap()}}});
    let headers = [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-06-18")];
    let reply = post(addr, &headers, &message).await;
    assert_eq!(reply.status, 413, "{reply:?}");
    assert!(reply.body.contains("more than 33792 JSON values"), "32,768 plus 1,024: {reply:?}");
    // Within both limits, the same call is served.
    let reply = request(addr, &session, &[], 3, "tools/call", json!({"name": "get_item", "arguments": {"id": 1}})).await;
    assert_eq!(reply.status, 200, "{reply:?}");
}

#[tokio::test]
async fn a_chunked_body_is_cut_off_as_soon_as_it_passes_the_limit() {
    let addr = serve(server()).await;
    let limit = server().max_body_bytes();
    assert_eq!(limit, (1 << 20) + 64 * 1024);
    // One chunk just over the limit, and no end: the server must answer
    // from what it has read.
    let chunk = vec![b' '; limit + 1];
    let mut body = format!("{:x}\r\n", chunk.len()).into_bytes();
    body.extend_from_slice(&chunk);
    body.extend_from_slice(b"\r\n");
    let reply = exchange(addr, &post_head(addr, &[], None), &body).await;
    assert_eq!(reply.status, 413, "{reply:?}");
    assert!(reply.body.contains("at most 1114112 bytes"), "{reply:?}");
    assert!(reply.body.contains("Send smaller arguments"), "{reply:?}");
}

#[tokio::test]
async fn a_foreign_origin_is_refused_and_loopback_or_none_are_served() {
    let addr = serve(server()).await;
    let refused = post(addr, &[("Origin", "http://evil.example")], &initialize()).await;
    assert_eq!(refused.status, 403, "{refused:?}");
    assert!(refused.header("mcp-session-id").is_none());
    assert!(refused.body.contains("with_allowed_origins"), "{refused:?}");

    for origin in [None, Some("http://localhost:6274"), Some(&*format!("http://{addr}"))] {
        let headers: Vec<(&str, &str)> = origin.map(|origin| ("Origin", origin)).into_iter().collect();
        let reply = post(addr, &headers, &initialize()).await;
        assert_eq!(reply.status, 200, "{origin:?}: {reply:?}");
    }

    let addr = serve(server().with_allowed_origins(["https://app.example.com"])).await;
    assert_eq!(post(addr, &[("Origin", "https://app.example.com")], &initialize()).await.status, 200);
    assert_eq!(post(addr, &[("Origin", "https://evil.example")], &initialize()).await.status, 403);
}

#[tokio::test]
async fn past_the_session_cap_the_least_recently_used_session_is_closed() {
    let addr = serve(server().with_max_sessions(2)).await;
    let first = open(addr, &[]).await;
    let second = open(addr, &[]).await;
    assert_eq!(request(addr, &first, &[], 2, "tools/list", json!({})).await.status, 200);
    let third = open(addr, &[]).await;
    assert_eq!(request(addr, &second, &[], 2, "tools/list", json!({})).await.status, 404, "the least recently used");
    for session in [&first, &third] {
        let reply = request(addr, session, &[], 3, "tools/list", json!({})).await;
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(reply.message(3)["result"]["tools"][0]["name"], "get_item");
    }
}

#[tokio::test]
async fn an_idle_session_is_closed() {
    let addr = serve(server().with_session_idle_timeout(Duration::from_millis(300))).await;
    let session = open(addr, &[]).await;
    assert_eq!(request(addr, &session, &[], 2, "tools/list", json!({})).await.status, 200);
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(request(addr, &session, &[], 3, "tools/list", json!({})).await.status, 404);
}

#[tokio::test]
async fn serving_a_non_loopback_address_without_authentication_is_refused_at_start() {
    let listener = TcpListener::bind("0.0.0.0:0").await.unwrap();
    let error = tokio::time::timeout(Duration::from_secs(5), server().serve_http(listener)).await.expect("refused at once").unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
    let message = error.to_string();
    assert!(message.contains("without authentication"), "{message}");
    assert!(message.contains("with_auth") && message.contains("allow_remote_without_auth"), "{message}");

    // With a hook, or the explicit opt-out, it serves.
    for server in [server().with_bearer_token("t", UserContext::new("u")), server().allow_remote_without_auth()] {
        let listener = TcpListener::bind("0.0.0.0:0").await.unwrap();
        let serving = tokio::time::timeout(Duration::from_millis(300), server.serve_http(listener)).await;
        assert!(serving.is_err(), "still serving: {serving:?}");
    }
}

#[tokio::test]
async fn the_auth_hook_decides_who_calls_and_a_session_stays_its_openers() {
    let server = server().with_auth(|headers| {
        let token = headers.get("authorization").and_then(|value| value.to_str().ok());
        match token.and_then(|value| value.strip_prefix("Bearer ")) {
            Some("alice-token") => Ok(UserContext::new("alice").with_floor(ApprovalFloor::default().tool("get_item"))),
            Some("bob-token") => Ok(UserContext::new("bob")),
            Some(_) => Err(Unauthorized::new("Unknown token: sign in again to get a new one.")),
            None => Err(Unauthorized::missing_bearer_token()),
        }
    });
    let addr = serve(server).await;

    let missing = post(addr, &[], &initialize()).await;
    assert_eq!(missing.status, 401, "{missing:?}");
    assert_eq!(missing.header("www-authenticate"), Some("Bearer"));
    assert!(missing.body.contains("Authorization: Bearer <token>"), "{missing:?}");
    let wrong = post(addr, &[("Authorization", "Bearer nope")], &initialize()).await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.body.contains("sign in again"), "{wrong:?}");

    // The calls run as the user the request's credential names: alice's
    // floor sends get_item to approval, which this client cannot give.
    let alice = [("Authorization", "Bearer alice-token")];
    let bob = [("Authorization", "Bearer bob-token")];
    let alices = open(addr, &alice).await;
    let as_alice = request(addr, &alices, &alice, 2, "tools/call", json!({"name": "get_item", "arguments": {"id": 1}})).await;
    let text = as_alice.message(2)["result"]["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(text.starts_with("code: APPROVAL_UNAVAILABLE"), "{text}");
    let bobs = open(addr, &bob).await;
    let as_bob = request(addr, &bobs, &bob, 3, "tools/call", json!({"name": "get_item", "arguments": {"id": 1}})).await;
    assert_eq!(as_bob.message(3)["result"]["content"][0]["text"], "item 1");

    let anonymous = request(addr, &alices, &[], 4, "tools/list", json!({})).await;
    assert_eq!(anonymous.status, 401, "every request is authenticated");
    // A session belongs to the user who opened it.
    let intruder = request(addr, &alices, &bob, 5, "tools/call", json!({"name": "get_item", "arguments": {"id": 1}})).await;
    assert_eq!(intruder.status, 404, "{intruder:?}");
    assert!(intruder.body.contains("Start a new session"), "{intruder:?}");
    assert_eq!(request(addr, &alices, &alice, 6, "tools/list", json!({})).await.status, 200, "still alice's");
}

#[tokio::test]
async fn only_listed_hosts_and_the_bound_address_are_served() {
    let addr = serve(server().with_allowed_hosts(["mcp.example.com"])).await;
    let body = initialize().to_string();
    for (host, status) in [("mcp.example.com", 200), (&*addr.to_string(), 200), ("evil.example", 403)] {
        let head = post_head(addr, &[], Some(body.len())).replacen(&format!("Host: {addr}"), &format!("Host: {host}"), 1);
        let reply = exchange(addr, &head, body.as_bytes()).await;
        assert_eq!(reply.status, status, "{host}: {reply:?}");
    }
}

#[tokio::test]
async fn a_body_that_is_not_utf8_is_refused_before_it_is_parsed() {
    let addr = serve(server()).await;
    let session = open(addr, &[]).await;
    let headers = [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-06-18")];
    // A call within every limit, then one byte that is not UTF-8; and 1 MiB
    // of `[0],[0],...` (over the value limit) ending in the same byte.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_item", "arguments": {"id": 1}}});
    let items = vec!["[0]"; 260_000].join(",");
    let padded = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "get_item", "arguments": {"id": 1, "pad": serde_json::from_str::<Value>(&format!("[{items}]")).unwrap()}}});
    for message in [call, padded] {
        let mut body = message.to_string().into_bytes();
        let at = body.len();
        body.push(0xFF);
        let reply = exchange(addr, &post_head(addr, &headers, Some(body.len())), &body).await;
        assert_eq!(reply.status, 400, "{reply:?}");
        assert!(reply.body.contains("not valid UTF-8"), "{reply:?}");
        assert!(reply.body.contains(&format!("at byte {at}")), "{reply:?}");
    }
    let reply = request(addr, &session, &[], 4, "tools/call", json!({"name": "get_item", "arguments": {"id": 1}})).await;
    assert_eq!(reply.message(4)["result"]["content"][0]["text"], "item 1", "the session still serves");
}

#[tokio::test]
async fn a_foreign_host_is_refused_from_the_headers_before_authentication_and_the_body() {
    let addr = serve(server().with_bearer_token("t", UserContext::new("u"))).await;
    let token = [("Authorization", "Bearer t")];
    // Declared too large, without a credential, and with a credential and
    // a body that never comes: each is refused for its Host, from the head.
    for (headers, length) in [(&[][..], 3 << 20), (&[][..], 100), (&token[..], 100)] {
        let head = post_head(addr, headers, Some(length)).replacen(&format!("Host: {addr}"), "Host: evil.example", 1);
        let reply = tokio::time::timeout(Duration::from_secs(3), exchange(addr, &head, b""))
            .await
            .unwrap_or_else(|_| panic!("{headers:?}, {length} bytes: no answer from the head alone"));
        assert_eq!(reply.status, 403, "{headers:?}, {length} bytes: {reply:?}");
        assert!(reply.body.contains("with_allowed_hosts"), "{reply:?}");
    }
}

#[tokio::test]
async fn a_connection_that_does_not_finish_its_headers_is_closed() {
    let addr = serve(server().with_header_read_timeout(Duration::from_millis(300))).await;
    for sent in [&b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"[..], b""] {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(sent).await.unwrap();
        let started = Instant::now();
        let mut raw = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(3), stream.read_to_end(&mut raw)).await;
        assert!(closed.is_ok(), "{sent:?}: still open after 3 s");
        assert!(started.elapsed() >= Duration::from_millis(250), "{sent:?}: closed before the timeout");
    }
    // A kept-alive connection is closed when no next request comes in time.
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = format!("GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(3), stream.read_to_end(&mut raw)).await.expect("closed within 3 s").unwrap();
    let reply = parse(&raw);
    assert_eq!(reply.status, 400, "answered, then closed: {reply:?}");
    assert_ne!(reply.header("connection"), Some("close"), "the answer kept the connection alive: {reply:?}");
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_refused_with_408() {
    let addr = serve(server().with_body_read_timeout(Duration::from_millis(300))).await;
    let session = open(addr, &[]).await;
    let headers = [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-06-18")];
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(post_head(addr, &headers, Some(1000)).as_bytes()).await.unwrap();
    stream.write_all(br#"{"jsonrpc""#).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(3), stream.read_to_end(&mut raw)).await.expect("an answer within 3 s").unwrap();
    let reply = parse(&raw);
    assert_eq!(reply.status, 408, "{reply:?}");
    assert!(reply.body.contains("did not arrive within 300ms"), "{reply:?}");
}

#[tokio::test]
async fn past_the_connection_cap_a_new_connection_waits_until_one_closes() {
    let addr = serve(server().with_max_connections(2)).await;
    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let waiting = tokio::spawn(async move { post(addr, &[], &initialize()).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "a third connection was served past the cap of 2");
    drop(held.pop());
    let reply = tokio::time::timeout(Duration::from_secs(5), waiting).await.expect("served once one closed").unwrap();
    assert_eq!(reply.status, 200, "{reply:?}");
}

#[tokio::test]
async fn a_refused_3_mib_upload_reads_its_413_every_time() {
    let addr = serve(server()).await;
    let body = vec![b' '; 3 << 20];
    for attempt in 0..8 {
        // The client sends the whole body, as a network would (not all at
        // once), before it reads; half the attempts leave the connection
        // open for another request.
        let mut head = post_head(addr, &[], Some(body.len()));
        if attempt % 2 == 1 {
            head = head.replacen("Connection: close\r\n", "", 1);
        }
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let mut sent = stream.write_all(head.as_bytes()).await;
        for part in body.chunks(64 << 10) {
            if sent.is_ok() {
                sent = stream.write_all(part).await;
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        let mut raw = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw)).await.expect("an answer within 10 s");
        let status = std::str::from_utf8(&raw).ok().and_then(|raw| raw.split(' ').nth(1)).map(str::to_owned);
        assert!(sent.is_ok(), "attempt {attempt}: the server stopped reading: {sent:?} (then read {status:?})");
        assert_eq!(status.as_deref(), Some("413"), "attempt {attempt}: read {read:?}, {} bytes", raw.len());
        assert!(parse(&raw).body.contains("this request body is 3145728 bytes"), "attempt {attempt}");
    }
}

#[tokio::test]
async fn large_bodies_arriving_at_once_are_bounded_and_small_requests_still_served() {
    let addr = serve(server().with_max_arriving_body_bytes(1 << 20)).await;
    // A slow client has sent 900,000 bytes of a 1,000,000-byte body.
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(post_head(addr, &[], Some(1_000_000)).as_bytes()).await.unwrap();
    slow.write_all(&vec![b' '; 900_000]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // 400 KB more would pass the limit: refused at once, with when to retry.
    let padded = format!("{}{}", initialize(), " ".repeat(400_000));
    let head = post_head(addr, &[], Some(padded.len()));
    let refused = tokio::time::timeout(Duration::from_secs(5), exchange(addr, &head, padded.as_bytes())).await.expect("at once");
    assert_eq!(refused.status, 503, "{refused:?}");
    assert_eq!(refused.header("retry-after"), Some("1"), "{refused:?}");
    assert!(refused.body.contains("Retry in a moment"), "{refused:?}");
    // A small request is still served, and the large one is once the slow
    // client is gone.
    assert_eq!(post(addr, &[], &initialize()).await.status, 200);
    drop(slow);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(exchange(addr, &head, padded.as_bytes()).await.status, 200);
}

/// A connection to `addr` from the loopback address `ip`: another peer
/// than the test's own `127.0.0.1`, as the server sees it.
async fn connect_from(ip: &str, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(ip.parse().unwrap(), 0))?;
    socket.connect(addr).await
}

/// One abusive client's connection from `127.0.0.2`, as in the attack it
/// reproduces: kept alive, a small unauthenticated request every 200 ms
/// (answered 401), opened again whenever the server closes it.
async fn abusive_connection(addr: SocketAddr) {
    let body = initialize().to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    loop {
        let Ok(mut stream) = connect_from("127.0.0.2", addr).await else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let mut answer = [0u8; 4096];
        while stream.write_all(request.as_bytes()).await.is_ok() {
            if let Ok(Ok(0) | Err(_)) = tokio::time::timeout(Duration::from_secs(1), stream.read(&mut answer)).await {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn one_peer_holding_many_connections_leaves_room_for_a_legitimate_initialize() {
    // Scaled down from the attack: 16 connections against a cap of 8.
    let server = server().with_bearer_token("t", UserContext::new("u")).with_max_connections(8).with_max_connections_per_peer(4);
    let addr = serve(server).await;
    let abuse: Vec<_> = (0..16).map(|_| tokio::spawn(abusive_connection(addr))).collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    for attempt in 0..3 {
        let initialized = tokio::time::timeout(Duration::from_secs(5), post(addr, &[("Authorization", "Bearer t")], &initialize())).await;
        let reply = initialized.unwrap_or_else(|_| panic!("attempt {attempt}: no answer to a legitimate initialize within 5 s"));
        assert_eq!(reply.status, 200, "attempt {attempt}: {reply:?}");
    }
    abuse.iter().for_each(tokio::task::JoinHandle::abort);
}

/// One HTTP/1.1 answer read from a connection kept open (`Content-Length`
/// or chunked), and whether the server closed the connection within 500 ms
/// after.
async fn read_answer(stream: &mut TcpStream) -> (Reply, bool) {
    let reply = read_one_answer(stream).await;
    let mut buffer = [0u8; 64];
    let closed = matches!(tokio::time::timeout(Duration::from_millis(500), stream.read(&mut buffer)).await, Ok(Ok(0) | Err(_)));
    (reply, closed)
}

/// One HTTP/1.1 answer read from a connection kept open.
async fn read_one_answer(stream: &mut TcpStream) -> Reply {
    let mut raw = Vec::new();
    let mut buffer = [0u8; 8192];
    let complete = |raw: &[u8]| {
        let text = String::from_utf8_lossy(raw);
        let Some((head, body)) = text.split_once("\r\n\r\n") else { return false };
        let head = head.to_ascii_lowercase();
        match head.lines().find_map(|line| line.strip_prefix("content-length:")) {
            Some(length) => body.len() >= length.trim().parse::<usize>().unwrap(),
            None => body.ends_with("0\r\n\r\n"),
        }
    };
    while !complete(&raw) {
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buffer)).await.expect("an answer within 5 s").unwrap();
        assert_ne!(read, 0, "closed before a whole answer: {:?}", String::from_utf8_lossy(&raw));
        raw.extend_from_slice(&buffer[..read]);
    }
    parse(&raw)
}

/// A `GET /mcp` without a session, kept alive: rmcp answers `400` and
/// keeps the connection.
fn keep_alive_get(addr: SocketAddr) -> String {
    format!("GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n")
}

#[tokio::test]
async fn a_refused_request_closes_its_connection_though_it_asked_to_keep_it() {
    let addr = serve(server().with_bearer_token("t", UserContext::new("u"))).await;
    let body = initialize().to_string();
    let keep_alive = |headers: &[(&str, &str)]| post_head(addr, headers, Some(body.len())).replacen("Connection: close\r\n", "", 1);
    let foreign = [("Authorization", "Bearer t"), ("Origin", "http://evil.example")];
    for (headers, status) in [(&[][..], 401), (&[("Authorization", "Bearer nope")][..], 401), (&foreign[..], 403)] {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(format!("{}{body}", keep_alive(headers)).as_bytes()).await.unwrap();
        let (reply, closed) = read_answer(&mut stream).await;
        assert_eq!(reply.status, status, "{reply:?}");
        assert_eq!(reply.header("connection"), Some("close"), "{reply:?}");
        assert!(closed, "{status}: the connection stayed open");
    }
    // An accepted request keeps its connection.
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(format!("{}{body}", keep_alive(&[("Authorization", "Bearer t")])).as_bytes()).await.unwrap();
    let (reply, closed) = read_answer(&mut stream).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(!closed, "an accepted request's connection was closed");
}

#[tokio::test]
async fn a_connection_serves_at_most_its_request_count() {
    let addr = serve(server().with_max_requests_per_connection(3)).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    for request in 1..=3 {
        stream.write_all(keep_alive_get(addr).as_bytes()).await.unwrap();
        let (reply, closed) = read_answer(&mut stream).await;
        assert_eq!(reply.status, 400, "request {request}: {reply:?}");
        assert_eq!(closed, request == 3, "request {request}: {reply:?}");
        assert_eq!(reply.header("connection") == Some("close"), request == 3, "request {request}: {reply:?}");
    }
}

#[tokio::test]
async fn a_kept_alive_connection_waiting_past_its_keep_alive_timeout_is_closed() {
    let addr = serve(server().with_keep_alive_timeout(Duration::from_millis(500))).await;
    // A new connection waits for its first request the header read
    // timeout (10 s), not the keep-alive timeout.
    let mut stream = TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    stream.write_all(keep_alive_get(addr).as_bytes()).await.unwrap();
    let reply = read_one_answer(&mut stream).await;
    assert_eq!(reply.status, 400, "{reply:?}");
    // Then it waits for the next one 500 ms from its answer.
    let answered = Instant::now();
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(3), stream.read_to_end(&mut rest)).await.expect("closed within 3 s").unwrap();
    assert!(rest.is_empty(), "{rest:?}");
    let waited = answered.elapsed();
    assert!(waited >= Duration::from_millis(400), "closed {waited:?} after its answer");
    assert!(waited < Duration::from_secs(2), "closed by the keep-alive timeout, not the header read timeout: {waited:?}");
}

#[tokio::test]
async fn past_its_cap_a_peers_new_connection_is_refused_and_other_peers_are_served() {
    let addr = serve(server().with_max_connections_per_peer(2)).await;
    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(connect_from("127.0.0.2", addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut third = connect_from("127.0.0.2", addr).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(3), third.read_to_end(&mut raw)).await.expect("answered and closed at once").unwrap();
    let refused = parse(&raw);
    assert_eq!(refused.status, 429, "{refused:?}");
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert!(refused.body.contains("already holds 2 connections"), "{refused:?}");
    // Another peer is served; and the first, once one of its connections closed.
    assert_eq!(post(addr, &[], &initialize()).await.status, 200);
    drop(held.pop());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut again = connect_from("127.0.0.2", addr).await.unwrap();
    let body = initialize().to_string();
    again.write_all(format!("{}{body}", post_head(addr, &[], Some(body.len()))).as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), again.read_to_end(&mut raw)).await.expect("served").unwrap();
    assert_eq!(parse(&raw).status, 200);
}

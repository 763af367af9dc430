//! The MCP server's HTTP sessions under load, spoken as raw HTTP/1.1 on a
//! loopback socket: the caps in all and per user, what a refused newcomer
//! reads, that a call or an approval in flight is never cut (by another
//! user's sessions, by the idle timeout, by its own client ending the
//! session), and whose a session is; and the caps on calls waiting for
//! approval over all sessions, per user and in all.
//!
//! ```text
//! cargo test -p tool-runtime --features mcp --test suite mcp_sessions::
//! ```
#![cfg(feature = "mcp")]

use crate::support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tool_runtime::mcp::{McpServer, Unauthorized};
use tool_runtime::prelude::*;

/// Sleep `ms` milliseconds.
#[tool(read_only)]
async fn slow(ms: u64) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("slept {ms}")
}

/// Send a note; a human approves first.
#[tool(policy = needs_approval)]
async fn send_note(text: String) -> String {
    format!("sent {}", text.len())
}

/// A server whose hook makes `Bearer NAME` user NAME, and `Bearer
/// anonymous` a user without an id.
fn server() -> McpServer<()> {
    let registry = Registry::<()>::builder().tools(tools![slow, send_note]).build().unwrap();
    McpServer::new(registry, Arc::new(())).with_auth(|headers| {
        let token = headers.get("authorization").and_then(|value| value.to_str().ok());
        match token.and_then(|value| value.strip_prefix("Bearer ")) {
            Some("anonymous") => Ok(UserContext::default()),
            Some(name) => Ok(UserContext::new(name)),
            None => Err(Unauthorized::missing_bearer_token()),
        }
    })
}

async fn serve(server: McpServer<()>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(server.serve_http(listener));
    addr
}

/// A reply read so far: its status, headers, and the JSON-RPC messages
/// in its body (JSON or SSE).
#[derive(Debug, Default)]
struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().filter_map(|line| line.split_once(':')).find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.trim())
    }

    fn messages(&self) -> Vec<Value> {
        self.body
            .lines()
            .map(|line| line.strip_prefix("data:").unwrap_or(line).trim())
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .collect()
    }

    /// The answer to request `id`, if it came.
    fn answer(&self, id: u64) -> Option<Value> {
        self.messages().into_iter().find(|message| message["id"] == json!(id) && message.get("method").is_none())
    }
}

/// One request on its own connection (`Connection: close`), read as it comes.
struct Exchange {
    stream: TcpStream,
    raw: Vec<u8>,
    done: bool,
}

impl Exchange {
    async fn send(addr: SocketAddr, method: &str, headers: &[(&str, &str)], body: &str) -> Exchange {
        let mut head = format!(
            "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(body.as_bytes()).await.unwrap();
        Exchange { stream, raw: Vec::new(), done: false }
    }

    fn reply(&self) -> Reply {
        let text = String::from_utf8_lossy(&self.raw);
        let Some((head, body)) = text.split_once("\r\n\r\n") else { return Reply::default() };
        let status = head.split(' ').nth(1).and_then(|status| status.parse().ok()).unwrap_or(0);
        Reply { status, head: head.to_owned(), body: body.to_owned() }
    }

    /// Reads until `ready` holds of the reply or the server closes (at most 10 s).
    async fn until(&mut self, ready: impl Fn(&Reply) -> bool) -> Reply {
        tokio::time::timeout(Duration::from_secs(10), async {
            while !self.done && !ready(&self.reply()) {
                let mut buffer = [0u8; 8192];
                match self.stream.read(&mut buffer).await.unwrap_or(0) {
                    0 => self.done = true,
                    n => self.raw.extend_from_slice(&buffer[..n]),
                }
            }
        })
        .await
        .expect("a reply within 10s");
        self.reply()
    }

    async fn finish(mut self) -> Reply {
        self.until(|_| false).await
    }
}

fn bearer(user: &str) -> String {
    format!("Bearer {user}")
}

fn initialize(capabilities: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": capabilities, "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string()
}

/// The reply to an `initialize` as `user`.
async fn try_open(addr: SocketAddr, user: &str, capabilities: Value) -> Reply {
    Exchange::send(addr, "POST", &[("Authorization", &bearer(user))], &initialize(capabilities)).await.finish().await
}

/// Opens a session as `user`; its id.
async fn open(addr: SocketAddr, user: &str, capabilities: Value) -> String {
    let reply = try_open(addr, user, capabilities).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let session = reply.header("mcp-session-id").expect("a session id").to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    assert_eq!(send(addr, user, &session, &initialized).await.finish().await.status, 202);
    session
}

/// Sends `body` in `session` as `user`.
async fn send(addr: SocketAddr, user: &str, session: &str, body: &str) -> Exchange {
    let auth = bearer(user);
    let headers = [("Authorization", auth.as_str()), ("Mcp-Session-Id", session), ("MCP-Protocol-Version", "2025-06-18")];
    Exchange::send(addr, "POST", &headers, body).await
}

/// Starts `tools/call` of `tool` as request `id`.
async fn call(addr: SocketAddr, user: &str, session: &str, id: u64, tool: &str, arguments: Value) -> Exchange {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
    send(addr, user, session, &body.to_string()).await
}

/// The status of a `tools/list` in `session`.
async fn list_status(addr: SocketAddr, user: &str, session: &str) -> u16 {
    let body = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/list", "params": {}}).to_string();
    send(addr, user, session, &body).await.finish().await.status
}

fn result_text(reply: &Reply, id: u64) -> String {
    let answer = reply.answer(id).unwrap_or_else(|| panic!("no answer to request {id}: {reply:?}"));
    answer["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn one_user_opening_sessions_in_a_loop_cuts_no_other_users_call() {
    let addr = serve(server().with_max_sessions(6).with_max_sessions_per_user(3)).await;
    let alices = open(addr, "alice", json!({})).await;
    let alices_call = call(addr, "alice", &alices, 2, "slow", json!({"ms": 1500})).await;
    let alices_call = tokio::spawn(alices_call.finish());
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Mallory's idle sessions make room for his new ones: he closes only
    // his own.
    let mut mallorys = Vec::new();
    for _ in 0..40 {
        mallorys.push(open(addr, "mallory", json!({})).await);
    }
    let reply = alices_call.await.unwrap();
    assert_eq!(result_text(&reply, 2), "slept 1500", "alice's call answered: {reply:?}");
    assert_eq!(list_status(addr, "alice", &alices).await, 200, "alice's session is still open");
    for (index, session) in mallorys.iter().enumerate() {
        let expected = if index >= 37 { 200 } else { 404 };
        assert_eq!(list_status(addr, "mallory", session).await, expected, "mallory's session {index}");
    }
}

#[tokio::test]
async fn when_every_session_is_busy_a_newcomer_is_refused_with_a_status_and_no_call_is_cut() {
    let addr = serve(server().with_max_sessions(3).with_max_sessions_per_user(2)).await;
    let mut calls = Vec::new();
    for user in ["mallory", "mallory", "bob"] {
        let session = open(addr, user, json!({})).await;
        calls.push(tokio::spawn(call(addr, user, &session, 2, "slow", json!({"ms": 1200})).await.finish()));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;

    let over_his_cap = try_open(addr, "mallory", json!({})).await;
    assert_eq!(over_his_cap.status, 429, "{over_his_cap:?}");
    assert_eq!(over_his_cap.header("retry-after"), Some("5"));
    assert!(over_his_cap.body.contains("2 MCP sessions open, each busy"), "{over_his_cap:?}");
    assert!(over_his_cap.header("mcp-session-id").is_none());
    let full = try_open(addr, "carol", json!({})).await;
    assert_eq!(full.status, 503, "{full:?}");
    assert_eq!(full.header("retry-after"), Some("5"));
    assert!(full.body.contains("all 3 MCP sessions of this server are busy"), "{full:?}");

    for call in calls {
        let reply = call.await.unwrap();
        assert_eq!(result_text(&reply, 2), "slept 1200", "{reply:?}");
    }
    // Idle now: one of mallory's (he holds the most) makes room for carol.
    assert_eq!(try_open(addr, "carol", json!({})).await.status, 200);
}

#[tokio::test]
async fn a_call_or_an_approval_longer_than_the_idle_timeout_is_not_cut() {
    let addr = serve(server().with_session_idle_timeout(Duration::from_millis(300))).await;
    let session = open(addr, "alice", json!({"elicitation": {"form": {}}})).await;
    let reply = call(addr, "alice", &session, 2, "slow", json!({"ms": 1000})).await.finish().await;
    assert_eq!(result_text(&reply, 2), "slept 1000", "{reply:?}");

    // The human answers after three idle timeouts.
    let mut approval = call(addr, "alice", &session, 3, "send_note", json!({"text": "hi"})).await;
    let asked = approval.until(|reply| reply.messages().iter().any(|message| message["method"] == "elicitation/create")).await;
    let ask = asked.messages().into_iter().find(|message| message["method"] == "elicitation/create").expect("asked");
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let accept = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {}}}).to_string();
    let answered = send(addr, "alice", &session, &accept).await.finish().await;
    assert_eq!(answered.status, 202, "{answered:?}");
    let reply = approval.finish().await;
    assert_eq!(result_text(&reply, 3), "sent 2", "{reply:?}");

    // Idle again past its time, it is closed.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(list_status(addr, "alice", &session).await, 404);
}

#[tokio::test]
async fn a_call_still_running_after_its_client_dropped_the_stream_keeps_the_session_busy() {
    let addr = serve(server().with_max_sessions(2)).await;
    let alices = open(addr, "alice", json!({})).await;
    let dropped = call(addr, "alice", &alices, 2, "slow", json!({"ms": 1500})).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(dropped);
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Bob's new sessions close his own, not alice's (the least recently used).
    for _ in 0..4 {
        open(addr, "bob", json!({})).await;
    }
    assert_eq!(list_status(addr, "alice", &alices).await, 200);
}

#[tokio::test]
async fn a_session_its_client_ends_during_a_call_still_answers_the_call() {
    let addr = serve(server()).await;
    let session = open(addr, "alice", json!({})).await;
    let running = tokio::spawn(call(addr, "alice", &session, 2, "slow", json!({"ms": 800})).await.finish());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let auth = bearer("alice");
    let headers = [("Authorization", auth.as_str()), ("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-06-18")];
    let ended = Exchange::send(addr, "DELETE", &headers, "").await.finish().await;
    assert_eq!(ended.status, 204, "the session is ended, no content: {ended:?}");
    assert_eq!(list_status(addr, "alice", &session).await, 404, "no new requests");
    let reply = running.await.unwrap();
    assert_eq!(result_text(&reply, 2), "slept 800", "{reply:?}");
}

#[tokio::test]
async fn with_a_hook_a_caller_it_names_no_user_cannot_open_a_session() {
    let addr = serve(server()).await;
    let refused = try_open(addr, "anonymous", json!({})).await;
    assert_eq!(refused.status, 403, "{refused:?}");
    assert!(refused.body.contains("named no user"), "{refused:?}");
    assert!(refused.body.contains("`UserContext::new(id)`"), "{refused:?}");
    assert!(refused.header("mcp-session-id").is_none());

    // Nor use another's: a session is its opener's.
    let alices = open(addr, "alice", json!({})).await;
    assert_eq!(list_status(addr, "anonymous", &alices).await, 404);
    assert_eq!(list_status(addr, "alice", &alices).await, 200);
}

#[tokio::test]
async fn calls_waiting_for_approval_are_capped_per_user_and_in_all_over_sessions() {
    use support::{Human, Wire, elicitation, text};
    let (server, store) = support::server();
    let alice = server.with_user(UserContext::new("alice")).with_max_waiting_approvals_per_user(2).with_max_waiting_approvals(3);
    let bob = alice.clone().with_user(UserContext::new("bob"));
    // One waiting call in each session, so the session's own cap (16) is
    // never what refuses.
    let mut waiting = Vec::new();
    let mut wait = async |server: &McpServer<support::Store>, id: u32| {
        let mut wire = Wire::connect(server, elicitation(), Human::Away).await;
        wire.call("get_item", json!({"id": id})).await;
        let call = wire.start("tools/call", json!({"name": "delete_item", "arguments": {"id": id}})).await;
        while wire.asked.is_empty() {
            wire.names().await;
        }
        waiting.push((wire, call));
    };
    wait(&alice, 1).await;
    wait(&alice, 2).await;

    let mut third = Wire::connect(&alice, elicitation(), Human::Away).await;
    third.call("get_item", json!({"id": 3})).await;
    let refused = third.call("delete_item", json!({"id": 3})).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(text(&refused).starts_with("code: TOO_MANY_PENDING, status: 429"), "{refused}");
    assert!(text(&refused).contains("2 calls of this user already wait"), "{refused}");
    assert!(third.asked.is_empty(), "asked nobody");

    wait(&bob, 4).await;
    let mut bobs = Wire::connect(&bob, elicitation(), Human::Away).await;
    bobs.call("get_item", json!({"id": 5})).await;
    let full = bobs.call("delete_item", json!({"id": 5})).await;
    assert!(text(&full).contains("3 calls already wait for a human's approval on this server"), "{full}");
    assert!(store.deleted.lock().unwrap().is_empty());

    // A settled call makes room.
    let (mut first, call) = waiting.remove(0);
    first.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": call}})).await;
    let mut later = Wire::connect(&alice, elicitation(), Human::Away).await;
    later.call("get_item", json!({"id": 6})).await;
    later.start("tools/call", json!({"name": "delete_item", "arguments": {"id": 6}})).await;
    let asked = tokio::time::timeout(Duration::from_secs(5), async {
        while later.asked.is_empty() {
            later.names().await;
        }
    });
    assert!(asked.await.is_ok(), "the freed place was taken");
}

/// Not a check but a measurement, run on demand with the default caps:
/// one token opens 500 sessions while another user's 8 s call runs.
///
/// ```text
/// cargo test -p tool-runtime --features mcp --test suite -- --ignored --nocapture flood
/// ```
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: prints figures"]
async fn flood() {
    use std::collections::BTreeMap;
    let addr = serve(server()).await;
    let alices = open(addr, "alice", json!({})).await;
    let called = std::time::Instant::now();
    let alices_call = call(addr, "alice", &alices, 2, "slow", json!({"ms": 8000})).await;
    let alices_call = tokio::spawn(async move { (alices_call.finish().await, called.elapsed()) });
    tokio::time::sleep(Duration::from_millis(200)).await;

    let started = std::time::Instant::now();
    let mut statuses = BTreeMap::new();
    let mut mallorys = Vec::new();
    for _ in 0..500 {
        let reply = try_open(addr, "mallory", json!({})).await;
        *statuses.entry(reply.status).or_insert(0) += 1;
        mallorys.extend(reply.header("mcp-session-id").map(str::to_owned));
    }
    println!("one token, 500 initialize in {:.1}s: HTTP statuses {statuses:?}", started.elapsed().as_secs_f64());
    let mut open_now = BTreeMap::new();
    for session in &mallorys {
        *open_now.entry(list_status(addr, "mallory", session).await).or_insert(0) += 1;
    }
    println!("his 500 sessions afterwards (tools/list): {open_now:?}");

    // His live sessions busy with 8 s calls, he opens 20 more.
    let live: Vec<&String> = mallorys.iter().rev().take(16).collect();
    let mut busy = Vec::new();
    for session in live {
        busy.push(tokio::spawn(call(addr, "mallory", session, 3, "slow", json!({"ms": 8000})).await.finish()));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut more = BTreeMap::new();
    let mut sample = None;
    for _ in 0..20 {
        let reply = try_open(addr, "mallory", json!({})).await;
        *more.entry(reply.status).or_insert(0) += 1;
        sample.get_or_insert_with(|| format!("Retry-After: {:?}, {}", reply.header("retry-after"), reply.body));
    }
    println!("20 more while his 16 sessions are busy: {more:?}; he reads: {}", sample.unwrap_or_default());

    let (reply, took) = alices_call.await.unwrap();
    let answer = reply.answer(2).map(|answer| answer["result"]["content"][0]["text"].clone());
    println!("alice's 8 s call, started before the flood: {answer:?}, answered after {:.1}s", took.as_secs_f64());
    println!("alice's next request: HTTP {}", list_status(addr, "alice", &alices).await);
    for call in busy {
        call.await.unwrap();
    }
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_durable_session_a_call_outlives_another_users_flood_and_its_outcome_is_journaled() {
    use tool_runtime::journal::{CallStart, Journal};
    let dir = std::env::temp_dir().join(format!("tool-runtime-mcp-sessions-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let journal = Journal::open(&dir.join("journal.db").display().to_string()).await.unwrap();
    let addr = serve(server().with_journal(journal.clone()).with_max_sessions(6).with_max_sessions_per_user(3)).await;

    let alices = open(addr, "alice", json!({"elicitation": {"form": {}}})).await;
    let mut approval = call(addr, "alice", &alices, 2, "send_note", json!({"text": "hi"})).await;
    let asked = approval.until(|reply| reply.messages().iter().any(|message| message["method"] == "elicitation/create")).await;
    let ask = asked.messages().into_iter().find(|message| message["method"] == "elicitation/create").expect("asked");
    let parked = journal.approvals().pending_for_user("alice").await.unwrap();
    assert_eq!(parked.len(), 1, "{parked:?}");
    for _ in 0..20 {
        open(addr, "mallory", json!({})).await;
    }
    let accept = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {}}}).to_string();
    assert_eq!(send(addr, "alice", &alices, &accept).await.finish().await.status, 202);
    let reply = approval.finish().await;
    assert_eq!(result_text(&reply, 2), "sent 2", "{reply:?}");
    let calls = journal.calls().of_run(&parked[0].run_id).await.unwrap();
    let outcomes: Vec<_> = calls.iter().map(|call| &call.outcome).collect();
    assert!(matches!(outcomes.as_slice(), [CallStart::Finished(result)] if result.text == "sent 2"), "the call's outcome is journaled: {outcomes:?}");
}

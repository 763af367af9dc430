//! What the MCP wire tests share: a store, its tools, a server over them,
//! and a client speaking raw JSON-RPC lines to one session over an
//! in-memory pipe.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tool_runtime::mcp::McpServer;
use tool_runtime::mcp::rmcp::ServiceExt;
use tool_runtime::prelude::*;

#[derive(Default)]
pub struct Store {
    pub deleted: Mutex<Vec<u32>>,
    pub cancelled: AtomicUsize,
}

#[derive(Serialize, JsonSchema)]
pub struct Item {
    pub id: u32,
    pub name: String,
}

/// List the item ids.
#[tool(read_only, kind = "read", meta(owner = "store", cost = 1))]
pub async fn list_items() -> Vec<u32> {
    vec![1, 2, 3]
}

/// Get one item.
#[tool(read_only)]
pub async fn get_item(
    /// The item's id.
    #[schemars(range(min = 1))]
    id: u32,
) -> Item {
    Item { id, name: format!("item {id}") }
}

/// Delete one item; a human approves first.
#[tool(destructive, requires("get_item"), policy = needs_approval)]
pub async fn delete_item(ctx: Ctx<Store>, id: u32) -> String {
    ctx.app().deleted.lock().unwrap().push(id);
    format!("deleted {id}")
}

/// Count to `to`, a step every 20 ms, reporting each.
#[tool]
pub async fn count(ctx: Ctx<Store>, to: u32) -> u32 {
    let mut counting = Counting { store: ctx.app_arc().clone(), done: false };
    for step in 1..=to {
        tokio::time::sleep(Duration::from_millis(20)).await;
        ctx.progress(f64::from(step), Some(f64::from(to)), Some("counting"));
    }
    counting.done = true;
    to
}

/// Counts the counts that ended early: the runtime drops a cancelled tool.
pub struct Counting {
    pub store: Arc<Store>,
    pub done: bool,
}

impl Drop for Counting {
    fn drop(&mut self) {
        if !self.done {
            self.store.cancelled.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Say hello; only on the first step.
#[tool(visible_when = first_step)]
pub async fn hello() -> String {
    "hello".into()
}

pub fn first_step<App>(view: &StepView<'_, App>) -> bool {
    view.step == 0
}

pub fn server() -> (McpServer<Store>, Arc<Store>) {
    let registry = Registry::<Store>::builder().tools(tools![list_items, get_item, delete_item, count, hello]).build().unwrap();
    let store = Arc::new(Store::default());
    (McpServer::new(registry, store.clone()).with_name("store", "1.2.3"), store)
}

/// How the test client answers `elicitation/create`.
#[derive(Clone, Copy, PartialEq)]
pub enum Human {
    Accept,
    Decline,
    Dismiss,
    /// Never answers.
    Away,
}

/// A client speaking raw JSON-RPC lines to one session.
pub struct Wire {
    reader: BufReader<ReadHalf<DuplexStream>>,
    writer: WriteHalf<DuplexStream>,
    next_id: u64,
    human: Human,
    /// Every notification, in arrival order, with the responses' ids
    /// interleaved as `{"response": id}` to check ordering.
    pub seen: Vec<Value>,
    /// The server's requests received (`elicitation/create` and those of
    /// `replies`).
    pub asked: Vec<Value>,
    /// What the client answers the server's requests of these methods
    /// with (their `result`), before `human` answers `elicitation/create`.
    pub replies: Vec<(String, Value)>,
    pub initialized: Value,
}

impl Wire {
    pub async fn connect<App: Send + Sync + 'static>(server: &McpServer<App>, capabilities: Value, human: Human) -> Wire {
        Wire::open(server, "2025-06-18", capabilities, human).await
    }

    /// Starts a session and initializes it at `version`.
    pub async fn open<App: Send + Sync + 'static>(server: &McpServer<App>, version: &str, capabilities: Value, human: Human) -> Wire {
        let (client, server_side) = tokio::io::duplex(1 << 16);
        let session = server.session();
        tokio::spawn(async move {
            if let Ok(running) = session.serve(server_side).await {
                let _ = running.waiting().await;
            }
        });
        let (reader, writer) = tokio::io::split(client);
        let mut wire = Wire {
            reader: BufReader::new(reader),
            writer,
            next_id: 1,
            human,
            seen: Vec::new(),
            asked: Vec::new(),
            replies: Vec::new(),
            initialized: Value::Null,
        };
        wire.initialized = wire
            .request("initialize", json!({"protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "wire", "version": "0"}}))
            .await;
        wire.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        wire
    }

    pub async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
    }

    /// Sends a request; returns its id.
    pub async fn start(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        id
    }

    /// Reads messages until the response to `id`, answering the server's
    /// requests on the way; its `result`.
    pub async fn response(&mut self, id: u64) -> Value {
        let message = self.reply(id).await;
        assert!(message.get("error").is_none(), "a protocol error: {message}");
        message["result"].clone()
    }

    /// Reads messages until the response to `id`, answering the server's
    /// requests on the way; the whole response (its `result` or `error`).
    pub async fn reply(&mut self, id: u64) -> Value {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let mut line = String::new();
                assert!(self.reader.read_line(&mut line).await.unwrap() > 0, "the server closed the pipe");
                let message: Value = serde_json::from_str(&line).unwrap();
                match (&message["id"], &message["method"]) {
                    (Value::Null, Value::String(_)) => self.seen.push(message),
                    (server_id, Value::String(method)) if self.replies.iter().any(|(replied, _)| replied == method) => {
                        self.asked.push(message.clone());
                        let result = self.replies.iter().find(|(replied, _)| replied == method).map(|(_, result)| result.clone());
                        let server_id = server_id.clone();
                        self.send(json!({"jsonrpc": "2.0", "id": server_id, "result": result})).await;
                    }
                    (server_id, Value::String(method)) => {
                        assert_eq!(method, "elicitation/create", "unexpected server request {message}");
                        self.asked.push(message.clone());
                        let action = match self.human {
                            Human::Accept => "accept",
                            Human::Decline => "decline",
                            Human::Dismiss => "cancel",
                            Human::Away => continue,
                        };
                        let content = if action == "accept" { json!({}) } else { Value::Null };
                        let mut result = json!({"action": action});
                        if !content.is_null() {
                            result["content"] = content;
                        }
                        let server_id = server_id.clone();
                        self.send(json!({"jsonrpc": "2.0", "id": server_id, "result": result})).await;
                    }
                    (answered, _) if *answered == json!(id) => {
                        self.seen.push(json!({"response": id}));
                        return message;
                    }
                    _ => {}
                }
            }
        })
        .await
        .expect("a response within 10s")
    }

    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.start(method, params).await;
        self.response(id).await
    }

    pub async fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments})).await
    }

    pub async fn names(&mut self) -> Vec<String> {
        let list = self.request("tools/list", json!({})).await;
        list["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect()
    }

    /// How many `tools/list_changed` arrived so far; forgets them.
    pub fn list_changes(&mut self) -> usize {
        let changes = self.seen.iter().filter(|m| m["method"] == "notifications/tools/list_changed").count();
        self.seen.clear();
        changes
    }
}

pub fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

pub fn no_capabilities() -> Value {
    json!({})
}

pub fn elicitation() -> Value {
    json!({"elicitation": {"form": {}}})
}

/// Waits until `done` holds (at most 5 s).
pub async fn eventually(done: impl Fn() -> bool) -> bool {
    for _ in 0..100 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}

pub fn server_of(tools: Vec<tool_runtime::BoxedTool<Store>>, ttl: Option<Duration>) -> (McpServer<Store>, Arc<Store>) {
    let mut builder = Registry::<Store>::builder().tools(tools);
    if let Some(ttl) = ttl {
        builder = builder.approval_ttl(ttl);
    }
    let store = Arc::new(Store::default());
    (McpServer::new(builder.build().unwrap(), store.clone()), store)
}

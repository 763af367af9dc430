//! The MCP server at the wire: JSON-RPC lines over an in-memory pipe, so
//! every rule is checked on the exact messages a client sees.
//!
//! ```text
//! cargo test -p tool-runtime --features mcp --test mcp
//! ```
#![cfg(feature = "mcp")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tool_runtime::mcp::rmcp::ServiceExt;
use tool_runtime::mcp::McpServer;
use tool_runtime::prelude::*;

#[derive(Default)]
struct Store {
    deleted: Mutex<Vec<u32>>,
    cancelled: AtomicUsize,
}

#[derive(Serialize, JsonSchema)]
struct Item {
    id: u32,
    name: String,
}

/// List the item ids.
#[tool(read_only, kind = "read", meta(owner = "store", cost = 1))]
async fn list_items() -> Vec<u32> {
    vec![1, 2, 3]
}

/// Get one item.
#[tool(read_only)]
async fn get_item(
    /// The item's id.
    #[schemars(range(min = 1))]
    id: u32,
) -> Item {
    Item { id, name: format!("item {id}") }
}

/// Delete one item; a human approves first.
#[tool(destructive, requires("get_item"), policy = needs_approval)]
async fn delete_item(ctx: Ctx<Store>, id: u32) -> String {
    ctx.app().deleted.lock().unwrap().push(id);
    format!("deleted {id}")
}

/// Count to `to`, a step every 20 ms, reporting each.
#[tool]
async fn count(ctx: Ctx<Store>, to: u32) -> u32 {
    let mut counting = Counting { store: ctx.app_arc().clone(), done: false };
    for step in 1..=to {
        tokio::time::sleep(Duration::from_millis(20)).await;
        ctx.progress(f64::from(step), Some(f64::from(to)), Some("counting"));
    }
    counting.done = true;
    to
}

/// Counts the counts that ended early: the runtime drops a cancelled tool.
struct Counting {
    store: Arc<Store>,
    done: bool,
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
async fn hello() -> String {
    "hello".into()
}

fn first_step<App>(view: &StepView<'_, App>) -> bool {
    view.step == 0
}

fn server() -> (McpServer<Store>, Arc<Store>) {
    let registry = Registry::<Store>::builder()
        .tools(tools![list_items, get_item, delete_item, count, hello])
        .build()
        .unwrap();
    let store = Arc::new(Store::default());
    (McpServer::new(registry, store.clone()).with_name("store", "1.2.3"), store)
}

/// How the test client answers `elicitation/create`.
#[derive(Clone, Copy, PartialEq)]
enum Human {
    Accept,
    Decline,
    Dismiss,
    /// Never answers.
    Away,
}

/// A client speaking raw JSON-RPC lines to one session.
struct Wire {
    reader: BufReader<ReadHalf<DuplexStream>>,
    writer: WriteHalf<DuplexStream>,
    next_id: u64,
    human: Human,
    /// Every notification, in arrival order, with the responses' ids
    /// interleaved as `{"response": id}` to check ordering.
    seen: Vec<Value>,
    /// The `elicitation/create` requests received.
    asked: Vec<Value>,
    initialized: Value,
}

impl Wire {
    async fn connect(server: &McpServer<Store>, capabilities: Value, human: Human) -> Wire {
        Wire::open(server, "2025-06-18", capabilities, human).await
    }

    /// Starts a session and initializes it at `version`.
    async fn open(server: &McpServer<Store>, version: &str, capabilities: Value, human: Human) -> Wire {
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
            initialized: Value::Null,
        };
        wire.initialized = wire
            .request(
                "initialize",
                json!({"protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "wire", "version": "0"}}),
            )
            .await;
        wire.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        wire
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
    }

    /// Sends a request; returns its id.
    async fn start(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        id
    }

    /// Reads messages until the response to `id`, answering the server's
    /// requests on the way; its `result`.
    async fn response(&mut self, id: u64) -> Value {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let mut line = String::new();
                assert!(self.reader.read_line(&mut line).await.unwrap() > 0, "the server closed the pipe");
                let message: Value = serde_json::from_str(&line).unwrap();
                match (&message["id"], &message["method"]) {
                    (Value::Null, Value::String(_)) => self.seen.push(message),
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
                        assert!(message.get("error").is_none(), "a protocol error: {message}");
                        return message["result"].clone();
                    }
                    _ => {}
                }
            }
        })
        .await
        .expect("a response within 10s")
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.start(method, params).await;
        self.response(id).await
    }

    async fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments})).await
    }

    async fn names(&mut self) -> Vec<String> {
        let list = self.request("tools/list", json!({})).await;
        list["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect()
    }

    /// How many `tools/list_changed` arrived so far; forgets them.
    fn list_changes(&mut self) -> usize {
        let changes = self.seen.iter().filter(|m| m["method"] == "notifications/tools/list_changed").count();
        self.seen.clear();
        changes
    }
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

fn no_capabilities() -> Value {
    json!({})
}

fn elicitation() -> Value {
    json!({"elicitation": {"form": {}}})
}

#[tokio::test]
async fn initialize_names_the_server_and_its_tool_capability() {
    let (server, _) = server();
    let wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    assert_eq!(wire.initialized["serverInfo"], json!({"name": "store", "version": "1.2.3"}));
    assert_eq!(wire.initialized["capabilities"]["tools"], json!({"listChanged": true}));
    assert_eq!(wire.initialized["protocolVersion"], "2025-06-18");
}

#[tokio::test]
async fn a_client_asking_for_the_stateless_revision_gets_a_session_based_one() {
    let (server, _) = server();
    let wire = Wire::open(&server, "2026-07-28", no_capabilities(), Human::Accept).await;
    let init = &wire.initialized;
    assert_eq!(init["protocolVersion"], "2025-11-25");
}

#[tokio::test]
async fn tools_list_is_what_the_run_offers_and_changes_are_notified() {
    let (server, _) = server();
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    assert_eq!(wire.names().await, ["list_items", "get_item", "count", "hello"]);

    wire.call("list_items", json!({})).await;
    assert_eq!(wire.list_changes(), 1, "hello is gone after the first step");
    assert_eq!(wire.names().await, ["list_items", "get_item", "count"]);

    wire.call("get_item", json!({"id": 1})).await;
    assert_eq!(wire.list_changes(), 1, "delete_item is offered once get_item ran");
    assert_eq!(wire.names().await, ["list_items", "get_item", "delete_item", "count"]);

    wire.call("list_items", json!({})).await;
    assert_eq!(wire.list_changes(), 0, "nothing changed");
}

#[tokio::test]
async fn a_tools_meta_and_kind_reach_the_client_as_meta() {
    let (server, _) = server();
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let tools = wire.request("tools/list", json!({})).await;
    let tool = |name: &str| tools["tools"].as_array().unwrap().iter().find(|tool| tool["name"] == name).unwrap().clone();
    assert_eq!(tool("list_items")["_meta"], json!({"owner": "store", "cost": 1, "kind": "read"}));
    assert!(tool("get_item").get("_meta").is_none(), "a tool without metadata has no `_meta`");
}

#[tokio::test]
async fn each_session_is_a_run_of_its_own() {
    let (server, _) = server();
    let mut first = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    first.call("get_item", json!({"id": 1})).await;
    assert!(first.names().await.contains(&"delete_item".to_owned()));
    let mut second = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    assert_eq!(second.names().await, ["list_items", "get_item", "count", "hello"]);
}

#[tokio::test]
async fn a_success_carries_its_text_and_an_object_output_as_structured_content() {
    let (server, _) = server();
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let item = wire.call("get_item", json!({"id": 2})).await;
    assert_eq!(item["isError"], false);
    assert_eq!(item["structuredContent"], json!({"id": 2, "name": "item 2"}));
    assert_eq!(serde_json::from_str::<Value>(text(&item)).unwrap(), item["structuredContent"]);

    let list = wire.call("list_items", json!({})).await;
    assert_eq!(list["isError"], false);
    assert_eq!(text(&list), "[1,2,3]");
    assert!(list.get("structuredContent").is_none(), "MCP structured content is an object: {list}");

    let tools = wire.request("tools/list", json!({})).await;
    let tool = |name: &str| tools["tools"].as_array().unwrap().iter().find(|tool| tool["name"] == name).unwrap().clone();
    assert_eq!(tool("get_item")["outputSchema"]["type"], "object");
    assert!(tool("list_items").get("outputSchema").is_none());
    assert_eq!(tool("get_item")["annotations"]["readOnlyHint"], true);
}

#[tokio::test]
async fn every_failure_is_an_is_error_result_with_the_models_line() {
    let (server, _) = server();
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let unknown = wire.call("nope", json!({})).await;
    assert_eq!(unknown["isError"], true);
    assert!(text(&unknown).starts_with("code: UNKNOWN_TOOL, status: 404"), "{unknown}");

    let hidden = wire.call("delete_item", json!({"id": 1})).await;
    assert_eq!(hidden["isError"], true);
    assert!(text(&hidden).starts_with("code: UNKNOWN_TOOL"), "not offered before get_item ran: {hidden}");

    let bad = wire.call("get_item", json!({"id": 0})).await;
    assert_eq!(bad["isError"], true);
    assert!(text(&bad).starts_with("code: INVALID_ARGUMENTS, status: 400"), "{bad}");
    assert!(text(&bad).contains("/id"), "names the field: {bad}");

    let missing = wire.request("tools/call", json!({"name": "get_item"})).await;
    assert_eq!(missing["isError"], true, "no arguments at all: {missing}");
    assert!(text(&missing).contains("INVALID_ARGUMENTS"), "{missing}");
}

#[tokio::test]
async fn a_call_needing_approval_is_refused_when_the_client_cannot_elicit() {
    let (server, store) = server();
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    wire.call("get_item", json!({"id": 1})).await;
    let refused = wire.call("delete_item", json!({"id": 1})).await;
    assert_eq!(refused["isError"], true);
    assert!(text(&refused).starts_with("code: APPROVAL_UNAVAILABLE, status: 403"), "{refused}");
    assert!(text(&refused).contains("needs a human's approval"), "{refused}");
    assert!(wire.asked.is_empty());
    assert!(store.deleted.lock().unwrap().is_empty());
}

#[tokio::test]
async fn the_human_accepting_the_elicitation_runs_the_call() {
    let (server, store) = server();
    let mut wire = Wire::connect(&server, elicitation(), Human::Accept).await;
    wire.call("get_item", json!({"id": 7})).await;
    let deleted = wire.call("delete_item", json!({"id": 7})).await;
    assert_eq!(deleted["isError"], false, "{deleted}");
    assert_eq!(text(&deleted), "deleted 7");
    assert_eq!(*store.deleted.lock().unwrap(), [7]);
    let asked = &wire.asked[0]["params"];
    assert_eq!(asked["mode"], "form");
    assert!(asked["message"].as_str().unwrap().contains("`delete_item`"), "{asked}");
    assert!(asked["message"].as_str().unwrap().contains("\"id\": 7"), "{asked}");
    assert_eq!(asked["requestedSchema"], json!({"type": "object", "properties": {}}));
}

#[tokio::test]
async fn the_human_declining_or_dismissing_rejects_the_call() {
    for human in [Human::Decline, Human::Dismiss] {
        let (server, store) = server();
        let mut wire = Wire::connect(&server, elicitation(), human).await;
        wire.call("get_item", json!({"id": 7})).await;
        let rejected = wire.call("delete_item", json!({"id": 7})).await;
        assert_eq!(rejected["isError"], true);
        assert!(text(&rejected).starts_with("code: APPROVAL_REJECTED, status: 403"), "{rejected}");
        assert!(store.deleted.lock().unwrap().is_empty());
    }
}

#[tokio::test]
async fn the_users_approval_floor_sends_an_allowed_call_to_approval() {
    let (server, _) = server();
    let server = server.with_user(UserContext::new("u-1").with_floor(ApprovalFloor::default().tool("get_item")));
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let refused = wire.call("get_item", json!({"id": 1})).await;
    assert!(text(&refused).starts_with("code: APPROVAL_UNAVAILABLE"), "{refused}");
}

#[tokio::test]
async fn progress_reaches_the_client_before_the_result_when_it_asked() {
    let (server, _) = server();
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let id = wire
        .start("tools/call", json!({"name": "count", "arguments": {"to": 3}, "_meta": {"progressToken": "p-1"}}))
        .await;
    let counted = wire.response(id).await;
    assert_eq!(text(&counted), "3");
    let progress: Vec<&Value> = wire.seen.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert_eq!(progress.len(), 3, "{:?}", wire.seen);
    assert_eq!(progress[2]["params"], json!({"progressToken": "p-1", "progress": 3.0, "total": 3.0, "message": "counting"}));
    let last_progress = wire.seen.iter().rposition(|m| m["method"] == "notifications/progress").unwrap();
    let response = wire.seen.iter().position(|m| m["response"] == json!(id)).unwrap();
    assert!(last_progress < response, "every report before the result: {:?}", wire.seen);

    wire.seen.clear();
    wire.call("count", json!({"to": 2})).await;
    assert!(!wire.seen.iter().any(|m| m["method"] == "notifications/progress"), "no token, no progress");
}

/// Search the archive: opens it at once, finds after 150 ms.
#[tool(interim = "Still searching the archive...", interim_after = "50ms")]
async fn archive(ctx: Ctx<Store>) -> String {
    ctx.progress(1.0, None, Some("opened the archive"));
    tokio::time::sleep(Duration::from_millis(150)).await;
    "found".into()
}

#[tokio::test]
async fn the_interim_text_reaches_a_client_that_asked_for_progress() {
    let registry = Registry::<Store>::builder().tools(tools![archive]).build().unwrap();
    let server = McpServer::new(registry, Arc::new(Store::default()));
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let id = wire.start("tools/call", json!({"name": "archive", "arguments": {}, "_meta": {"progressToken": 7}})).await;
    assert_eq!(text(&wire.response(id).await), "found");
    let progress: Vec<&Value> = wire.seen.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert_eq!(progress.len(), 2, "{:?}", wire.seen);
    assert_eq!(progress[0]["params"], json!({"progressToken": 7, "progress": 1.0, "message": "opened the archive"}));
    // Its message is the text; its progress repeats the last one sent, as
    // MCP progress never goes back.
    assert_eq!(progress[1]["params"], json!({"progressToken": 7, "progress": 1.0, "message": "Still searching the archive..."}));
    let response = wire.seen.iter().position(|m| m["response"] == json!(id)).unwrap();
    assert!(wire.seen.iter().rposition(|m| m["method"] == "notifications/progress").unwrap() < response, "{:?}", wire.seen);

    wire.seen.clear();
    wire.call("archive", json!({})).await;
    assert!(!wire.seen.iter().any(|m| m["method"] == "notifications/progress"), "no token, no interim notification");
}

/// Waits until `done` holds (at most 5 s).
async fn eventually(done: impl Fn() -> bool) -> bool {
    for _ in 0..100 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}

#[tokio::test]
async fn cancelling_a_call_cancels_its_tool_and_the_session_goes_on() {
    let (server, store) = server();
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let id = wire.start("tools/call", json!({"name": "count", "arguments": {"to": 500}})).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    wire.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "user"}}))
        .await;
    assert!(eventually(|| store.cancelled.load(Ordering::SeqCst) == 1).await, "the tool was stopped");
    // No response is owed for a cancelled request; the session serves on.
    let items = wire.call("list_items", json!({})).await;
    assert_eq!(text(&items), "[1,2,3]");
}

#[tokio::test]
async fn cancelling_a_call_waiting_for_approval_does_not_run_it() {
    let (server, store) = server();
    let mut wire = Wire::connect(&server, elicitation(), Human::Away).await;
    wire.call("get_item", json!({"id": 3})).await;
    let id = wire.start("tools/call", json!({"name": "delete_item", "arguments": {"id": 3}})).await;
    while wire.asked.is_empty() {
        wire.names().await;
    }
    wire.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    // The human accepts too late: the call was settled as cancelled.
    let ask = wire.asked[0]["id"].clone();
    wire.send(json!({"jsonrpc": "2.0", "id": ask, "result": {"action": "accept", "content": {}}})).await;
    wire.names().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(store.deleted.lock().unwrap().is_empty());
}

/// One item with a long name, cut at 50 characters for the model.
#[tool(read_only, max_output_chars = 50)]
async fn big_item() -> Item {
    Item { id: 1, name: "x".repeat(100_000) }
}

/// A free-form object, cut at 50 characters for the model.
#[tool(read_only, max_output_chars = 50)]
async fn big_blob() -> Value {
    json!({"blob": "y".repeat(100_000)})
}

fn server_of(tools: Vec<tool_runtime::BoxedTool<Store>>, ttl: Option<Duration>) -> (McpServer<Store>, Arc<Store>) {
    let mut builder = Registry::<Store>::builder().tools(tools);
    if let Some(ttl) = ttl {
        builder = builder.approval_ttl(ttl);
    }
    let store = Arc::new(Store::default());
    (McpServer::new(builder.build().unwrap(), store.clone()), store)
}

#[tokio::test]
async fn a_cut_output_never_reaches_the_client_whole_as_structured_content() {
    let (server, _) = server_of(tools![big_item, big_blob], None);
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let tools = wire.request("tools/list", json!({})).await;
    assert_eq!(tools["tools"][0]["outputSchema"]["type"], "object", "big_item declares its output");
    assert!(tools["tools"][1].get("outputSchema").is_none(), "big_blob does not");

    let blob = wire.call("big_blob", json!({})).await;
    assert_eq!(blob["isError"], false, "{blob}");
    assert!(blob.get("structuredContent").is_none(), "no structured content past the cut");
    assert!(text(&blob).contains("[output truncated: showing the first 50"), "{blob}");
    assert!(blob.to_string().len() < 1_000, "{} bytes sent", blob.to_string().len());

    // A declared output schema asks for structured content with every
    // success: a cut output is flagged as an error instead.
    let item = wire.call("big_item", json!({})).await;
    assert_eq!(item["isError"], true, "{item}");
    assert!(item.get("structuredContent").is_none());
    assert!(text(&item).contains("[output truncated: showing the first 50"), "{item}");
    assert!(item.to_string().len() < 1_000, "{} bytes sent", item.to_string().len());
}

#[tokio::test]
async fn an_approval_nobody_answers_expires_and_a_late_accept_does_not_run_the_call() {
    let (server, store) = server_of(tools![get_item, delete_item], Some(Duration::from_millis(300)));
    let mut wire = Wire::connect(&server, elicitation(), Human::Away).await;
    wire.call("get_item", json!({"id": 4})).await;
    let expired = wire.call("delete_item", json!({"id": 4})).await;
    assert_eq!(expired["isError"], true);
    assert!(text(&expired).starts_with("code: APPROVAL_EXPIRED, status: 403"), "{expired}");
    assert!(text(&expired).contains("so it was not run"), "{expired}");

    let ask = wire.asked[0]["id"].clone();
    wire.send(json!({"jsonrpc": "2.0", "id": ask, "result": {"action": "accept", "content": {}}})).await;
    wire.names().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(store.deleted.lock().unwrap().is_empty());
}

#[tokio::test]
async fn calls_waiting_for_approval_in_a_session_are_capped() {
    let registry = Registry::<Store>::builder().tools(tools![get_item, delete_item]).max_pending_approvals(1).build().unwrap();
    let store = Arc::new(Store::default());
    let server = McpServer::new(registry, store.clone());
    let mut wire = Wire::connect(&server, elicitation(), Human::Away).await;
    wire.call("get_item", json!({"id": 1})).await;
    let first = wire.start("tools/call", json!({"name": "delete_item", "arguments": {"id": 1}})).await;
    while wire.asked.is_empty() {
        wire.names().await;
    }
    let second = wire.call("delete_item", json!({"id": 2})).await;
    assert_eq!(second["isError"], true, "{second}");
    assert!(text(&second).starts_with("code: TOO_MANY_PENDING, status: 429"), "{second}");
    assert_eq!(wire.asked.len(), 1, "the second call asked nobody");
    // Once the first is settled, a new call may wait again.
    wire.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": first}})).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let third = wire.start("tools/call", json!({"name": "delete_item", "arguments": {"id": 3}})).await;
    while wire.asked.len() < 2 {
        wire.names().await;
    }
    wire.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": third}})).await;
    assert!(store.deleted.lock().unwrap().is_empty());
}

/// Asks a policy service that never answers; counts the asks it abandoned.
#[tool(policy = ask_forever)]
async fn stuck(ctx: Ctx<Store>, id: u32) -> String {
    let _ = ctx;
    format!("{id}")
}

async fn ask_forever(_input: &stuck, ctx: &Ctx<Store>) -> Verdict {
    let _asking = Counting { store: ctx.app_arc().clone(), done: false };
    std::future::pending().await
}

#[tokio::test]
async fn cancelling_a_call_stops_its_policy_predicate() {
    let registry = Registry::<Store>::builder().tools(tools![stuck, list_items]).build().unwrap();
    let store = Arc::new(Store::default());
    let server = McpServer::new(registry, store.clone());
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let id = wire.start("tools/call", json!({"name": "stuck", "arguments": {"id": 1}})).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    wire.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})).await;
    assert!(eventually(|| store.cancelled.load(Ordering::SeqCst) == 1).await, "the predicate was dropped");
    let items = wire.call("list_items", json!({})).await;
    assert_eq!(text(&items), "[1,2,3]");
}

/// Fetch a page; after one failure it is not offered again in the session.
#[tool(max_retries = 1)]
async fn fetch_page(page: u32) -> Result<String, ToolError> {
    if page == 0 { Err(ToolError::not_found("NO_PAGE", "There is no page 0.")) } else { Ok(format!("page {page}")) }
}

#[tokio::test]
async fn a_tool_that_failed_max_retries_times_in_a_session_is_no_longer_offered() {
    let registry = Registry::<Store>::builder().tools(tools![fetch_page, list_items]).build().unwrap();
    let server = McpServer::new(registry, Arc::new(Store::default()));
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let failed = wire.call("fetch_page", json!({"page": 0})).await;
    assert_eq!(failed["isError"], true);
    assert_eq!(wire.names().await, ["list_items"]);
    let refused = wire.call("fetch_page", json!({"page": 1})).await;
    assert_eq!(refused["isError"], true);
    assert!(text(&refused).starts_with("code: TOOL_EXHAUSTED"), "{refused}");
}

/// Why an item cannot be reserved: a typed failure.
#[derive(Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum ReserveFailure {
    Sold { buyer: String },
    Withdrawn,
}

impl From<ReserveFailure> for ToolError {
    fn from(failure: ReserveFailure) -> Self {
        match failure {
            ReserveFailure::Sold { .. } => ToolError::conflict("ITEM_SOLD", "The item is sold; offer another one."),
            ReserveFailure::Withdrawn => ToolError::not_found("ITEM_WITHDRAWN", "The item was withdrawn.").no_retry(),
        }
    }
}

/// Reserve an item.
#[tool]
async fn reserve_item(id: u32) -> Result<Item, ReserveFailure> {
    match id {
        1 => Err(ReserveFailure::Sold { buyer: "ana".into() }),
        2 => Ok(Item { id, name: "free".into() }),
        _ => Err(ReserveFailure::Withdrawn),
    }
}

/// A typed failure that serialises as a string, which MCP
/// `structuredContent` (an object) cannot carry.
#[derive(Serialize, JsonSchema)]
struct Reason(String);

impl From<Reason> for ToolError {
    fn from(Reason(why): Reason) -> Self {
        ToolError::conflict("ITEM_HELD", why)
    }
}

/// Hold an item.
#[tool]
async fn hold_item() -> Result<String, Reason> {
    Err(Reason("Someone else holds it.".into()))
}

#[tokio::test]
async fn a_typed_failure_reaches_the_client_as_structured_content_of_an_error_and_its_schema_in_meta() {
    let (server, _) = server_of(tools![reserve_item, fetch_page, hold_item], None);
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let tools = wire.request("tools/list", json!({})).await;
    let reserve = &tools["tools"][0];
    assert_eq!(reserve["outputSchema"]["type"], "object");
    let failure = &reserve["_meta"]["failureSchema"];
    assert_eq!(failure["oneOf"][0]["properties"]["kind"]["const"], "sold", "{reserve}");
    assert!(tools["tools"][1].get("_meta").is_none(), "a plain ToolError has no failure schema: {tools}");

    let sold = wire.call("reserve_item", json!({"id": 1})).await;
    assert_eq!(sold["isError"], true);
    assert_eq!(text(&sold), "code: ITEM_SOLD, status: 409, userMessage: The item is sold; offer another one.");
    assert_eq!(sold["structuredContent"], json!({"kind": "sold", "buyer": "ana"}));

    let withdrawn = wire.call("reserve_item", json!({"id": 3})).await;
    assert_eq!((&withdrawn["isError"], &withdrawn["structuredContent"]), (&json!(true), &json!({"kind": "withdrawn"})));
    assert!(text(&withdrawn).ends_with("Do not retry this call."), "{withdrawn}");

    let held = wire.call("hold_item", json!({})).await;
    assert_eq!(held["isError"], true);
    assert!(held.get("structuredContent").is_none(), "MCP structured content is an object: {held}");
    assert_eq!(tools["tools"][2]["_meta"]["failureSchema"]["type"], "string");

    let plain = wire.call("fetch_page", json!({"page": 0})).await;
    assert_eq!(plain["isError"], true);
    assert!(plain.get("structuredContent").is_none(), "{plain}");

    let ok = wire.call("reserve_item", json!({"id": 2})).await;
    assert_eq!(ok["structuredContent"], json!({"id": 2, "name": "free"}));
}

/// A journal on a SQLite file of its own, and its path for "another process".
#[cfg(feature = "sqlite")]
async fn journal(test: &str) -> (tool_runtime::journal::Journal, String) {
    let dir = std::env::temp_dir().join(format!("tool-runtime-mcp-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("journal.db").display().to_string();
    (tool_runtime::journal::Journal::open(&path).await.unwrap(), path)
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_journal_a_decision_made_out_of_band_reaches_the_waiting_call() {
    use tool_runtime::journal::{Decision, Journal};

    let (journal, path) = journal("out_of_band").await;
    let (server, store) = server();
    let server = server.with_user(UserContext::new("u-mcp")).with_journal(journal);
    // The client cannot elicit: with a journal, the call waits for a decision from elsewhere.
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    wire.call("get_item", json!({"id": 1})).await;
    let waiting = wire.start("tools/call", json!({"name": "delete_item", "arguments": {"id": 1}})).await;

    // An admin page in another process.
    let admin = Journal::open(&path).await.unwrap();
    let parked = loop {
        let pending = admin.pending_for_user("u-mcp").await.unwrap();
        if let Some(parked) = pending.into_iter().next() {
            break parked;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!((parked.tool.as_str(), &parked.input), ("delete_item", &json!({"id": 1})));
    admin.decide(&parked.call_id, Decision::Approve, "alice").await.unwrap();
    let deleted = wire.response(waiting).await;
    assert_eq!(text(&deleted), "deleted 1", "{deleted}");
    assert_eq!(*store.deleted.lock().unwrap(), [1]);
    // The session's run is journaled too.
    let run = admin.load_run(&parked.run_id).await.unwrap().unwrap();
    assert!(parked.run_id.starts_with("mcp-"), "{}", parked.run_id);
    assert_eq!(run.executed, ["get_item", "delete_item"]);

    // A rejection out of band: the model reads its text.
    let waiting = wire.start("tools/call", json!({"name": "delete_item", "arguments": {"id": 2}})).await;
    let parked = loop {
        if let Some(parked) = admin.pending_for_user("u-mcp").await.unwrap().into_iter().next() {
            break parked;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    admin.decide(&parked.call_id, Decision::Reject("Item 2 is kept for the audit.".into()), "bob").await.unwrap();
    let refused = wire.response(waiting).await;
    assert_eq!(refused["isError"], true);
    assert!(text(&refused).contains("Item 2 is kept for the audit."), "{refused}");
    assert_eq!(*store.deleted.lock().unwrap(), [1]);
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_journal_the_clients_answer_is_journaled_as_the_decision() {
    let (journal, path) = journal("client_answer").await;
    let (server, store) = server();
    let server = server.with_user(UserContext::new("u-mcp")).with_journal(journal.clone());
    let mut wire = Wire::connect(&server, elicitation(), Human::Accept).await;
    wire.call("get_item", json!({"id": 7})).await;
    let deleted = wire.call("delete_item", json!({"id": 7})).await;
    assert_eq!(text(&deleted), "deleted 7", "{deleted}");
    assert_eq!(*store.deleted.lock().unwrap(), [7]);
    assert!(journal.pending_for_user("u-mcp").await.unwrap().is_empty());
    // The one approval in the journal was decided by the client's user.
    use sqlx::Connection;
    let mut conn = sqlx::SqliteConnection::connect(&path).await.unwrap();
    let decided: Vec<(String, String)> =
        sqlx::query_as("SELECT decision, decided_by FROM journal_approvals").fetch_all(&mut conn).await.unwrap();
    assert_eq!(decided, [("approve".to_owned(), "u-mcp".to_owned())]);
}

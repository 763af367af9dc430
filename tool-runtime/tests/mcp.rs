//! The MCP server at the wire: JSON-RPC lines over an in-memory pipe, so
//! every rule is checked on the exact messages a client sees.
//!
//! ```text
//! cargo test -p tool-runtime --features mcp --test suite mcp::
//! ```
#![cfg(feature = "mcp")]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};
use tool_runtime::mcp::McpServer;
use tool_runtime::prelude::*;

use support::*;

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
async fn a_providers_built_in_is_neither_listed_nor_callable() {
    use tool_runtime::providers::builtin::{BashInput, ProviderTool};
    let bash = ProviderTool::anthropic_bash("shell")
        .handler(|input: BashInput, _ctx: Ctx<Store>| async move { Ok::<_, ToolError>(input.command.unwrap_or_default()) });
    let registry = Registry::<Store>::builder().tools(tools![hello]).tool(ProviderTool::openai_web_search("web")).tool(bash).build().unwrap();
    let server = McpServer::new(registry, Arc::new(Store::default()));
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    assert_eq!(wire.names().await, ["hello"]);
    for (name, arguments) in [("shell", json!({"command": "ls"})), ("bash", json!({"command": "ls"})), ("web", json!({}))] {
        let result = wire.call(name, arguments).await;
        assert_eq!(result["isError"], true, "{name}");
        assert!(text(&result).starts_with("code: UNKNOWN_TOOL"), "{name}: {}", text(&result));
    }
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
async fn progress_reaches_the_client_before_the_result_when_it_asked() {
    let (server, _) = server();
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let id = wire.start("tools/call", json!({"name": "count", "arguments": {"to": 3}, "_meta": {"progressToken": "p-1"}})).await;
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

#[tokio::test]
async fn cancelling_a_call_cancels_its_tool_and_the_session_goes_on() {
    let (server, store) = server();
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let id = wire.start("tools/call", json!({"name": "count", "arguments": {"to": 500}})).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    wire.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "user"}})).await;
    assert!(eventually(|| store.cancelled.load(Ordering::SeqCst) == 1).await, "the tool was stopped");
    // No response is owed for a cancelled request; the session serves on.
    let items = wire.call("list_items", json!({})).await;
    assert_eq!(text(&items), "[1,2,3]");
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

/// Search the archive, reporting what it has found so far.
#[tool(read_only)]
async fn search_archive(query: String) -> tool_runtime::Streamed<String> {
    tool_runtime::Streamed::new(tool_runtime::stream::iter([1, 2, 3].map(|n| format!("{query}: {n} found"))))
}

/// Let the client's user pick a colour, in the host's own UI.
#[tool(external)]
async fn pick_colour(palette: String) -> String;

#[tokio::test]
async fn a_streaming_tools_preliminary_items_reach_the_client_as_progress_and_the_last_is_the_result() {
    let registry = Registry::<Store>::builder().tools(tools![search_archive]).build().unwrap();
    let server = McpServer::new(registry, Arc::new(Store::default()));
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let call = json!({"name": "search_archive", "arguments": {"query": "kettle"}, "_meta": {"progressToken": "t"}});
    let id = wire.start("tools/call", call).await;
    assert_eq!(text(&wire.response(id).await), "kettle: 3 found");
    let progress: Vec<&Value> = wire.seen.iter().filter(|m| m["method"] == "notifications/progress").map(|m| &m["params"]).collect();
    assert_eq!(
        progress,
        [
            &json!({"progressToken": "t", "progress": 1.0, "message": "kettle: 1 found"}),
            &json!({"progressToken": "t", "progress": 2.0, "message": "kettle: 2 found"}),
        ]
    );
}

#[tokio::test]
async fn an_external_tool_is_run_by_the_servers_runner_and_unlisted_without_one() {
    let registry = Registry::<Store>::builder().tools(tools![pick_colour, hello]).build().unwrap();
    let plain = McpServer::new(registry.clone(), Arc::new(Store::default()));
    let mut wire = Wire::connect(&plain, no_capabilities(), Human::Accept).await;
    assert_eq!(wire.names().await, ["hello"], "no runner, not listed");
    let refused = wire.call("pick_colour", json!({"palette": "warm"})).await;
    assert_eq!(refused["isError"], true);

    let served = McpServer::new(registry, Arc::new(Store::default())).with_external(|call| async move {
        match call.input["palette"].as_str() {
            Some("warm") => Ok(json!("amber")),
            Some("none") => Err(ToolError::not_found("NO_COLOUR", "The user picked nothing; ask again later.")),
            // Not the tool's output type: refused, never passed on.
            _ => Ok(json!(42)),
        }
    });
    let mut wire = Wire::connect(&served, no_capabilities(), Human::Accept).await;
    assert_eq!(wire.names().await, ["pick_colour", "hello"]);
    assert_eq!(text(&wire.call("pick_colour", json!({"palette": "warm"})).await), "amber");
    let failed = wire.call("pick_colour", json!({"palette": "none"})).await;
    assert_eq!(
        (failed["isError"].clone(), text(&failed)),
        (json!(true), "code: NO_COLOUR, status: 404, userMessage: The user picked nothing; ask again later.")
    );
    let wrong = wire.call("pick_colour", json!({"palette": "cold"})).await;
    assert!(text(&wrong).contains("status: 500"), "{wrong}");
    let invalid = wire.call("pick_colour", json!({"palette": 3})).await;
    assert!(text(&invalid).contains("INVALID_ARGUMENTS"), "validated before it is handed over: {invalid}");
}

/// Rename an item; judged on the session's record.
#[tool(policy = after_a_read)]
async fn rename_item(id: u32, name: String) -> String {
    format!("item {id} is now {name}")
}

/// An MCP session is a run, each call a step: the predicate sees the
/// session's record (its step and the tools that ran), and no other call.
fn after_a_read<App>(_input: &rename_item, ctx: &Ctx<App>) -> Verdict {
    let Some(run) = ctx.run() else { return Verdict::deny("No run.") };
    assert_eq!(ctx.other_calls().count(), 0, "a step of one call");
    if run.has_executed("get_item") { Verdict::Allow } else { Verdict::deny(format!("Read the item first (step {}).", run.step)) }
}

#[tokio::test]
async fn a_policy_predicate_sees_the_sessions_record_as_a_runs() {
    let (server, _) = server_of(tools![get_item, rename_item], None);
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let refused = wire.call("rename_item", json!({"id": 1, "name": "lamp"})).await;
    assert_eq!(refused["isError"], true);
    assert!(refused["content"][0]["text"].as_str().unwrap().contains("Read the item first (step 0)."), "{refused}");
    wire.call("get_item", json!({"id": 1})).await;
    let renamed = wire.call("rename_item", json!({"id": 1, "name": "lamp"})).await;
    assert_eq!(renamed["content"][0]["text"], "item 1 is now lamp", "{renamed}");
}

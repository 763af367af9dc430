//! The protocol beside the tools, at both revisions: prompts, resources and
//! completion served by an rmcp handler composed with the tools
//! (`McpServer::with_handler`), caching hints, a tool's log messages, list
//! changes announced on `subscriptions/listen`, a dynamic tool's schema
//! served as given, and a tool that requires a task.
#![cfg(feature = "mcp")]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ListResourcesResult, PaginatedRequestParams, PromptMessage, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, prompt, prompt_handler, prompt_router};
use serde_json::{Value, json};
use support::{Human, Wire, no_capabilities, text};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tool_runtime::mcp::rmcp::ServiceExt;
use tool_runtime::mcp::{CacheHint, Cached, McpServer};
use tool_runtime::prelude::*;

#[derive(Default)]
struct Shop {
    open: AtomicBool,
}

/// Count the stock, logging at three levels.
#[tool(read_only)]
async fn stock(ctx: Ctx<Shop>) -> String {
    ctx.log(LogLevel::Debug, "counting the shelves");
    ctx.log(LogLevel::Info, "3 items in stock");
    ctx.log(LogLevel::Warning, "1 item runs low");
    "3 items".to_owned()
}

/// Open the shop, or close it.
#[tool]
async fn toggle(ctx: Ctx<Shop>) -> String {
    let was = ctx.app().open.fetch_xor(true, Ordering::SeqCst);
    if was { "closed" } else { "opened" }.to_owned()
}

fn shop_open(view: &StepView<'_, Shop>) -> bool {
    view.app.open.load(Ordering::SeqCst)
}

/// Buy something; only while the shop is open.
#[tool(visible_when = shop_open)]
async fn buy(_ctx: Ctx<Shop>) -> String {
    "bought".to_owned()
}

/// The schema of the dynamic tool, as written.
fn contact_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"city": {"type": "string"}}}},
        "properties": {"address": {"$ref": "#/$defs/address"}, "phone": {"type": "string"}, "email": {"type": "string"}},
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"required": ["phone"]},
        "then": {"properties": {"email": {"const": "none"}}},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

/// Prompts, resources and completion, as an rmcp handler.
#[derive(Clone)]
struct Docs {
    prompt_router: PromptRouter<Docs>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Whom {
    /// Whom to greet.
    name: String,
}

#[prompt_router]
impl Docs {
    /// Greet a customer.
    #[prompt]
    async fn greeting(&self, Parameters(whom): Parameters<Whom>) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(Role::User, format!("Greet {} warmly.", whom.name))]
    }
}

#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for Docs {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_prompts().enable_resources().enable_completions().build())
    }

    async fn list_resources(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![Resource::new("docs://returns", "returns")]))
    }

    async fn read_resource(&self, request: ReadResourceRequestParams, _: RequestContext<RoleServer>) -> Result<ReadResourceResponse, ErrorData> {
        match request.uri.as_str() {
            "docs://returns" => Ok(ReadResourceResult::new(vec![ResourceContents::text("Returns within 30 days.", request.uri)]).into()),
            _ => Err(ErrorData::resource_not_found("no such document", None)),
        }
    }

    async fn complete(&self, request: CompleteRequestParams, _: RequestContext<RoleServer>) -> Result<CompleteResult, ErrorData> {
        let names = ["Ada", "Alan", "Grace"].into_iter().filter(|name| name.starts_with(&request.argument.value)).map(str::to_owned).collect();
        Ok(CompleteResult::new(CompletionInfo::new(names).map_err(|error| ErrorData::internal_error(error, None))?))
    }
}

fn server() -> McpServer<Shop> {
    let contact = DynamicTool::new("contact", "Record how to reach someone.", contact_schema(), |_: Value, _: Ctx<Shop>| async {
        Ok::<_, ToolError>(json!("recorded"))
    });
    let registry = Registry::builder().tools(tools![stock, toggle, buy]).tool(contact).build().unwrap();
    McpServer::new(registry, Arc::new(Shop::default())).with_handler(Docs { prompt_router: Docs::prompt_router() })
}

#[tokio::test]
async fn the_session_revisions_serve_the_composed_prompts_resources_and_completion() {
    let mut wire = Wire::connect(&server(), no_capabilities(), Human::Accept).await;
    let capabilities = &wire.initialized["capabilities"];
    for capability in ["tools", "prompts", "resources", "completions", "logging"] {
        assert!(capabilities[capability].is_object(), "{capability}: {capabilities}");
    }
    let prompts = wire.request("prompts/list", json!({})).await;
    assert_eq!(prompts["prompts"][0]["name"], "greeting", "{prompts}");
    let greeting = wire.request("prompts/get", json!({"name": "greeting", "arguments": {"name": "Ada"}})).await;
    assert_eq!(greeting["messages"][0]["content"]["text"], "Greet Ada warmly.", "{greeting}");
    let listed = wire.request("resources/list", json!({})).await;
    assert_eq!(listed["resources"][0]["uri"], "docs://returns", "{listed}");
    let read = wire.request("resources/read", json!({"uri": "docs://returns"})).await;
    assert_eq!(read["contents"][0]["text"], "Returns within 30 days.", "{read}");
    let completed = wire
        .request("completion/complete", json!({"ref": {"type": "ref/prompt", "name": "greeting"}, "argument": {"name": "name", "value": "A"}}))
        .await;
    assert_eq!(completed["completion"]["values"], json!(["Ada", "Alan"]), "{completed}");
    // An unknown resource: the code of this revision, and the URI.
    let id = wire.start("resources/read", json!({"uri": "docs://nothing"})).await;
    let missing = wire.reply(id).await;
    assert_eq!((missing["error"]["code"].clone(), missing["error"]["data"]["uri"].clone()), (json!(-32002), json!("docs://nothing")), "{missing}");
}

#[tokio::test]
async fn a_tools_log_messages_reach_a_session_at_or_above_its_level() {
    let mut wire = Wire::connect(&server(), no_capabilities(), Human::Accept).await;
    let levels = |wire: &mut Wire| -> Vec<Value> {
        let levels = wire.seen.iter().filter(|m| m["method"] == "notifications/message").map(|m| m["params"]["level"].clone()).collect();
        wire.seen.clear();
        levels
    };
    assert_eq!(text(&wire.call("stock", json!({})).await), "3 items");
    assert_eq!(levels(&mut wire), [json!("info"), json!("warning")], "info until the client sets a level");
    wire.request("logging/setLevel", json!({"level": "warning"})).await;
    wire.call("stock", json!({})).await;
    assert_eq!(levels(&mut wire), [json!("warning")]);
    wire.request("logging/setLevel", json!({"level": "debug"})).await;
    wire.call("stock", json!({})).await;
    assert_eq!(levels(&mut wire), [json!("debug"), json!("info"), json!("warning")]);
}

/// A client of revision 2026-07-28 speaking raw JSON-RPC lines to the
/// server's handler over an in-memory pipe, as over stdio.
struct Lines {
    reader: BufReader<ReadHalf<DuplexStream>>,
    writer: WriteHalf<DuplexStream>,
    next_id: u64,
    /// The notifications read so far.
    seen: Vec<Value>,
}

impl Lines {
    fn open(server: &McpServer<Shop>) -> Lines {
        let (client, server_side) = tokio::io::duplex(1 << 16);
        let handler = server.handler();
        tokio::spawn(async move {
            if let Ok(running) = handler.serve(server_side).await {
                let _ = running.waiting().await;
            }
        });
        let (reader, writer) = tokio::io::split(client);
        Lines { reader: BufReader::new(reader), writer, next_id: 1, seen: Vec::new() }
    }

    /// Sends a request with the revision's `_meta` (and `meta` besides); its id.
    async fn start(&mut self, method: &str, mut params: Value, meta: Value) -> u64 {
        let mut all = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "lines", "version": "0"},
        });
        all.as_object_mut().unwrap().extend(meta.as_object().cloned().unwrap_or_default());
        params["_meta"] = all;
        let id = self.next_id;
        self.next_id += 1;
        let mut line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
        id
    }

    /// Reads until the response to `id`, keeping the notifications.
    async fn reply(&mut self, id: u64) -> Value {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let message = self.next().await;
                if message["id"] == json!(id) && message.get("method").is_none() {
                    return message;
                }
                self.seen.push(message);
            }
        })
        .await
        .expect("a response within 10s")
    }

    async fn next(&mut self) -> Value {
        let mut line = String::new();
        assert!(self.reader.read_line(&mut line).await.unwrap() > 0, "the server closed the pipe");
        serde_json::from_str(&line).unwrap()
    }

    async fn request(&mut self, method: &str, params: Value, meta: Value) -> Value {
        let id = self.start(method, params, meta).await;
        self.reply(id).await
    }

    /// The notification `method` read next (within 2 s), keeping any other.
    async fn notified(&mut self, method: &str) -> Option<Value> {
        if let Some(at) = self.seen.iter().position(|message| message["method"] == method) {
            return Some(self.seen.remove(at));
        }
        tokio::time::timeout(Duration::from_secs(2), async {
            loop {
                let message = self.next().await;
                if message["method"] == method {
                    return message;
                }
                self.seen.push(message);
            }
        })
        .await
        .ok()
    }
}

#[tokio::test]
async fn lists_and_reads_carry_caching_hints_by_default_and_as_set() {
    let server = server().with_cache_hint(Cached::Prompts, CacheHint::public(Duration::from_secs(300)));
    let mut lines = Lines::open(&server);
    let tools = lines.request("tools/list", json!({}), json!({})).await;
    assert_eq!((tools["result"]["ttlMs"].clone(), tools["result"]["cacheScope"].clone()), (json!(0), json!("private")), "{tools}");
    let prompts = lines.request("prompts/list", json!({}), json!({})).await;
    assert_eq!((prompts["result"]["ttlMs"].clone(), prompts["result"]["cacheScope"].clone()), (json!(300_000), json!("public")), "{prompts}");
    let read = lines.request("resources/read", json!({"uri": "docs://returns"}), json!({})).await;
    assert_eq!((read["result"]["ttlMs"].clone(), read["result"]["cacheScope"].clone()), (json!(0), json!("private")), "{read}");
    let missing = lines.request("resources/read", json!({"uri": "docs://nothing"}), json!({})).await;
    assert_eq!((missing["error"]["code"].clone(), missing["error"]["data"]["uri"].clone()), (json!(-32602), json!("docs://nothing")), "{missing}");
}

#[tokio::test]
async fn a_stateless_request_gets_log_messages_only_at_or_above_the_level_its_meta_names() {
    let mut lines = Lines::open(&server());
    let logged = |lines: &mut Lines| -> Vec<Value> {
        let levels = lines.seen.iter().filter(|m| m["method"] == "notifications/message").map(|m| m["params"]["level"].clone()).collect();
        lines.seen.clear();
        levels
    };
    let call = json!({"name": "stock", "arguments": {}});
    assert_eq!(lines.request("tools/call", call.clone(), json!({})).await["result"]["content"][0]["text"], "3 items");
    assert!(logged(&mut lines).is_empty(), "no level in _meta, no log message");
    lines.request("tools/call", call.clone(), json!({"io.modelcontextprotocol/logLevel": "warning"})).await;
    assert_eq!(logged(&mut lines), [json!("warning")]);
    let bad = lines.request("tools/call", call, json!({"io.modelcontextprotocol/logLevel": "loud"})).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let set = lines.request("logging/setLevel", json!({"level": "debug"}), json!({})).await;
    assert_eq!(set["error"]["code"], -32601, "a session's method: {set}");
}

#[tokio::test]
async fn a_listening_client_hears_when_its_tool_list_changes_and_only_what_it_asked_for() {
    let server = server();
    let mut listening = Lines::open(&server);
    let listen = listening.start("subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}), json!({})).await;
    let acknowledged = listening.notified("notifications/subscriptions/acknowledged").await.expect("acknowledged");
    assert_eq!(acknowledged["params"]["notifications"], json!({"toolsListChanged": true}), "{acknowledged}");
    let mut prompts_only = Lines::open(&server);
    prompts_only.start("subscriptions/listen", json!({"notifications": {"promptsListChanged": true}}), json!({})).await;
    prompts_only.notified("notifications/subscriptions/acknowledged").await.expect("acknowledged");

    // Another connection opens the shop: `buy` is offered now.
    let mut caller = Lines::open(&server);
    caller.request("tools/call", json!({"name": "toggle", "arguments": {}}), json!({})).await;
    let changed = listening.notified("notifications/tools/list_changed").await.expect("the tool list change is announced");
    assert_eq!(changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], json!(listen), "{changed}");
    assert!(prompts_only.notified("notifications/tools/list_changed").await.is_none(), "a stream that did not ask for tools hears nothing of them");
    // A call that changes nothing announces nothing.
    caller.request("tools/call", json!({"name": "stock", "arguments": {}}), json!({})).await;
    assert!(listening.notified("notifications/tools/list_changed").await.is_none());
}

#[tokio::test]
async fn a_dynamic_tools_json_schema_2020_12_is_listed_as_given() {
    let mut lines = Lines::open(&server());
    let listed = lines.request("tools/list", json!({}), json!({})).await;
    let contact = listed["result"]["tools"].as_array().unwrap().iter().find(|tool| tool["name"] == "contact").cloned().unwrap();
    assert_eq!(contact["inputSchema"], contact_schema());
    let refused = lines.request("tools/call", json!({"name": "contact", "arguments": {"address": {"city": "Oslo"}}}), json!({})).await;
    assert_eq!(refused["result"]["isError"], true, "neither phone nor email: {refused}");
    let called = lines.request("tools/call", json!({"name": "contact", "arguments": {"email": "a@b.c"}}), json!({})).await;
    assert_eq!(called["result"]["content"][0]["text"], "recorded", "{called}");
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_tool_that_requires_a_task_refuses_a_client_that_does_not_declare_tasks() {
    use tool_runtime::mcp::TaskSupport;
    let path = std::env::temp_dir().join(format!("tool-runtime-mcp-composed-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let journal = tool_runtime::journal::Journal::open(&format!("sqlite:{}", path.display())).await.unwrap();
    let server = server().with_journal(journal).with_task_support(|def| match def.name == "stock" {
        true => TaskSupport::Required,
        false => TaskSupport::by_default(def),
    });
    let mut lines = Lines::open(&server);
    let refused = lines.request("tools/call", json!({"name": "stock", "arguments": {}}), json!({})).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert!(refused["error"]["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(), "{refused}");
    let declared = json!({"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let task = lines.request("tools/call", json!({"name": "stock", "arguments": {}}), declared).await;
    assert_eq!(task["result"]["resultType"], "task", "{task}");
}

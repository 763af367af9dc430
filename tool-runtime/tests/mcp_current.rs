//! The MCP server at revision 2026-07-28 over streamable HTTP, spoken as raw
//! HTTP/1.1 on loopback sockets: `server/discover`; `tools/list` and
//! `tools/call` computed per request for the request's caller, with cache
//! hints and the registry's order; approvals as multi round-trip requests,
//! answered on another instance holding the same key, and every forged
//! `requestState` (a flipped byte, another call's, another user's, an
//! expired one, a replayed one, another key's) refused without running
//! anything; with a journal, a decision made out of band wins over the
//! client's answer. The session revision is still negotiated by `initialize`.
//!
//! ```text
//! cargo test -p tool-runtime --features mcp --test suite mcp_current::
//! ```
#![cfg(feature = "mcp")]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tool_runtime::Form;
use tool_runtime::mcp::{IDEMPOTENCY_KEY, McpServer, Unauthorized};
use tool_runtime::prelude::*;
use tool_runtime::question::{self, SamplingRequest};

/// How many grants ran.
#[derive(Default)]
struct Bank {
    grants: AtomicUsize,
    deposits: AtomicUsize,
    payments: AtomicUsize,
    holds: AtomicUsize,
}

/// Deposit money; counted, never approved.
#[tool]
async fn deposit(ctx: Ctx<Bank>, amount: u32) -> String {
    let deposits = ctx.app().deposits.fetch_add(1, Ordering::SeqCst) + 1;
    format!("deposit {deposits}: {amount}")
}

/// Get one item.
#[tool(read_only)]
async fn get_item(id: u32) -> String {
    format!("item {id}")
}

/// Grant credit; a human approves each grant.
#[tool(policy = needs_approval)]
async fn grant(ctx: Ctx<Bank>, amount: u32) -> String {
    ctx.app().grants.fetch_add(1, Ordering::SeqCst);
    format!("granted {amount}")
}

#[tool_data(Deserialize, JsonSchema)]
#[derive(Form)]
struct Payee {
    /// Who is paid.
    name: String,
}

/// Pay someone: asks who (a form), then, together, the client's model for
/// a memo and the client's roots for where the receipt goes; counted.
#[tool]
async fn pay(ctx: Ctx<Bank>, amount: u32) -> Result<String, ToolError> {
    let question::Reply::Answered(Payee { name }) = ctx.elicit::<Payee>("Who is paid?").await? else { return Ok("not paid".to_owned()) };
    let (memo, roots) = tokio::join!(ctx.sample(SamplingRequest::new(20).user(format!("A memo for paying {name}"))), ctx.roots());
    let (question::Reply::Answered(memo), question::Reply::Answered(roots)) = (memo?, roots?) else { return Ok("not paid".to_owned()) };
    ctx.app().payments.fetch_add(1, Ordering::SeqCst);
    Ok(format!("paid {amount} to {name} ({}), receipt in {}", memo.text, roots[0].uri))
}

/// Hold the money (once, whatever the rounds), then ask who is paid, then
/// whether to go ahead.
#[tool]
async fn hold_then_pay(ctx: Ctx<Bank>, amount: u32) -> Result<String, ToolError> {
    let hold = ctx.once("hold", async { ctx.app().holds.fetch_add(1, Ordering::SeqCst) + 1 }).await?;
    let question::Reply::Answered(Payee { name }) = ctx.elicit_named::<Payee>("payee", "Who is paid?").await? else {
        return Ok(format!("hold {hold} released"));
    };
    let question::Reply::Answered(Payee { name: confirmed }) = ctx.elicit_named::<Payee>("again", "Their name once more?").await? else {
        return Ok(format!("hold {hold} released"));
    };
    Ok(format!("paid {amount} to {name} ({confirmed}) from hold {hold}"))
}

/// Tip a payee, asked by name (and, `twice`, asked again under the same
/// name, at once).
#[tool]
async fn tip(ctx: Ctx<Bank>, twice: bool) -> Result<String, ToolError> {
    let (first, second) = tokio::join!(ctx.elicit_named::<Payee>("payee", "Who is tipped?"), async {
        if twice { Some(ctx.elicit_named::<Payee>("payee", "Who else?").await) } else { None }
    });
    let question::Reply::Answered(Payee { name }) = first? else { return Ok("not tipped".to_owned()) };
    let _ = second.transpose()?;
    Ok(format!("tipped {name}"))
}

fn alice_only<App>(view: &StepView<'_, App>) -> bool {
    view.user.id.as_deref() == Some("alice")
}

/// Audit the ledger; only for alice.
#[tool(read_only, visible_when = alice_only)]
async fn audit() -> String {
    "clean".to_owned()
}

/// Close the item once it was read in the same run.
#[tool(requires("get_item"))]
async fn close_item(id: u32) -> String {
    format!("closed {id}")
}

const KEY: &[u8] = b"the key every instance of this test holds";

fn server(bank: &Arc<Bank>) -> McpServer<Bank> {
    let registry = Registry::builder()
        .tools(tools![get_item, grant, audit, close_item, deposit, pay, tip, hold_then_pay])
        .approval_ttl(Duration::from_secs(60))
        .build()
        .unwrap();
    server_with(registry, bank, KEY)
}

fn server_with(registry: Registry<Bank>, bank: &Arc<Bank>, key: &[u8]) -> McpServer<Bank> {
    McpServer::new(registry, bank.clone())
        .with_auth(|headers| match headers.get("authorization").and_then(|value| value.to_str().ok()) {
            Some("Bearer tok-alice") => Ok(UserContext::new("alice")),
            Some("Bearer tok-bob") => Ok(UserContext::new("bob")),
            _ => Err(Unauthorized::missing_bearer_token()),
        })
        .with_request_state_key(key)
        .unwrap()
}

async fn serve(server: McpServer<Bank>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(server.serve_http(listener));
    addr
}

#[derive(Debug)]
struct Reply {
    status: u16,
    headers: String,
    body: String,
}

impl Reply {
    /// The JSON-RPC message of the reply, from a JSON or SSE body.
    fn message(&self) -> Value {
        self.body
            .lines()
            .map(|line| line.strip_prefix("data:").unwrap_or(line).trim())
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .find(|message| message.get("id").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC answer in {self:?}"))
    }

    fn result(&self) -> Value {
        let message = self.message();
        assert!(message.get("error").is_none(), "{message}");
        message["result"].clone()
    }
}

/// The `_meta` every request of the revision carries; `elicit`: whether
/// the client declares form elicitation.
fn meta(elicit: bool) -> Value {
    let capabilities = if elicit { json!({"elicitation": {"form": {}}}) } else { json!({}) };
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    })
}

/// One request of the revision, as `token`'s user, on its own connection.
async fn request(addr: SocketAddr, token: &str, method: &str, name: Option<&str>, mut params: Value) -> Reply {
    let mut all = meta(params.get("elicit").is_none_or(|elicit| elicit.as_bool() == Some(true)));
    if let Some(capabilities) = params.as_object_mut().unwrap().remove("capabilities") {
        all["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    }
    if let Some(key) = params.as_object_mut().unwrap().remove("key") {
        all[IDEMPOTENCY_KEY] = key;
    }
    params["_meta"] = all;
    params.as_object_mut().unwrap().remove("elicit");
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
    post(addr, token, method, name, &body).await
}

/// `body` posted at revision 2026-07-28, with `method` (and `name`) in
/// its headers, as `token`.
async fn post(addr: SocketAddr, token: &str, method: &str, name: Option<&str>, body: &str) -> Reply {
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n\
         Authorization: Bearer {token}\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(name) = name {
        head.push_str(&format!("Mcp-Name: {name}\r\n"));
    }
    head.push_str("\r\n");
    exchange(addr, &head, body.as_bytes()).await
}

async fn exchange(addr: SocketAddr, head: &str, body: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw)).await.expect("a reply within 10s").unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no HTTP reply: {text:?}"));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    Reply { status, headers: head.to_owned(), body: body.to_owned() }
}

async fn call(addr: SocketAddr, token: &str, tool: &str, arguments: Value) -> Value {
    request(addr, token, "tools/call", Some(tool), json!({"name": tool, "arguments": arguments})).await.result()
}

/// A call answered with the human's `action` and `state`.
async fn answer(addr: SocketAddr, token: &str, tool: &str, arguments: Value, action: &str, state: &str) -> Value {
    let params = json!({"name": tool, "arguments": arguments, "inputResponses": {"approval": {"action": action}}, "requestState": state});
    request(addr, token, "tools/call", Some(tool), params).await.result()
}

/// A call carrying the idempotency `key`.
async fn keyed(addr: SocketAddr, token: &str, tool: &str, arguments: Value, key: &str) -> Value {
    request(addr, token, "tools/call", Some(tool), json!({"name": tool, "arguments": arguments, "key": key})).await.result()
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// Asks for a grant; the `requestState` of the `input_required` answer.
async fn ask_grant(addr: SocketAddr, token: &str, amount: u32) -> String {
    let asked = call(addr, token, "grant", json!({"amount": amount})).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let elicitation = &asked["inputRequests"]["approval"];
    assert_eq!(elicitation["method"], "elicitation/create", "{asked}");
    assert!(elicitation["params"]["message"].as_str().unwrap().contains("grant"), "{asked}");
    asked["requestState"].as_str().unwrap().to_owned()
}

fn assert_refused(result: &Value) {
    assert_eq!(result["isError"], true, "{result}");
    assert!(text(result).starts_with("code: REQUEST_STATE_REFUSED, status: 400"), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discover_names_both_revisions_and_opens_no_session() {
    let addr = serve(server(&Arc::default())).await;
    let reply = request(addr, "tok-alice", "server/discover", None, json!({})).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(!reply.headers.to_ascii_lowercase().contains("mcp-session-id"), "{reply:?}");
    let discovered = reply.result();
    let versions = discovered["supportedVersions"].as_array().unwrap();
    assert!(versions.contains(&json!("2026-07-28")) && versions.contains(&json!("2025-11-25")), "{discovered}");
    assert!(discovered["capabilities"]["tools"].is_object(), "{discovered}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_names_itself_and_its_instructions_at_both_revisions() {
    let named = server(&Arc::default()).with_name("bank", "1.2.3").with_instructions("Ask before granting.");
    let addr = serve(named).await;
    let discovered = request(addr, "tok-alice", "server/discover", None, json!({})).await.result();
    // At 2026-07-28 the server's identity travels in `_meta`.
    let info = &discovered["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!((&info["name"], &info["version"]), (&json!("bank"), &json!("1.2.3")), "{discovered}");
    assert_eq!(discovered["instructions"], "Ask before granting.", "{discovered}");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nAuthorization: Bearer tok-alice\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let initialized = exchange(addr, &head, body.as_bytes()).await.result();
    assert_eq!(initialized["serverInfo"]["name"], "bank", "{initialized}");
    assert_eq!(initialized["instructions"], "Ask before granting.", "{initialized}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_per_caller_in_the_registry_order_with_cache_hints() {
    let addr = serve(server(&Arc::default())).await;
    let names = |listed: &Value| listed["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    let alice = request(addr, "tok-alice", "tools/list", None, json!({})).await.result();
    assert_eq!(
        names(&alice),
        ["get_item", "grant", "audit", "deposit", "pay", "tip", "hold_then_pay"],
        "a tool that requires another is never offered: there is no run"
    );
    assert_eq!((alice["ttlMs"].clone(), alice["cacheScope"].clone()), (json!(0), json!("private")), "{alice}");
    let bob = request(addr, "tok-bob", "tools/list", None, json!({})).await.result();
    assert_eq!(names(&bob), ["get_item", "grant", "deposit", "pay", "tip", "hold_then_pay"]);
    // What a caller is not offered, they cannot call by name.
    let refused = call(addr, "tok-bob", "audit", json!({})).await;
    assert!(refused["isError"] == true && text(&refused).contains("UNKNOWN_TOOL"), "{refused}");
    assert_eq!(text(&call(addr, "tok-alice", "audit", json!({})).await), "clean");
    // Bad input is a tool error naming the field, not a protocol error.
    let bad = call(addr, "tok-bob", "get_item", json!({"id": "seven"})).await;
    assert!(bad["isError"] == true && text(&bad).contains("INVALID_ARGUMENTS") && text(&bad).contains("/id"), "{bad}");
    assert_eq!(text(&call(addr, "tok-bob", "get_item", json!({"id": 7})).await), "item 7");
}

/// Its visibility predicate panics.
#[tool(visible_when = broken_visibility)]
async fn flaky() -> String {
    "shown".to_owned()
}

fn broken_visibility<App>(_view: &StepView<'_, App>) -> bool {
    panic!("visibility bug")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_of_a_tool_whose_visibility_panics_is_refused_as_unknown_and_reported_once() {
    let reports = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = reports.clone();
    let registry = Registry::builder()
        .tools(tools![get_item, flaky])
        .on_tool_error(move |report| sink.lock().unwrap().push((report.tool.clone(), report.error.clone())))
        .build()
        .unwrap();
    let addr = serve(server_with(registry, &Arc::default(), KEY)).await;
    let refused = call(addr, "tok-alice", "flaky", json!({})).await;
    // Refused with the tools the caller is offered: the list is made only
    // for a call refused, and it reports the panic.
    assert!(refused["isError"] == true && text(&refused).contains("UNKNOWN_TOOL") && text(&refused).contains("get_item"), "{refused}");
    assert!(!text(&refused).contains("flaky:"), "{refused}");
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 1, "one call, one report: {reports:?}");
    assert!(reports[0].0 == "flaky" && reports[0].1.contains("visibility bug"), "{reports:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_that_contradicts_the_body_is_refused() {
    let addr = serve(server(&Arc::default())).await;
    let body =
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "get_item", "arguments": {"id": 1}, "_meta": meta(false)}})
            .to_string();
    let reply = post(addr, "tok-alice", "tools/list", None, &body).await;
    assert_eq!(reply.status, 400, "{reply:?}");
}

/// Tag an item for a region, which travels in a header too.
#[tool]
async fn tag_item(
    /// The region.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
) -> String {
    format!("tagged for {region}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parameter_marked_x_mcp_header_is_checked_against_its_mcp_param_header() {
    let registry = Registry::builder().tools(tools![tag_item]).build().unwrap();
    let addr = serve(server_with(registry, &Arc::default(), KEY)).await;
    let listed = request(addr, "tok-alice", "tools/list", None, json!({})).await.result();
    assert_eq!(listed["tools"][0]["inputSchema"]["properties"]["region"]["x-mcp-header"], "Region", "{listed}");
    let body = |region: &str| {
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "tag_item", "arguments": {"region": region}, "_meta": meta(false)}})
            .to_string()
    };
    let with_header = |region: &str, header: Option<&str>| {
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n\
             Mcp-Name: tag_item\r\nAuthorization: Bearer tok-alice\r\nContent-Length: {}\r\n",
            body(region).len()
        );
        if let Some(header) = header {
            head.push_str(&format!("Mcp-Param-Region: {header}\r\n"));
        }
        head + "\r\n"
    };
    let agreeing = exchange(addr, &with_header("eu", Some("eu")), body("eu").as_bytes()).await;
    assert_eq!(text(&agreeing.result()), "tagged for eu");
    for (header, why) in [(Some("us"), "a header that contradicts the argument"), (None, "a missing header")] {
        let refused = exchange(addr, &with_header("eu", header), body("eu").as_bytes()).await;
        assert_eq!(refused.status, 400, "{why}: {refused:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_journal_only_the_instance_that_asked_finishes_an_approval_once() {
    let bank = Arc::new(Bank::default());
    let (first, second) = (serve(server(&bank)).await, serve(server(&bank)).await);
    let state = ask_grant(first, "tok-alice", 5).await;
    assert_eq!(bank.grants.load(Ordering::SeqCst), 0, "asking runs nothing");
    // Another instance (or this one after a restart) could not know whether
    // the state was answered already: it refuses it, though it holds the key.
    assert_refused(&answer(second, "tok-alice", "grant", json!({"amount": 5}), "accept", &state).await);
    let done = answer(first, "tok-alice", "grant", json!({"amount": 5}), "accept", &state).await;
    assert_eq!((done["isError"].clone(), text(&done)), (json!(false), "granted 5"), "{done}");
    assert_eq!(bank.grants.load(Ordering::SeqCst), 1);
    // The same answer again, here or elsewhere: a replay.
    assert_refused(&answer(first, "tok-alice", "grant", json!({"amount": 5}), "accept", &state).await);
    assert_refused(&answer(second, "tok-alice", "grant", json!({"amount": 5}), "accept", &state).await);
    let restarted = serve(server(&bank)).await;
    assert_refused(&answer(restarted, "tok-alice", "grant", json!({"amount": 5}), "accept", &state).await);
    assert_eq!(bank.grants.load(Ordering::SeqCst), 1, "one approval, one grant");

    let state = ask_grant(second, "tok-alice", 6).await;
    let declined = answer(second, "tok-alice", "grant", json!({"amount": 6}), "decline", &state).await;
    assert!(declined["isError"] == true && text(&declined).contains("APPROVAL_REJECTED"), "{declined}");
    assert_eq!(bank.grants.load(Ordering::SeqCst), 1, "declined, it did not run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_forged_request_state_is_refused_and_runs_nothing() {
    let bank = Arc::new(Bank::default());
    let addr = serve(server(&bank)).await;
    let state = ask_grant(addr, "tok-alice", 5).await;
    let mut flipped = state.clone().into_bytes();
    let middle = flipped.len() / 2;
    flipped[middle] = if flipped[middle] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).unwrap();
    assert_refused(&answer(addr, "tok-alice", "grant", json!({"amount": 5}), "accept", &flipped).await);
    // Another call's state: the same tool with other arguments, another tool.
    assert_refused(&answer(addr, "tok-alice", "grant", json!({"amount": 500}), "accept", &state).await);
    assert_refused(&answer(addr, "tok-alice", "get_item", json!({"amount": 5}), "accept", &state).await);
    // Another user's.
    assert_refused(&answer(addr, "tok-bob", "grant", json!({"amount": 5}), "accept", &state).await);
    // Another server's key.
    let other = serve(server_with(Registry::builder().tools(tools![grant]).build().unwrap(), &bank, b"another key, for another deployment")).await;
    assert_refused(&answer(other, "tok-alice", "grant", json!({"amount": 5}), "accept", &state).await);
    // Not a state at all, and an answer without one.
    assert_refused(&answer(addr, "tok-alice", "grant", json!({"amount": 5}), "accept", "rs1.bm90IGEgc3RhdGU").await);
    let params = json!({"name": "grant", "arguments": {"amount": 5}, "inputResponses": {"approval": {"action": "accept"}}});
    assert_refused(&request(addr, "tok-alice", "tools/call", Some("grant"), params).await.result());
    assert_eq!(bank.grants.load(Ordering::SeqCst), 0);
    // The state itself still works for its own call.
    assert_eq!(text(&answer(addr, "tok-alice", "grant", json!({"amount": 5}), "accept", &state).await), "granted 5");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_request_state_is_refused() {
    let bank = Arc::new(Bank::default());
    let registry = Registry::builder().tools(tools![grant]).approval_ttl(Duration::from_millis(300)).build().unwrap();
    let addr = serve(server_with(registry, &bank, KEY)).await;
    let state = ask_grant(addr, "tok-alice", 5).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_refused(&answer(addr, "tok-alice", "grant", json!({"amount": 5}), "accept", &state).await);
    assert_eq!(bank.grants.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_cannot_elicit_reads_that_approval_is_unavailable() {
    let bank = Arc::new(Bank::default());
    let addr = serve(server(&bank)).await;
    let params = json!({"name": "grant", "arguments": {"amount": 5}, "elicit": false});
    let refused = request(addr, "tok-alice", "tools/call", Some("grant"), params).await.result();
    assert!(refused["isError"] == true && text(&refused).contains("APPROVAL_UNAVAILABLE"), "{refused}");
    assert_eq!(bank.grants.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_still_opens_a_session_at_the_session_revision() {
    let addr = serve(server(&Arc::default())).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nAuthorization: Bearer tok-alice\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let reply = exchange(addr, &head, body.as_bytes()).await;
    assert!(reply.headers.to_ascii_lowercase().contains("mcp-session-id"), "{reply:?}");
    assert_eq!(reply.result()["protocolVersion"], "2025-11-25");
}

/// A journal on a SQLite file of its own.
#[cfg(feature = "sqlite")]
async fn journal(test: &str) -> tool_runtime::journal::Journal {
    let dir = std::env::temp_dir().join(format!("tool-runtime-mcp-current-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    tool_runtime::journal::Journal::open(&dir.join("journal.db").display().to_string()).await.unwrap()
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_journal_an_answer_is_its_one_decision_across_instances() {
    use tool_runtime::journal::Decision;
    let bank = Arc::new(Bank::default());
    let journal = journal("decision").await;
    let (first, second) = (serve(server(&bank).with_journal(journal.clone())).await, serve(server(&bank).with_journal(journal.clone())).await);
    let state = ask_grant(first, "tok-alice", 5).await;
    let parked = journal.approvals().pending_for_user("alice").await.unwrap();
    assert_eq!(parked.len(), 1, "the waiting call is parked in the journal before the answer goes out");
    assert_eq!((parked[0].tool.as_str(), parked[0].input.clone()), ("grant", json!({"amount": 5})));
    let done = answer(second, "tok-alice", "grant", json!({"amount": 5}), "accept", &state).await;
    assert_eq!(text(&done), "granted 5");
    // A replay on the other instance finds the journaled decision: refused.
    assert_refused(&answer(first, "tok-alice", "grant", json!({"amount": 5}), "accept", &state).await);
    assert_eq!(bank.grants.load(Ordering::SeqCst), 1);
    let decided = journal.approvals().get(&parked[0].run_id, &parked[0].call_id).await.unwrap().unwrap().decided.unwrap();
    assert_eq!((decided.decision, decided.by.as_str()), (Decision::Approve, "mcp-client:alice"));

    // A decision made out of band first wins over the client's answer.
    let state = ask_grant(first, "tok-alice", 6).await;
    let parked = journal.approvals().pending_for_user("alice").await.unwrap();
    tool_runtime::question::decide(&journal, &parked[0].run_id, &parked[0].call_id, Decision::Reject("Not this month.".into()), "supervisor")
        .await
        .unwrap();
    let refused = answer(second, "tok-alice", "grant", json!({"amount": 6}), "accept", &state).await;
    assert!(refused["isError"] == true && text(&refused).contains("Not this month."), "{refused}");
    assert_eq!(bank.grants.load(Ordering::SeqCst), 1, "the supervisor's rejection won: it did not run");
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_with_the_same_key_reads_the_first_result_on_any_instance() {
    let bank = Arc::new(Bank::default());
    let journal = journal("retries").await;
    let (first, second) = (serve(server(&bank).with_journal(journal.clone())).await, serve(server(&bank).with_journal(journal)).await);
    let done = keyed(first, "tok-alice", "deposit", json!({"amount": 5}), "k-1").await;
    assert_eq!(text(&done), "deposit 1: 5");
    // The stream broke; the client sends the call again, here or elsewhere.
    assert_eq!(text(&keyed(second, "tok-alice", "deposit", json!({"amount": 5}), "k-1").await), "deposit 1: 5");
    assert_eq!(text(&keyed(first, "tok-alice", "deposit", json!({"amount": 5}), "k-1").await), "deposit 1: 5");
    assert_eq!(bank.deposits.load(Ordering::SeqCst), 1, "one effect for one key");
    // The same key for other arguments is refused; another user's key is theirs.
    let reused = keyed(second, "tok-alice", "deposit", json!({"amount": 6}), "k-1").await;
    assert!(reused["isError"] == true && text(&reused).contains("CALL_ID_REUSED"), "{reused}");
    assert_eq!(text(&keyed(second, "tok-bob", "deposit", json!({"amount": 5}), "k-1").await), "deposit 2: 5");
    // Without a key, every call runs.
    assert_eq!(text(&call(first, "tok-alice", "deposit", json!({"amount": 5})).await), "deposit 3: 5");
    assert_eq!(bank.deposits.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_journal_a_keyed_call_is_refused_and_a_bad_key_too() {
    let bank = Arc::new(Bank::default());
    let addr = serve(server(&bank)).await;
    let refused = keyed(addr, "tok-alice", "deposit", json!({"amount": 5}), "k-1").await;
    assert!(refused["isError"] == true && text(&refused).contains("IDEMPOTENCY_UNAVAILABLE"), "{refused}");
    let bad = keyed(addr, "tok-alice", "deposit", json!({"amount": 5}), "").await;
    assert!(bad["isError"] == true && text(&bad).contains("IDEMPOTENCY_KEY_INVALID"), "{bad}");
    assert_eq!(bank.deposits.load(Ordering::SeqCst), 0);
}

/// How many slow calls started, how many were stopped by their
/// cancellation, and how many counted to their end (their effect).
#[derive(Default)]
struct Slow {
    started: AtomicUsize,
    cancelled: AtomicUsize,
    finished: AtomicUsize,
    holds: AtomicUsize,
}

/// Take a while; long enough (by its interim text) to be a task.
#[tool(interim = "still counting", interim_after = "900ms", timeout = "1s")]
async fn count_slowly(ctx: Ctx<Slow>, millis: u64) -> String {
    count(ctx, millis).await
}

/// Take long, unless cancelled; a task.
#[tool(interim = "still counting", interim_after = "900ms", timeout = "60s")]
async fn count_long(ctx: Ctx<Slow>, millis: u64) -> String {
    count(ctx, millis).await
}

/// Fails inside the server, as a task.
#[tool(interim = "still counting", interim_after = "900ms", timeout = "5s")]
async fn count_broken() -> Result<String, std::io::Error> {
    Err(std::io::Error::other("the counter broke"))
}

/// Counts for `millis` unless the call is cancelled first: the call is
/// counted `cancelled` whether the tool read its token cancelled or was
/// dropped at it (the runtime cancels the token and drops the tool's task
/// at once, so which comes first is a race).
async fn count(ctx: Ctx<Slow>, millis: u64) -> String {
    /// Counts one stopped call when dropped, unless the call finished.
    struct UnlessFinished<'a>(Option<&'a AtomicUsize>);
    impl Drop for UnlessFinished<'_> {
        fn drop(&mut self) {
            if let Some(cancelled) = self.0 {
                cancelled.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
    ctx.app().started.fetch_add(1, Ordering::SeqCst);
    let mut stopped = UnlessFinished(Some(&ctx.app().cancelled));
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(millis)) => {
            stopped.0 = None;
            ctx.app().finished.fetch_add(1, Ordering::SeqCst);
            format!("counted for {millis} ms")
        }
        () = ctx.cancellation().cancelled() => "cancelled".to_owned(),
    }
}

#[cfg(feature = "sqlite")]
fn slow_server(slow: &Arc<Slow>, journal: tool_runtime::journal::Journal) -> McpServer<Slow> {
    slow_in_memory(slow).with_journal(journal)
}

/// The slow tools, served without a journal.
fn slow_in_memory(slow: &Arc<Slow>) -> McpServer<Slow> {
    let registry =
        Registry::builder().tools(tools![count_slowly, count_long, count_broken, get_item, two_names, greet_later, one_name_twice]).build().unwrap();
    McpServer::new(registry, slow.clone()).with_auth(|headers| match headers.get("authorization").and_then(|value| value.to_str().ok()) {
        Some("Bearer tok-alice") => Ok(UserContext::new("alice")),
        Some("Bearer tok-bob") => Ok(UserContext::new("bob")),
        _ => Err(Unauthorized::missing_bearer_token()),
    })
}

/// Asks two names at once, as a task; counts its runs.
#[tool(timeout = "2m")]
async fn two_names(ctx: Ctx<Slow>) -> Result<String, ToolError> {
    ctx.app().started.fetch_add(1, Ordering::SeqCst);
    let (first, second) = tokio::join!(ctx.elicit::<Payee>("First payee?"), ctx.elicit::<Payee>("Second payee?"));
    let (question::Reply::Answered(first), question::Reply::Answered(second)) = (first?, second?) else { return Ok("no names".to_owned()) };
    ctx.app().finished.fetch_add(1, Ordering::SeqCst);
    Ok(format!("{} and {}", first.name, second.name))
}

/// Asks one name twice at once, as a task: a mistake its task reports.
#[tool(timeout = "2m")]
async fn one_name_twice(ctx: Ctx<Slow>) -> Result<String, ToolError> {
    let (first, second) = tokio::join!(ctx.elicit_named::<Payee>("payee", "Who?"), ctx.elicit_named::<Payee>("payee", "Who else?"));
    let _ = (first?, second?);
    Ok("asked".to_owned())
}

/// Asks whom to greet, then greets them, as a task once asked
/// (`TaskSupport::AfterQuestions`); counts its runs.
#[tool(timeout = "2m")]
async fn greet_later(ctx: Ctx<Slow>) -> Result<String, ToolError> {
    ctx.app().started.fetch_add(1, Ordering::SeqCst);
    let hold = ctx.once("hold", async { ctx.app().holds.fetch_add(1, Ordering::SeqCst) + 1 }).await?;
    let question::Reply::Answered(Payee { name }) = ctx.elicit_named::<Payee>("payee", "Whom to greet?").await? else {
        return Ok("no one greeted".to_owned());
    };
    ctx.app().finished.fetch_add(1, Ordering::SeqCst);
    Ok(format!("hello {name} (hold {hold})"))
}

/// `server` with `greet_later` a task once its questions are answered.
fn greeting_later(server: McpServer<Slow>) -> McpServer<Slow> {
    server.with_request_state_key(KEY).unwrap().with_task_support(|def| match def.name.as_str() {
        "greet_later" => tool_runtime::mcp::TaskSupport::AfterQuestions,
        _ => tool_runtime::mcp::TaskSupport::by_default(def),
    })
}

async fn serve_slow(server: McpServer<Slow>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(server.serve_http(listener));
    addr
}

/// A `tasks/*` request, or a `tools/call`, from a client that declares the
/// tasks extension.
async fn with_tasks(addr: SocketAddr, token: &str, method: &str, name: Option<&str>, mut params: Value) -> Reply {
    let mut all = meta(false);
    all["io.modelcontextprotocol/clientCapabilities"] = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    params["_meta"] = all;
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params}).to_string();
    post(addr, token, method, name, &body).await
}

/// Starts a task counting for `millis`; its id.
async fn start_task(addr: SocketAddr, millis: u64) -> String {
    start_task_of(addr, "count_slowly", millis).await
}

/// [`start_task`] of `count_long`, whose timeout is 60 s.
async fn start_long_task(addr: SocketAddr, millis: u64) -> String {
    start_task_of(addr, "count_long", millis).await
}

/// Starts a task of the counting tool `tool` for alice; its id.
async fn start_task_of(addr: SocketAddr, tool: &str, millis: u64) -> String {
    let created = with_tasks(addr, "tok-alice", "tools/call", Some(tool), json!({"name": tool, "arguments": {"millis": millis}})).await.result();
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working", "{created}");
    assert!(created["ttlMs"].as_u64().unwrap() > 0 && created["pollIntervalMs"].as_u64().unwrap() > 0, "{created}");
    created["taskId"].as_str().unwrap().to_owned()
}

/// Waits until `count` is at least 1 (within 10 s), else fails saying `what`.
async fn until_counted(count: &std::sync::atomic::AtomicUsize, what: &str) {
    for _ in 0..1000 {
        if count.load(Ordering::SeqCst) >= 1 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("not within 10 s: {what}");
}

/// Polls task `id` on `addr` until it ends (within 15 s); its last state.
async fn until_ended(addr: SocketAddr, id: &str) -> Value {
    for _ in 0..150 {
        let task = with_tasks(addr, "tok-alice", "tasks/get", Some(id), json!({"taskId": id})).await.result();
        if task["status"] != "working" {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("task {id} did not end within 15 s");
}

/// A server without a journal keeps its tasks in its own memory: created,
/// polled to their result, waiting for their tool's questions and answered
/// by `tasks/update`, and cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_journal_tasks_are_kept_in_the_servers_memory() {
    let slow = Arc::new(Slow::default());
    let addr = serve_slow(slow_in_memory(&slow)).await;
    let discovered = with_tasks(addr, "tok-alice", "server/discover", None, json!({})).await.result();
    assert!(discovered["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(), "tasks offered: {discovered}");
    let id = start_task(addr, 300).await;
    let ended = until_ended(addr, &id).await;
    assert_eq!((&ended["status"], &ended["result"]["content"][0]["text"]), (&json!("completed"), &json!("counted for 300 ms")), "{ended}");
    assert_eq!(slow.started.load(Ordering::SeqCst), 1, "polled, it ran once");
    let foreign = with_tasks(addr, "tok-bob", "tasks/get", Some(&id), json!({"taskId": id})).await.message();
    assert!(foreign["error"]["message"].as_str().unwrap().contains("no task"), "another user's: {foreign}");
    // A task whose tool asks waits for its answers, both given at once.
    let created = with_tasks(addr, "tok-alice", "tools/call", Some("two_names"), json!({"name": "two_names", "arguments": {}})).await.result();
    let asked = created["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_owned();
    let waiting = until_ended(addr, &asked).await;
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let keys: Vec<String> = waiting["inputRequests"].as_object().unwrap().keys().cloned().collect();
    let responses: serde_json::Map<String, Value> =
        keys.iter().zip(["Ada", "Bo"]).map(|(key, name)| (key.clone(), json!({"action": "accept", "content": {"name": name}}))).collect();
    with_tasks(addr, "tok-alice", "tasks/update", Some(&asked), json!({"taskId": asked, "inputResponses": responses})).await.result();
    let done = until_ended(addr, &asked).await;
    assert_eq!(done["result"]["content"][0]["text"], "Ada and Bo", "{done}");
    // A cancelled task stays cancelled, and its call learns of it.
    let slow = Arc::new(Slow::default());
    let addr = serve_slow(slow_in_memory(&slow)).await;
    // Long enough (60 s of its 60 s timeout) that only the cancel ends it,
    // however loaded the machine.
    let created = with_tasks(addr, "tok-alice", "tools/call", Some("count_long"), json!({"name": "count_long", "arguments": {"millis": 60_000}}))
        .await
        .result();
    let long = created["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_owned();
    until_counted(&slow.started, "the task's call started").await;
    with_tasks(addr, "tok-alice", "tasks/cancel", Some(&long), json!({"taskId": long})).await.result();
    assert_eq!(until_ended(addr, &long).await["status"], "cancelled");
    until_counted(&slow.cancelled, "the cancelled task's call was stopped").await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_call_is_a_task_polled_on_any_instance_and_run_once() {
    let slow = Arc::new(Slow::default());
    let journal = journal("tasks").await;
    let (first, second) = (serve_slow(slow_server(&slow, journal.clone())).await, serve_slow(slow_server(&slow, journal.clone())).await);
    let id = start_task(first, 300).await;
    assert!(journal.tasks().get(&id).await.unwrap().is_some(), "the task is in the journal once the answer is out");
    let ended = until_ended(second, &id).await;
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["result"]["content"][0]["text"], "counted for 300 ms", "{ended}");
    assert_eq!(until_ended(first, &id).await["result"], ended["result"], "the journaled result, on every instance");
    assert_eq!(slow.started.load(Ordering::SeqCst), 1, "polled on another instance, it ran once");
    // Another user reads no such task; a client without the extension gets the result itself.
    let foreign = with_tasks(second, "tok-bob", "tasks/get", Some(&id), json!({"taskId": id})).await.message();
    assert!(foreign["error"]["message"].as_str().unwrap().contains("no task"), "{foreign}");
    let direct = call(first, "tok-alice", "count_slowly", json!({"millis": 10})).await;
    assert_eq!(text(&direct), "counted for 10 ms", "{direct}");
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_task_stays_cancelled_and_its_call_is_cancelled() {
    let slow = Arc::new(Slow::default());
    let journal = journal("task_cancel").await;
    let (first, second) = (serve_slow(slow_server(&slow, journal.clone())).await, serve_slow(slow_server(&slow, journal.clone())).await);
    // Long enough (60 s of its 60 s timeout) that only the cancel ends it,
    // however loaded the machine.
    let id = start_long_task(first, 60_000).await;
    // Cancelled once its tool runs (a loaded machine may take a while to
    // journal the start), so that it is the running call that is stopped.
    until_counted(&slow.started, "the task's call started").await;
    let acked = with_tasks(first, "tok-alice", "tasks/cancel", Some(&id), json!({"taskId": id})).await.result();
    assert!(acked.is_object(), "{acked}");
    let ended = until_ended(second, &id).await;
    assert_eq!(ended["status"], "cancelled", "{ended}");
    until_counted(&slow.cancelled, "the call was stopped").await;
    assert_eq!(slow.cancelled.load(Ordering::SeqCst), 1, "the call was stopped once");
    assert_eq!(slow.finished.load(Ordering::SeqCst), 0, "the call made no effect");
    assert_eq!(until_ended(second, &id).await["status"], "cancelled", "the end of the cancelled call does not overwrite it");
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_the_server_failed_is_failed_with_a_json_rpc_error() {
    let slow = Arc::new(Slow::default());
    let addr = serve_slow(slow_server(&slow, journal("task_failed").await)).await;
    let created = with_tasks(addr, "tok-alice", "tools/call", Some("count_broken"), json!({"name": "count_broken", "arguments": {}})).await.result();
    let ended = until_ended(addr, created["taskId"].as_str().unwrap()).await;
    assert_eq!(ended["status"], "failed", "{ended}");
    assert_eq!(ended["error"]["code"], -32603, "{ended}");
    assert!(ended["error"]["message"].as_str().unwrap().contains("status: 500"), "the generic line, not the error: {ended}");
    assert!(ended.get("result").is_none(), "{ended}");
}

/// The defect this guards against: the instance that received the cancel
/// marked the task cancelled, while the one running it went on to its
/// effect and dropped its result.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_cancelled_on_another_instance_stops_where_it_runs() {
    let slow = Arc::new(Slow::default());
    let journal = journal("task_cancel_elsewhere").await;
    let (first, second) = (serve_slow(slow_server(&slow, journal.clone())).await, serve_slow(slow_server(&slow, journal.clone())).await);
    let created = with_tasks(first, "tok-alice", "tools/call", Some("count_long"), json!({"name": "count_long", "arguments": {"millis": 3_000}}))
        .await
        .result();
    let id = created["taskId"].as_str().unwrap().to_owned();
    until_counted(&slow.started, "the task's call started on the first instance").await;
    let cancelled_at = std::time::Instant::now();
    let acked = with_tasks(second, "tok-alice", "tasks/cancel", Some(&id), json!({"taskId": id})).await.result();
    assert!(acked.is_object(), "{acked}");
    // The first instance learns of it through the journal and stops the
    // call: at the 3 s it would have counted, it has made no effect.
    tokio::time::sleep(Duration::from_millis(3_500).saturating_sub(cancelled_at.elapsed())).await;
    assert_eq!(slow.finished.load(Ordering::SeqCst), 0, "the call went on to its effect on the instance running it");
    assert_eq!(until_ended(first, &id).await["status"], "cancelled");
    assert_eq!(slow.started.load(Ordering::SeqCst), 1, "ran on one instance only");
}

#[cfg(feature = "sqlite")]
#[test]
fn a_task_whose_process_died_reads_outcome_unknown_on_another_and_never_runs_twice() {
    let slow = Arc::new(Slow::default());
    let dir = std::env::temp_dir().join(format!("tool-runtime-mcp-current-{}-died", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("journal.db").display().to_string();
    // The first instance runs in a runtime of its own, dropped mid-call as a killed process would stop.
    let dying = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let id = dying.block_on(async {
        let addr = serve_slow(slow_server(&slow, tool_runtime::journal::Journal::open(&path).await.unwrap())).await;
        let id = start_task(addr, 5_000).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        id
    });
    dying.shutdown_background();
    assert_eq!(slow.started.load(Ordering::SeqCst), 1);
    let living = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    living.block_on(async {
        let addr = serve_slow(slow_server(&slow, tool_runtime::journal::Journal::open(&path).await.unwrap())).await;
        // Its start was recorded, its end never: after its timeout (1 s) and the grace, OUTCOME_UNKNOWN.
        let ended = until_ended(addr, &id).await;
        assert_eq!(ended["status"], "completed", "{ended}");
        assert!(ended["result"]["content"][0]["text"].as_str().unwrap().contains("OUTCOME_UNKNOWN"), "{ended}");
        assert_eq!(ended["result"]["isError"], true, "{ended}");
    });
    assert_eq!(slow.started.load(Ordering::SeqCst), 1, "the call ran once, on the process that died");
}

/// A task cancelled while it waits for approval leaves no approval for
/// anyone to decide: its run is ended, the approval rejected and settled.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_cancelled_while_it_waits_leaves_no_approval_waiting() {
    let bank = Arc::new(Bank::default());
    let journal = journal("task_cancel_waiting").await;
    let addr = serve(server(&bank).with_journal(journal.clone())).await;
    let created = with_tasks(addr, "tok-alice", "tools/call", Some("grant"), json!({"name": "grant", "arguments": {"amount": 5}})).await.result();
    let id = created["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_owned();
    let run_id = format!("mcp-task:{id}");
    for _ in 0..100 {
        if !journal.approvals().unsettled_for_run(&run_id).await.unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(journal.approvals().pending_for_user("alice").await.unwrap().len(), 1, "the task's approval waits");
    with_tasks(addr, "tok-alice", "tasks/cancel", Some(&id), json!({"taskId": id})).await.result();
    assert_eq!(until_ended(addr, &id).await["status"], "cancelled");
    assert!(journal.approvals().pending_for_user("alice").await.unwrap().is_empty(), "nobody is asked to approve a cancelled task");
    assert!(journal.approvals().unsettled_for_run(&run_id).await.unwrap().is_empty(), "its approval is settled");
    assert_eq!(bank.grants.load(Ordering::SeqCst), 0);
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_needing_approval_is_a_task_waiting_for_input_answered_once() {
    use tool_runtime::journal::Decision;
    let bank = Arc::new(Bank::default());
    let journal = journal("task_approvals").await;
    let (first, second) = (serve(server(&bank).with_journal(journal.clone())).await, serve(server(&bank).with_journal(journal.clone())).await);
    let grant_task = |addr, amount: u32| async move {
        let created =
            with_tasks(addr, "tok-alice", "tools/call", Some("grant"), json!({"name": "grant", "arguments": {"amount": amount}})).await.result();
        assert_eq!(created["resultType"], "task", "{created}");
        created["taskId"].as_str().unwrap().to_owned()
    };
    let waiting = |addr, id: String| async move {
        for _ in 0..100 {
            let task = with_tasks(addr, "tok-alice", "tasks/get", Some(&id), json!({"taskId": id})).await.result();
            if task["status"] == "input_required" {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("task {id} never waited for input");
    };
    let id = grant_task(first, 5).await;
    let task = waiting(second, id.clone()).await;
    assert!(task["inputRequests"]["approval"]["params"]["message"].as_str().unwrap().contains("grant"), "{task}");
    assert_eq!(bank.grants.load(Ordering::SeqCst), 0);
    // A response to nothing outstanding is acknowledged and ignored: the task still waits.
    let unknown = json!({"taskId": id, "inputResponses": {"unknown-key": {"action": "accept"}}});
    assert_eq!(with_tasks(second, "tok-alice", "tasks/update", Some(&id), unknown).await.result()["resultType"], "complete");
    assert_eq!(waiting(first, id.clone()).await["status"], "input_required");
    let update = json!({"taskId": id, "inputResponses": {"approval": {"action": "accept"}}});
    with_tasks(second, "tok-alice", "tasks/update", Some(&id), update.clone()).await.result();
    let ended = until_ended(first, &id).await;
    assert_eq!((ended["status"].clone(), ended["result"]["content"][0]["text"].clone()), (json!("completed"), json!("granted 5")), "{ended}");
    let unsettled = journal.approvals().unsettled_for_run(&format!("mcp-task:{id}")).await.unwrap();
    assert!(unsettled.is_empty(), "carried out, the task's approval is settled: {unsettled:?}");
    // The same answer again answers nothing outstanding: acknowledged and
    // ignored, as the tasks extension asks; the grant ran once.
    let again = with_tasks(first, "tok-alice", "tasks/update", Some(&id), update).await.result();
    assert_eq!(again["resultType"], "complete", "{again}");
    assert_eq!(until_ended(second, &id).await["status"], "completed");
    assert_eq!(bank.grants.load(Ordering::SeqCst), 1);

    // Decided out of band: the task moves on by that decision.
    let id = grant_task(first, 6).await;
    waiting(first, id.clone()).await;
    let parked = journal.approvals().pending_for_user("alice").await.unwrap();
    tool_runtime::question::decide(&journal, &parked[0].run_id, &parked[0].call_id, Decision::Reject("Not this month.".into()), "supervisor")
        .await
        .unwrap();
    let ended = until_ended(second, &id).await;
    assert!(ended["result"]["content"][0]["text"].as_str().unwrap().contains("Not this month."), "{ended}");
    assert_eq!(bank.grants.load(Ordering::SeqCst), 1);
}

/// Grant credit to someone; a human approves each grant.
#[tool(policy = needs_approval)]
async fn grant_to(ctx: Ctx<Bank>, to: String, amount: u32) -> String {
    ctx.app().grants.fetch_add(1, Ordering::SeqCst);
    format!("granted {amount} to {to}")
}

/// A bank server on `journal`, with `grant_to` beside the others.
#[cfg(feature = "sqlite")]
fn journaled(bank: &Arc<Bank>, journal: &tool_runtime::journal::Journal) -> McpServer<Bank> {
    let registry = Registry::builder()
        .tools(tools![get_item, grant, audit, close_item, deposit, grant_to])
        .approval_ttl(Duration::from_secs(60))
        .build()
        .unwrap();
    server_with(registry, bank, KEY).with_journal(journal.clone())
}

/// The one approval of `user` waiting in `journal`.
#[cfg(feature = "sqlite")]
async fn waiting_of(journal: &tool_runtime::journal::Journal, user: &str) -> tool_runtime::journal::ParkedCall {
    let mut parked = journal.approvals().pending_for_user(user).await.unwrap();
    assert_eq!(parked.len(), 1, "{parked:?}");
    parked.remove(0)
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approvers_edit_is_carried_out_as_edited_whatever_the_client_answers() {
    use tool_runtime::journal::Decision;
    let bank = Arc::new(Bank::default());
    let journal = journal("edits").await;
    let addr = serve(journaled(&bank, &journal)).await;
    for (action, edited) in [("accept", 5), ("decline", 7)] {
        let state = ask_grant(addr, "tok-alice", 5000).await;
        let parked = waiting_of(&journal, "alice").await;
        tool_runtime::question::decide(&journal, &parked.run_id, &parked.call_id, Decision::ApproveEdited(json!({"amount": edited})), "supervisor")
            .await
            .unwrap();
        let done = answer(addr, "tok-alice", "grant", json!({"amount": 5000}), action, &state).await;
        assert_eq!((done["isError"].clone(), text(&done)), (json!(false), format!("granted {edited}").as_str()), "{action}: {done}");
    }
    assert_eq!(bank.grants.load(Ordering::SeqCst), 2);
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_with_its_members_in_another_order_is_the_same_call() {
    let bank = Arc::new(Bank::default());
    let journal = journal("member_order").await;
    let addr = serve(journaled(&bank, &journal)).await;
    let asked = call(addr, "tok-alice", "grant_to", json!({"to": "carol", "amount": 5})).await;
    let state = asked["requestState"].as_str().unwrap();
    let params = json!({"name": "grant_to", "arguments": {"amount": 5, "to": "carol"},
        "inputResponses": {"approval": {"action": "accept"}}, "requestState": state});
    let done = request(addr, "tok-alice", "tools/call", Some("grant_to"), params).await.result();
    assert_eq!(text(&done), "granted 5 to carol", "{done}");
}

/// Waiting approvals capped at 2 a user and 3 in all, on two instances
/// (sharing `journal` when there is one).
#[cfg(feature = "sqlite")]
async fn the_waiting_caps_hold(journal: Option<tool_runtime::journal::Journal>) {
    let bank = Arc::new(Bank::default());
    let capped = |bank: &Arc<Bank>| {
        let server = server(bank).with_max_waiting_approvals_per_user(2).with_max_waiting_approvals(3);
        match &journal {
            Some(journal) => server.with_journal(journal.clone()),
            None => server,
        }
    };
    let (first, second) = (serve(capped(&bank)).await, serve(capped(&bank)).await);
    // Without a journal each instance counts its own.
    let other = if journal.is_some() { second } else { first };
    let alice = ask_grant(first, "tok-alice", 1).await;
    ask_grant(other, "tok-alice", 2).await;
    let refused = call(first, "tok-alice", "grant", json!({"amount": 3})).await;
    assert!(
        refused["isError"] == true && text(&refused).contains("TOO_MANY_PENDING") && text(&refused).contains("2 calls of this user"),
        "{refused}"
    );
    ask_grant(other, "tok-bob", 4).await;
    let full = call(first, "tok-bob", "grant", json!({"amount": 5})).await;
    assert!(full["isError"] == true && text(&full).contains("3 calls already wait"), "{full}");
    // An answered approval waits no more: there is room again.
    assert_eq!(text(&answer(first, "tok-alice", "grant", json!({"amount": 1}), "accept", &alice).await), "granted 1");
    ask_grant(other, "tok-alice", 6).await;
    assert_eq!(bank.grants.load(Ordering::SeqCst), 1);
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_waiting_caps_hold_at_this_revision_without_a_journal() {
    the_waiting_caps_hold(None).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_waiting_caps_hold_at_this_revision_across_instances_with_a_journal() {
    the_waiting_caps_hold(Some(journal("caps").await)).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_never_names_another_callers_approval_and_a_keyed_approval_is_retried_from_the_journal() {
    let bank = Arc::new(Bank::default());
    let journal = journal("keyed_approvals").await;
    let addr = serve(journaled(&bank, &journal)).await;
    // Bob chooses as his key the id the server gave alice's waiting call.
    let alice = ask_grant(addr, "tok-alice", 5).await;
    let key = waiting_of(&journal, "alice").await.call_id;
    let asked = keyed(addr, "tok-bob", "grant", json!({"amount": 9}), &key).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert_eq!(text(&answer(addr, "tok-alice", "grant", json!({"amount": 5}), "accept", &alice).await), "granted 5");
    // Bob's stream broke: his first round again asks again, it is not refused.
    let again = keyed(addr, "tok-bob", "grant", json!({"amount": 9}), &key).await;
    assert_eq!(again["resultType"], "input_required", "{again}");
    let reused = keyed(addr, "tok-bob", "grant", json!({"amount": 10}), &key).await;
    assert!(reused["isError"] == true && text(&reused).contains("CALL_ID_REUSED"), "{reused}");
    let state = again["requestState"].as_str().unwrap().to_owned();
    let answered = |addr| {
        let params = json!({"name": "grant", "arguments": {"amount": 9}, "inputResponses": {"approval": {"action": "accept"}},
            "requestState": state.clone(), "key": key.clone()});
        async move { request(addr, "tok-bob", "tools/call", Some("grant"), params).await.result() }
    };
    assert_eq!(text(&answered(addr).await), "granted 9");
    // Sent again, with its answer or as its first round: read from the journal.
    assert_eq!(text(&answered(addr).await), "granted 9");
    assert_eq!(text(&keyed(addr, "tok-bob", "grant", json!({"amount": 9}), &key).await), "granted 9");
    assert_eq!(bank.grants.load(Ordering::SeqCst), 2, "one grant each");

    // A keyed call from a client that declares tasks is no task: two sends, one grant.
    let with_key = |addr| {
        let params = json!({"name": "grant", "arguments": {"amount": 11}, "key": "k-tasks"});
        async move {
            let mut params = params;
            let key = params.as_object_mut().unwrap().remove("key").unwrap();
            let mut meta = meta(true);
            meta["io.modelcontextprotocol/clientCapabilities"]["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
            meta[IDEMPOTENCY_KEY] = key;
            params["_meta"] = meta;
            let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}).to_string();
            post(addr, "tok-bob", "tools/call", Some("grant"), &body).await.result()
        }
    };
    let first = with_key(addr).await;
    assert_eq!(first["resultType"], "input_required", "{first}");
    assert_eq!(with_key(addr).await["resultType"], "input_required");
    let state = first["requestState"].as_str().unwrap();
    let params = json!({"name": "grant", "arguments": {"amount": 11}, "inputResponses": {"approval": {"action": "accept"}},
        "requestState": state, "key": "k-tasks"});
    assert_eq!(text(&request(addr, "tok-bob", "tools/call", Some("grant"), params).await.result()), "granted 11");
    assert_eq!(text(&with_key(addr).await), "granted 11");
    assert_eq!(bank.grants.load(Ordering::SeqCst), 3);
}

/// A state sealed with `KEY` naming `run` and `call`, bound to `tool`,
/// `user` and `arguments` as the server binds them: what someone holding
/// the key could make.
fn forged(run: &str, call: &str, tool: &str, user: &str, arguments: &Value) -> String {
    use tool_runtime::mcp::rmcp::model::{RequestStateCodec, SealOptions};
    let mut sorted = arguments.clone();
    sorted.sort_all_objects();
    let sorted = sorted.to_string();
    let mut binding = Vec::new();
    for part in [b"tools/call".as_slice(), tool.as_bytes(), user.as_bytes(), sorted.as_bytes()] {
        binding.extend_from_slice(&(part.len() as u64).to_be_bytes());
        binding.extend_from_slice(part);
    }
    let payload = json!({"r": run, "c": call}).to_string();
    RequestStateCodec::try_new(KEY).unwrap().seal_with(payload.as_bytes(), &SealOptions::new().associated_data(&binding).ttl(Duration::from_secs(60)))
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_that_names_another_callers_row_runs_nothing_even_with_the_key() {
    let bank = Arc::new(Bank::default());
    let journal = journal("foreign_rows").await;
    let addr = serve(journaled(&bank, &journal)).await;
    ask_grant(addr, "tok-alice", 5000).await;
    let alices = waiting_of(&journal, "alice").await;
    // Mallory holds the key; she seals a state naming alice's row for her own small call.
    let state = forged(&alices.run_id, &alices.call_id, "grant", "bob", &json!({"amount": 1}));
    assert_refused(&answer(addr, "tok-bob", "grant", json!({"amount": 1}), "accept", &state).await);
    // And for alice's very call, but as bob.
    let state = forged(&alices.run_id, &alices.call_id, "grant", "bob", &json!({"amount": 5000}));
    assert_refused(&answer(addr, "tok-bob", "grant", json!({"amount": 5000}), "accept", &state).await);
    assert_eq!(bank.grants.load(Ordering::SeqCst), 0);
    let row = journal.approvals().get(&alices.run_id, &alices.call_id).await.unwrap().unwrap();
    assert!(row.decided.is_none(), "alice's approval still waits for her: {row:?}");
}

/// A server whose hook accepts `tok-anon` without naming a user.
fn with_nameless_callers(bank: &Arc<Bank>) -> McpServer<Bank> {
    let registry = Registry::builder().tools(tools![get_item, grant, deposit]).build().unwrap();
    McpServer::new(registry, bank.clone())
        .with_auth(|headers| match headers.get("authorization").and_then(|value| value.to_str().ok()) {
            Some("Bearer tok-anon") => Ok(UserContext::default()),
            _ => Err(Unauthorized::missing_bearer_token()),
        })
        .with_request_state_key(KEY)
        .unwrap()
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_the_hook_did_not_name_share_no_key_task_or_approval() {
    let bank = Arc::new(Bank::default());
    let journal = journal("nameless").await;
    let addr = serve(with_nameless_callers(&bank).with_journal(journal.clone())).await;
    let keyed = keyed(addr, "tok-anon", "deposit", json!({"amount": 5}), "k-1").await;
    assert!(keyed["isError"] == true && text(&keyed).contains("IDEMPOTENCY_UNAVAILABLE"), "{keyed}");
    let asked = call(addr, "tok-anon", "grant", json!({"amount": 5})).await;
    assert!(asked["isError"] == true && text(&asked).contains("APPROVAL_UNAVAILABLE"), "{asked}");
    let tasked = with_tasks(addr, "tok-anon", "tools/call", Some("grant"), json!({"name": "grant", "arguments": {"amount": 5}})).await.result();
    assert_ne!(tasked["resultType"], "task", "{tasked}");
    assert!(journal.approvals().pending_for_user("").await.unwrap().is_empty());
    assert_eq!((bank.grants.load(Ordering::SeqCst), bank.deposits.load(Ordering::SeqCst)), (0, 0));
    // What needs no name still works.
    assert_eq!(text(&call(addr, "tok-anon", "deposit", json!({"amount": 5})).await), "deposit 1: 5");
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_are_capped_per_user_and_an_expired_task_is_neither_served_nor_run() {
    let slow = Arc::new(Slow::default());
    let journal = journal("task_caps").await;
    let addr =
        serve_slow(slow_server(&slow, journal.clone()).with_max_tasks_per_user(2).with_max_tasks(3).with_task_ttl(Duration::from_secs(8))).await;
    // Each runs 2 s: under way while the next calls are refused, ended well
    // within the time to live, however loaded the machine.
    const MILLIS: u64 = 2_000;
    let first = start_long_task(addr, MILLIS).await;
    start_long_task(addr, MILLIS).await;
    let third = with_tasks(addr, "tok-alice", "tools/call", Some("count_long"), json!({"name": "count_long", "arguments": {"millis": MILLIS}}))
        .await
        .result();
    assert!(third["isError"] == true && text(&third).contains("TOO_MANY_TASKS"), "{third}");
    let bobs =
        with_tasks(addr, "tok-bob", "tools/call", Some("count_long"), json!({"name": "count_long", "arguments": {"millis": MILLIS}})).await.result();
    assert_eq!(bobs["resultType"], "task", "{bobs}");
    let full =
        with_tasks(addr, "tok-bob", "tools/call", Some("count_long"), json!({"name": "count_long", "arguments": {"millis": MILLIS}})).await.result();
    assert!(full["isError"] == true && text(&full).contains("3 tasks are already under way"), "{full}");
    assert_eq!(until_ended(addr, &first).await["status"], "completed");
    // Past its time to live, a task is no one's: not served, never taken up again.
    tokio::time::sleep(Duration::from_millis(8_100)).await;
    let expired = with_tasks(addr, "tok-alice", "tasks/get", Some(&first), json!({"taskId": first})).await.message();
    assert!(expired["error"]["message"].as_str().unwrap().contains("expired"), "{expired}");
    assert_eq!(slow.started.load(Ordering::SeqCst), 3);
}

/// Every capability a tool may ask of the client.
fn asking_client() -> Value {
    json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {}})
}

/// One round of a call of `tool` with `arguments` as `token`'s user, from
/// a client declaring `capabilities`: its answers and state, when given.
async fn round_of(
    addr: SocketAddr,
    token: &str,
    (tool, arguments): (&str, Value),
    capabilities: Value,
    answered: (Option<Value>, Option<&str>),
) -> Reply {
    let mut params = json!({"name": tool, "arguments": arguments, "capabilities": capabilities});
    if let Some(responses) = answered.0 {
        params["inputResponses"] = responses;
    }
    if let Some(state) = answered.1 {
        params["requestState"] = json!(state);
    }
    request(addr, token, "tools/call", Some(tool), params).await
}

/// A round of `pay` for 5: its answers and state, when given.
async fn pay_round(addr: SocketAddr, token: &str, responses: Option<Value>, state: Option<&str>) -> Reply {
    round_of(addr, token, ("pay", json!({"amount": 5})), asking_client(), (responses, state)).await
}

/// The one key of `asked`'s `inputRequests` whose method is `method`.
fn key_of(asked: &Value, method: &str) -> String {
    let requests = asked["inputRequests"].as_object().unwrap_or_else(|| panic!("no inputRequests: {asked}"));
    requests.iter().find(|(_, request)| request["method"] == method).map(|(key, _)| key.clone()).unwrap_or_else(|| panic!("no {method} in {asked}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_questions_are_input_required_results_over_rounds_on_any_instance() {
    let bank = Arc::new(Bank::default());
    let (first, second) = (serve(server(&bank)).await, serve(server(&bank)).await);
    let asked = pay_round(first, "tok-alice", None, None).await.result();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let form = key_of(&asked, "elicitation/create");
    assert_eq!(asked["inputRequests"].as_object().unwrap().len(), 1, "{asked}");
    assert_eq!(asked["inputRequests"][&form]["params"]["requestedSchema"]["required"], json!(["name"]));
    let state = asked["requestState"].as_str().unwrap();
    // A round that leaves the question unanswered asks it again; answers
    // without the state they answer start the call again.
    let again = pay_round(second, "tok-alice", Some(json!({"unrelated": {}})), Some(state)).await.result();
    assert_eq!(key_of(&again, "elicitation/create"), form);
    let stateless =
        pay_round(second, "tok-alice", Some(json!({form.clone(): {"action": "accept", "content": {"name": "Eve"}}})), None).await.result();
    assert_eq!(stateless["resultType"], "input_required", "{stateless}");
    // Answered on another instance: two questions asked together, one round.
    let named = json!({form.clone(): {"action": "accept", "content": {"name": "Ada"}}});
    let together = pay_round(second, "tok-alice", Some(named), Some(state)).await.result();
    assert_eq!(together["resultType"], "input_required", "{together}");
    assert_eq!(together["inputRequests"].as_object().unwrap().len(), 2, "{together}");
    let (sample, roots) = (key_of(&together, "sampling/createMessage"), key_of(&together, "roots/list"));
    let later = together["requestState"].as_str().unwrap();
    assert_ne!(later, state, "each round seals its own state");
    let memo = json!({"role": "assistant", "content": {"type": "text", "text": "rent"}, "model": "m"});
    let answers = json!({sample: memo, roots: {"roots": [{"uri": "file:///receipts"}]}});
    let done = pay_round(first, "tok-alice", Some(answers), Some(later)).await.result();
    assert_eq!(text(&done), "paid 5 to Ada (rent), receipt in file:///receipts", "{done}");
    assert_eq!(bank.payments.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_question_goes_by_its_name_and_a_name_asked_twice_in_a_call_is_refused() {
    let bank = Arc::new(Bank::default());
    let addr = serve(server(&bank)).await;
    let tip = |arguments: Value, responses: Option<Value>, state: Option<String>| async move {
        round_of(addr, "tok-alice", ("tip", arguments), asking_client(), (responses, state.as_deref())).await
    };
    let asked = tip(json!({"twice": false}), None, None).await.result();
    assert_eq!(asked["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["payee"], "{asked}");
    let state = asked["requestState"].as_str().unwrap().to_owned();
    let answer = json!({"payee": {"action": "accept", "content": {"name": "Ada"}}});
    let done = tip(json!({"twice": false}), Some(answer), Some(state)).await.result();
    assert_eq!(text(&done), "tipped Ada", "{done}");
    let twice = tip(json!({"twice": true}), None, None).await.message();
    assert!(twice["error"]["message"].as_str().unwrap().contains("two questions of the call are named \"payee\""), "{twice}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_the_request_does_not_declare_is_32021_and_a_bad_state_or_answer_32602() {
    let bank = Arc::new(Bank::default());
    let addr = serve(server(&bank)).await;
    // Sampling and roots, but no elicitation.
    let params = json!({"name": "pay", "arguments": {"amount": 5}, "capabilities": {"sampling": {}, "roots": {}}});
    let missing = request(addr, "tok-alice", "tools/call", Some("pay"), params).await;
    assert_eq!(missing.status, 400, "{missing:?}");
    let error = &missing.message()["error"];
    assert_eq!(error["code"], -32021, "{error}");
    assert_eq!(error["data"]["requiredCapabilities"], json!({"elicitation": {}}), "{error}");
    let asked = pay_round(addr, "tok-alice", None, None).await.result();
    let (form, state) = (key_of(&asked, "elicitation/create"), asked["requestState"].as_str().unwrap().to_owned());
    let named = json!({form.clone(): {"action": "accept", "content": {"name": "Ada"}}});
    let mut flipped = state.clone().into_bytes();
    let middle = flipped.len() / 2;
    flipped[middle] = if flipped[middle] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).unwrap();
    for (token, responses, state) in [
        // Tampered, another user's.
        ("tok-alice", named.clone(), flipped.as_str()),
        ("tok-bob", named.clone(), state.as_str()),
        // A form's answer that does not fit it, and one that is no answer.
        ("tok-alice", json!({form.clone(): {"action": "accept", "content": {"nom": "Ada"}}}), state.as_str()),
        ("tok-alice", json!({form.clone(): {"roots": []}}), state.as_str()),
    ] {
        let refused = pay_round(addr, token, Some(responses.clone()), Some(state)).await.message();
        assert_eq!(refused["error"]["code"], -32602, "{responses}: {refused}");
    }
    assert_eq!(bank.payments.load(Ordering::SeqCst), 0);
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_questions_are_its_input_requests_answered_one_at_a_time_on_any_instance() {
    let slow = Arc::new(Slow::default());
    let journal = journal("task_questions").await;
    let (first, second) = (serve_slow(slow_server(&slow, journal.clone())).await, serve_slow(slow_server(&slow, journal)).await);
    let created = with_tasks(first, "tok-alice", "tools/call", Some("two_names"), json!({"name": "two_names", "arguments": {}})).await.result();
    let id = created["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_owned();
    let get = |addr| with_tasks(addr, "tok-alice", "tasks/get", Some(&id), json!({"taskId": id}));
    let waiting = until_ended(first, &id).await;
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let keys: Vec<String> = waiting["inputRequests"].as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys.len(), 2, "{waiting}");
    assert!(waiting["inputRequests"].as_object().unwrap().values().all(|request| request["method"] == "elicitation/create"), "{waiting}");
    // One answered, on the other instance: the task waits for the other.
    let answer = |key: &str, name: &str| json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"name": name}}}});
    let acked = with_tasks(second, "tok-alice", "tasks/update", Some(&id), answer(&keys[0], "Ada")).await.result();
    assert_eq!(acked["resultType"], "complete", "{acked}");
    let still = get(second).await.result();
    assert_eq!(still["status"], "input_required", "{still}");
    assert_eq!(still["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), [&keys[1]], "{still}");
    // An answer that does not fit its form is refused; the right one ends it.
    let unfit = json!({"taskId": id, "inputResponses": {&keys[1]: {"action": "accept", "content": {"nom": "Bo"}}}});
    assert_eq!(with_tasks(first, "tok-alice", "tasks/update", Some(&id), unfit).await.message()["error"]["code"], -32602);
    with_tasks(first, "tok-alice", "tasks/update", Some(&id), answer(&keys[1], "Bo")).await.result();
    let done = until_ended(first, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "Ada and Bo", "{done}");
    assert_eq!(slow.finished.load(Ordering::SeqCst), 1);
}

/// A tool whose questions come first asks them in rounds of
/// `input_required` (no task yet), and the round that answers them answers
/// with a task (no `requestState`, no `inputRequests`), whose call reads
/// the answer where it asks again: the round on one instance, the task
/// read on the other, `rounds` the instances (one without a journal); the
/// text of its result.
async fn a_call_asks_first_then_goes_on_as_a_task(slow: &Slow, rounds: [SocketAddr; 2]) -> String {
    let greet = |addr, capabilities: Value, responses: Option<Value>, state: Option<String>| async move {
        round_of(addr, "tok-alice", ("greet_later", json!({})), capabilities, (responses, state.as_deref())).await
    };
    let asking = json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    let without_tasks = greet(rounds[0], json!({"elicitation": {"form": {}}}), None, None).await;
    assert_eq!(without_tasks.message()["error"]["code"], -32021, "{without_tasks:?}");
    assert_eq!(slow.started.load(Ordering::SeqCst), 0, "refused before it ran");
    let asked = greet(rounds[0], asking.clone(), None, None).await.result();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert!(asked.get("taskId").is_none(), "no task before its questions are answered: {asked}");
    assert_eq!(asked["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["payee"], "{asked}");
    let state = asked["requestState"].as_str().unwrap().to_owned();
    let answer = json!({"payee": {"action": "accept", "content": {"name": "Ada"}}});
    let created = greet(rounds[1], asking, Some(answer), Some(state)).await.result();
    assert_eq!(created["resultType"], "task", "{created}");
    assert!(created.get("requestState").is_none() && created.get("inputRequests").is_none(), "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let done = until_ended(rounds[0], &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    // The first round, and the task's call; greeted once.
    assert_eq!((slow.started.load(Ordering::SeqCst), slow.finished.load(Ordering::SeqCst)), (2, 1));
    done["result"]["content"][0]["text"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_asks_first_then_goes_on_as_a_task_in_the_servers_memory() {
    let slow = Arc::new(Slow::default());
    let addr = serve_slow(greeting_later(slow_in_memory(&slow))).await;
    let greeted = a_call_asks_first_then_goes_on_as_a_task(&slow, [addr, addr]).await;
    assert!(greeted.starts_with("hello Ada (hold "), "{greeted}");
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_asks_first_then_goes_on_as_a_task_across_instances_with_a_journal() {
    let slow = Arc::new(Slow::default());
    let journal = journal("asks_first").await;
    let first = serve_slow(greeting_later(slow_server(&slow, journal.clone()))).await;
    let second = serve_slow(greeting_later(slow_server(&slow, journal))).await;
    let greeted = a_call_asks_first_then_goes_on_as_a_task(&slow, [first, second]).await;
    assert_eq!(greeted, "hello Ada (hold 1)", "the hold made in the round is the task's");
    assert_eq!(slow.holds.load(Ordering::SeqCst), 1, "held once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_questions_share_a_name_fails_saying_so_rather_than_wait_forever() {
    let slow = Arc::new(Slow::default());
    let addr = serve_slow(slow_in_memory(&slow)).await;
    let params = json!({"name": "one_name_twice", "arguments": {}});
    let created = with_tasks(addr, "tok-alice", "tools/call", Some("one_name_twice"), params).await.result();
    let id = created["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_owned();
    let ended = until_ended(addr, &id).await;
    assert_eq!(ended["status"], "failed", "{ended}");
    assert!(ended["error"]["message"].as_str().unwrap().contains("two questions of the task are named \"payee\""), "{ended}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_effect_made_once_is_made_once_over_every_round_on_any_instance() {
    let bank = Arc::new(Bank::default());
    let (first, second) = (serve(server(&bank)).await, serve(server(&bank)).await);
    let round = |addr, responses: Option<Value>, state: Option<String>| async move {
        round_of(addr, "tok-alice", ("hold_then_pay", json!({"amount": 5})), asking_client(), (responses, state.as_deref())).await
    };
    let named = |key: &str, name: &str| json!({key: {"action": "accept", "content": {"name": name}}});
    let asked = round(first, None, None).await.result();
    assert_eq!(asked["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["payee"], "{asked}");
    let state = asked["requestState"].as_str().map(str::to_owned);
    let again = round(second, Some(named("payee", "Ada")), state).await.result();
    assert_eq!(again["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["again"], "{again}");
    let state = again["requestState"].as_str().map(str::to_owned);
    let done = round(first, Some(named("again", "Ada L.")), state).await.result();
    assert_eq!(text(&done), "paid 5 to Ada (Ada L.) from hold 1", "{done}");
    assert_eq!(bank.holds.load(Ordering::SeqCst), 1, "three rounds on two instances, one hold");
}

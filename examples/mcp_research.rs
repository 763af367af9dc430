//! A research assistant's tools over MCP, with a streaming tool and an
//! external one, driven by a scripted client on an in-memory pipe so that
//! it runs anywhere:
//!
//! ```text
//! cargo run --example mcp_research --features mcp
//! ```
//!
//! - `search_papers` returns `Streamed<Found>`: each batch it finds before
//!   the last reaches the client as a progress notification (the client
//!   sent a progress token), the last is the result.
//! - `choose_paper` is `external`: the server validates and decides the
//!   call, then hands it to the host's runner (here, a stand-in for a UI
//!   that asks the reader), and the client gets what the reader chose,
//!   checked against the tool's output schema.
//!
//! The transcript shows the JSON-RPC messages the client sends and reads.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, WriteHalf};
use tool_runtime::mcp::McpServer;
use tool_runtime::mcp::rmcp::ServiceExt;
use tool_runtime::prelude::*;
use tool_runtime::{ExternalCall, Streamed, stream};

struct Library;

/// Papers found so far.
#[derive(Serialize, JsonSchema)]
struct Found {
    /// How many shelves were searched.
    shelves: u32,
    titles: Vec<String>,
}

/// Search the library's papers, shelf by shelf, reporting what was found so far.
#[tool(read_only, timeout = "10s")]
async fn search_papers(
    /// Words of the title.
    #[schemars(length(min = 2, max = 80))]
    topic: String,
) -> Streamed<Found> {
    let shelves = [
        vec![format!("{topic} in practice")],
        vec![format!("A survey of {topic}")],
        vec![format!("{topic}, revisited"), format!("Why {topic} fails")],
    ];
    Streamed::new(stream::unfold((0, Vec::new()), move |(shelf, mut titles): (usize, Vec<String>)| {
        let batch = shelves.get(shelf).cloned();
        async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            titles.extend(batch?);
            let found = Found { shelves: shelf as u32 + 1, titles: titles.clone() };
            Some((found, (shelf + 1, titles)))
        }
    }))
}

/// The paper the reader chose, by its title.
#[derive(Serialize, JsonSchema)]
struct Choice {
    #[schemars(length(min = 1))]
    title: String,
}

/// Let the reader choose one of the papers, in the reading app.
#[tool(external, timeout = "60s")]
async fn choose_paper(
    /// The titles to choose from.
    #[schemars(length(min = 1, max = 10))]
    titles: Vec<String>,
) -> Choice;

/// The host's side of `choose_paper`: in a real app, a dialog in the
/// reader's UI; here the reader takes the first title with "survey" in it.
async fn ask_the_reader(call: ExternalCall) -> Result<Value, ToolError> {
    let titles: Vec<String> = serde_json::from_value(call.input["titles"].clone()).unwrap_or_default();
    println!("    (host) {} {}: the reading app asks the reader to choose among {titles:?}", call.tool, call.id);
    match titles.iter().find(|title| title.contains("survey")) {
        Some(title) => Ok(json!({ "title": title })),
        None => Err(ToolError::not_found("NOTHING_CHOSEN", "The reader chose none of these; ask what they are looking for.")),
    }
}

#[tokio::main]
async fn main() {
    let registry = Registry::<Library>::builder().tools(tools![search_papers, choose_paper]).build().expect("the tools are valid");
    let server = McpServer::new(registry, Arc::new(Library)).with_name("library", "1.0.0").with_external(ask_the_reader);

    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    let session = server.session();
    tokio::spawn(async move {
        if let Ok(running) = session.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    let mut client = Client::new(client_side);
    client
        .request("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "reader", "version": "1"}}))
        .await;
    client.notify("notifications/initialized").await;

    let tools = client.request("tools/list", json!({})).await;
    let names: Vec<&str> = tools["tools"].as_array().into_iter().flatten().filter_map(|tool| tool["name"].as_str()).collect();
    println!("tools/list -> {}\n", names.join(", "));

    let search = json!({"name": "search_papers", "arguments": {"topic": "caching"}, "_meta": {"progressToken": "search-1"}});
    let found = client.request("tools/call", search).await;
    let titles = found["structuredContent"]["titles"].clone();
    println!("  result -> {}\n", found["content"][0]["text"].as_str().unwrap_or_default());

    let chosen = client.request("tools/call", json!({"name": "choose_paper", "arguments": {"titles": titles}})).await;
    println!("  result -> {}\n", chosen["content"][0]["text"].as_str().unwrap_or_default());

    let refused = client.request("tools/call", json!({"name": "choose_paper", "arguments": {"titles": []}})).await;
    println!("  result -> {}", refused["content"][0]["text"].as_str().unwrap_or_default());
}

/// A scripted MCP client: JSON-RPC lines over the pipe, printing what it sends
/// and each progress notification it reads.
struct Client {
    lines: Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
    next_id: u64,
}

impl Client {
    fn new(pipe: DuplexStream) -> Self {
        let (reader, writer) = tokio::io::split(pipe);
        Client { lines: BufReader::new(reader).lines(), writer, next_id: 1 }
    }

    async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.writer.write_all(line.as_bytes()).await.expect("the server reads the pipe");
    }

    async fn notify(&mut self, method: &str) {
        self.send(json!({"jsonrpc": "2.0", "method": method})).await;
    }

    /// Sends a request and reads until its response, printing progress.
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        if method == "tools/call" {
            println!("client -> tools/call {}", params["name"]);
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        loop {
            let line = self.lines.next_line().await.expect("the pipe is open").expect("the server answers");
            let message: Value = serde_json::from_str(&line).expect("the server writes JSON");
            if message["method"] == "notifications/progress" {
                let params = &message["params"];
                println!("  progress {} -> {}", params["progress"], params["message"].as_str().unwrap_or_default());
            } else if message["id"] == json!(id) {
                return message["result"].clone();
            }
        }
    }
}

//! One MCP `tools/call` round trip over an in-memory duplex
//! (`tokio::io::duplex`), driven by an rmcp client: our MCP server over a
//! registry (`tool_runtime::mcp`), against the same tool in a plain rmcp
//! `#[tool_router]` server. Both run on one current-thread runtime.
//!
//! `cargo bench --features mcp --bench mcp` prints criterion's groups, then
//! the ratio (target: at most 1.15x), measured side by side in alternating
//! batches.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::{RoleClient, RunningService};
use serde_json::json;
use tokio::runtime::Runtime;
use tool_runtime::mcp::McpServer;
use tool_runtime::prelude::*;

/// Look up an order.
#[tool]
async fn lookup(
    /// The order number.
    order_id: String,
    /// Include the line items.
    with_items: bool,
    /// At most this many items.
    limit: u32,
) -> String {
    format!("{order_id}/{with_items}/{limit}")
}

/// The same tool, as rmcp's own macros define it.
mod plain {
    use rmcp::handler::server::wrapper::Parameters;
    use rmcp::{tool, tool_router};
    use schemars::JsonSchema;
    use serde::Deserialize;

    #[derive(Clone)]
    pub struct Plain;

    #[derive(Deserialize, JsonSchema)]
    pub struct LookupInput {
        /// The order number.
        order_id: String,
        /// Include the line items.
        with_items: bool,
        /// At most this many items.
        limit: u32,
    }

    #[tool_router(server_handler)]
    impl Plain {
        /// Look up an order.
        #[tool(name = "lookup")]
        async fn lookup(&self, Parameters(input): Parameters<LookupInput>) -> String {
            format!("{}/{}/{}", input.order_id, input.with_items, input.limit)
        }
    }
}

use plain::Plain;

type Client = RunningService<RoleClient, ()>;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// A client connected to our server for the registry's tools.
async fn ours() -> Client {
    let registry = Registry::<()>::builder().tools(tools![lookup]).build().unwrap();
    let server = McpServer::new(registry, Arc::new(()));
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let running = server.session().serve(server_io).await.expect("the server starts");
        let _ = running.waiting().await;
    });
    ().serve(client_io).await.expect("the client connects")
}

/// A client connected to the plain rmcp server.
async fn plain() -> Client {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let running = Plain.serve(server_io).await.expect("the server starts");
        let _ = running.waiting().await;
    });
    ().serve(client_io).await.expect("the client connects")
}

fn arguments() -> JsonObject {
    match json!({"order_id": "A-1002", "with_items": true, "limit": 20}) {
        serde_json::Value::Object(map) => map,
        _ => unreachable!(),
    }
}

async fn call(client: &Client, arguments: &JsonObject) -> String {
    let result = client.call_tool(CallToolRequestParams::new("lookup").with_arguments(arguments.clone())).await.expect("tools/call answers");
    assert_ne!(result.is_error, Some(true));
    match result.content.first().and_then(|content| content.as_text()) {
        Some(text) => text.text.clone(),
        None => String::new(),
    }
}

fn total(rt: &Runtime, client: &Client, iters: u64) -> Duration {
    let arguments = arguments();
    rt.block_on(async {
        let started = Instant::now();
        for _ in 0..iters {
            black_box(call(client, &arguments).await);
        }
        started.elapsed()
    })
}

fn benches(c: &mut Criterion) {
    let rt = runtime();
    let (ours, plain) = rt.block_on(async { (ours().await, plain().await) });
    let arguments = arguments();
    let (a, b) = rt.block_on(async { (call(&ours, &arguments).await, call(&plain, &arguments).await) });
    assert_eq!(a, b, "both servers answer alike");
    assert_eq!(a, "A-1002/true/20");
    let mut group = c.benchmark_group("mcp_tools_call");
    group.bench_function("ours", |bencher| bencher.iter_custom(|iters| total(&rt, &ours, iters)));
    group.bench_function("rmcp_tool_router", |bencher| bencher.iter_custom(|iters| total(&rt, &plain, iters)));
    group.finish();
}

fn summary() {
    let rt = runtime();
    let (ours, plain) = rt.block_on(async { (ours().await, plain().await) });
    total(&rt, &ours, 2_000);
    total(&rt, &plain, 2_000);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..41 {
        a.push(total(&rt, &ours, 500) / 500);
        b.push(total(&rt, &plain, 500) / 500);
    }
    a.sort();
    b.sort();
    let (ours_time, plain_time) = (a[a.len() / 2], b[b.len() / 2]);
    let ratio = ours_time.as_secs_f64() / plain_time.as_secs_f64();
    println!("\nmcp: one tools/call round trip over tokio::io::duplex, rmcp client (median of 41 alternating batches of 500)");
    println!(
        "ours {ours_time:.2?}, rmcp #[tool_router] {plain_time:.2?}, ratio {ratio:.3}x; target <= 1.15x: {}",
        if ratio <= 1.15 { "met" } else { "NOT met" }
    );
}

criterion_group!(group, benches);

fn main() {
    group();
    Criterion::default().configure_from_args().final_summary();
    summary();
}

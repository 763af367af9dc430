//! The support-desk tools served over MCP, on stdio by default:
//!
//! ```text
//! cargo run --example mcp_server --features mcp
//! cargo run --example mcp_server --features mcp -- --http 127.0.0.1:8080
//! cargo run --example mcp_server --features mcp -- --journal sqlite:mcp.db
//! ```
//!
//! With `--journal URL` (a SQLite file, or `postgres://...` with
//! `--features postgres`) each session's run is durable: its calls' effects
//! and its calls waiting for approval are journaled, so any process on the
//! same journal can decide them (`journal.approvals().decide`), and several instances
//! (or a restarted one) share it.
//!
//! Revision 2026-07-28 is served statelessly beside the session revisions:
//! a call that needs approval answers `input_required` with a sealed
//! `requestState`. Give every instance the same key (`--key HEX`, or
//! `MCP_REQUEST_STATE_KEY`: at least 32 bytes written in hex, as
//! `openssl rand -hex 32` prints them; text that is not hex is refused) and
//! the same journal, and any of them finishes an approval another asked
//! for; without a journal, only the instance that asked does.
//!
//! With `--http ADDR` it serves streamable HTTP at `http://ADDR/mcp` (port 0
//! picks a free one; the address is printed on stderr). Stdout carries the
//! protocol on stdio, so everything else goes to stderr.
//!
//! Over HTTP, set `MCP_BEARER_TOKEN` to require `Authorization: Bearer
//! <token>` on every request. A non-loopback address (`0.0.0.0:8080`) is
//! refused without a token unless `--insecure-no-auth` is given; clients
//! reaching it under a name list that name with `--allowed-host NAME`.
//! One client address holds at most 64 connections at once; behind a proxy,
//! or for a load test from one address, raise it with
//! `--max-connections-per-peer N`.
//!
//! Each MCP session is one run: `refund` is listed only after `lookup_order`
//! ran, `classify_request` only before the first call; refunds over 50.00
//! and vouchers ask the client's user for approval (MCP elicitation).

#[path = "common/shop.rs"]
mod shop;

use std::sync::Arc;
use std::time::Duration;

use tool_runtime::mcp::McpServer;
use tool_runtime::prelude::*;

use shop::Shop;

/// Wait for the courier to pick up an order's parcel, reporting progress
/// while waiting. Stops early when the call is cancelled.
#[tool(read_only, tags("orders"), timeout = "12s")]
async fn wait_for_courier(
    ctx: Ctx<Shop>,
    /// The order number, for example `A-1003`.
    #[schemars(regex(pattern = r"^A-\d{4}$"))]
    order_id: String,
    /// How long to wait, in seconds.
    #[schemars(range(min = 1, max = 10))]
    seconds: u32,
) -> Result<String, ToolError> {
    let mut waiting = Waiting { call_id: ctx.call_id().to_owned(), done: false };
    let ticks = seconds * 4;
    for tick in 1..=ticks {
        tokio::select! {
            () = ctx.cancellation().cancelled() => {
                return Err(ToolError::new(499, "WAIT_CANCELLED", "Stopped waiting for the courier.").no_retry());
            }
            () = tokio::time::sleep(Duration::from_millis(250)) => {}
        }
        ctx.progress(f64::from(tick), Some(f64::from(ticks)), Some("the courier is on the way"));
    }
    waiting.done = true;
    Ok(format!("The courier picked up the parcel of {order_id} after {seconds}s."))
}

/// Says on stderr when a wait ends early: the runtime drops a cancelled
/// tool's future, so this is where a cancellation shows.
struct Waiting {
    call_id: String,
    done: bool,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if !self.done {
            eprintln!("mcp_server: wait_for_courier {} cancelled; stopped waiting", self.call_id);
        }
    }
}

/// The support-desk tools, in their order, and the courier, which takes
/// long enough to be cancelled.
fn registry() -> Registry<Shop> {
    let registry = Registry::builder()
        .tools(tools![
            shop::classify_request,
            shop::lookup_order,
            shop::damage_photo,
            shop::refund,
            shop::issue_voucher,
            shop::hand_over,
            wait_for_courier,
        ])
        .build()
        .expect("the support-desk tools are valid");
    let support_desk = shop::registry();
    assert!(support_desk.names().eq(registry.names().take(support_desk.len())), "serve every support-desk tool");
    registry
}

#[tokio::main]
async fn main() {
    let server = McpServer::new(registry(), Arc::new(Shop::demo()))
        .with_name("support-desk", env!("CARGO_PKG_VERSION"))
        .with_instructions("Tools of a shop's support desk: look orders up, refund delivered ones, hand over to a human.");
    let Some(options) = parse_args(std::env::args().skip(1)) else {
        eprintln!(
            "usage: mcp_server [--journal URL] [--key HEX] [--http ADDR [--insecure-no-auth] [--allowed-host NAME]... [--max-connections-per-peer N]]"
        );
        std::process::exit(2);
    };
    let key = options.key.clone().or_else(|| std::env::var("MCP_REQUEST_STATE_KEY").ok().filter(|key| !key.is_empty()));
    let server = match key.as_deref().map(hex::decode) {
        None => server,
        Some(Err(error)) => {
            eprintln!("mcp_server: --key (or MCP_REQUEST_STATE_KEY) is read as hex, as `openssl rand -hex 32` prints it: {error}");
            std::process::exit(2);
        }
        Some(Ok(key)) => match server.with_request_state_key(key) {
            Ok(server) => server,
            Err(error) => {
                eprintln!("mcp_server: --key (decoded from hex): {error}");
                std::process::exit(2);
            }
        },
    };
    let server = match &options.journal {
        None => server,
        Some(url) => match tool_runtime::journal::Journal::open(url).await {
            Ok(journal) => server.with_journal(journal),
            Err(error) => {
                eprintln!("mcp_server: {error}");
                std::process::exit(1);
            }
        },
    };
    let served = match options {
        Options { http: None, .. } => server.serve_stdio().await,
        Options { http: Some(addr), insecure_no_auth, allowed_hosts, max_connections_per_peer, .. } => {
            let mut server = server;
            if let Some(token) = std::env::var("MCP_BEARER_TOKEN").ok().filter(|token| !token.is_empty()) {
                server = server.with_bearer_token(token, UserContext::new("bearer"));
            }
            if insecure_no_auth {
                server = server.allow_remote_without_auth();
            }
            if let Some(connections) = max_connections_per_peer {
                server = server.with_max_connections_per_peer(connections);
            }
            if !allowed_hosts.is_empty() {
                server = server.with_allowed_hosts(["localhost", "127.0.0.1", "::1"].into_iter().map(String::from).chain(allowed_hosts));
            }
            match tokio::net::TcpListener::bind(addr.as_str()).await {
                Ok(listener) => match server.check_listener(&listener) {
                    Ok(()) => {
                        let addr = listener.local_addr().expect("a bound listener has an address");
                        eprintln!("mcp_server: listening on http://{addr}/mcp");
                        server.serve_http(listener).await
                    }
                    Err(error) => Err(std::io::Error::other(format!("{error}\n(here: set MCP_BEARER_TOKEN, or pass --insecure-no-auth)"))),
                },
                Err(error) => Err(error),
            }
        }
    };
    if let Err(error) = served {
        eprintln!("mcp_server: {error}");
        std::process::exit(1);
    }
}

/// The command line.
struct Options {
    journal: Option<String>,
    key: Option<String>,
    http: Option<String>,
    insecure_no_auth: bool,
    allowed_hosts: Vec<String>,
    max_connections_per_peer: Option<usize>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Option<Options> {
    let mut options =
        Options { journal: None, key: None, http: None, insecure_no_auth: false, allowed_hosts: Vec::new(), max_connections_per_peer: None };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => options.http = Some(args.next()?),
            "--journal" => options.journal = Some(args.next()?),
            "--key" => options.key = Some(args.next()?),
            "--insecure-no-auth" => options.insecure_no_auth = true,
            "--allowed-host" => options.allowed_hosts.push(args.next()?),
            "--max-connections-per-peer" => options.max_connections_per_peer = Some(args.next()?.parse().ok()?),
            _ => return None,
        }
    }
    // The HTTP options mean nothing on stdio.
    (options.http.is_some() || (!options.insecure_no_auth && options.allowed_hosts.is_empty() && options.max_connections_per_peer.is_none()))
        .then_some(options)
}

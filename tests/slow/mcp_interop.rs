//! The `mcp_server` example against the official Python MCP SDK, over stdio
//! and streamable HTTP: `tests/peers/mcp_client.py` lists and calls the
//! support-desk tools (visibility, bad input, a refusal, approvals with and
//! without elicitation, progress, a cancellation); over HTTP with a bearer
//! token, and refused (401) without it. `tests/peers/mcp_current.py` does
//! the same at revision 2026-07-28, with the client pinned to it and in
//! `auto` mode: stateless calls, approvals as `input_required` round trips
//! (over HTTP asked on one instance and answered on another holding the
//! same key and journal), forged and replayed `requestState`s refused.
//! `tests/peers/mcp_questions.py` answers the `conformance_server`
//! example's tools that ask (a form, a completion, the roots, one after
//! the other and together) through the SDK's elicitation, sampling and
//! roots callbacks, in a 2025-11-25 session and at 2026-07-28.
//!
//! ```text
//! python3 -m pip install 'mcp==2.3.0'
//! cargo test --features mcp --test slow mcp_interop::
//! ```
//!
//! Without the Python package the tests are skipped with a message, except
//! in CI (`CI` set), where they fail.
#![cfg(feature = "mcp")]

use crate::{examples, listening, mcp_server};

use std::path::Path;
use std::process::Command;
use tool_workspace::peers;

use listening::Listening;
use mcp_server::example_binary;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/mcp_client.py");
const CURRENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/mcp_current.py");
const QUESTIONS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/mcp_questions.py");

/// The request-state key the HTTP servers share.
const KEY: &str = "4d43502073746174652b6b657920666f7220746865696e7465726f702074657374";

#[test]
fn python_client_over_stdio() {
    if !peers::python_module("import mcp", "mcp==2.3.0") {
        return;
    }
    let server = example_binary();
    run_client(&["stdio", "--server", server.to_str().expect("a UTF-8 path")]);
}

#[test]
fn python_client_over_http() {
    if !peers::python_module("import mcp", "mcp==2.3.0") {
        return;
    }
    let log = std::env::temp_dir().join(format!("mcp_server-http-{}.log", std::process::id()));
    let token = format!("interop-{}", std::process::id());
    let server = serve(&example_binary(), &log, &token, &[]);
    let url = server.url.clone();
    let log = log.to_str().expect("a UTF-8 path");
    run_client(&["http", "--url", &url, "--server-log", log, "--token", &token]);
}

#[test]
fn python_client_at_the_current_revision_over_stdio() {
    if !peers::python_module("import mcp", "mcp==2.3.0") {
        return;
    }
    let server = example_binary();
    for mode in ["2026-07-28", "auto"] {
        run_script(CURRENT, &[mode, "stdio", "--server", server.to_str().expect("a UTF-8 path")]);
    }
}

#[test]
fn python_client_at_the_current_revision_over_http_on_two_instances() {
    if !peers::python_module("import mcp", "mcp==2.3.0") {
        return;
    }
    let token = format!("current-{}", std::process::id());
    let logs = ["a", "b"].map(|name| std::env::temp_dir().join(format!("mcp_server-current-{name}-{}.log", std::process::id())));
    // Two instances finish each other's approvals through one journal.
    let journal = std::env::temp_dir().join(format!("mcp_server-current-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&journal);
    let journal = format!("sqlite:{}", journal.display());
    let servers = logs.each_ref().map(|log| serve(&example_binary(), log, &token, &["--journal", &journal]));
    for mode in ["2026-07-28", "auto"] {
        run_script(CURRENT, &[mode, "http", "--url", &servers[0].url, "--other-url", &servers[1].url, "--token", &token]);
    }
}

#[test]
fn python_client_answers_a_tools_questions_through_its_callbacks_at_both_revisions() {
    if !peers::python_module("import mcp", "mcp==2.3.0") {
        return;
    }
    let log = std::env::temp_dir().join(format!("conformance_server-questions-{}.log", std::process::id()));
    let mut command = Command::new(examples::build_example("conformance_server", &["mcp"]));
    command.args(["--http", "127.0.0.1:0"]);
    let server = Listening::start(command, &log, "conformance_server");
    run_script(QUESTIONS, &["--url", &server.url]);
}

/// Runs the Python client with `args`; fails the test when it fails.
fn run_client(args: &[&str]) {
    run_script(SCRIPT, args);
}

/// Runs a Python check `script` with `args`; fails the test when it fails.
fn run_script(script: &str, args: &[&str]) {
    let output = Command::new("python3").arg(script).args(args).output().expect("python3 runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(output.status.success(), "the Python MCP client reported failures:\n{stdout}\n{stderr}");
    assert!(stdout.contains(" passed, 0 failed"), "no summary from the Python MCP client:\n{stdout}");
    // The SDK ends each HTTP session with a `DELETE` and reads only `200`
    // and `204` as done (a `202` logged this on every close).
    assert!(!stderr.contains("Session termination failed"), "the Python MCP client could not end its session:\n{stderr}");
}

/// The example serving streamable HTTP on a free loopback port, requiring
/// `token` as a bearer token and sealing request states with [`KEY`]
/// (given `args` besides), its stderr in `log`.
fn serve(binary: &Path, log: &Path, token: &str, args: &[&str]) -> Listening {
    let mut command = Command::new(binary);
    command.args(["--http", "127.0.0.1:0"]).args(args).env("MCP_BEARER_TOKEN", token).env("MCP_REQUEST_STATE_KEY", KEY);
    Listening::start(command, log, "mcp_server")
}

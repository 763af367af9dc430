//! Two `mcp_server` processes on one Postgres journal, serving revision
//! 2026-07-28 over HTTP with one request-state key, with a client's
//! requests alternating between them as a load balancer would send them:
//! the official Python SDK (`tests/peers/mcp_current.py`: lists, calls, an
//! approval asked on one and answered on the other, forged states refused),
//! then tasks spoken as raw HTTP: created on one and polled to its end on
//! the other, created on one and cancelled on the other, and created on one
//! that is then killed (SIGKILL) mid-call: the other, and the killed one
//! started again, answer with the task's state, and it ends once, as
//! `OUTCOME_UNKNOWN` (its end was never recorded), never run twice.
//!
//! ```text
//! source .ci/postgres.sh && postgres_start
//! cargo test --features mcp,postgres --test slow mcp_instances::
//! ```
//!
//! Without `TOOL_RUNTIME_TEST_POSTGRES_URL` the test says it skips (under
//! `CI=true` it fails), and so without the Python package.
#![cfg(all(feature = "mcp", feature = "postgres"))]

use crate::mcp_server;

use std::fs::File;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcp_server::example_binary;
use serde_json::{Value, json};
use tool_workspace::peers::postgres_url;

const CURRENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/mcp_current.py");
const KEY: &str = "6d63705f696e7374616e6365732d746573742d6b65792d6f662d33322d6279746573";
const TOKEN: &str = "instances-token";

/// One `mcp_server --http` process on the journal at `url`; killed when dropped.
struct Instance {
    child: Child,
    addr: String,
    log: PathBuf,
}

impl Instance {
    fn start(url: &str, name: &str) -> Instance {
        let log = std::env::temp_dir().join(format!("mcp_server-instances-{name}-{}.log", std::process::id()));
        let child = Command::new(example_binary())
            .args(["--http", "127.0.0.1:0", "--journal", url, "--key", KEY])
            .env("MCP_BEARER_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&log).unwrap())
            .spawn()
            .expect("mcp_server starts");
        let mut instance = Instance { child, addr: String::new(), log };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = std::fs::read_to_string(&instance.log).unwrap_or_default();
            if let Some(url) = text.lines().find_map(|line| line.strip_prefix("mcp_server: listening on http://")) {
                instance.addr = url.trim().trim_end_matches("/mcp").to_owned();
                return instance;
            }
            if let Ok(Some(status)) = instance.child.try_wait() {
                panic!("mcp_server exited ({status}) before listening:\n{text}");
            }
            assert!(Instant::now() < deadline, "mcp_server did not listen within 30 s:\n{text}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// One request of the revision from a client that declares elicitation
    /// and tasks; the JSON-RPC answer.
    fn request(&self, method: &str, name: &str, mut params: Value) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
        });
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, \
             text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\nMcp-Name: {name}\r\nAuthorization: Bearer \
             {TOKEN}\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        reply
            .lines()
            .map(|line| line.strip_prefix("data:").unwrap_or(line).trim())
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .find(|message| message.get("id").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC answer in {reply:?}"))
    }

    fn result(&self, method: &str, name: &str, params: Value) -> Value {
        let answer = self.request(method, name, params);
        assert!(answer.get("error").is_none(), "{answer}");
        answer["result"].clone()
    }

    /// Starts a task waiting `seconds` for the courier; its id.
    fn start_task(&self, seconds: u32) -> String {
        let created = self.result(
            "tools/call",
            "wait_for_courier",
            json!({"name": "wait_for_courier", "arguments": {"order_id": "A-1003", "seconds": seconds}}),
        );
        assert_eq!((created["resultType"].as_str(), created["status"].as_str()), (Some("task"), Some("working")), "{created}");
        created["taskId"].as_str().unwrap().to_owned()
    }

    fn task(&self, id: &str) -> Value {
        self.result("tasks/get", id, json!({"taskId": id}))
    }

    /// Polls task `id` until it is no longer working (within `limit`).
    fn until_ended(&self, id: &str, limit: Duration) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let task = self.task(id);
            if task["status"] != "working" {
                return task;
            }
            assert!(Instant::now() < deadline, "task {id} still working after {limit:?}: {task}");
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn two_instances_on_one_postgres_journal_serve_one_client_alternately() {
    let Some(url) = postgres_url() else { return };
    if !tool_workspace::peers::python_module("import mcp", "mcp==2.3.0") {
        return;
    }
    let (first, second) = (Instance::start(&url, "a"), Instance::start(&url, "b"));
    let output = Command::new("python3")
        .args([CURRENT, "2026-07-28", "http", "--url", &first.url(), "--other-url", &second.url(), "--token", TOKEN])
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success() && stdout.contains(" passed, 0 failed"), "the Python client reported failures:\n{stdout}");

    // A task created on one instance, polled to its end on the other.
    let id = first.start_task(1);
    let ended = second.until_ended(&id, Duration::from_secs(20));
    assert_eq!(ended["status"], "completed", "{ended}");
    assert!(ended["result"]["content"][0]["text"].as_str().unwrap().contains("picked up the parcel of A-1003 after 1s"), "{ended}");
    assert_eq!(first.task(&id)["result"], ended["result"], "the journaled result, on both");

    // Created on one, cancelled on the other: it stays cancelled.
    let id = first.start_task(3);
    let acked = second.result("tasks/cancel", &id, json!({"taskId": id}));
    assert!(acked.is_object(), "{acked}");
    assert_eq!(first.task(&id)["status"], "cancelled");
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(second.task(&id)["status"], "cancelled", "the call's end on the first instance did not overwrite it: {}", first.log());
}

#[test]
fn a_task_outlives_its_killed_instance_and_ends_once() {
    let Some(url) = postgres_url() else { return };
    let (mut first, second) = (Instance::start(&url, "killed"), Instance::start(&url, "other"));
    let id = first.start_task(3);
    std::thread::sleep(Duration::from_millis(500));
    first.child.kill().unwrap(); // SIGKILL
    first.child.wait().unwrap();
    assert!(!first.log().contains("picked up the parcel"), "it was killed mid-call");
    assert_eq!(second.task(&id)["status"], "working", "the other instance answers with the task's state");
    let restarted = Instance::start(&url, "restarted");
    assert_eq!(restarted.task(&id)["status"], "working", "so does the killed one, started again");
    // Its start was recorded and its end never: after its tool's timeout
    // (12 s) from its start, the instance that took the task up reads
    // OUTCOME_UNKNOWN, as for any durable call in doubt, and never runs it
    // again; both instances read that one end.
    let ended = second.until_ended(&id, Duration::from_secs(40));
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["result"]["isError"], true, "{ended}");
    assert!(ended["result"]["content"][0]["text"].as_str().unwrap().starts_with("code: OUTCOME_UNKNOWN"), "{ended}");
    assert_eq!(restarted.until_ended(&id, Duration::from_secs(20))["result"], ended["result"]);
    // One effect under the task's call, still in doubt for the host to
    // resolve: no second execution was started beside it.
    let calls = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let journal = tool_runtime::journal::Journal::open(&url).await.unwrap();
        journal.calls().of_run(&format!("mcp-task:{id}")).await.unwrap()
    });
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(matches!(calls[0].outcome, tool_runtime::journal::CallStart::UnknownOutcome { .. }), "{calls:?}");
}

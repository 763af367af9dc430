//! `mcp_server` processes sharing one journal (`--journal`), as a restarted
//! server or two instances behind a load balancer would: each session's
//! run and call ids are its own, so a restarted server parks its calls for
//! approval (their ids collided with the last start's rows), and two
//! instances never answer one client with the other's result.
//!
//! ```text
//! cargo test --features mcp --test slow mcp_processes::
//! ```
#![cfg(feature = "mcp")]

use crate::mcp_server;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use mcp_server::example_binary;
use serde_json::{Value, json};
use tool_runtime::journal::{Decision, Journal};

/// One `mcp_server --journal` process, spoken to over its stdio.
struct Instance {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Instance {
    /// Starts the server on `journal` and initializes a session (a client
    /// without elicitation: calls needing approval wait for a decision
    /// made out of band).
    fn start(journal: &Path) -> Instance {
        let mut child = Command::new(example_binary())
            .args(["--journal", journal.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("mcp_server starts");
        let (stdin, stdout) = (child.stdin.take().unwrap(), BufReader::new(child.stdout.take().unwrap()));
        let mut instance = Instance { child, stdin, stdout, next_id: 1 };
        let init = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "processes", "version": "0"}});
        let id = instance.send("initialize", init);
        instance.response(id);
        instance.notify("notifications/initialized");
        instance
    }

    fn write(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn notify(&mut self, method: &str) {
        self.write(json!({"jsonrpc": "2.0", "method": method}));
    }

    fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.write(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The response to request `id` (notifications on the way are skipped).
    fn response(&mut self, id: u64) -> Value {
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "the server closed its output");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    fn call(&mut self, name: &str, arguments: Value) -> String {
        let id = self.send("tools/call", json!({"name": name, "arguments": arguments}));
        text(&self.response(id))
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(response: &Value) -> String {
    response["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text in {response}")).to_owned()
}

fn journal_path(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-processes-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("journal.db")
}

/// Waits for the one undecided call in the journal and approves it.
async fn approve_the_waiting_call(journal: &Journal, path: &Path) -> (String, String) {
    use sqlx::Connection;
    let started = Instant::now();
    loop {
        let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite:{}", path.display())).await.unwrap();
        let waiting: Option<(String, String)> =
            sqlx::query_as("SELECT run_id, call_id FROM journal_approvals WHERE decision IS NULL").fetch_optional(&mut conn).await.unwrap();
        conn.close().await.unwrap();
        if let Some((run_id, call_id)) = waiting {
            tool_runtime::question::decide(journal, &run_id, &call_id, Decision::Approve, "supervisor").await.unwrap();
            return (run_id, call_id);
        }
        assert!(started.elapsed() < Duration::from_secs(20), "no call waits for approval");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A voucher needs a human's approval. The server is started, a voucher
/// is approved out of band, the server is killed and started again on the
/// same journal: the new process's voucher waits for approval too, and is
/// issued once approved (before: "The approval could not be recorded",
/// since its call ids repeated the first start's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_on_the_same_journal_parks_and_runs_calls_needing_approval() {
    let path = journal_path("restart");
    let mut decided = Vec::new();
    for start in 0..2 {
        let mut instance = Instance::start(&path);
        let id = instance.send("tools/call", json!({"name": "issue_voucher", "arguments": {"customer": "c-17", "amount_cents": 500}}));
        let journal = Journal::open(path.to_str().unwrap()).await.unwrap();
        decided.push(approve_the_waiting_call(&journal, &path).await);
        let response = instance.response(id);
        let text = text(&response);
        assert!(text.contains("V-0001") && text.contains("c-17"), "start {start}: {response}");
        journal.close().await;
    }
    assert_ne!(decided[0], decided[1], "two starts gave their calls one identity");
}

/// Two instances on one journal, started together, each serving one
/// client's refund of its own amount: each client reads its own refund
/// (before: sessions opened in the same millisecond had one run id and
/// call ids, and one client read the other's result).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_one_journal_answer_each_client_its_own_call() {
    let path = journal_path("instances");
    for round in 0..3 {
        let (mut alice, mut bob) = (Instance::start(&path), Instance::start(&path));
        for instance in [&mut alice, &mut bob] {
            instance.call("lookup_order", json!({"order_id": "A-1002"}));
        }
        let alices = alice.call("refund", json!({"order_id": "A-1002", "amount_cents": 1000, "reason": "late"}));
        let bobs = bob.call("refund", json!({"order_id": "A-1002", "amount_cents": 1500, "reason": "scratched"}));
        assert!(alices.contains("\"refunded_cents\":1000"), "round {round}: alice read {alices}");
        assert!(bobs.contains("\"refunded_cents\":1500"), "round {round}: bob read {bobs}");
    }
    let journal = Journal::open(path.to_str().unwrap()).await.unwrap();
    use sqlx::Connection;
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite:{}", path.display())).await.unwrap();
    let (runs,): (i64,) = sqlx::query_as("SELECT COUNT(DISTINCT run_id) FROM journal_calls").fetch_one(&mut conn).await.unwrap();
    assert_eq!(runs, 6, "each session is a run of its own");
    journal.close().await;
}

/// `--key` is the key written in hex (`openssl rand -hex 32`), not its
/// text: 32 hex digits are 16 bytes, too short, and text that is not hex
/// is refused saying how to make a key (before: both texts were taken as
/// keys of their own bytes, 32 and 40 of them, and the server started).
#[test]
fn the_request_state_key_is_read_as_hex() {
    for (key, says) in [("00112233445566778899aabbccddeeff", "is 16 bytes"), ("not-hex-not-hex-not-hex-not-hex-not-hex-", "read as hex")] {
        let output = Command::new(example_binary()).args(["--key", key]).stdin(Stdio::null()).output().expect("mcp_server runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "--key {key}: {stderr}");
        assert!(stderr.contains(says) && stderr.contains("openssl rand -hex 32"), "--key {key}: {stderr}");
    }
}

//! Two processes race to approve the same pending call of a durable run on
//! Postgres, 100 rounds: each round, exactly one decision is recorded and
//! the call runs exactly once; the other process reads that it was already
//! decided, and by whom.
//!
//! The Postgres server is `TOOL_RUNTIME_TEST_POSTGRES_URL` (`.ci/run` starts
//! one with `.ci/postgres.sh`): under `CI=true` the test fails without it;
//! locally it says it skips. Run it with
//! `cargo test --features postgres --test slow race::`.
#![cfg(all(unix, feature = "postgres"))]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;

use serde_json::json;
use tool_runtime::journal::Journal;
use tool_runtime::prelude::*;
use tool_runtime::{RunError, ToolCall};

/// Where the refunds are counted, outside the journal.
struct Books {
    dir: PathBuf,
}

/// Refund an order; a human approves each refund.
#[tool(policy = needs_approval)]
async fn refund(ctx: Ctx<Books>, order_id: String) -> String {
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(ctx.app().dir.join("refunds")).unwrap();
    writeln!(file, "refunded {order_id} in process {}", std::process::id()).unwrap();
    format!("refunded {order_id}")
}

fn registry() -> Registry<Books> {
    Registry::builder().tools(tools![refund]).build().unwrap()
}

fn postgres_url() -> Option<String> {
    tool_workspace::peers::postgres_url()
}

/// One racer: resumes the run, says it is ready, waits for "go", approves.
#[test]
#[ignore = "run by the race test in two child processes at once"]
fn race_child() {
    let (Ok(url), Ok(run_id), Ok(call_id), Ok(dir)) =
        (std::env::var("RACE_URL"), std::env::var("RACE_RUN"), std::env::var("RACE_CALL"), std::env::var("RACE_DIR"))
    else {
        return;
    };
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let journal = Journal::open(&url).await.unwrap();
        let books = Arc::new(Books { dir: PathBuf::from(dir) });
        let me = format!("supervisor-{}", std::process::id());
        let mut run = registry().run(books).with_user(UserContext::new(me)).durable(&journal, &run_id).await.unwrap();
        println!("READY");
        std::io::stdout().flush().unwrap();
        let mut go = String::new();
        std::io::stdin().read_line(&mut go).unwrap();
        match run.approvals().approve(&call_id).await {
            Ok(result) => println!("WON {}", result.text),
            Err(RunError::AlreadyDecided { by, .. }) => println!("LOST to {by}"),
            Err(other) => println!("FAILED {other}"),
        }
        journal.close().await;
    });
}

fn racer(url: &str, run_id: &str, call_id: &str, dir: &PathBuf) -> (Child, ChildStdin, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "race::race_child", "--nocapture", "--test-threads=1"])
        .env("RACE_URL", url)
        .env("RACE_RUN", run_id)
        .env("RACE_CALL", call_id)
        .env("RACE_DIR", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdin, stdout)
}

/// The next line of a racer that holds `marker` (libtest writes its own
/// words before the child's first line).
fn line_with(stdout: &mut BufReader<std::process::ChildStdout>, markers: &[&str]) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the racer ended without saying {markers:?}");
        if let Some(at) = markers.iter().filter_map(|marker| line.find(marker)).min() {
            return line[at..].trim_end().to_owned();
        }
    }
}

#[test]
fn two_processes_approving_one_call_record_one_decision_and_run_it_once() {
    let Some(url) = postgres_url() else { return };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    for round in 0..100 {
        let dir = std::env::temp_dir().join(format!("tool-runtime-race-{}-{round}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let run_id = format!("race-{}-{round}", std::process::id());
        let call_id = format!("{run_id}-c1");
        // The run parks the refund.
        runtime.block_on(async {
            let journal = Journal::open(&url).await.unwrap();
            let mut run = registry().run(Arc::new(Books { dir: dir.clone() })).durable(&journal, &run_id).await.unwrap();
            run.execute(vec![ToolCall::new(&call_id, "refund", json!({"order_id": "A-1"}))]).await;
            assert_eq!(run.pending().len(), 1);
            journal.close().await;
        });
        let mut racers = [racer(&url, &run_id, &call_id, &dir), racer(&url, &run_id, &call_id, &dir)];
        for (_, _, stdout) in &mut racers {
            line_with(stdout, &["READY"]);
        }
        for (_, stdin, _) in &mut racers {
            stdin.write_all(b"go\n").unwrap();
            stdin.flush().unwrap();
        }
        let said: Vec<String> = racers.iter_mut().map(|(_, _, stdout)| line_with(stdout, &["WON", "LOST", "FAILED"])).collect();
        for (child, _, _) in &mut racers {
            assert!(child.wait().unwrap().success());
        }
        let won = said.iter().filter(|line| line.starts_with("WON refunded A-1")).count();
        let lost = said.iter().filter(|line| line.starts_with("LOST to supervisor-")).count();
        assert_eq!((won, lost), (1, 1), "round {round}: {said:?}");
        let refunds = std::fs::read_to_string(dir.join("refunds")).unwrap();
        assert_eq!(refunds.lines().count(), 1, "round {round}: {refunds}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! One clock decides when an approval expires: the journal's. A child
//! process (this test binary, run again as `clock_child` under `faketime`,
//! whose clock it skews) shares the journal with this one:
//!
//! - a process whose clock runs 15 minutes ahead settles its own run, and
//!   expires only that run's calls, never another run's 10-minute approval
//!   parked a moment ago (on SQLite and Postgres);
//! - a decider whose clock runs an hour behind cannot approve a call whose
//!   time to live passed, and the call never runs (on Postgres, whose clock
//!   is the server's; a SQLite journal has no clock but that of the process
//!   that writes it, so a process under `faketime` skews the journal's
//!   clock itself).
//!
//! `faketime` is Debian's package (`.ci/run` installs it); Postgres is the
//! server of `TOOL_RUNTIME_TEST_POSTGRES_URL`. Under `CI=true` a missing
//! peer fails the test; locally it says it skips. Run it with
//! `cargo test --features postgres --test slow clocks::`.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tool_workspace::peers;

use serde_json::json;
use tool_runtime::journal::{Decision, Journal};
use tool_runtime::prelude::*;
use tool_runtime::{ResultKind, ToolCall};

/// Refunds, counted where they happen.
#[derive(Default)]
struct Books {
    refunds: AtomicUsize,
}

/// Refund an order; a human approves each refund.
#[tool(policy = needs_approval)]
async fn refund(ctx: Ctx<Books>, order_id: String) -> String {
    ctx.app().refunds.fetch_add(1, Ordering::SeqCst);
    format!("refunded {order_id}")
}

fn registry(ttl: Duration) -> Registry<Books> {
    Registry::builder().tools(tools![refund]).approval_ttl(ttl).build().unwrap()
}

/// The journal of a test: a SQLite file of its own, or the Postgres server.
fn journal_url(backend: &str, test: &str) -> Option<(String, Option<PathBuf>)> {
    match backend {
        "sqlite" => {
            let dir = std::env::temp_dir().join(format!("tool-runtime-clocks-{}-{test}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Some((format!("sqlite:{}", dir.join("journal.db").display()), Some(dir)))
        }
        _ => peers::postgres_url().map(|url| (url, None)),
    }
}

/// Runs `clock_child` under `faketime -f offset`, doing `task` on the
/// journal at `url`; returns what it printed.
fn skewed_child(faketime: &Path, offset: &str, url: &str, task: &str) -> String {
    let output = Command::new(faketime)
        .args(["-f", offset])
        .arg(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "clocks::clock_child", "--nocapture", "--test-threads=1"])
        .env("CLOCK_URL", url)
        .env("CLOCK_TASK", task)
        // Tokio's timers read the monotonic clock: only the wall clock is skewed.
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .stderr(Stdio::inherit())
        .output()
        .expect("faketime runs the child");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The child's side, under a skewed clock: `settle RUN` resumes a run and
/// settles it (sweeping what expired); `decide RUN CALL` approves a call.
#[test]
#[ignore = "run by the clock tests in a child process under faketime"]
fn clock_child() {
    let (Ok(url), Ok(task)) = (std::env::var("CLOCK_URL"), std::env::var("CLOCK_TASK")) else { return };
    println!("CLOCK {:?}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap());
    let words: Vec<&str> = task.split(' ').collect();
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let journal = Journal::open(&url).await.unwrap();
        match words[..] {
            ["settle", run_id] => {
                let mut run = registry(Duration::from_secs(600)).run(Arc::new(Books::default())).durable(&journal, run_id).await.unwrap();
                let settled = run.settle_decided().await.unwrap();
                println!("SETTLED {}", settled.len());
            }
            ["decide", run_id, call_id] => match tool_runtime::question::decide(&journal, run_id, call_id, Decision::Approve, "late-decider").await {
                Ok(_) => println!("DECIDED"),
                Err(error) => println!("REFUSED {error}"),
            },
            _ => panic!("unknown task {task:?}"),
        }
        journal.close().await;
    });
}

/// A run of `registry` parks a refund under `call_id`.
async fn park(journal: &Journal, registry: &Registry<Books>, books: &Arc<Books>, run_id: &str, call_id: &str) {
    let mut run = registry.run(books.clone()).with_user(UserContext::new("u-1")).durable(journal, run_id).await.unwrap();
    let step = run.execute(vec![ToolCall::new(call_id, "refund", json!({"order_id": "A-1"}))]).await;
    assert_eq!(step.results[0].kind, ResultKind::PendingApproval, "{}", step.results[0].text);
}

fn a_host_whose_clock_runs_ahead_expires_only_its_own_runs_calls(backend: &str) {
    let test = "clock_ahead";
    let Some(faketime) = peers::faketime() else { return };
    let Some((url, dir)) = journal_url(backend, test) else { return };
    let (mine, other) = (format!("clock-ahead-{}-{backend}", std::process::id()), format!("clock-other-{}-{backend}", std::process::id()));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (registry, books) = (registry(Duration::from_secs(600)), Arc::new(Books::default()));
    runtime.block_on(async {
        let journal = Journal::open(&url).await.unwrap();
        park(&journal, &registry, &books, &mine, "c1").await;
        park(&journal, &registry, &books, &other, "c1").await;
        journal.close().await;
    });
    // A host 15 minutes ahead settles its own run: its sweep of expired calls.
    let said = skewed_child(&faketime, "+15m", &url, &format!("settle {mine}"));
    assert!(said.contains("SETTLED"), "the child settled its run: {said}");
    runtime.block_on(async {
        let journal = Journal::open(&url).await.unwrap();
        let others = journal.approvals().get(&other, "c1").await.unwrap().expect("parked");
        assert_eq!(others.decided, None, "another run's approval, parked a moment ago for 10 minutes, stays waiting: {others:?}");
        if backend == "postgres" {
            // The server's clock, not the host's, says its own call has not expired either.
            let own = journal.approvals().get(&mine, "c1").await.unwrap().expect("parked");
            assert_eq!(own.decided, None, "{own:?}");
        }
        journal.close().await;
    });
    if let Some(dir) = dir {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn on_sqlite_a_host_whose_clock_runs_ahead_expires_only_its_own_runs_calls() {
    a_host_whose_clock_runs_ahead_expires_only_its_own_runs_calls("sqlite");
}

#[cfg(feature = "postgres")]
#[test]
fn on_postgres_a_host_whose_clock_runs_ahead_expires_only_its_own_runs_calls() {
    a_host_whose_clock_runs_ahead_expires_only_its_own_runs_calls("postgres");
}

/// Postgres only: there the journal's clock is the server's, which no
/// process's `faketime` reaches.
#[cfg(feature = "postgres")]
#[test]
fn on_postgres_a_decider_whose_clock_runs_behind_cannot_approve_an_expired_call() {
    let test = "clock_behind";
    let Some(faketime) = peers::faketime() else { return };
    let Some((url, _)) = journal_url("postgres", test) else { return };
    let run_id = format!("clock-behind-{}", std::process::id());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (registry, books) = (registry(Duration::from_secs(1)), Arc::new(Books::default()));
    runtime.block_on(async {
        let journal = Journal::open(&url).await.unwrap();
        park(&journal, &registry, &books, &run_id, "c1").await;
        journal.close().await;
    });
    std::thread::sleep(Duration::from_millis(1_500));
    // Its time to live has passed; a decider an hour behind approves it.
    let said = skewed_child(&faketime, "-1h", &url, &format!("decide {run_id} c1"));
    assert!(said.contains("REFUSED") && said.contains("expired"), "the late decider is refused: {said}");
    runtime.block_on(async {
        let journal = Journal::open(&url).await.unwrap();
        let mut run = registry.run(books.clone()).with_user(UserContext::new("u-1")).durable(&journal, &run_id).await.unwrap();
        let settled = run.settle_decided().await.unwrap();
        assert_eq!(settled.len(), 1, "{settled:?}");
        assert_eq!(settled[0].error_code.as_deref(), Some("APPROVAL_EXPIRED"), "{}", settled[0].text);
        let approval = journal.approvals().get(&run_id, "c1").await.unwrap().unwrap();
        assert_eq!(approval.decided.map(|decided| decided.by), Some(tool_runtime::journal::EXPIRED_BY.to_owned()));
        journal.close().await;
    });
    assert_eq!(books.refunds.load(Ordering::SeqCst), 0, "the refund never ran");
}

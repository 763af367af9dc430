//! Several processes on one journal: each child (this test binary, run
//! again as `processes::journal_child`) drives its own runs through every
//! kind of write (runs saved, calls started and finished, calls parked,
//! decided and settled, and a step of a durable run, whose result the model
//! would read), and all of them race to start the same shared effect keys,
//! while one more connection holds the write lock longer than
//! SQLite's busy timeout (as a long transaction of another program, or a
//! checkpoint on a slow disk, would). No write may fail because another
//! process holds the lock: a busy SQLite database is waited for, never
//! reported.
//!
//! `JOURNAL_PROCESSES` and `JOURNAL_RUNS` (per process) scale it up; the
//! defaults keep it a few seconds long.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::json;
use tool_runtime::journal::{CallStart, Decision, Journal, JournalError, RunRecord};
use tool_runtime::prelude::*;
use tool_runtime::{ResultKind, RunState, ToolCall};

use crate::db::Db;

on_both_backends!(
    "processes_":
    several_processes_write_one_journal_without_a_storage_error,
);

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|value| value.parse().ok()).unwrap_or(default)
}

/// Refund an order.
#[tool]
async fn refund(order_id: String) -> String {
    format!("refunded {order_id}")
}

type Failure = (&'static str, String);

/// One run of the workload: every write the durable runs make, then a step
/// of a durable run, whose result must be the tool's.
async fn one_run(journal: &Journal, process: usize, index: usize) -> Result<bool, Failure> {
    let won = journal_writes(journal, process, index).await.map_err(|(operation, error)| (operation, error.to_string()))?;
    let registry = Registry::builder().tools(tools![refund]).build().unwrap();
    let run = registry.run(Arc::new(())).durable(journal, &format!("p{process}-d{index}")).await;
    let mut run = run.map_err(|e| ("durable", e.to_string()))?;
    let step = run.execute(vec![ToolCall::new("c1", "refund", json!({"order_id": format!("A-{index}")}))]).await;
    match step.results.first() {
        Some(result) if result.kind == ResultKind::Success => Ok(won),
        Some(result) => Err(("the durable step (the model read)", result.text.clone())),
        None => Err(("the durable step", "no result".into())),
    }
}

async fn journal_writes(journal: &Journal, process: usize, index: usize) -> Result<bool, (&'static str, JournalError)> {
    let run_id = format!("p{process}-r{index}");
    let mut run = RunRecord::new(&run_id);
    journal.runs().save(&run).await.map_err(|e| ("runs().save", e))?;
    let key = json!(["call", run_id, "c1"]).to_string();
    let input = json!({"order_id": format!("A-{index}")});
    journal.calls().start(&run_id, "c1", "refund", &input, &key).await.map_err(|e| ("calls().start", e))?;
    journal.calls().finish(&key, &super::result("refunded")).await.map_err(|e| ("calls().finish", e))?;
    // Every process races for the same key: one of them starts it.
    let shared = format!("shared-{index}");
    let won = journal.calls().start(&run_id, "c2", "refund", &input, &shared).await.map_err(|e| ("calls().start (shared)", e))?;
    let call_id = format!("{run_id}-c3");
    let now = SystemTime::now();
    let parked = super::parked(&run_id, &call_id, Some("ann"), now, Some(now + Duration::from_secs(3_600)));
    tool_runtime::question::park(journal, &parked).await.map_err(|e| ("park", e))?;
    tool_runtime::question::decide(journal, &run_id, &call_id, Decision::Approve, "bob").await.map_err(|e| ("decide", e))?;
    journal.approvals().settle(&run_id, &call_id).await.map_err(|e| ("settle", e))?;
    run.step = 1;
    run.state = RunState::Finished { by: None };
    journal.runs().save(&run).await.map_err(|e| ("runs().save (finished)", e))?;
    journal.runs().load(&run_id).await.map_err(|e| ("runs().load", e))?;
    Ok(won == CallStart::Started)
}

/// The child's side: its runs, one line per failed write, then a summary.
#[test]
#[ignore = "run by the multi-process journal test in child processes"]
fn journal_child() {
    let (Ok(url), Ok(process)) = (std::env::var("JOURNAL_CHILD_URL"), std::env::var("JOURNAL_CHILD_PROCESS")) else { return };
    let process: usize = process.parse().unwrap();
    let runs = knob("JOURNAL_RUNS", 0);
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let journal = match Journal::open(&url).await {
            Ok(journal) => journal,
            Err(error) => {
                println!("FAILED open: {error}");
                return;
            }
        };
        let (mut failed, mut won) = (0, 0);
        let mut outcome = |index: usize, result: Result<bool, Failure>| match result {
            Ok(true) => won += 1,
            Ok(false) => {}
            Err((operation, error)) => {
                failed += 1;
                println!("FAILED {operation} of run {index}: {error}");
            }
        };
        // Two runs at once: one on the process's journal (its pool opens a
        // second connection), one on a journal of its own, opened and
        // closed around it, as a process per request would.
        for index in (0..runs).step_by(2) {
            let alone = async {
                let journal = Journal::open(&url).await.map_err(|e| ("open", e.to_string()))?;
                let result = one_run(&journal, process, index + 1).await;
                journal.close().await;
                result
            };
            let (shared, alone) = tokio::join!(one_run(&journal, process, index), async { if index + 1 < runs { Some(alone.await) } else { None } });
            outcome(index, shared);
            if let Some(alone) = alone {
                outcome(index + 1, alone);
            }
        }
        println!("DONE runs {runs} failed {failed} won {won}");
        std::io::stdout().flush().unwrap();
        journal.close().await;
    });
}

async fn several_processes_write_one_journal_without_a_storage_error(db: Db) {
    let (processes, runs) = (knob("JOURNAL_PROCESSES", 8), knob("JOURNAL_RUNS", 40));
    // The schema exists before the children start, as in a deployment.
    db.open().await.close().await;
    let started = Instant::now();
    let holder = hold_the_write_lock(&db, Duration::from_millis(1_500), Duration::from_secs(6));
    let children: Vec<_> = (0..processes)
        .map(|process| {
            Command::new(std::env::current_exe().unwrap())
                .args(["--ignored", "--exact", "journal::processes::journal_child", "--nocapture", "--test-threads=1"])
                .env("JOURNAL_CHILD_URL", db.url())
                .env("JOURNAL_CHILD_PROCESS", process.to_string())
                .env("JOURNAL_RUNS", runs.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<String> = tokio::task::spawn_blocking(move || {
        children.into_iter().map(|child| String::from_utf8_lossy(&child.wait_with_output().unwrap().stdout).into_owned()).collect()
    })
    .await
    .unwrap();
    holder.await.unwrap();
    let lines: Vec<&str> = outputs.iter().flat_map(|output| output.lines()).collect();
    let failures: Vec<&str> = lines.iter().copied().filter(|line| line.contains("FAILED")).collect();
    let done: Vec<&str> = lines.iter().copied().filter(|line| line.contains("DONE")).collect();
    let won: usize = done.iter().filter_map(|line| line.rsplit(' ').next()?.parse::<usize>().ok()).sum();
    eprintln!("{processes} processes x {runs} runs in {:.1?}: {} failed writes, {} processes done", started.elapsed(), failures.len(), done.len());
    assert!(failures.is_empty(), "{} failed writes, first ones: {:#?}", failures.len(), &failures[..failures.len().min(5)]);
    assert_eq!(done.len(), processes, "every process finished: {outputs:#?}");
    assert_eq!(won, runs, "each shared key was started by exactly one process");
}

/// After `after` (the children have opened the journal and write), takes
/// the journal's write lock from a connection of its own and holds it for
/// `hold`, then commits.
fn hold_the_write_lock(db: &Db, after: Duration, hold: Duration) -> tokio::task::JoinHandle<()> {
    use sqlx::Connection;
    match db {
        #[cfg(feature = "sqlite")]
        Db::Sqlite { url, .. } => {
            let url = url.clone();
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
                sqlx::raw_sql("BEGIN IMMEDIATE").execute(&mut conn).await.unwrap();
                tokio::time::sleep(hold).await;
                sqlx::raw_sql("COMMIT").execute(&mut conn).await.unwrap();
                conn.close().await.unwrap();
            })
        }
        #[cfg(feature = "postgres")]
        Db::Postgres { url } => {
            let url = url.clone();
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
                let lock = "BEGIN; LOCK TABLE journal_runs, journal_calls, journal_approvals IN EXCLUSIVE MODE";
                sqlx::raw_sql(lock).execute(&mut conn).await.unwrap();
                tokio::time::sleep(hold).await;
                sqlx::raw_sql("COMMIT").execute(&mut conn).await.unwrap();
                conn.close().await.unwrap();
            })
        }
    }
}

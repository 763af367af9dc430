//! What `Journal::prune` forgets and keeps (SQLite and Postgres, as in
//! `journal.rs`): an effect another run still going replayed is kept with
//! it; a call in doubt of a finished run goes after the longer retention; a
//! task's call stays while the task has not ended, and goes with it; an
//! approval row of revision 2026-07-28 (run `mcp-mrtr-...`), which no run
//! settles, goes once it expired; and an MCP session's run is finished when
//! the session ends, so that it goes too.
#![cfg(any(feature = "sqlite", feature = "postgres"))]

use crate::db;
#[cfg(feature = "mcp")]
use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::json;
use tool_runtime::journal::{CallStart, JournaledResult, ParkedCall, Retention, TaskRecord, TaskState};
use tool_runtime::prelude::*;
use tool_runtime::{ResultKind, ToolCall};

use db::Db;

on_both_backends!(
    "retention_":
    an_effect_a_going_run_replayed_is_kept_with_it,
    a_call_in_doubt_of_a_finished_run_goes_after_the_longer_retention,
    a_task_s_call_stays_while_the_task_has_not_ended_and_goes_with_it,
    an_expired_approval_row_of_a_run_without_a_record_goes,
);

fn done(text: &str) -> JournaledResult {
    JournaledResult {
        kind: ResultKind::Success,
        text: text.into(),
        structured: None,
        error_code: None,
        status: None,
        truncated: false,
        ends_run: false,
    }
}

/// `hours` ago, in the journal's milliseconds.
fn hours_ago(hours: u64) -> u128 {
    (SystemTime::now() - Duration::from_secs(hours * 3_600)).duration_since(SystemTime::UNIX_EPOCH).unwrap().as_millis()
}

/// Everything journaled so far happened `hours` ago.
async fn age(db: &Db, hours: u64) {
    let old = hours_ago(hours);
    db.exec(format!("UPDATE journal_runs SET updated_at = {old}")).await;
    db.exec(format!("UPDATE journal_calls SET started_at = {old}, finished_at = CASE WHEN finished_at IS NULL THEN NULL ELSE {old} END")).await;
    db.exec(format!("UPDATE journal_tasks SET updated_at = {old}")).await;
}

const HOUR: Duration = Duration::from_secs(3_600);

/// Refunds, counted outside the journal.
#[derive(Default)]
struct Shop {
    refunds: AtomicUsize,
}

/// Refund an order, once per order.
#[tool(idempotency_key = order_of)]
async fn refund_order(ctx: Ctx<Shop>, order_id: String) -> String {
    ctx.app().refunds.fetch_add(1, Ordering::SeqCst);
    format!("refunded {order_id}")
}

fn order_of(input: &refund_order) -> String {
    input.order_id.clone()
}

/// Run A refunds an order and finishes; run B, still going, replayed that
/// refund. Pruning the finished run keeps the effect B stands on: B
/// re-sending its call replays it (before: the prune deleted it, and B's
/// re-send refunded again).
async fn an_effect_a_going_run_replayed_is_kept_with_it(db: Db) {
    let registry = Registry::builder().tools(tools![refund_order]).build().unwrap();
    let (journal, shop) = (db.open().await, Arc::new(Shop::default()));
    let refund = |id: &str| vec![ToolCall::new(id, "refund_order", json!({"order_id": "B-1"}))];
    let mut a = registry.run(shop.clone()).with_user(UserContext::new("u-1")).durable(&journal, "t-a").await.unwrap();
    a.execute(refund("k1")).await;
    let mut b = registry.run(shop.clone()).with_user(UserContext::new("u-1")).durable(&journal, "t-b").await.unwrap();
    assert_eq!(b.execute(refund("k2")).await.results[0].text, "refunded B-1");
    a.finish().await;
    age(&db, 2).await;
    journal.prune(Retention::finished_older_than(HOUR)).await.unwrap();
    assert!(journal.runs().load("t-a").await.unwrap().is_none(), "the finished run went");
    let again = b.execute(refund("k2")).await;
    assert_eq!(again.results[0].text, "refunded B-1");
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 1, "refunded once");
    // Once B finished too, and its time passed, both go.
    b.finish().await;
    age(&db, 2).await;
    journal.prune(Retention::finished_older_than(HOUR)).await.unwrap();
    assert!(journal.calls().of_run("t-a").await.unwrap().is_empty());
    assert!(journal.runs().load("t-b").await.unwrap().is_none());
}

/// A finished run (an ended MCP session's, most often) whose call stayed
/// in doubt: nobody resumes that run to settle it. The call and its run go
/// after the longer retention for calls in doubt (30 days by default), not
/// before (before: never).
async fn a_call_in_doubt_of_a_finished_run_goes_after_the_longer_retention(db: Db) {
    let journal = db.open().await;
    for run in ["t-old", "t-recent", "t-going"] {
        journal.calls().start(run, "c1", "refund", &json!({}), &format!("{run}:c1")).await.unwrap();
    }
    for run in ["t-old", "t-recent"] {
        journal
            .runs()
            .save(&tool_runtime::journal::RunRecord {
                state: tool_runtime::RunState::Finished { by: None },
                ..tool_runtime::journal::RunRecord::new(run)
            })
            .await
            .unwrap();
    }
    journal.runs().save(&tool_runtime::journal::RunRecord::new("t-going")).await.unwrap();
    age(&db, 31 * 24).await;
    db.exec(format!("UPDATE journal_runs SET updated_at = {} WHERE run_id = 't-recent'", hours_ago(24))).await;
    db.exec(format!("UPDATE journal_calls SET started_at = {} WHERE run_id = 't-recent'", hours_ago(24))).await;
    let pruned = journal.prune(Retention::finished_older_than(HOUR)).await.unwrap();
    assert_eq!((pruned.runs, pruned.calls), (1, 1), "{pruned:?}");
    assert_eq!(journal.calls().known("t-old:c1").await.unwrap(), None, "the old call in doubt of a finished run went");
    assert!(
        matches!(journal.calls().known("t-recent:c1").await.unwrap(), Some(CallStart::UnknownOutcome { .. })),
        "kept within the longer retention"
    );
    assert!(matches!(journal.calls().known("t-going:c1").await.unwrap(), Some(CallStart::UnknownOutcome { .. })), "a run still going keeps it");
    // The longer retention is the host's to set.
    let pruned = journal.prune(Retention::finished_older_than(HOUR).in_doubt_older_than(HOUR)).await.unwrap();
    assert_eq!((pruned.runs, pruned.calls), (1, 1), "{pruned:?}");
}

fn task(task_id: &str, state: TaskState) -> TaskRecord {
    let now = SystemTime::now();
    TaskRecord {
        task_id: task_id.into(),
        user_id: Some("u-1".into()),
        tool: "export".into(),
        input: json!({}),
        state,
        status_message: None,
        result: None,
        created_at: now,
        updated_at: now,
        expires_at: Some(now + Duration::from_secs(24 * 3_600)),
    }
}

/// A task's call (run `mcp-task:<task id>`, call `<task id>`) finished,
/// while its task, taken up again, still reads working: the call stays
/// (before: pruned as a call without a run, and the task taken up again
/// ran it a second time). Once the task ended and its time passed, the
/// task and its call go.
async fn a_task_s_call_stays_while_the_task_has_not_ended_and_goes_with_it(db: Db) {
    let journal = db.open().await;
    journal.tasks().create(&task("task-1", TaskState::Working)).await.unwrap();
    journal.calls().start("mcp-task:task-1", "task-1", "export", &json!({}), "task-1-effect").await.unwrap();
    journal.calls().finish("task-1-effect", &done("exported")).await.unwrap();
    age(&db, 2).await;
    journal.prune(Retention::finished_older_than(HOUR)).await.unwrap();
    assert!(matches!(journal.calls().known("task-1-effect").await.unwrap(), Some(CallStart::Finished(_))), "the working task's call stays");
    assert!(journal.tasks().get("task-1").await.unwrap().is_some());

    let result = json!({"content": [{"type": "text", "text": "exported"}]});
    assert!(journal.tasks().move_to("task-1", TaskState::Completed, None, Some(&result)).await.unwrap());
    age(&db, 2).await;
    let pruned = journal.prune(Retention::finished_older_than(HOUR)).await.unwrap();
    assert_eq!((pruned.tasks, pruned.calls), (1, 1), "{pruned:?}");
    assert!(journal.tasks().get("task-1").await.unwrap().is_none(), "the ended task went");
    assert_eq!(journal.calls().known("task-1-effect").await.unwrap(), None, "with its call");
}

fn parked(run_id: &str, call_id: &str, ttl: Duration) -> ParkedCall {
    let now = SystemTime::now();
    ParkedCall {
        run_id: run_id.into(),
        call_id: call_id.into(),
        tool: "grant".into(),
        input: json!({"amount": 5}),
        user_id: Some("u-1".into()),
        parked_at: now,
        expires_at: Some(now + ttl),
        question: tool_runtime::question::Question::Approval(tool_runtime::question::Binding::of_arguments(&json!({"amount": 5}))),
    }
}

/// An approval of revision 2026-07-28 (run `mcp-mrtr-<call id>`, no run
/// record) that nobody answered: no run ever settles it, so once it
/// expired and its time passed, it goes (before: kept for ever). One
/// still within its time to live stays.
async fn an_expired_approval_row_of_a_run_without_a_record_goes(db: Db) {
    let journal = db.open().await;
    tool_runtime::question::park(&journal, &parked("mcp-mrtr-call_a", "call_a", Duration::from_millis(1))).await.unwrap();
    tool_runtime::question::park(&journal, &parked("mcp-mrtr-call_b", "call_b", Duration::from_secs(3_600))).await.unwrap();
    db.exec(format!("UPDATE journal_approvals SET parked_at = {old}, expires_at = {old} WHERE call_id = 'call_a'", old = hours_ago(2))).await;
    let pruned = journal.prune(Retention::finished_older_than(HOUR)).await.unwrap();
    assert_eq!(pruned.approvals, 1, "{pruned:?}");
    assert!(journal.approvals().get("mcp-mrtr-call_a", "call_a").await.unwrap().is_none());
    assert!(journal.approvals().get("mcp-mrtr-call_b", "call_b").await.unwrap().is_some(), "still within its time to live");
}

/// An MCP session's run is finished when its session ends, and is then
/// pruned as any finished run (before: a session's run was never finished,
/// and a server's journal grew with every call).
#[cfg(feature = "mcp")]
mod sessions {
    use super::support::{Human, Wire, no_capabilities, server};
    use super::*;

    async fn an_ended_session_s_run_is_finished_and_pruned(db: Db) {
        let journal = db.open().await;
        let (server, _store) = server();
        let server = server.with_journal(journal.clone());
        let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
        wire.call("get_item", json!({"id": 5})).await;
        let run_id = db.text("SELECT run_id FROM journal_runs".into()).await;
        assert_eq!(journal.runs().load(&run_id).await.unwrap().unwrap().state, tool_runtime::RunState::Active);
        drop(wire);
        let started = std::time::Instant::now();
        while journal.runs().load(&run_id).await.unwrap().unwrap().state == tool_runtime::RunState::Active {
            assert!(started.elapsed() < Duration::from_secs(10), "the ended session's run is still going");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        age(&db, 2).await;
        let pruned = journal.prune(Retention::finished_older_than(HOUR)).await.unwrap();
        assert_eq!((pruned.runs, pruned.calls), (1, 1), "{pruned:?}");
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_sqlite_an_ended_session_s_run_is_finished_and_pruned() {
        an_ended_session_s_run_is_finished_and_pruned(Db::sqlite("retention_session")).await;
    }

    #[cfg(feature = "postgres")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_postgres_an_ended_session_s_run_is_finished_and_pruned() {
        if let Some(db) = Db::postgres("retention_session").await {
            an_ended_session_s_run_is_finished_and_pruned(db).await;
        }
    }
}

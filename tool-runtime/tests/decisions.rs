//! Decisions on a durable run's calls, by the journal's clock (SQLite and
//! Postgres, as in `journal.rs`): a decision the journal accepted within
//! the approval's time to live is carried out, however late the run gets
//! to it; one it refused as too late is refused to its decider.
#![cfg(any(feature = "sqlite", feature = "postgres"))]

use crate::db;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use tool_runtime::Arguments;
use tool_runtime::journal::{Decision, JournalError};
use tool_runtime::prelude::*;
use tool_runtime::{ResultKind, ToolCall};

use db::Db;

on_both_backends!(
    "decisions_":
    a_decision_the_journal_accepted_in_time_runs_when_settled_after_the_ttl,
    a_decision_after_the_ttl_is_refused_to_its_decider_and_nothing_runs,
    an_edited_input_passes_the_guard_before_the_journal_reads_it,
);

/// Refund an order; a human approves each refund.
#[tool(policy = needs_approval)]
async fn refund(ctx: Ctx<AtomicUsize>, order_id: String) -> String {
    ctx.app().fetch_add(1, Ordering::SeqCst);
    format!("refunded {order_id}")
}

/// Long enough that a decision made at a quarter of it is in time while
/// other tests run beside this one (at 400 ms, one made at 100 ms was read
/// as late in 1 run of 2 of the runtime's test binary).
const TTL: Duration = Duration::from_secs(2);

fn registry() -> Registry<AtomicUsize> {
    Registry::builder().tools(tools![refund]).approval_ttl(TTL).build().unwrap()
}

/// Approved out of band at a quarter of the time to live, settled by the
/// run (the same process that parked it) after the time to live: it runs
/// (before: this process's own clock read it as expired, while the journal
/// said approved).
async fn a_decision_the_journal_accepted_in_time_runs_when_settled_after_the_ttl(db: Db) {
    let (journal, admin) = (db.open().await, db.open().await);
    let refunds = Arc::new(AtomicUsize::new(0));
    let mut run = registry().run(refunds.clone()).durable(&journal, "t-1").await.unwrap();
    run.execute(vec![ToolCall::new("c1", "refund", json!({"order_id": "A-1"}))]).await;
    tokio::time::sleep(TTL / 4).await;
    tool_runtime::question::decide(&admin, "t-1", "c1", Decision::Approve, "alice").await.expect("in time by the journal's clock");
    tokio::time::sleep(TTL).await;
    let settled = run.settle_decided().await.unwrap();
    assert_eq!((settled[0].kind, settled[0].text.as_str()), (ResultKind::Success, "refunded A-1"), "{settled:?}");
    assert_eq!(refunds.load(Ordering::SeqCst), 1);
}

/// A decision after the time to live is refused to the person making it,
/// and the run reads the expiry.
async fn a_decision_after_the_ttl_is_refused_to_its_decider_and_nothing_runs(db: Db) {
    let (journal, admin) = (db.open().await, db.open().await);
    let refunds = Arc::new(AtomicUsize::new(0));
    let mut run = registry().run(refunds.clone()).durable(&journal, "t-1").await.unwrap();
    run.execute(vec![ToolCall::new("c1", "refund", json!({"order_id": "A-1"}))]).await;
    tokio::time::sleep(TTL + TTL / 4).await;
    let refused = tool_runtime::question::decide(&admin, "t-1", "c1", Decision::Approve, "alice").await.unwrap_err();
    assert!(matches!(refused, JournalError::ApprovalExpired { .. }), "{refused:?}");
    let settled = run.settle_decided().await.unwrap();
    assert_eq!(settled[0].error_code.as_deref(), Some("APPROVAL_EXPIRED"), "{settled:?}");
    assert_eq!(refunds.load(Ordering::SeqCst), 0);
}

/// A human's edited input is guarded like the model's before anything
/// reads it: an input over the argument limit is not parsed into the
/// journal as the decision (before: the whole edited input was journaled
/// as approved); it is journaled as refused, and the call reads the
/// guard's line.
async fn an_edited_input_passes_the_guard_before_the_journal_reads_it(db: Db) {
    let registry = Registry::builder().tools(tools![refund]).max_argument_bytes(256).build().unwrap();
    let journal = db.open().await;
    let refunds = Arc::new(AtomicUsize::new(0));
    let mut run = registry.run(refunds.clone()).durable(&journal, "t-1").await.unwrap();
    run.execute(vec![ToolCall::new("c1", "refund", json!({"order_id": "A-1"}))]).await;
    let edited = format!(r#"{{"order_id": "{}"}}"#, "A".repeat(10_000));
    let result = run.approvals().approve_with("c1", Arguments::from(edited.as_str())).await.unwrap();
    assert_eq!(result.error_code.as_deref(), Some("ARGUMENTS_TOO_LARGE"), "{}", result.text);
    let decided = journal.approvals().get("t-1", "c1").await.unwrap().unwrap().decided.unwrap();
    assert_eq!(decided.decision, Decision::Reject("The edited input was refused before it was read.".into()));
    assert_eq!(refunds.load(Ordering::SeqCst), 0);
}

//! Approvals as permits, in durable runs (SQLite and Postgres, as in
//! `journal.rs`): an approval is bound to the call's arguments, the
//! principal, the tool's definition and an expiry, and used once. A permit
//! whose binding no longer matches (the tool's definition changed between
//! park and decision; the arguments differ from what was approved) runs
//! nothing and says why, to the model and in the error report.
#![cfg(any(feature = "sqlite", feature = "postgres"))]

use crate::db;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::json;
use tool_runtime::journal::Decision;
use tool_runtime::prelude::*;
use tool_runtime::{ErrorKind, ErrorReport, ResultKind, ToolCall};

use db::Db;

on_both_backends!(
    "permits_":
    a_permit_whose_tool_changed_since_it_was_parked_runs_nothing_and_says_why,
    a_permit_whose_arguments_were_changed_behind_it_runs_nothing,
    a_permit_that_still_matches_runs_its_call_once,
);

/// Refund an order; a human approves each refund.
#[tool(policy = needs_approval)]
async fn refund(ctx: Ctx<AtomicUsize>, order: String) -> String {
    ctx.app().fetch_add(1, Ordering::SeqCst);
    format!("refunded {order}")
}

/// Refund an order, the next release: it may refund a part.
#[tool(policy = needs_approval, name = "refund")]
async fn refund_in_part(ctx: Ctx<AtomicUsize>, order: String, cents: Option<u32>) -> String {
    ctx.app().fetch_add(1, Ordering::SeqCst);
    format!("refunded {order} ({cents:?} cents)")
}

/// The registry of the first release, and where its error reports go.
fn first_release(reports: &Arc<Mutex<Vec<ErrorReport>>>) -> Registry<AtomicUsize> {
    let reports = reports.clone();
    Registry::builder().tools(tools![refund]).on_tool_error(move |report| reports.lock().unwrap().push(report.clone())).build().unwrap()
}

/// Parks a refund of A-1 in run `t-1`, and approves it out of band.
async fn parked_and_approved(db: &Db, refunds: &Arc<AtomicUsize>) {
    let journal = db.open().await;
    let reports = Arc::default();
    let mut run = first_release(&reports).run(refunds.clone()).with_user(UserContext::new("u-1")).durable(&journal, "t-1").await.unwrap();
    run.execute(vec![ToolCall::new("c1", "refund", json!({"order": "A-1"}))]).await;
    tool_runtime::question::decide(&journal, "t-1", "c1", Decision::Approve, "alice").await.unwrap();
}

/// A deploy between park and decision changed the tool's input schema: the
/// approval was given for another tool, so the call is not run (before: it
/// ran, under a schema the approver never saw).
async fn a_permit_whose_tool_changed_since_it_was_parked_runs_nothing_and_says_why(db: Db) {
    let refunds = Arc::new(AtomicUsize::new(0));
    parked_and_approved(&db, &refunds).await;
    let reports = Arc::new(Mutex::new(Vec::<ErrorReport>::new()));
    let sink = reports.clone();
    let next_release =
        Registry::builder().tools(tools![refund_in_part]).on_tool_error(move |report| sink.lock().unwrap().push(report.clone())).build().unwrap();
    let journal = db.open().await;
    let mut run = next_release.run(refunds.clone()).with_user(UserContext::new("u-1")).durable(&journal, "t-1").await.unwrap();
    let settled = run.settle_decided().await.unwrap();
    assert_eq!((settled[0].kind, settled[0].error_code.as_deref()), (ResultKind::Rejected, Some("PERMIT_MISMATCH")), "{settled:?}");
    assert!(settled[0].text.contains("the tool's definition (its name, input schema or policy) changed"), "{}", settled[0].text);
    assert_eq!(refunds.load(Ordering::SeqCst), 0, "nothing ran");
    let report = reports.lock().unwrap().iter().find(|report| report.kind == ErrorKind::PermitMismatch).cloned().expect("reported");
    assert!(report.error.contains("changed since the call was approved"), "{report:?}");
    assert!(run.settle_decided().await.unwrap().is_empty(), "settled once");
}

/// The parked arguments were changed in the journal after they were
/// parked: the approval was given for other arguments, so nothing runs
/// (before: the altered refund ran as approved).
async fn a_permit_whose_arguments_were_changed_behind_it_runs_nothing(db: Db) {
    let refunds = Arc::new(AtomicUsize::new(0));
    parked_and_approved(&db, &refunds).await;
    db.exec(r#"UPDATE journal_approvals SET input = '{"order":"A-2"}' WHERE call_id = 'c1'"#.to_owned()).await;
    let reports = Arc::new(Mutex::new(Vec::new()));
    let journal = db.open().await;
    let mut run = first_release(&reports).run(refunds.clone()).with_user(UserContext::new("u-1")).durable(&journal, "t-1").await.unwrap();
    let settled = run.settle_decided().await.unwrap();
    assert_eq!(settled[0].error_code.as_deref(), Some("PERMIT_MISMATCH"), "{settled:?}");
    assert!(settled[0].text.contains("arguments differ from the ones approved"), "{}", settled[0].text);
    assert_eq!(refunds.load(Ordering::SeqCst), 0);
    assert!(reports.lock().unwrap().iter().any(|report| report.kind == ErrorKind::PermitMismatch));
}

/// The same call, the same tool, the same user: the approval runs it, once.
async fn a_permit_that_still_matches_runs_its_call_once(db: Db) {
    let refunds = Arc::new(AtomicUsize::new(0));
    parked_and_approved(&db, &refunds).await;
    let reports = Arc::new(Mutex::new(Vec::new()));
    let journal = db.open().await;
    let mut run = first_release(&reports).run(refunds.clone()).with_user(UserContext::new("u-1")).durable(&journal, "t-1").await.unwrap();
    let settled = run.settle_decided().await.unwrap();
    assert_eq!(settled[0].text, "refunded A-1");
    let mut again = first_release(&reports).run(refunds.clone()).with_user(UserContext::new("u-1")).durable(&journal, "t-1").await.unwrap();
    assert!(again.settle_decided().await.unwrap().is_empty(), "a used permit is not read back");
    assert_eq!(refunds.load(Ordering::SeqCst), 1);
}

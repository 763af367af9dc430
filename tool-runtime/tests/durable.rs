//! Durable runs against real databases (a SQLite file, and the Postgres
//! server of `TOOL_RUNTIME_TEST_POSTGRES_URL`, as in `journal.rs`): resume
//! by id, effects never repeated, approvals decided out of band, expiry,
//! an incompatible registry, a journaled result that no longer fits,
//! several processes stepping one run at once.
//! Every case runs on both backends from one body; each "process" is a
//! journal of its own on the same database.
#![cfg(any(feature = "sqlite", feature = "postgres"))]

use crate::db;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};
use tool_runtime::journal::{CallStart, Decision, DurableError, Journal, JournalError};
use tool_runtime::prelude::*;
use tool_runtime::{ErrorKind, ErrorReport, ResultKind, Run, RunError, RunState, ToolCall};

use db::Db;

on_both_backends!(
    "durable_":
    a_resumed_run_has_its_step_executed_tools_and_pending_calls,
    a_re_sent_call_returns_its_journaled_result_without_running_again,
    a_call_cut_off_midway_is_not_run_again_unless_idempotent,
    an_idempotency_key_replays_the_effect_across_runs,
    a_tool_with_replay_false_runs_every_time,
    approvals_decided_out_of_band_settle_when_the_run_resumes,
    a_call_decided_elsewhere_cannot_be_decided_again,
    a_pending_call_expires_with_a_rejection_the_model_reads,
    an_expired_approval_gives_up_its_slot_by_the_journals_clock,
    an_approval_decided_out_of_band_runs_nothing_past_the_runs_deadline,
    resuming_with_an_incompatible_registry_names_the_tool,
    a_journaled_result_that_no_longer_fits_the_output_schema_is_not_passed_on,
    a_finished_run_is_journaled_as_finished_with_its_pending_calls_rejected,
    an_external_call_survives_a_restart_and_is_completed_once,
    a_long_run_keeps_and_journals_each_executed_tool_once,
    a_result_holding_a_nul_is_journaled_and_replayed,
    steps_of_one_run_in_three_processes_at_once_are_all_kept,
    a_run_one_process_finished_stays_finished_after_anothers_late_step,
    a_re_sent_step_does_not_advance_the_step,
    max_retries_failures_survive_a_resume_and_add_up_across_processes,
    settlers_racing_one_approved_call_all_read_its_result,
    a_locked_journal_holds_a_call_no_longer_than_its_timeout_and_leaves_it_unstarted,
    a_re_sent_call_id_with_another_input_or_tool_is_refused,
    a_call_in_doubt_is_settled_by_its_reconcile_hook_or_by_the_host,
    finishing_a_run_rejects_the_calls_another_process_parked_in_it,
    a_stale_process_s_late_step_runs_no_effect_on_a_finished_run,
    a_decision_made_before_a_run_finished_is_not_carried_out_after,
    a_step_with_a_timeout_returns_within_it_while_the_run_s_record_is_locked,
    a_reconcile_hook_reads_the_app_and_a_call_it_says_did_not_happen_runs_once,
    a_new_run_record_still_resumes_what_was_journaled_under_its_id_before,
);

/// The world the tools change, counted outside the journal.
#[derive(Default)]
struct Shop {
    charges: AtomicUsize,
    refunds: AtomicUsize,
    flags: AtomicUsize,
    reads: AtomicUsize,
    ledger: Mutex<Vec<String>>,
}

/// Charge a card.
#[tool]
async fn charge(ctx: Ctx<Shop>, cents: u32) -> String {
    ctx.app().charges.fetch_add(1, Ordering::SeqCst);
    format!("charged {cents}")
}

/// Charge a card slowly: the effect happens, then the call takes its time.
/// (A call of it found unfinished is waited for until its timeout.)
#[tool(timeout = "6s")]
async fn charge_slowly(ctx: Ctx<Shop>, cents: u32) -> String {
    ctx.app().charges.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(5)).await;
    format!("charged {cents}")
}

/// Set a flag: doing it twice changes nothing more.
#[tool(idempotent)]
async fn set_flag(ctx: Ctx<Shop>, flag: String) -> String {
    ctx.app().flags.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(5)).await;
    format!("set {flag}")
}

/// Read a label, NUL characters and all, as a device wrote it.
#[tool]
async fn read_label(ctx: Ctx<Shop>, label: String) -> String {
    ctx.app().reads.fetch_add(1, Ordering::SeqCst);
    format!("label: {label}")
}

/// Refund an order; a human approves each refund.
#[tool(policy = needs_approval)]
async fn refund(ctx: Ctx<Shop>, order_id: String) -> String {
    ctx.app().refunds.fetch_add(1, Ordering::SeqCst);
    format!("refunded {order_id}")
}

/// Refund an order slowly, once a human approved it.
#[tool(policy = needs_approval)]
async fn refund_slowly(ctx: Ctx<Shop>, order_id: String) -> String {
    ctx.app().refunds.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(400)).await;
    format!("refunded {order_id}")
}

/// Charge a card, within a second.
#[tool(timeout = "1s")]
async fn charge_quickly(ctx: Ctx<Shop>, cents: u32) -> String {
    ctx.app().charges.fetch_add(1, Ordering::SeqCst);
    format!("charged {cents}")
}

/// The orders the shop's bank has paid, outside the journal and the app.
static PAID: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Whether the bank paid the order: what became of a call cut off midway
/// (unknown when it did not: the bank may still be paying it).
fn paid_already(input: &pay_order, _ctx: &Ctx<Shop>) -> Option<String> {
    PAID.lock().unwrap().contains(&input.order_id).then(|| format!("paid {}", input.order_id))
}

/// Whether the shop's ledger holds the bill: it does once the bill was
/// paid, so a call cut off without it did not happen.
fn bill_in_ledger(input: &pay_bill, ctx: &Ctx<Shop>) -> Reconciled<String> {
    match ctx.app().ledger.lock().unwrap().contains(&input.bill) {
        true => Reconciled::Happened(format!("paid bill {}", input.bill)),
        false => Reconciled::DidNotHappen,
    }
}

/// Pay a bill, written to the shop's ledger once the bank confirms it.
#[tool(timeout = "1s", reconcile = bill_in_ledger)]
async fn pay_bill(ctx: Ctx<Shop>, bill: String) -> String {
    ctx.app().charges.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(300)).await;
    ctx.app().ledger.lock().unwrap().push(bill.clone());
    format!("paid bill {bill}")
}

/// Pay an order at the bank, which takes its time to answer.
#[tool(timeout = "1s", reconcile = paid_already)]
async fn pay_order(ctx: Ctx<Shop>, order_id: String) -> String {
    ctx.app().charges.fetch_add(1, Ordering::SeqCst);
    PAID.lock().unwrap().push(order_id.clone());
    tokio::time::sleep(Duration::from_secs(5)).await;
    format!("paid {order_id}")
}

#[derive(Serialize, JsonSchema)]
struct Balance {
    cents: u32,
}

/// Read the balance.
#[tool]
async fn balance(_ctx: Ctx<Shop>) -> Balance {
    Balance { cents: 1200 }
}

/// A refund keyed by its order, in any run; and a read that is never replayed.
fn dynamic_tools() -> Vec<tool_runtime::BoxedTool<Shop>> {
    let refund_order = DynamicTool::new(
        "refund_order",
        "Refund an order, once per order.",
        json!({"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}),
        |args: Value, ctx: Ctx<Shop>| async move {
            ctx.app().refunds.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolError>(json!(format!("refunded {}", args["order_id"].as_str().unwrap_or_default())))
        },
    )
    .idempotency_key(|args| args["order_id"].as_str().unwrap_or_default().to_owned());
    let stock = DynamicTool::new("stock", "Read the stock.", json!({"type": "object"}), |_args, ctx: Ctx<Shop>| async move {
        let reads = ctx.app().reads.fetch_add(1, Ordering::SeqCst) + 1;
        Ok::<_, ToolError>(json!(format!("read {reads}")))
    })
    .replay(false);
    vec![refund_order.into(), stock.into()]
}

struct Desk {
    registry: Registry<Shop>,
    reports: Arc<Mutex<Vec<ErrorReport>>>,
}

fn desk(ttl: Duration) -> Desk {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = reports.clone();
    let registry = Registry::builder()
        .tools(tools![charge, charge_slowly, charge_quickly, set_flag, refund, refund_slowly, balance, read_label, pay_order, pay_bill])
        .tools(dynamic_tools())
        .approval_ttl(ttl)
        .on_tool_error(move |report| sink.lock().unwrap().push(report.clone()))
        .build()
        .unwrap();
    Desk { registry, reports }
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall::new(id, name, args)
}

/// A run of `desk`'s registry, durable under `id` in a journal of its own
/// (as another process would open it).
async fn resume(db: &Db, desk: &Desk, shop: &Arc<Shop>, id: &str) -> (Run<Shop>, Journal) {
    let journal = db.open().await;
    let run = desk.registry.run(shop.clone()).with_user(UserContext::new("u-1")).durable(&journal, id).await.unwrap();
    (run, journal)
}

async fn a_resumed_run_has_its_step_executed_tools_and_pending_calls(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    assert_eq!(run.run_id(), Some("t-1"));
    run.execute(vec![call("c1", "charge", json!({"cents": 5}))]).await;
    let step = run.execute(vec![call("c2", "refund", json!({"order_id": "A-1"}))]).await;
    assert_eq!(step.results[0].kind, ResultKind::PendingApproval);
    drop(run);

    let (run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    assert_eq!(run.step(), 2);
    assert_eq!(run.executed(), ["charge"]);
    assert_eq!(run.state(), &RunState::Active);
    let pending: Vec<_> = run.pending().iter().map(|p| (p.id().to_string(), p.arguments())).collect();
    assert_eq!(pending, [("c2".to_owned(), json!({"order_id": "A-1"}))]);
    // Every call's result comes back from the journal too.
    let calls = db.open().await.calls().of_run("t-1").await.unwrap();
    assert_eq!(calls.len(), 1, "the pending refund has not started: {calls:?}");
    assert_eq!((calls[0].call_id.as_str(), calls[0].tool.as_str(), &calls[0].input), ("c1", "charge", &json!({"cents": 5})));
    assert!(matches!(&calls[0].outcome, CallStart::Finished(result) if result.text == "charged 5"), "{:?}", calls[0].outcome);
    // Another id is another run.
    let (other, _journal) = resume(&db, &desk, &shop, "t-2").await;
    assert_eq!((other.step(), other.pending().len()), (0, 0));
}

async fn a_re_sent_call_returns_its_journaled_result_without_running_again(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    let first = run.execute(vec![call("c1", "charge", json!({"cents": 5}))]).await;
    drop(run);
    // The host re-sends the step after a crash: same run, same call id.
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    let again = run.execute(vec![call("c1", "charge", json!({"cents": 5}))]).await;
    assert_eq!(again.results, first.results);
    assert_eq!(shop.charges.load(Ordering::SeqCst), 1, "charged once");
    // A new call is a new effect.
    run.execute(vec![call("c2", "charge", json!({"cents": 5}))]).await;
    assert_eq!(shop.charges.load(Ordering::SeqCst), 2);
}

async fn a_result_holding_a_nul_is_journaled_and_replayed(db: Db) {
    // Postgres cannot store a NUL in text: the journal keeps U+FFFD in its
    // place, so the effect is recorded on both backends and never runs twice.
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    let first = run.execute(vec![call("c1", "read_label", json!({"label": "A\u{0}B"}))]).await;
    assert_eq!(first.results[0].kind, ResultKind::Success, "{}", first.results[0].text);
    assert_eq!(first.results[0].text, "label: A\u{0}B", "the live result is the tool's own");
    assert!(desk.reports.lock().unwrap().is_empty(), "journaled without a problem: {:?}", desk.reports.lock().unwrap());
    drop(run);
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    let again = run.execute(vec![call("c1", "read_label", json!({"label": "A\u{0}B"}))]).await;
    assert_eq!(again.results[0].kind, ResultKind::Success, "{}", again.results[0].text);
    assert_eq!(again.results[0].text, "label: A\u{fffd}B");
    assert_eq!(shop.reads.load(Ordering::SeqCst), 1, "replayed, not run again");
}

async fn settlers_racing_one_approved_call_all_read_its_result(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut run, journal) = resume(&db, &desk, &shop, "t-1").await;
    run.execute(vec![call("c1", "refund_slowly", json!({"order_id": "A-1"}))]).await;
    tool_runtime::question::decide(&journal, "t-1", "c1", Decision::Approve, "alice").await.unwrap();
    drop(run);

    // Five processes resume the run and settle it at once.
    let settlers = 5;
    let mut runs = Vec::new();
    for _ in 0..settlers {
        runs.push(resume(&db, &desk, &shop, "t-1").await);
    }
    let settled = futures_util::future::join_all(runs.iter_mut().map(|(run, _)| run.settle_decided())).await;
    let read: Vec<_> = settled.into_iter().flat_map(Result::unwrap).map(|r| (r.kind, r.text)).collect();
    let unknown = read.iter().filter(|(_, text)| text.contains("OUTCOME_UNKNOWN")).count();
    println!("{unknown} of {settlers} settlers read OUTCOME_UNKNOWN");
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 1, "refunded once");
    assert_eq!(read.len(), settlers, "{read:?}");
    assert!(read.iter().all(|(kind, text)| (*kind, text.as_str()) == (ResultKind::Success, "refunded A-1")), "{read:?}");
}

async fn a_locked_journal_holds_a_call_no_longer_than_its_timeout_and_leaves_it_unstarted(db: Db) {
    let reports = Arc::new(Mutex::new(Vec::<(std::time::Instant, ErrorReport)>::new()));
    let sink = reports.clone();
    let registry = Registry::builder()
        .tools(tools![charge_quickly])
        .on_tool_error(move |report| sink.lock().unwrap().push((std::time::Instant::now(), report.clone())))
        .build()
        .unwrap();
    let shop = Arc::new(Shop::default());
    let journal = db.open().await;
    let mut run = registry.run(shop.clone()).durable(&journal, "t-1").await.unwrap();
    // Another process holds the journal locked for 5 s.
    let lock = db.lock_calls().await;
    let held = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(5)).await;
        lock.release().await;
    });
    let started = std::time::Instant::now();
    let step = run.execute(vec![call("c1", "charge_quickly", json!({"cents": 5}))]).await;
    let took = started.elapsed();
    let told = reports.lock().unwrap().first().map(|(at, _)| at.duration_since(started));
    println!("the step took {took:?}; the host was told after {told:?}");
    let result = &step.results[0];
    assert_eq!(result.kind, ResultKind::TimedOut, "{}", result.text);
    assert!(result.text.contains("not run"), "the model reads that it did not run: {}", result.text);
    assert_eq!(shop.charges.load(Ordering::SeqCst), 0);
    // The call's result is due at its timeout (on SQLite, the step's own
    // save then waits for the lock, as any write does).
    assert!(told.is_some_and(|told| told < Duration::from_millis(2500)), "{told:?}: {:?}", reports.lock().unwrap());
    #[cfg(feature = "postgres")]
    if matches!(db, Db::Postgres { .. }) {
        assert!(took < Duration::from_millis(2500), "{took:?}");
    }
    held.await.unwrap();

    // Never started: re-sent once the lock is gone, it runs.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut run = registry.run(shop.clone()).durable(&journal, "t-1").await.unwrap();
    let again = run.execute(vec![call("c1", "charge_quickly", json!({"cents": 5}))]).await;
    assert_eq!((again.results[0].kind, again.results[0].text.as_str()), (ResultKind::Success, "charged 5"));
    assert_eq!(shop.charges.load(Ordering::SeqCst), 1);
}

async fn a_re_sent_call_id_with_another_input_or_tool_is_refused(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    run.execute(vec![call("c1", "charge", json!({"cents": 5}))]).await;
    drop(run);
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    let other_input = run.execute(vec![call("c1", "charge", json!({"cents": 500}))]).await;
    let other_tool = run.execute(vec![call("c1", "read_label", json!({"label": "A"}))]).await;
    for result in [&other_input.results[0], &other_tool.results[0]] {
        assert_eq!(result.kind, ResultKind::InvalidArguments, "{}", result.text);
        assert_eq!(result.error_code.as_deref(), Some("CALL_ID_REUSED"), "{}", result.text);
        assert!(!result.text.contains("charged"), "the other call's result is not served: {}", result.text);
    }
    assert_eq!((shop.charges.load(Ordering::SeqCst), shop.reads.load(Ordering::SeqCst)), (1, 0), "neither ran");
    let reports = desk.reports.lock().unwrap().clone();
    assert!(
        reports.iter().any(|r| r.kind == ErrorKind::CallMismatch && r.error.contains("input") && r.error.contains(r#"{"cents":5}"#)),
        "the host is told what differed: {reports:?}"
    );
    assert!(reports.iter().any(|r| r.tool == "read_label" && r.error.contains("`charge`")), "{reports:?}");
    // The same call again is still replayed.
    let same = run.execute(vec![call("c1", "charge", json!({"cents": 5}))]).await;
    assert_eq!(same.results[0].text, "charged 5");
    // A call a human approved with an edit ran with it: re-sent as the
    // model sent it, it is the same call.
    run.execute(vec![call("e1", "refund", json!({"order_id": "A-1"}))]).await;
    tool_runtime::question::decide(&db.open().await, "t-1", "e1", Decision::ApproveEdited(json!({"order_id": "A-9"})), "alice").await.unwrap();
    assert_eq!(run.settle_decided().await.unwrap()[0].text, "refunded A-9");
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    let re_sent = run.execute(vec![call("e1", "refund", json!({"order_id": "A-1"}))]).await;
    assert_eq!(re_sent.results[0].text, "refunded A-9", "{}", re_sent.results[0].text);
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 1);
    // A keyed tool's call id re-sent with another input, which gives
    // another key, is refused too (before: a second refund ran).
    run.execute(vec![call("k1", "refund_order", json!({"order_id": "B-1"}))]).await;
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 2);
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    let other_key = run.execute(vec![call("k1", "refund_order", json!({"order_id": "B-2"}))]).await;
    assert_eq!(other_key.results[0].error_code.as_deref(), Some("CALL_ID_REUSED"), "{}", other_key.results[0].text);
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 2, "no second refund under the first one's id");
    // Another call whose input gives that key with other arguments is
    // refused, never served the first one's result (before: it was).
    let (mut other, _journal) = resume(&db, &desk, &shop, "t-2").await;
    let shared = other.execute(vec![call("k2", "refund_order", json!({"order_id": "B-1", "note": "again"}))]).await;
    assert_eq!(shared.results[0].error_code.as_deref(), Some("IDEMPOTENCY_KEY_REUSED"), "{}", shared.results[0].text);
    assert!(!shared.results[0].text.contains("refunded"), "{}", shared.results[0].text);
    // With the key's own input, any call of the user is answered from the journal.
    let same = other.execute(vec![call("k3", "refund_order", json!({"order_id": "B-1"}))]).await;
    assert_eq!(same.results[0].text, "refunded B-1");
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 2);
}

async fn a_call_in_doubt_is_settled_by_its_reconcile_hook_or_by_the_host(db: Db) {
    // Both backends run at once and share PAID: each its own orders.
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let order = || format!("O-{}", NEXT.fetch_add(1, Ordering::SeqCst));
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut run, journal) = resume(&db, &desk, &shop, "t-1").await;
    // The process goes away mid-call, after the bank paid.
    let paid = order();
    let step = run.execute(vec![call("c1", "pay_order", json!({"order_id": paid}))]);
    assert!(tokio::time::timeout(Duration::from_millis(300), step).await.is_err());
    drop(run);
    assert_eq!(journal.calls().in_doubt(Some("t-1")).await.unwrap().len(), 1);

    // Re-sent: past its timeout, the hook finds it paid; that is its result, journaled.
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    let settled = run.execute(vec![call("c1", "pay_order", json!({"order_id": paid}))]).await;
    assert_eq!((settled.results[0].kind, settled.results[0].text.clone()), (ResultKind::Success, format!("paid {paid}")));
    assert_eq!(shop.charges.load(Ordering::SeqCst), 1, "not paid twice");
    assert!(journal.calls().in_doubt(Some("t-1")).await.unwrap().is_empty(), "settled");
    let calls = journal.calls().of_run("t-1").await.unwrap();
    assert!(matches!(&calls[0].outcome, CallStart::Finished(result) if result.text == format!("paid {paid}")), "{calls:?}");

    // A call whose process died right after its start (an hour ago): the
    // bank never paid it, so the hook cannot tell, and it stays in doubt.
    let unpaid = order();
    let key = json!(["call", "t-1", "c2"]).to_string();
    journal.calls().start("t-1", "c2", "pay_order", &json!({"order_id": unpaid}), &key).await.unwrap();
    journal.calls().start("t-0", "c0", "pay_order", &json!({"order_id": order()}), &json!(["call", "t-0", "c0"]).to_string()).await.unwrap();
    db.exec("UPDATE journal_calls SET started_at = started_at - 3600000 WHERE call_id = 'c2'".to_owned()).await;
    let doubt = run.execute(vec![call("c2", "pay_order", json!({"order_id": unpaid}))]).await;
    assert_eq!(doubt.results[0].error_code.as_deref(), Some("OUTCOME_UNKNOWN"), "{}", doubt.results[0].text);
    assert_eq!(shop.charges.load(Ordering::SeqCst), 1);
    let listed: Vec<_> = journal.calls().in_doubt(None).await.unwrap().into_iter().map(|c| (c.run_id, c.call_id)).collect();
    assert_eq!(listed, [("t-1".to_owned(), "c2".to_owned()), ("t-0".to_owned(), "c0".to_owned())], "oldest first");
    let in_doubt = journal.calls().in_doubt(Some("t-1")).await.unwrap();
    assert_eq!((in_doubt.len(), &in_doubt[0].input), (1, &json!({"order_id": unpaid})));

    // The host checks the bank, and settles it: the call replays that.
    let resolved = tool_runtime::journal::JournaledResult {
        kind: ResultKind::ToolError,
        text: "The bank never received this payment; nothing was paid.".into(),
        structured: None,
        error_code: Some("NOT_PAID".into()),
        status: Some(409),
        truncated: false,
        ends_run: false,
    };
    journal.calls().resolve(&in_doubt[0].effect_key, &resolved).await.unwrap();
    let again = run.execute(vec![call("c2", "pay_order", json!({"order_id": unpaid}))]).await;
    assert_eq!((again.results[0].error_code.as_deref(), again.results[0].text.as_str()), (Some("NOT_PAID"), resolved.text.as_str()));
    assert_eq!(shop.charges.load(Ordering::SeqCst), 1);
    // A dynamic tool's hook settles its call the same way.
    let ship = DynamicTool::new("ship", "Ship an order.", json!({"type": "object"}), |_args, ctx: Ctx<Shop>| async move {
        ctx.app().charges.fetch_add(1, Ordering::SeqCst);
        Ok::<_, ToolError>(json!("shipped"))
    })
    .reconcile(|args: &Value, _ctx: &Ctx<Shop>| Some(json!(format!("shipped {}", args["order_id"].as_str().unwrap_or_default()))));
    let shipping = Registry::<Shop>::builder().tool(ship).build().unwrap();
    journal.calls().start("t-3", "s1", "ship", &json!({"order_id": "A-1"}), &json!(["call", "t-3", "s1"]).to_string()).await.unwrap();
    db.exec("UPDATE journal_calls SET started_at = started_at - 3600000 WHERE call_id = 's1'".to_owned()).await;
    let mut run = shipping.run(shop.clone()).durable(&journal, "t-3").await.unwrap();
    let shipped = run.execute(vec![call("s1", "ship", json!({"order_id": "A-1"}))]).await;
    assert_eq!((shipped.results[0].kind, shipped.results[0].text.as_str()), (ResultKind::Success, "shipped A-1"));
    assert_eq!(shop.charges.load(Ordering::SeqCst), 1, "not run");
    // A settled call is never settled again.
    assert!(matches!(journal.calls().resolve(&key, &resolved).await, Err(JournalError::CallAlreadyFinished { .. })));
    assert!(matches!(journal.calls().resolve("no such key", &resolved).await, Err(JournalError::CallNotStarted { .. })));
}

async fn a_call_cut_off_midway_is_not_run_again_unless_idempotent(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    // The process goes away mid-call: the step's future is dropped after
    // the effect, before the call finished.
    let step = run.execute(vec![call("c1", "charge_slowly", json!({"cents": 5}))]);
    assert!(tokio::time::timeout(Duration::from_millis(300), step).await.is_err());
    let step = run.execute(vec![call("c2", "set_flag", json!({"flag": "vip"}))]);
    assert!(tokio::time::timeout(Duration::from_millis(300), step).await.is_err());
    drop(run);
    assert_eq!((shop.charges.load(Ordering::SeqCst), shop.flags.load(Ordering::SeqCst)), (1, 1));

    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    let charge = run.execute(vec![call("c1", "charge_slowly", json!({"cents": 5}))]).await;
    assert_eq!(charge.results[0].kind, ResultKind::ToolError);
    assert_eq!(charge.results[0].error_code.as_deref(), Some("OUTCOME_UNKNOWN"), "{}", charge.results[0].text);
    assert!(charge.results[0].text.contains("Check its effect first"), "{}", charge.results[0].text);
    assert_eq!(shop.charges.load(Ordering::SeqCst), 1, "never charged a second time");
    let reports = desk.reports.lock().unwrap().clone();
    assert!(reports.iter().any(|r| r.kind == ErrorKind::OutcomeUnknown && r.call_id == "c1"), "the host is told: {reports:?}");

    // An idempotent tool runs again (it is cut off again here: the flag is set twice, which is its point).
    let flag = run.execute(vec![call("c2", "set_flag", json!({"flag": "vip"}))]);
    assert!(tokio::time::timeout(Duration::from_millis(300), flag).await.is_err());
    assert_eq!(shop.flags.load(Ordering::SeqCst), 2);
}

async fn an_idempotency_key_replays_the_effect_across_runs(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    let first = run.execute(vec![call("c1", "refund_order", json!({"order_id": "A-1"}))]).await;
    assert_eq!(first.results[0].text, "refunded A-1");
    let (mut other, _journal) = resume(&db, &desk, &shop, "t-2").await;
    let again = other.execute(vec![call("x9", "refund_order", json!({"order_id": "A-1"}))]).await;
    assert_eq!(again.results[0].text, "refunded A-1");
    assert_eq!(again.results[0].call_id, "x9", "replayed under the new call's id");
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 1, "one refund per order");
    other.execute(vec![call("x10", "refund_order", json!({"order_id": "A-2"}))]).await;
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 2);
}

async fn a_tool_with_replay_false_runs_every_time(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    assert_eq!(run.execute(vec![call("c1", "stock", json!({}))]).await.results[0].text, "read 1");
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    assert_eq!(run.execute(vec![call("c1", "stock", json!({}))]).await.results[0].text, "read 2");
}

async fn approvals_decided_out_of_band_settle_when_the_run_resumes(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    run.execute(vec![
        call("c1", "refund", json!({"order_id": "A-1"})),
        call("c2", "refund", json!({"order_id": "A-2"})),
        call("c3", "refund", json!({"order_id": "A-3"})),
        call("c4", "refund", json!({"order_id": "A-4"})),
    ])
    .await;
    drop(run);

    // An admin page in another process decides three of them.
    let admin = db.open().await;
    let listed: Vec<_> = admin.approvals().pending_for_user("u-1").await.unwrap().into_iter().map(|p| p.call_id).collect();
    assert_eq!(listed, ["c1", "c2", "c3", "c4"]);
    tool_runtime::question::decide(&admin, "t-1", "c1", Decision::Approve, "alice").await.unwrap();
    tool_runtime::question::decide(&admin, "t-1", "c2", Decision::ApproveEdited(json!({"order_id": "A-9"})), "alice").await.unwrap();
    tool_runtime::question::decide(&admin, "t-1", "c3", Decision::Reject("Refunds of A-3 go through the bank.".into()), "bob").await.unwrap();

    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    let settled = run.settle_decided().await.unwrap();
    let seen: Vec<_> = settled.iter().map(|r| (r.call_id.as_str(), r.kind, r.text.as_str())).collect();
    assert_eq!(seen[0], ("c1", ResultKind::Success, "refunded A-1"));
    assert_eq!(seen[1], ("c2", ResultKind::Success, "refunded A-9"));
    assert_eq!((seen[2].0, seen[2].1), ("c3", ResultKind::Rejected));
    assert!(seen[2].2.contains("Refunds of A-3 go through the bank."), "{}", seen[2].2);
    assert_eq!(run.pending().iter().map(|p| p.id().as_str()).collect::<Vec<_>>(), ["c4"], "c4 still waits");
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 2);
    assert_eq!(run.executed(), ["refund"]);
    let decided = admin.approvals().get("t-1", "c1").await.unwrap().unwrap().decided.unwrap();
    assert_eq!(decided.by, "alice");

    // Settling again runs nothing twice; a resumed run keeps what was settled.
    assert!(run.settle_decided().await.unwrap().is_empty());
    let (run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    assert_eq!(run.pending().len(), 1);
    assert_eq!(run.executed(), ["refund"]);
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 2);
}

async fn a_call_decided_elsewhere_cannot_be_decided_again(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    run.execute(vec![call("c1", "refund", json!({"order_id": "A-1"}))]).await;
    tool_runtime::question::decide(&db.open().await, "t-1", "c1", Decision::Reject("No.".into()), "bob").await.unwrap();
    // This process still holds the call and tries to approve it.
    let refused = run.approvals().approve("c1").await.unwrap_err();
    assert_eq!(refused, RunError::AlreadyDecided { call_id: "c1".into(), by: "bob".into() });
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 0);
    let settled = run.settle_decided().await.unwrap();
    assert_eq!(settled[0].kind, ResultKind::Rejected);
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 0, "the one decision stands");
}

async fn a_pending_call_expires_with_a_rejection_the_model_reads(db: Db) {
    let (desk, shop) = (desk(Duration::from_millis(50)), Arc::new(Shop::default()));
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    run.execute(vec![call("c1", "refund", json!({"order_id": "A-1"}))]).await;
    tokio::time::sleep(Duration::from_millis(120)).await;
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    let settled = run.settle_decided().await.unwrap();
    assert_eq!(settled.len(), 1);
    assert_eq!(settled[0].kind, ResultKind::Rejected);
    // One line, with the expiry's own code.
    assert_eq!(settled[0].error_code.as_deref(), Some("APPROVAL_EXPIRED"), "{}", settled[0].text);
    assert!(settled[0].text.starts_with("code: APPROVAL_EXPIRED, status: 403, userMessage: No human approved"), "{}", settled[0].text);
    assert_eq!(settled[0].text.matches("code:").count(), 1, "{}", settled[0].text);
    assert_eq!(settled[0].text.matches("Do not retry this call.").count(), 1, "{}", settled[0].text);
    assert!(run.pending().is_empty());
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 0);
}

async fn an_expired_approval_gives_up_its_slot_by_the_journals_clock(db: Db) {
    let registry = Registry::builder().tools(tools![refund]).approval_ttl(Duration::from_millis(50)).max_pending_approvals(1).build().unwrap();
    let (desk, shop) = (Desk { registry, reports: Arc::default() }, Arc::new(Shop::default()));
    let (mut run, journal) = resume(&db, &desk, &shop, "t-1").await;
    run.execute(vec![call("c1", "refund", json!({"order_id": "A-1"}))]).await;
    tokio::time::sleep(Duration::from_millis(120)).await;
    let step = run.execute(vec![call("c2", "refund", json!({"order_id": "A-2"}))]).await;
    assert_eq!(step.results[0].kind, ResultKind::PendingApproval, "{}", step.results[0].text);
    assert_eq!(step.expired.len(), 1);
    assert_eq!(step.expired[0].call_id, "c1");
    assert_eq!(step.expired[0].error_code.as_deref(), Some("APPROVAL_EXPIRED"), "{}", step.expired[0].text);
    // Journaled as expired and settled: a resumed run holds only c2.
    let expired = journal.approvals().get("t-1", "c1").await.unwrap().unwrap().decided.unwrap();
    assert_eq!(expired.by, tool_runtime::journal::EXPIRED_BY);
    let (resumed, _journal) = resume(&db, &desk, &shop, "t-1").await;
    assert_eq!(resumed.pending().iter().map(|p| p.id().as_str()).collect::<Vec<_>>(), ["c2"]);
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 0);
}

async fn an_approval_decided_out_of_band_runs_nothing_past_the_runs_deadline(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let journal = db.open().await;
    let mut run = desk.registry.run(shop.clone()).with_deadline(Duration::from_millis(100)).durable(&journal, "t-1").await.unwrap();
    run.execute(vec![call("c1", "refund", json!({"order_id": "A-1"}))]).await;
    tool_runtime::question::decide(&journal, "t-1", "c1", Decision::Approve, "alice").await.unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    let settled = run.settle_decided().await.unwrap();
    assert_eq!(settled[0].error_code.as_deref(), Some("RUN_DEADLINE"), "{}", settled[0].text);
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 0);
    assert!(run.pending().is_empty());
}

async fn resuming_with_an_incompatible_registry_names_the_tool(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut run, journal) = resume(&db, &desk, &shop, "t-1").await;
    run.execute(vec![call("c1", "refund", json!({"order_id": "A-1"}))]).await;

    // A finished call's tool is gone: the run resumes, and only that call,
    // re-sent, is refused, saying why.
    run.execute(vec![call("c2", "charge", json!({"cents": 5}))]).await;
    let without_charge = Registry::<Shop>::builder().tools(tools![refund]).build().unwrap();
    let mut resumed = without_charge.run(shop.clone()).durable(&journal, "t-1").await.expect("a finished call's tool is not needed to resume");
    let re_sent = resumed.execute(vec![call("c2", "charge", json!({"cents": 5}))]).await;
    assert_eq!(re_sent.results[0].error_code.as_deref(), Some("TOOL_GONE"), "{}", re_sent.results[0].text);
    assert!(re_sent.results[0].text.contains("`charge`") && re_sent.results[0].text.contains("no longer"), "{}", re_sent.results[0].text);
    assert_eq!(shop.charges.load(Ordering::SeqCst), 1, "not run again");
    // A call of a tool that never was is unknown, as ever.
    let unknown = resumed.execute(vec![call("c3", "charge", json!({"cents": 5}))]).await;
    assert_eq!(unknown.results[0].kind, ResultKind::UnknownTool, "{}", unknown.results[0].text);

    // A pending call's tool is gone.
    let without = Registry::<Shop>::builder().tools(tools![charge]).build().unwrap();
    let Err(error) = without.run(shop.clone()).durable(&journal, "t-1").await else { panic!("resumed without its tool") };
    assert!(matches!(&error, DurableError::Incompatible { tool, .. } if tool == "refund"), "{error}");
    assert!(error.to_string().contains("tool `refund` is not in this registry"), "{error}");

    // The tool takes another input now.
    /// Refund an order by its number.
    #[tool(name = "refund", policy = needs_approval)]
    async fn refund_by_number(order_id: u32) -> String {
        format!("refunded {order_id}")
    }
    let changed = Registry::<Shop>::builder().tools(tools![refund_by_number, charge]).build().unwrap();
    let Err(error) = changed.run(shop.clone()).durable(&journal, "t-1").await else { panic!("resumed with an incompatible input") };
    assert!(error.to_string().contains("tool `refund` no longer accepts the journaled input"), "{error}");
}

async fn a_journaled_result_that_no_longer_fits_the_output_schema_is_not_passed_on(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    let first = run.execute(vec![call("c1", "balance", json!({}))]).await;
    assert_eq!(first.results[0].structured(), Some(&json!({"cents": 1200})));
    db.exec(r#"UPDATE journal_calls SET structured = '{"cents": "lots"}'"#.to_owned()).await;

    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    let again = run.execute(vec![call("c1", "balance", json!({}))]).await;
    assert_eq!(again.results[0].kind, ResultKind::Internal, "{}", again.results[0].text);
    let reports = desk.reports.lock().unwrap().clone();
    assert!(reports.iter().any(|r| r.kind == ErrorKind::Output && r.error.contains("journaled result does not match")), "{reports:?}");
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn an_idempotency_key_that_panics_or_is_empty_runs_nothing() {
    let db = Db::sqlite("durable_bad_keys");
    let reports = Arc::new(Mutex::new(Vec::<ErrorReport>::new()));
    let sink = reports.clone();
    let pay = DynamicTool::new("pay", "Pay a bill.", json!({"type": "object"}), |_args, ctx: Ctx<Shop>| async move {
        ctx.app().charges.fetch_add(1, Ordering::SeqCst);
        Ok::<_, ToolError>(json!("paid"))
    })
    .idempotency_key(|args| match args["bill"].as_str() {
        Some(bill) => bill.to_owned(),
        None => panic!("no bill"),
    });
    let registry = Registry::<Shop>::builder().tool(pay).on_tool_error(move |report| sink.lock().unwrap().push(report.clone())).build().unwrap();
    let shop = Arc::new(Shop::default());
    let journal = db.open().await;
    let mut run = registry.run(shop.clone()).durable(&journal, "t-1").await.unwrap();
    let step = run.execute(vec![call("c1", "pay", json!({})), call("c2", "pay", json!({"bill": ""}))]).await;
    assert!(step.results.iter().all(|result| result.kind == ResultKind::Internal), "{:?}", step.results);
    assert_eq!(shop.charges.load(Ordering::SeqCst), 0);
    let reports = reports.lock().unwrap().clone();
    assert!(reports.iter().any(|r| r.error.contains("panicked: no bill")), "{reports:?}");
    assert!(reports.iter().any(|r| r.error.contains("empty key")), "{reports:?}");
}

async fn a_finished_run_is_journaled_as_finished_with_its_pending_calls_rejected(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut run, journal) = resume(&db, &desk, &shop, "t-1").await;
    run.execute(vec![call("c1", "refund", json!({"order_id": "A-1"}))]).await;
    run.finish().await;
    assert!(journal.approvals().pending_for_user("u-1").await.unwrap().is_empty(), "no one is asked to decide it any more");
    let (run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    assert_eq!(run.state(), &RunState::Finished { by: None });
    assert!(run.pending().is_empty());
}

/// Ask the customer to confirm an order, in the shop's app.
#[tool(external)]
async fn confirm(order_id: String) -> String;

async fn an_external_call_survives_a_restart_and_is_completed_once(db: Db) {
    let registry = Registry::<Shop>::builder().tools(tools![confirm]).build().unwrap();
    let app = Arc::new(Shop::default());
    let call = || vec![ToolCall::new("c1", "confirm", json!({"order_id": "A-1"}))];
    let journal = db.open().await;
    let mut first = registry.run(app.clone()).durable(&journal, "t-ext").await.unwrap();
    assert_eq!(first.execute(call()).await.results[0].kind, ResultKind::External);

    // Another process resumes the run: the call is still with the host,
    // and a re-sent step does not hand it twice.
    let other = db.open().await;
    let mut resumed = registry.run(app.clone()).durable(&other, "t-ext").await.unwrap();
    assert_eq!(resumed.external().len(), 1);
    assert_eq!(resumed.external()[0].input, json!({"order_id": "A-1"}));
    assert_eq!(resumed.execute(call()).await.results[0].kind, ResultKind::External);
    assert_eq!(resumed.external().len(), 1);
    let done = resumed.external_calls().complete("c1", json!("confirmed")).await.unwrap();
    assert_eq!(done.text, "confirmed");

    // The first process, still live: completed elsewhere, so it settles it.
    assert!(matches!(first.external_calls().complete("c1", json!("twice")).await, Err(RunError::AlreadyDecided { .. })));
    let settled = first.settle_decided().await.unwrap();
    assert_eq!(settled.len(), 1);
    assert_eq!(settled[0].text, "confirmed");
    assert!(first.external().is_empty());

    // A third process re-sending the step reads the result, not a new hand-over.
    let third = db.open().await;
    let mut again = registry.run(app).durable(&third, "t-ext").await.unwrap();
    assert!(again.external().is_empty());
    let replayed = again.execute(call()).await;
    assert_eq!((replayed.results[0].kind, replayed.results[0].text.as_str()), (ResultKind::Success, "confirmed"));
}

async fn a_long_run_keeps_and_journals_each_executed_tool_once(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-long").await;
    for i in 0..60 {
        let step = match i % 3 {
            0 => run.execute(vec![call(&format!("c{i}"), "balance", json!({}))]).await,
            _ => run.execute(vec![call(&format!("c{i}"), "charge", json!({"cents": i}))]).await,
        };
        assert_eq!(step.results[0].kind, ResultKind::Success);
    }
    assert_eq!(run.executed(), ["balance", "charge"], "each tool once, in the order of its first success");
    let stored = db.text("SELECT CAST(COUNT(*) AS TEXT) FROM journal_run_tools WHERE run_id = 't-long'".into()).await;
    assert_eq!(stored, "2");
    let (run, _journal) = resume(&db, &desk, &shop, "t-long").await;
    assert_eq!((run.step(), run.executed()), (60, &["balance".to_owned(), "charge".to_owned()][..]));
}

/// Checks a busy queue.
#[tool(requires("balance"))]
async fn ping(_ctx: Ctx<Shop>) -> String {
    "pong".into()
}

/// The calls of a long run cost what its first calls cost: what the run
/// remembers of its steps does not grow with them. Prints the figures.
#[tokio::test(flavor = "current_thread")]
async fn a_long_runs_calls_cost_what_its_first_calls_cost() {
    // `ping` requires a tool never called: every offer asks for it.
    let registry = Registry::builder().tools(tools![charge, balance, ping]).build().unwrap();
    let mut run = registry.run(Arc::new(Shop::default()));
    let (calls, block) = (50_000, 10_000);
    let mut per_call = Vec::new();
    let mut started = std::time::Instant::now();
    for i in 0..calls {
        let step = run.execute(vec![call(&format!("c{i}"), "charge", json!({"cents": 1}))]).await;
        assert_eq!(step.results[0].kind, ResultKind::Success);
        if (i + 1) % block == 0 {
            per_call.push(started.elapsed() / block as u32);
            started = std::time::Instant::now();
        }
    }
    println!("per call, over calls 0-10k: {:?}; over calls 40k-50k: {:?}", per_call[0], per_call[4]);
    assert_eq!(run.executed(), ["charge"]);
    assert!(per_call[4] < per_call[0] * 3, "calls 40k-50k cost {:?} each, calls 0-10k {:?}", per_call[4], per_call[0]);
}

async fn steps_of_one_run_in_three_processes_at_once_are_all_kept(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let rounds = 5;
    // Three processes resume one run and step it at the same time, each
    // calling a tool of its own.
    let (a, _ja) = resume(&db, &desk, &shop, "t-many").await;
    let (b, _jb) = resume(&db, &desk, &shop, "t-many").await;
    let (c, _jc) = resume(&db, &desk, &shop, "t-many").await;
    let (a, b, c) = tokio::join!(
        steps(a, "a", "charge", json!({"cents": 5}), rounds),
        steps(b, "b", "balance", json!({}), rounds),
        steps(c, "c", "read_label", json!({"label": "x"}), rounds),
    );
    // Each process saw the others' steps by its last one.
    for run in [&a, &b, &c] {
        assert!(run.step() >= rounds, "a process's own steps at least: {}", run.step());
    }
    let (resumed, _journal) = resume(&db, &desk, &shop, "t-many").await;
    let mut executed = resumed.executed().to_vec();
    executed.sort();
    assert_eq!(
        (resumed.step(), executed),
        (3 * rounds, vec!["balance".to_owned(), "charge".to_owned(), "read_label".to_owned()]),
        "every step of every process counted, every executed tool kept"
    );
}

/// `rounds` steps of `run`, each one call of `tool`, ids named after `process`.
async fn steps(mut run: Run<Shop>, process: &str, tool: &str, args: Value, rounds: usize) -> Run<Shop> {
    for round in 0..rounds {
        let step = run.execute(vec![call(&format!("{process}-{round}"), tool, args.clone())]).await;
        assert_eq!(step.results[0].kind, ResultKind::Success, "{}", step.results[0].text);
    }
    run
}

async fn a_run_one_process_finished_stays_finished_after_anothers_late_step(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut first, _journal) = resume(&db, &desk, &shop, "t-fin").await;
    let (mut late, _other) = resume(&db, &desk, &shop, "t-fin").await;
    first.execute(vec![call("c1", "charge", json!({"cents": 5}))]).await;
    first.finish().await;
    // The other process still holds the run as active, and steps it.
    late.execute(vec![call("c2", "balance", json!({}))]).await;
    assert_eq!(late.state(), &RunState::Finished { by: None }, "the late process learns the run is finished");
    assert!(late.offered().is_empty(), "a finished run offers nothing");
    let (resumed, _journal) = resume(&db, &desk, &shop, "t-fin").await;
    assert_eq!((resumed.state(), resumed.step()), (&RunState::Finished { by: None }, 2), "finished, both steps counted");
}

async fn a_re_sent_step_does_not_advance_the_step(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    run.execute(vec![call("c1", "charge", json!({"cents": 5})), call("c2", "balance", json!({}))]).await;
    drop(run);
    // The host crashed before it saw the step through, and re-sends it.
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    assert_eq!(run.step(), 1);
    let again = run.execute(vec![call("c1", "charge", json!({"cents": 5})), call("c2", "balance", json!({}))]).await;
    assert_eq!((run.step(), again.step), (1, 0), "the same step again is not a new step");
    assert_eq!(shop.charges.load(Ordering::SeqCst), 1, "charged once");
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-1").await;
    assert_eq!(run.step(), 1, "nor in the journal");
    // A step with other calls is the next one; so is one with a part of them.
    run.execute(vec![call("c3", "charge", json!({"cents": 5}))]).await;
    run.execute(vec![call("c1", "charge", json!({"cents": 5}))]).await;
    assert_eq!(run.step(), 3);
}

/// Read a sensor that is down; after two failures it is not offered again.
#[tool(max_retries = 2)]
async fn read_sensor(_ctx: Ctx<Shop>) -> Result<String, ToolError> {
    Err(ToolError::not_found("SENSOR_DOWN", "The sensor does not answer."))
}

async fn max_retries_failures_survive_a_resume_and_add_up_across_processes(db: Db) {
    let registry = Registry::<Shop>::builder().tools(tools![read_sensor, balance]).build().unwrap();
    let shop = Arc::new(Shop::default());
    let journal = db.open().await;
    let mut run = registry.run(shop.clone()).durable(&journal, "t-retries").await.unwrap();
    let other = db.open().await;
    let mut elsewhere = registry.run(shop.clone()).durable(&other, "t-retries").await.unwrap();
    let failed = run.execute(vec![call("c1", "read_sensor", json!({}))]).await;
    assert_eq!(failed.results[0].kind, ResultKind::ToolError);
    assert_eq!(run.offered_names(), ["read_sensor", "balance"], "one failure of two allowed");
    drop(run);

    // A resumed run keeps the count; the step re-sent replays its failure,
    // which is not counted again.
    let mut run = registry.run(shop.clone()).durable(&journal, "t-retries").await.unwrap();
    let replayed = run.execute(vec![call("c1", "read_sensor", json!({}))]).await;
    assert_eq!(replayed.results[0].kind, ResultKind::ToolError);
    assert_eq!(run.offered_names(), ["read_sensor", "balance"], "still one failure");
    // One more failure exhausts the tool.
    run.execute(vec![call("c2", "read_sensor", json!({}))]).await;
    assert_eq!(run.offered_names(), ["balance"], "two failures, counted across a resume");
    // Another process, resumed before either failure, learns of both at its next step.
    elsewhere.execute(vec![call("c3", "balance", json!({}))]).await;
    assert_eq!(elsewhere.offered_names(), ["balance"], "the failures of the other process count");
    let refused = elsewhere.execute(vec![call("c4", "read_sensor", json!({}))]).await;
    assert_eq!(refused.results[0].kind, ResultKind::Denied, "{}", refused.results[0].text);
    let resumed = registry.run(shop).durable(&db.open().await, "t-retries").await.unwrap();
    assert_eq!(resumed.offered_names(), ["balance"]);
}

async fn finishing_a_run_rejects_the_calls_another_process_parked_in_it(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut first, journal) = resume(&db, &desk, &shop, "t-fin").await;
    first.execute(vec![call("c1", "refund", json!({"order_id": "A-1"}))]).await;
    let (mut second, _other) = resume(&db, &desk, &shop, "t-fin").await;
    second.execute(vec![call("c2", "refund", json!({"order_id": "A-2"}))]).await;
    // The first process finishes the run: it held only c1 as pending.
    first.finish().await;
    assert!(journal.approvals().pending_for_run("t-fin").await.unwrap().is_empty(), "no call of the run waits any more");
    let refused = tool_runtime::question::decide(&journal, "t-fin", "c2", Decision::Approve, "alice").await.unwrap_err();
    assert!(matches!(&refused, JournalError::AlreadyDecided { by, .. } if by == tool_runtime::journal::GONE_BY), "{refused:?}");
    // The second process, which resumed the run with c1 pending too, reads both rejected.
    let settled: Vec<_> = second.settle_decided().await.unwrap().into_iter().map(|r| (r.call_id.to_string(), r.kind)).collect();
    assert_eq!(settled, [("c1".to_owned(), ResultKind::Rejected), ("c2".to_owned(), ResultKind::Rejected)]);
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 0, "nothing ran on the finished run");
}

async fn a_stale_process_s_late_step_runs_no_effect_on_a_finished_run(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut first, _journal) = resume(&db, &desk, &shop, "t-fin").await;
    let (mut stale, _other) = resume(&db, &desk, &shop, "t-fin").await;
    first.finish().await;
    // The stale process still holds the run as active, and charges.
    let late = stale.execute(vec![call("c1", "charge", json!({"cents": 500}))]).await;
    assert_eq!(shop.charges.load(Ordering::SeqCst), 0, "the charge did not run: {}", late.results[0].text);
    assert_eq!(late.results[0].error_code.as_deref(), Some("RUN_FINISHED"), "{}", late.results[0].text);
    assert_eq!(stale.state(), &RunState::Finished { by: None }, "and the stale process learns the run is finished");
}

async fn a_decision_made_before_a_run_finished_is_not_carried_out_after(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let (mut first, journal) = resume(&db, &desk, &shop, "t-fin").await;
    first.execute(vec![call("c1", "refund", json!({"order_id": "A-1"}))]).await;
    let (mut second, _other) = resume(&db, &desk, &shop, "t-fin").await;
    tool_runtime::question::decide(&journal, "t-fin", "c1", Decision::Approve, "alice").await.unwrap();
    first.finish().await;
    // The other process settles what was decided: the run is finished, so nothing is carried out.
    let settled = second.settle_decided().await.unwrap();
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 0, "{settled:?}");
    assert_eq!(settled[0].error_code.as_deref(), Some("RUN_FINISHED"), "{}", settled[0].text);
}

/// Another process holds the run's record locked for 8 s: a step limited
/// to 1 s returns within it (its save waits no longer), and the step is
/// journaled with the next save (before: the step returned once the lock
/// was released, after 8 s).
async fn a_step_with_a_timeout_returns_within_it_while_the_run_s_record_is_locked(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let journal = db.open().await;
    let mut run = desk.registry.run(shop.clone()).with_step_timeout(Duration::from_secs(1)).durable(&journal, "t-lock").await.unwrap();
    run.execute(vec![call("c1", "charge_quickly", json!({"cents": 5}))]).await;
    let lock = db.lock_runs().await;
    let held = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(8)).await;
        lock.release().await;
    });
    let started = std::time::Instant::now();
    run.execute(vec![call("c2", "charge_quickly", json!({"cents": 5}))]).await;
    let took = started.elapsed();
    println!("the step took {took:?} while the run's record was locked");
    assert!(took < Duration::from_millis(2_500), "the step took {took:?}, past its 1 s limit");
    held.await.unwrap();
    // The step not saved in time is saved with the next one.
    run.execute(vec![call("c3", "balance", json!({}))]).await;
    let (resumed, _journal) = resume(&db, &desk, &shop, "t-lock").await;
    assert_eq!(resumed.step(), 3, "every step counted");
}

/// Two calls' processes died right after journaling their starts (an hour
/// ago). The reconcile hook reads the app's ledger: one bill is in it (it
/// happened: replayed, not paid again), the other is not (it did not
/// happen: the call runs, once, though two processes re-send it at once).
/// Before, a hook could not tell "it did not happen" from "unknown", nor
/// read the app: both read `OUTCOME_UNKNOWN`.
async fn a_reconcile_hook_reads_the_app_and_a_call_it_says_did_not_happen_runs_once(db: Db) {
    let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
    let journal = db.open().await;
    shop.ledger.lock().unwrap().push("B-1".into());
    for (call_id, bill) in [("c1", "B-1"), ("c2", "B-2")] {
        let key = json!(["call", "t-bills", call_id]).to_string();
        journal.calls().start("t-bills", call_id, "pay_bill", &json!({"bill": bill}), &key).await.unwrap();
    }
    db.exec("UPDATE journal_calls SET started_at = started_at - 3600000".to_owned()).await;
    let (mut run, _journal) = resume(&db, &desk, &shop, "t-bills").await;
    let happened = run.execute(vec![call("c1", "pay_bill", json!({"bill": "B-1"}))]).await;
    assert_eq!((happened.results[0].kind, happened.results[0].text.as_str()), (ResultKind::Success, "paid bill B-1"));
    assert_eq!(shop.charges.load(Ordering::SeqCst), 0, "not paid again");
    let (mut other, _other) = resume(&db, &desk, &shop, "t-bills").await;
    let (ran, again) = tokio::join!(
        run.execute(vec![call("c2", "pay_bill", json!({"bill": "B-2"}))]),
        other.execute(vec![call("c2", "pay_bill", json!({"bill": "B-2"}))]),
    );
    for step in [&ran, &again] {
        assert_eq!((step.results[0].kind, step.results[0].text.as_str()), (ResultKind::Success, "paid bill B-2"), "{:?}", step.results);
    }
    assert_eq!(shop.charges.load(Ordering::SeqCst), 1, "the bill that was not paid is paid once");
}

/// Calls and approvals need no run record: an MCP server's stateless calls
/// start and park under run ids it never steps, and a host may write
/// either for any run id. A run opened under such an id still holds them,
/// though the journal creates its record only now.
async fn a_new_run_record_still_resumes_what_was_journaled_under_its_id_before(db: Db) {
    use tool_runtime::memory::RunMemory;
    use tool_runtime::question::{Binding, Question};

    let journal = db.open().await;
    let key = json!(["call", "t-early", "c1"]).to_string();
    let started = journal.calls().start("t-early", "c1", "confirm", &json!({"order_id": "A-1"}), &key).await.unwrap();
    assert_eq!(started, CallStart::Started);
    let input = json!({"order_id": "A-2"});
    let parked = tool_runtime::journal::ParkedCall {
        run_id: "t-early".into(),
        call_id: "c2".into(),
        tool: "refund".into(),
        input: input.clone(),
        user_id: None,
        parked_at: std::time::SystemTime::now(),
        expires_at: None,
        question: Question::Approval(Binding::of_arguments(&input)),
    };
    journal.park(&parked).await.unwrap();
    assert!(journal.runs().load("t-early").await.unwrap().is_none(), "nothing above recorded the run");

    let registry = Registry::<Shop>::builder().tools(tools![confirm, refund]).build().unwrap();
    let run = registry.run(Arc::new(Shop::default())).durable(&db.open().await, "t-early").await.unwrap();
    let external: Vec<_> = run.external().iter().map(|call| (call.id.to_string(), call.input.clone())).collect();
    assert_eq!(external, [("c1".to_owned(), json!({"order_id": "A-1"}))]);
    let pending: Vec<_> = run.pending().iter().map(|p| (p.id().to_string(), p.arguments())).collect();
    assert_eq!(pending, [("c2".to_owned(), input)]);
}

#[cfg(feature = "postgres")]
mod postgres_server {
    use super::*;

    /// The statements sqlx sends on this thread (it logs each under the
    /// target `sqlx::query`), each as its SQL, from [`Statements::capture`]
    /// to [`Statements::sent`].
    ///
    /// The subscriber is the process's default, set once, and keeps what
    /// happens on a capturing thread only. A thread's own default
    /// (`tracing::subscriber::set_default`) would lose statements when
    /// other tests run at once: while it is the only subscriber, tracing
    /// decides whether a callsite is wanted by asking the default of the
    /// thread that reaches it first, and another test's thread has none.
    struct Statements;

    thread_local! {
        /// The statements sent on this thread, while one captures them.
        static SENT: std::cell::RefCell<Option<Vec<String>>> = const { std::cell::RefCell::new(None) };
    }

    impl Statements {
        /// Starts keeping the statements sent on this thread.
        fn capture() -> Statements {
            static SET: std::sync::Once = std::sync::Once::new();
            SET.call_once(|| tracing::subscriber::set_global_default(Recorder).expect("no other test sets the default"));
            SENT.with(|sent| *sent.borrow_mut() = Some(Vec::new()));
            Statements
        }

        /// The statements sent since [`capture`](Self::capture), which stops.
        fn sent(self) -> Vec<String> {
            SENT.with(|sent| sent.borrow_mut().take()).unwrap_or_default()
        }
    }

    /// The process's subscriber: keeps `sqlx::query` events on a capturing
    /// thread (see [`Statements`]).
    struct Recorder;

    impl tracing::Subscriber for Recorder {
        fn register_callsite(&self, metadata: &'static tracing::Metadata<'static>) -> tracing::subscriber::Interest {
            if metadata.target() == "sqlx::query" { tracing::subscriber::Interest::sometimes() } else { tracing::subscriber::Interest::never() }
        }

        fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
            metadata.target() == "sqlx::query" && SENT.with(|sent| sent.borrow().is_some())
        }

        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }

        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

        fn event(&self, event: &tracing::Event<'_>) {
            /// The statement's summary (its first words), and its whole
            /// text when longer.
            #[derive(Default)]
            struct Sql(String, String);
            impl tracing::field::Visit for Sql {
                fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                    match field.name() {
                        "summary" => self.0 = value.to_owned(),
                        "db.statement" => self.1 = value.trim().to_owned(),
                        _ => {}
                    }
                }

                fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
            }
            let mut sql = Sql::default();
            event.record(&mut sql);
            SENT.with(|sent| {
                if let Some(sent) = sent.borrow_mut().as_mut() {
                    sent.push(if sql.1.is_empty() { sql.0 } else { sql.1 });
                }
            });
        }

        fn enter(&self, _: &tracing::span::Id) {}

        fn exit(&self, _: &tracing::span::Id) {}
    }

    /// A new run's first step, one call of a tool, sends 9 statements
    /// (besides the BEGIN and COMMIT of its 2 transactions): `Run::durable` takes
    /// the run's row, claiming it for its user and reading whether it holds
    /// unfinished calls or unsettled approvals, and reads back its tools
    /// and failures; a new run reads neither its calls nor its approvals,
    /// nor its user apart. The call then sends its 7.
    #[tokio::test]
    async fn a_new_runs_first_step_sends_nine_statements() {
        let Some(db) = Db::postgres("durable_statements").await else { return };
        let (desk, shop) = (desk(Duration::from_secs(600)), Arc::new(Shop::default()));
        let journal = db.open().await;
        // The journal's connections and its owner's lease, taken first.
        let mut warm = desk.registry.run(shop.clone()).with_user(UserContext::new("u-1")).durable(&journal, "t-warm").await.unwrap();
        warm.execute(vec![call("c1", "charge", json!({"cents": 5}))]).await;

        let statements = Statements::capture();
        let mut run = desk.registry.run(shop.clone()).with_user(UserContext::new("u-1")).durable(&journal, "t-new").await.unwrap();
        let step = run.execute(vec![call("c1", "charge", json!({"cents": 5}))]).await;
        let statements = statements.sent();
        assert_eq!(step.results[0].kind, ResultKind::Success, "{:?}", step.results);

        // The lease's renewal is the journal's, not the run's.
        let (ends, sent): (Vec<String>, Vec<String>) =
            statements.into_iter().filter(|sql| !sql.contains("journal_owners")).partition(|sql| sql == "COMMIT");
        assert_eq!(sent.len(), 9, "{sent:#?}");
        assert_eq!(ends.len(), 2, "{sent:#?}");
        assert!(
            !sent.iter().any(|sql| sql.starts_with("SELECT") && sql.contains("FROM journal_calls WHERE run_id")),
            "a new run read its calls: {sent:#?}"
        );
        assert!(
            !sent.iter().any(|sql| sql.starts_with("SELECT") && sql.contains("FROM journal_approvals WHERE")),
            "a new run read its approvals: {sent:#?}"
        );
        assert!(!sent.iter().any(|sql| sql.starts_with("SELECT user_id")), "a new run read its user apart: {sent:#?}");
        assert_eq!(db.open().await.runs().load("t-new").await.unwrap().map(|run| run.step), Some(1));
    }
}

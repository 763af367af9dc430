//! Identities across processes on one journal (SQLite and Postgres, as in
//! `journal.rs`): the ids the runtime makes are unique across processes,
//! so a new process's id-less call never reads an earlier process's
//! result; and an approval belongs to one run's one call, so deciding one
//! run's call never decides another run's call of the same id.
#![cfg(any(feature = "sqlite", feature = "postgres"))]

use crate::db;

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tool_runtime::journal::Journal;
use tool_runtime::prelude::*;
use tool_runtime::{ResultKind, ToolCall};

use db::Db;

on_both_backends!(
    "identity_":
    each_process_s_id_less_call_runs_its_own_effect,
    approving_one_run_s_call_never_approves_another_run_s_call_of_the_same_id,
    two_tenants_whose_inputs_give_one_idempotency_key_each_get_their_own_effect,
    a_keyed_call_re_sent_by_a_process_acting_for_another_user_is_the_same_call,
);

#[derive(Default)]
struct Bank {
    charges: AtomicUsize,
    deleted: AtomicUsize,
}

/// Charge an order.
#[tool]
async fn charge(ctx: Ctx<Bank>, order: String) -> String {
    ctx.app().charges.fetch_add(1, Ordering::SeqCst);
    format!("charged {order}")
}

/// Delete the user's account; a human approves it.
#[tool(policy = needs_approval, destructive)]
async fn delete_account(ctx: Ctx<Bank>) -> String {
    ctx.app().deleted.fetch_add(1, Ordering::SeqCst);
    "account deleted".into()
}

/// Refund an order; a human approves it.
#[tool(policy = needs_approval)]
async fn refund(order: String) -> String {
    format!("refunded {order}")
}

/// Pay an invoice, once per invoice number.
#[tool(idempotency_key = invoice_number)]
async fn pay_invoice(ctx: Ctx<Bank>, invoice: String, cents: u32) -> String {
    ctx.app().charges.fetch_add(1, Ordering::SeqCst);
    format!("paid {invoice}: {cents}")
}

fn invoice_number(input: &pay_invoice) -> String {
    input.invoice.clone()
}

fn registry() -> Registry<Bank> {
    Registry::builder().tools(tools![charge, delete_account, refund, pay_invoice]).build().unwrap()
}

/// One request of a deployment that starts a process per request (a
/// serverless function): the run is resumed by id and the model's call
/// comes without an id (as Gemini's may), so the runtime makes one.
#[test]
#[ignore = "run by each_process_s_id_less_call_runs_its_own_effect in child processes"]
fn one_request_child() {
    let (Ok(url), Ok(run_id), Ok(order)) = (std::env::var("IDENTITY_URL"), std::env::var("IDENTITY_RUN"), std::env::var("IDENTITY_ORDER")) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let journal = Journal::open(&url).await.unwrap();
        let bank = Arc::new(Bank::default());
        let mut run = registry().run(bank.clone()).durable(&journal, &run_id).await.unwrap();
        let step = run.execute(vec![ToolCall::new("", "charge", json!({"order": order}))]).await;
        let result = &step.results[0];
        println!("RESULT {:?} {} {}", result.kind, bank.charges.load(Ordering::SeqCst), result.text);
        journal.close().await;
    });
}

async fn each_process_s_id_less_call_runs_its_own_effect(db: Db) {
    // `IDENTITY_REQUESTS` scales it up; three show it.
    let requests: usize = std::env::var("IDENTITY_REQUESTS").ok().and_then(|n| n.parse().ok()).unwrap_or(3);
    let run_id = format!("gemini-{}", std::process::id());
    let (mut own, mut ran, mut wrong) = (0, 0, Vec::new());
    for request in 1..=requests {
        let order = format!("order-{request}");
        let output = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "identity::one_request_child", "--nocapture", "--test-threads=1"])
            .env("IDENTITY_URL", db.url())
            .env("IDENTITY_RUN", &run_id)
            .env("IDENTITY_ORDER", &order)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let line =
            stdout.lines().find_map(|line| Some(line.split_once("RESULT ")?.1)).unwrap_or_else(|| panic!("no result from the child: {stdout}"));
        let (kind, rest) = line.split_once(' ').unwrap();
        let (runs, text) = rest.split_once(' ').unwrap();
        ran += runs.parse::<usize>().unwrap();
        if (kind, text) == ("Success", format!("charged {order}").as_str()) {
            own += 1;
        } else {
            wrong.push(format!("{order} read {kind} {text:?}"));
        }
    }
    eprintln!("{requests} requests, one process each: {own} read their own result, the tool ran {ran} times");
    assert!(wrong.is_empty(), "requests read another request's result: {wrong:?}");
    assert_eq!(ran, requests, "each request's charge ran once");
    let calls = db.open().await.calls().of_run(&run_id).await.unwrap();
    assert_eq!(calls.len(), requests, "one effect per call: {calls:?}");
}

/// Alice's run and Bob's run each hold a call `call_1` waiting for a human
/// (their hosts number calls from 1). Bob's host approves Bob's refund:
/// Alice's `delete_account` still waits, undecided, and never runs.
async fn approving_one_run_s_call_never_approves_another_run_s_call_of_the_same_id(db: Db) {
    let (alices_host, bobs_host) = (db.open().await, db.open().await);
    let alice = Arc::new(Bank::default());
    let mut alices_run = registry().run(alice.clone()).with_user(UserContext::new("alice")).durable(&alices_host, "alice-run").await.unwrap();
    let step = alices_run.execute(vec![ToolCall::new("call_1", "delete_account", json!({}))]).await;
    assert_eq!(step.results[0].kind, ResultKind::PendingApproval);

    let mut bobs_run = registry().run(Arc::new(Bank::default())).with_user(UserContext::new("bob")).durable(&bobs_host, "bob-run").await.unwrap();
    let step = bobs_run.execute(vec![ToolCall::new("call_1", "refund", json!({"order": "B-7"}))]).await;
    assert_eq!(step.results[0].kind, ResultKind::PendingApproval, "{}", step.results[0].text);
    let approved = bobs_run.approvals().approve("call_1").await.unwrap();
    assert_eq!(approved.text, "refunded B-7");

    // Alice's run, in its own process, settles what was decided for it: nothing.
    let mut alices_run = registry().run(alice.clone()).with_user(UserContext::new("alice")).durable(&alices_host, "alice-run").await.unwrap();
    let settled = alices_run.settle_decided().await.unwrap();
    assert!(settled.is_empty(), "bob's approval settled alice's call: {settled:?}");
    assert_eq!(alice.deleted.load(Ordering::SeqCst), 0, "alice's account was deleted on bob's approval");
    assert_eq!(alices_run.pending().len(), 1);
    let alices = alices_host.approvals().get("alice-run", "call_1").await.unwrap().unwrap();
    assert_eq!((alices.call.tool.as_str(), alices.decided), ("delete_account", None));
}

/// Two tenants both have an invoice numbered `INV-1` (their numbering is
/// their own): each payment runs and reads its own result, while one
/// tenant paying the same invoice twice pays it once.
async fn two_tenants_whose_inputs_give_one_idempotency_key_each_get_their_own_effect(db: Db) {
    let journal = db.open().await;
    let bank = Arc::new(Bank::default());
    let mut acme = registry().run(bank.clone()).with_user(UserContext::new("acme")).durable(&journal, "acme-run").await.unwrap();
    let mut globex = registry().run(bank.clone()).with_user(UserContext::new("globex")).durable(&journal, "globex-run").await.unwrap();
    let paid = acme.execute(vec![ToolCall::new("c1", "pay_invoice", json!({"invoice": "INV-1", "cents": 100}))]).await;
    assert_eq!(paid.results[0].text, "paid INV-1: 100");
    let theirs = globex.execute(vec![ToolCall::new("c1", "pay_invoice", json!({"invoice": "INV-1", "cents": 900}))]).await;
    assert_eq!(theirs.results[0].text, "paid INV-1: 900", "globex read acme's payment");
    assert_eq!(bank.charges.load(Ordering::SeqCst), 2);
    // The same tenant's key still stands for one effect, in any of its runs.
    let mut acme_later = registry().run(bank.clone()).with_user(UserContext::new("acme")).durable(&journal, "acme-later").await.unwrap();
    let again = acme_later.execute(vec![ToolCall::new("c7", "pay_invoice", json!({"invoice": "INV-1", "cents": 100}))]).await;
    assert_eq!(again.results[0].text, "paid INV-1: 100");
    assert_eq!(bank.charges.load(Ordering::SeqCst), 2, "acme's invoice was paid twice");
}

/// Acme's run pays an invoice; a supervisor's process (another user)
/// resumes the run and re-sends the same call, then the model pays the
/// same invoice again in it: the run's user, journaled with the run, keys
/// its effects, so both replay the payment (before: the key held the
/// sender's user, and the supervisor paid it twice more).
async fn a_keyed_call_re_sent_by_a_process_acting_for_another_user_is_the_same_call(db: Db) {
    let journal = db.open().await;
    let bank = Arc::new(Bank::default());
    let pay = |id: &str| vec![ToolCall::new(id, "pay_invoice", json!({"invoice": "INV-7", "cents": 700}))];
    let mut acme = registry().run(bank.clone()).with_user(UserContext::new("acme")).durable(&journal, "acme-run").await.unwrap();
    assert_eq!(acme.execute(pay("c1")).await.results[0].text, "paid INV-7: 700");
    let supervisor = db.open().await;
    let mut resumed = registry().run(bank.clone()).with_user(UserContext::new("supervisor")).durable(&supervisor, "acme-run").await.unwrap();
    let again = resumed.execute(pay("c1")).await;
    assert_eq!(again.results[0].text, "paid INV-7: 700", "{}", again.results[0].text);
    let later = resumed.execute(pay("c2")).await;
    assert_eq!(later.results[0].text, "paid INV-7: 700", "{}", later.results[0].text);
    assert_eq!(bank.charges.load(Ordering::SeqCst), 1, "the invoice was paid once");
}

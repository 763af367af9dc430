//! A journal written by every released schema, upgraded by this
//! tool-runtime (SQLite and Postgres, as in `journal.rs`): a database is
//! made at version N by that version's migrations, and the rows a run of
//! that version left are written as its code wrote them (a finished call,
//! a finished keyed effect and one in doubt, keyed as that version keyed
//! them, and a call waiting for approval). Opened by this code, the run
//! goes on: re-sent, its calls replay their journaled results; the same
//! idempotency key in another run of the same user replays the effect; a
//! call in doubt stays in doubt; the waiting call is decided and runs once.
//! Nothing made before the upgrade runs again (before: a keyed effect
//! journaled before keys held the user, or by another user's process, ran
//! again).
#![cfg(any(feature = "sqlite", feature = "postgres"))]

use crate::db;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tool_runtime::journal::{Decision, Journal};
use tool_runtime::prelude::*;
use tool_runtime::{ResultKind, ToolCall};

use db::Db;

on_both_backends!(
    "upgrades_":
    from_version_1,
    from_version_2,
    from_version_3,
    from_version_4,
    from_version_5,
    from_version_6,
    from_version_7,
    from_version_8,
);

async fn from_version_1(db: Db) {
    upgrades_from(db, 1).await;
}
async fn from_version_2(db: Db) {
    upgrades_from(db, 2).await;
}
async fn from_version_3(db: Db) {
    upgrades_from(db, 3).await;
}
async fn from_version_4(db: Db) {
    upgrades_from(db, 4).await;
}
async fn from_version_5(db: Db) {
    upgrades_from(db, 5).await;
}
async fn from_version_6(db: Db) {
    upgrades_from(db, 6).await;
}
async fn from_version_7(db: Db) {
    upgrades_from(db, 7).await;
}
async fn from_version_8(db: Db) {
    upgrades_from(db, 8).await;
}

/// What the tools did, counted outside the journal.
#[derive(Default)]
struct Bank {
    charges: AtomicUsize,
    payments: AtomicUsize,
    refunds: AtomicUsize,
}

/// Charge a card.
#[tool]
async fn charge(ctx: Ctx<Bank>, cents: u32) -> String {
    ctx.app().charges.fetch_add(1, Ordering::SeqCst);
    format!("charged {cents}")
}

/// Pay an invoice, once per invoice number.
#[tool(idempotency_key = invoice_number)]
async fn pay_invoice(ctx: Ctx<Bank>, invoice: String) -> String {
    ctx.app().payments.fetch_add(1, Ordering::SeqCst);
    format!("paid {invoice}")
}

fn invoice_number(input: &pay_invoice) -> String {
    input.invoice.clone()
}

/// Refund an order; a human approves it.
#[tool(policy = needs_approval)]
async fn refund(ctx: Ctx<Bank>, order: String) -> String {
    ctx.app().refunds.fetch_add(1, Ordering::SeqCst);
    format!("refunded {order}")
}

fn registry() -> Registry<Bank> {
    Registry::builder().tools(tools![charge, pay_invoice, refund]).build().unwrap()
}

/// The migrations of one backend, in order, as released.
const SQLITE: [&str; 8] = [
    include_str!("../src/journal/sql/sqlite/0001_journal.sql"),
    include_str!("../src/journal/sql/sqlite/0002_run_tools.sql"),
    include_str!("../src/journal/sql/sqlite/0003_approvals_by_run.sql"),
    include_str!("../src/journal/sql/sqlite/0004_run_steps.sql"),
    include_str!("../src/journal/sql/sqlite/0005_inbox.sql"),
    include_str!("../src/journal/sql/sqlite/0006_tasks.sql"),
    include_str!("../src/journal/sql/sqlite/0007_inbox_notify_approved_calls.sql"),
    include_str!("../src/journal/sql/sqlite/0008_clock_users_owners_replays.sql"),
];
const POSTGRES: [&str; 8] = [
    include_str!("../src/journal/sql/postgres/0001_journal.sql"),
    include_str!("../src/journal/sql/postgres/0002_run_tools.sql"),
    include_str!("../src/journal/sql/postgres/0003_approvals_by_run.sql"),
    include_str!("../src/journal/sql/postgres/0004_run_steps.sql"),
    include_str!("../src/journal/sql/postgres/0005_inbox.sql"),
    include_str!("../src/journal/sql/postgres/0006_tasks.sql"),
    include_str!("../src/journal/sql/postgres/0007_inbox_notify_approved_calls.sql"),
    include_str!("../src/journal/sql/postgres/0008_clock_users_owners_replays.sql"),
];

/// The effect key of a keyed call, as version `version` made it: the
/// tool and the key until version 2, the caller's user between them from
/// version 3 on.
fn keyed(version: usize, user: &str, key: &str) -> String {
    match version {
        1 | 2 => json!(["tool", "pay_invoice", key]),
        _ => json!(["tool", "pay_invoice", user, key]),
    }
    .to_string()
}

/// The database at `version`, with what a run of acme's left in it.
async fn written_by(db: &Db, version: usize) {
    let migrations = if db.url().starts_with("postgres") { &POSTGRES[..version] } else { &SQLITE[..version] };
    let applied: Vec<String> = (1..=version).map(|v| format!("({v}, 0)")).collect();
    let run = match version {
        1 => {
            "INSERT INTO journal_runs (run_id, step, executed, state, ended_by, updated_at) VALUES ('t-up', 3, '[\"charge\", \"pay_invoice\"]', 'active', NULL, 1000)"
        }
        _ => "INSERT INTO journal_runs (run_id, step, state, ended_by, updated_at) VALUES ('t-up', 3, 'active', NULL, 1000)",
    };
    let tools = match version {
        1 => String::new(),
        _ => "INSERT INTO journal_run_tools (run_id, ordinal, tool) VALUES ('t-up', 0, 'charge'), ('t-up', 1, 'pay_invoice');".to_owned(),
    };
    let columns = "effect_key, run_id, call_id, tool, input, started_at, finished_at, kind, text, truncated, ends_run";
    let (paid, in_doubt) = (keyed(version, "acme", "INV-1"), keyed(version, "acme", "INV-2"));
    db.exec(format!(
        "{migrations};
         CREATE TABLE journal_schema (version BIGINT PRIMARY KEY NOT NULL, applied_at BIGINT NOT NULL);
         INSERT INTO journal_schema (version, applied_at) VALUES {applied};
         {run};
         {tools}
         INSERT INTO journal_calls ({columns}) VALUES
             ('[\"call\",\"t-up\",\"c1\"]', 't-up', 'c1', 'charge', '{{\"cents\":5}}', 1000, 1001, 'success', 'charged 5', false, false),
             ('{paid}', 't-up', 'c2', 'pay_invoice', '{{\"invoice\":\"INV-1\"}}', 1002, 1003, 'success', 'paid INV-1', false, false),
             ('{in_doubt}', 't-up', 'c3', 'pay_invoice', '{{\"invoice\":\"INV-2\"}}', 1004, NULL, NULL, NULL, NULL, NULL);
         INSERT INTO journal_approvals (call_id, run_id, tool, input, user_id, parked_at, expires_at) VALUES
             ('c4', 't-up', 'refund', '{{\"order\":\"A-1\"}}', 'acme', 1005, NULL);",
        migrations = migrations.join(";\n"),
        applied = applied.join(", "),
    ))
    .await;
}

async fn upgrades_from(db: Db, version: usize) {
    written_by(&db, version).await;
    let journal = db.open().await;
    let bank = Arc::new(Bank::default());
    let step = |id: &str, tool: &str, args: serde_json::Value| vec![ToolCall::new(id, tool, args)];
    let paid = || json!({"invoice": "INV-1"});

    // The run, resumed first by a supervisor's process, then by acme's.
    let supervisor = db.open().await;
    let mut run = registry().run(bank.clone()).with_user(UserContext::new("supervisor")).durable(&supervisor, "t-up").await.unwrap();
    assert_eq!((run.step(), run.executed()), (3, &["charge".to_owned(), "pay_invoice".to_owned()][..]), "version {version}");
    let pending: Vec<_> = run.pending().iter().map(|p| p.id().to_string()).collect();
    assert_eq!(pending, ["c4"], "version {version}");
    // Re-sent, each call replays its journaled result.
    let charged = run.execute(step("c1", "charge", json!({"cents": 5}))).await;
    assert_eq!((charged.results[0].kind, charged.results[0].text.as_str()), (ResultKind::Success, "charged 5"), "version {version}");
    let again = run.execute(step("c2", "pay_invoice", paid())).await;
    assert_eq!(again.results[0].text, "paid INV-1", "version {version}");
    let mut run = registry().run(bank.clone()).with_user(UserContext::new("acme")).durable(&journal, "t-up").await.unwrap();
    let again = run.execute(step("c2", "pay_invoice", paid())).await;
    assert_eq!(again.results[0].text, "paid INV-1", "version {version}");
    // The call in doubt stays in doubt: not paid again.
    let doubt = run.execute(step("c3", "pay_invoice", json!({"invoice": "INV-2"}))).await;
    assert_eq!(doubt.results[0].error_code.as_deref(), Some("OUTCOME_UNKNOWN"), "version {version}: {}", doubt.results[0].text);
    // The same invoice in another run of acme's is the same payment.
    let mut later = registry().run(bank.clone()).with_user(UserContext::new("acme")).durable(&journal, "t-later").await.unwrap();
    let later = later.execute(step("k1", "pay_invoice", paid())).await;
    assert_eq!(later.results[0].text, "paid INV-1", "version {version}");
    assert_eq!((bank.charges.load(Ordering::SeqCst), bank.payments.load(Ordering::SeqCst)), (0, 0), "version {version}: nothing ran again");
    // The call that waited for approval through the upgrade (bound to its
    // arguments and its user, as every approval before version 9) runs
    // once, in the process of the user it was parked for.
    tool_runtime::question::decide(&journal, "t-up", "c4", Decision::Approve, "alice").await.unwrap();
    let settled = run.settle_decided().await.unwrap();
    assert_eq!(settled[0].text, "refunded A-1", "version {version}");
    assert_eq!(bank.refunds.load(Ordering::SeqCst), 1, "version {version}");
    if version >= 3 {
        // Since version 3 an idempotency key is a user's: another tenant's
        // invoice of the same number is its own payment.
        let mut globex = registry().run(bank.clone()).with_user(UserContext::new("globex")).durable(&journal, "t-globex").await.unwrap();
        assert_eq!(globex.execute(step("k1", "pay_invoice", paid())).await.results[0].text, "paid INV-1");
        assert_eq!(bank.payments.load(Ordering::SeqCst), 1, "version {version}");
    }
    assert_eq!(Journal::SCHEMA_VERSION, 9);
}

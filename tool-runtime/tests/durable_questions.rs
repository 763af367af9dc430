//! A tool's questions in durable runs (SQLite and Postgres, as in
//! `journal.rs`): a question is parked in the journal like an approval, the
//! run stops there and goes on when it is answered, by the host's API, by
//! any process through `question::decide`, in whatever process resumes the
//! run; the call runs again from the top, and an effect made before the
//! question (`Ctx::once`) is not made again. Each "process" is a journal
//! of its own on the same database.
#![cfg(any(feature = "sqlite", feature = "postgres"))]

use crate::db;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use tool_runtime::journal::{CallStart, Decision, JournalError, ParkedCall};
use tool_runtime::memory::{Ask, Question, RunMemory};
use tool_runtime::prelude::*;
use tool_runtime::question::Reply;
use tool_runtime::{Form, ResultKind, ToolCall};

use db::Db;

on_both_backends!(
    "asked_":
    a_question_parks_in_the_journal_and_is_answered_in_another_process,
    the_host_answers_a_resumed_run_s_question_through_the_run,
    a_question_declined_out_of_band_is_read_as_declined,
    a_question_no_one_answers_in_time_ends_its_call,
    a_finished_run_s_question_is_rejected_and_no_one_may_answer_it,
);

/// What the tools did, counted outside the journal.
#[derive(Default)]
struct Shop {
    holds: AtomicUsize,
    refunds: AtomicUsize,
}

#[tool_data(Deserialize, JsonSchema)]
#[derive(Form)]
struct Confirm {
    /// Go ahead with the refund.
    go_ahead: bool,
}

/// Refund an order: hold the money once, then ask its owner.
#[tool]
async fn refund(ctx: Ctx<Shop>, order: String) -> Result<String, ToolError> {
    let shop = ctx.app();
    let hold = ctx.once("hold", async { shop.holds.fetch_add(1, Ordering::SeqCst) }).await?;
    match ctx.elicit::<Confirm>(format!("Refund {order}?")).await? {
        Reply::Answered(Confirm { go_ahead: true }) => {
            shop.refunds.fetch_add(1, Ordering::SeqCst);
            Ok(format!("refunded {order} (hold {hold})"))
        }
        Reply::Answered(_) => Ok(format!("hold {hold} released")),
        Reply::Declined => Ok("declined".into()),
        Reply::Cancelled => Ok("cancelled".into()),
    }
}

fn registry(ttl: Duration) -> Registry<Shop> {
    Registry::builder().tools(tools![refund]).approval_ttl(ttl).build().unwrap()
}

/// A durable run `t-1` of user u-1 in `journal`.
async fn run(journal: &tool_runtime::journal::Journal, shop: &Arc<Shop>, ttl: Duration) -> Run<Shop> {
    registry(ttl).run(shop.clone()).with_user(UserContext::new("u-1")).durable(journal, "t-1").await.unwrap()
}

const HOUR: Duration = Duration::from_secs(3_600);

/// The refund of A-1 asked in one process, which is then gone.
async fn asked(db: &Db, shop: &Arc<Shop>, ttl: Duration) {
    let journal = db.open().await;
    let mut first = run(&journal, shop, ttl).await;
    let step = first.execute(vec![ToolCall::new("c1", "refund", json!({"order": "A-1"}))]).await;
    assert_eq!(step.results[0].error_code.as_deref(), Some("ANSWER_PENDING"), "{}", step.results[0].text);
    journal.close().await;
}

async fn a_question_parks_in_the_journal_and_is_answered_in_another_process(db: Db) {
    let shop = Arc::new(Shop::default());
    asked(&db, &shop, HOUR).await;
    let admin = db.open().await;
    // Parked like an approval: the call's arguments, its user, what it asks.
    let parked: ParkedCall = admin.approval("t-1", "c1#1").await.unwrap().unwrap().call;
    assert_eq!((parked.tool.as_str(), parked.input.clone(), parked.user_id.as_deref()), ("refund", json!({"order": "A-1"}), Some("u-1")));
    let Question::Tool { call_id, n, ask: Ask::Form { message, schema, .. } } = &parked.question else { panic!("{:?}", parked.question) };
    assert_eq!((call_id.as_str(), *n, message.as_str()), ("c1", 1, "Refund A-1?"));
    assert_eq!(schema["properties"]["go_ahead"]["type"], "boolean");
    // The call stopped at the question: its start went with it, and only
    // the effect made once is journaled, finished.
    let calls = admin.calls().of_run("t-1").await.unwrap();
    assert_eq!(calls.iter().map(|call| call.call_id.as_str()).collect::<Vec<_>>(), ["c1@hold"], "{calls:?}");
    assert!(matches!(calls[0].outcome, CallStart::Finished(_)));
    // An answer that does not fit the form records nothing.
    let unfit = tool_runtime::question::decide(&admin, "t-1", "c1#1", Decision::Answer(json!({"go_ahead": "yes"})), "alice").await.unwrap_err();
    assert!(matches!(unfit, JournalError::Unanswerable { .. }), "{unfit:?}");
    tool_runtime::question::decide(&admin, "t-1", "c1#1", Decision::Answer(json!({"go_ahead": true})), "alice").await.unwrap();

    let journal = db.open().await;
    let mut resumed = run(&journal, &shop, HOUR).await;
    let questions: Vec<_> = resumed.pending()[0].questions().map(|(id, _)| id.to_owned()).collect();
    assert_eq!(questions, ["c1#1"]);
    let settled = resumed.settle_decided().await.unwrap();
    assert_eq!((settled[0].kind, settled[0].text.as_str()), (ResultKind::Success, "refunded A-1 (hold 0)"), "{settled:?}");
    assert_eq!((shop.holds.load(Ordering::SeqCst), shop.refunds.load(Ordering::SeqCst)), (1, 1), "the hold was not made again");
    let call = journal.calls().of_run("t-1").await.unwrap().into_iter().find(|call| call.call_id == "c1").expect("the call is journaled");
    assert!(matches!(call.outcome, CallStart::Finished(_)), "{call:?}");
    // Settled: a run resumed now holds nothing, and a re-sent step replays.
    let mut again = run(&journal, &shop, HOUR).await;
    assert!(again.pending().is_empty());
    let replayed = again.execute(vec![ToolCall::new("c1", "refund", json!({"order": "A-1"}))]).await;
    assert_eq!(replayed.results[0].text, "refunded A-1 (hold 0)");
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 1);
}

async fn the_host_answers_a_resumed_run_s_question_through_the_run(db: Db) {
    let shop = Arc::new(Shop::default());
    asked(&db, &shop, HOUR).await;
    let journal = db.open().await;
    let mut resumed = run(&journal, &shop, HOUR).await;
    let result = resumed.approvals().answer("c1#1", json!({"go_ahead": false})).await.unwrap();
    assert_eq!(result.text, "hold 0 released");
    let answered = journal.approval("t-1", "c1#1").await.unwrap().unwrap().decided.unwrap();
    assert_eq!((answered.decision, answered.by.as_str()), (Decision::Answer(json!({"go_ahead": false})), "u-1"));
    assert_eq!(shop.holds.load(Ordering::SeqCst), 1);
}

async fn a_question_declined_out_of_band_is_read_as_declined(db: Db) {
    let shop = Arc::new(Shop::default());
    asked(&db, &shop, HOUR).await;
    tool_runtime::question::decide(&db.open().await, "t-1", "c1#1", Decision::Reject("No.".into()), "alice").await.unwrap();
    let journal = db.open().await;
    let settled = run(&journal, &shop, HOUR).await.settle_decided().await.unwrap();
    assert_eq!(settled[0].text, "declined");
}

async fn a_question_no_one_answers_in_time_ends_its_call(db: Db) {
    let shop = Arc::new(Shop::default());
    let ttl = Duration::from_millis(300);
    asked(&db, &shop, ttl).await;
    tokio::time::sleep(ttl + Duration::from_millis(100)).await;
    let journal = db.open().await;
    let late = tool_runtime::question::decide(&journal, "t-1", "c1#1", Decision::Answer(json!({"go_ahead": true})), "alice").await.unwrap_err();
    assert!(matches!(late, JournalError::ApprovalExpired { .. }), "{late:?}");
    let settled = run(&journal, &shop, ttl).await.settle_decided().await.unwrap();
    assert_eq!(settled[0].error_code.as_deref(), Some("QUESTION_EXPIRED"), "{settled:?}");
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 0);
}

async fn a_finished_run_s_question_is_rejected_and_no_one_may_answer_it(db: Db) {
    let shop = Arc::new(Shop::default());
    asked(&db, &shop, HOUR).await;
    let journal = db.open().await;
    run(&journal, &shop, HOUR).await.finish().await;
    let told = tool_runtime::question::decide(&journal, "t-1", "c1#1", Decision::Answer(json!({"go_ahead": true})), "alice").await.unwrap_err();
    assert!(matches!(&told, JournalError::AlreadyDecided { by, .. } if by == tool_runtime::journal::GONE_BY), "{told:?}");
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 0);
}

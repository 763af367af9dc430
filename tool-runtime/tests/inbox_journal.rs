//! What the approvals inbox reads from the journal, on SQLite and on
//! Postgres: the waiting calls newest first, the decisions newest first
//! with their outcome, both a page at a time and of some users only, the
//! change mark, and Postgres's notifications.

use crate::db;

use std::time::{Duration, SystemTime};

use serde_json::json;
use tool_runtime::ResultKind;
use tool_runtime::journal::{Decision, InboxCursor, InboxMark, InboxPage, Journal, JournaledResult, ParkedCall};

use db::Db;

on_both_backends!(
    "inbox_":
    waiting_calls_are_listed_newest_first_without_the_expired_or_decided,
    decisions_are_listed_newest_first_with_who_how_and_the_outcome,
    pages_follow_their_cursor_and_keep_to_their_users,
    the_mark_changes_with_each_write_an_inbox_shows,
    postgres_tells_a_listener_of_each_change,
);

fn at(ms: u64) -> SystemTime {
    SystemTime::now() - Duration::from_secs(3600) + Duration::from_millis(ms)
}

fn call(run_id: &str, call_id: &str, parked_at: SystemTime, expires_at: SystemTime) -> ParkedCall {
    ParkedCall {
        run_id: run_id.into(),
        call_id: call_id.into(),
        tool: "refund".into(),
        input: json!({"order_id": "A-1", "amount_cents": 100}),
        user_id: Some("c-17".into()),
        parked_at,
        expires_at: Some(expires_at),
        question: tool_runtime::question::Question::Approval(tool_runtime::question::Binding::of_arguments(
            &json!({"order_id": "A-1", "amount_cents": 100}),
        )),
    }
}

fn later() -> SystemTime {
    SystemTime::now() + Duration::from_secs(600)
}

async fn waiting_calls_are_listed_newest_first_without_the_expired_or_decided(db: Db) {
    let journal = db.open().await;
    // The journal's clock stamps each: parked in this order, a moment apart.
    tool_runtime::question::park(&journal, &call("r1", "old", at(0), later())).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    tool_runtime::question::park(&journal, &call("r2", "new", at(10), later())).await.unwrap();
    tool_runtime::question::park(&journal, &call("r3", "gone", at(20), at(20) + Duration::from_millis(50))).await.unwrap();
    tool_runtime::question::park(&journal, &call("r4", "decided", at(30), later())).await.unwrap();
    tool_runtime::question::decide(&journal, "r4", "decided", Decision::Approve, "dana").await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let waiting = journal.inbox().pending_newest(SystemTime::now(), 100).await.unwrap();
    let ids: Vec<&str> = waiting.iter().map(|approval| approval.call.call_id.as_str()).collect();
    assert_eq!(ids, ["new", "old"]);
    assert_eq!(journal.inbox().pending_newest(SystemTime::now(), 1).await.unwrap().len(), 1, "the limit holds");
    journal.close().await;
}

async fn pages_follow_their_cursor_and_keep_to_their_users(db: Db) {
    let journal = db.open().await;
    // 30 calls parked in one millisecond (ties go by run, then call), for
    // three users in turn; then the even ones decided, in order.
    let parked = at(0);
    for n in 0..30 {
        let mut call = call(&format!("r{n:02}"), &format!("c{n:02}"), parked, later());
        call.user_id = Some(format!("u{}", n % 3));
        tool_runtime::question::park(&journal, &call).await.unwrap();
    }
    for n in (0..30).step_by(2) {
        tool_runtime::question::decide(&journal, &format!("r{n:02}"), &format!("c{n:02}"), Decision::Approve, "dana").await.unwrap();
    }
    let ids = |numbers: &mut dyn Iterator<Item = usize>| numbers.map(|n| format!("c{n:02}")).collect::<Vec<_>>();
    let waiting_pages = async |users: Option<&[String]>| {
        let (mut seen, mut after): (Vec<String>, Option<InboxCursor>) = (Vec::new(), None);
        loop {
            let page = InboxPage { users, after: after.as_ref(), limit: 4 };
            let paged = journal.inbox().pending_page(SystemTime::now(), &page).await.unwrap();
            assert!(paged.rows.len() <= 4);
            seen.extend(paged.rows.into_iter().map(|approval| approval.call.call_id));
            match paged.next {
                Some(next) => after = Some(next),
                None => return seen,
            }
        }
    };
    assert_eq!(waiting_pages(None).await, ids(&mut (1..30).step_by(2).rev()), "every waiting call once, newest first");
    let u1 = ["u1".to_owned()];
    assert_eq!(waiting_pages(Some(&u1)).await, ids(&mut (1..30).step_by(2).rev().filter(|n| n % 3 == 1)));
    assert_eq!(waiting_pages(Some(&[])).await, Vec::<String>::new(), "no users, no calls");

    let mut decided = Vec::new();
    let mut after: Option<InboxCursor> = None;
    let both = ["u0".to_owned(), "u2".to_owned()];
    loop {
        let page = InboxPage { users: Some(&both), after: after.as_ref(), limit: 3 };
        let paged = journal.inbox().decisions_page(&page).await.unwrap();
        decided.extend(paged.rows.into_iter().map(|decision| decision.approval.call.call_id));
        match paged.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    let expected = ids(&mut (0..30).step_by(2).rev().filter(|n| n % 3 != 1));
    assert_eq!(decided, expected, "the decisions of u0 and u2, newest first");
    journal.close().await;
}

async fn decisions_are_listed_newest_first_with_who_how_and_the_outcome(db: Db) {
    let journal = db.open().await;
    tool_runtime::question::park(&journal, &call("r1", "approved", at(0), later())).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    tool_runtime::question::park(&journal, &call("r2", "rejected", at(10), later())).await.unwrap();
    tool_runtime::question::park(&journal, &call("r3", "waiting", at(20), later())).await.unwrap();
    tool_runtime::question::decide(&journal, "r1", "approved", Decision::Approve, "dana").await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    tool_runtime::question::decide(&journal, "r2", "rejected", Decision::Reject("Ask for the receipt.".into()), "erin").await.unwrap();
    // The run carries the approval out: the effect journaled, then settled.
    journal.calls().start("r1", "approved", "refund", &json!({"order_id": "A-1", "amount_cents": 100}), "r1:approved").await.unwrap();
    let result = JournaledResult {
        kind: ResultKind::Success,
        text: "refunded 1.00".into(),
        structured: None,
        error_code: None,
        status: None,
        truncated: false,
        ends_run: false,
    };
    journal.calls().finish("r1:approved", &result).await.unwrap();
    journal.approvals().settle("r1", "approved").await.unwrap();

    let decisions = journal.inbox().decisions_newest(10).await.unwrap();
    let seen: Vec<(&str, &str)> =
        decisions.iter().map(|d| (d.approval.call.call_id.as_str(), d.approval.decided.as_ref().unwrap().by.as_str())).collect();
    assert_eq!(seen, [("rejected", "erin"), ("approved", "dana")]);
    let rejected = &decisions[0];
    assert_eq!(rejected.approval.decided.as_ref().unwrap().decision, Decision::Reject("Ask for the receipt.".into()));
    assert_eq!((rejected.outcome.as_ref(), rejected.settled_at), (None, None), "not carried out yet");
    let approved = &decisions[1];
    let outcome = approved.outcome.as_ref().expect("the finished call's outcome");
    assert_eq!((outcome.kind, outcome.text.as_str()), (ResultKind::Success, "refunded 1.00"));
    assert!(approved.settled_at.is_some());
    journal.close().await;
}

async fn changed(journal: &Journal, before: InboxMark, what: &str) -> InboxMark {
    let mark = journal.inbox().mark().await.unwrap();
    assert_ne!(mark, before, "{what} changes the mark");
    mark
}

async fn the_mark_changes_with_each_write_an_inbox_shows(db: Db) {
    let journal = db.open().await;
    let mark = journal.inbox().mark().await.unwrap();
    let expires = later();
    tool_runtime::question::park(&journal, &call("r1", "c1", SystemTime::now(), expires)).await.unwrap();
    let mark = changed(&journal, mark, "parking").await;
    assert_eq!(journal.inbox().mark().await.unwrap(), mark, "no write, no change");
    let next = mark.next_expiry().expect("a waiting call's expiry");
    // Its time to live from when the journal's clock parked it.
    assert!(next.duration_since(expires).unwrap_or_else(|e| e.duration()) < Duration::from_secs(5), "{next:?} against {expires:?}");
    tool_runtime::question::decide(&journal, "r1", "c1", Decision::Approve, "dana").await.unwrap();
    let mark = changed(&journal, mark, "deciding").await;
    assert_eq!(mark.next_expiry(), None, "nothing waits");
    journal.calls().start("r1", "c1", "refund", &json!({}), "k1").await.unwrap();
    journal.calls().finish("k1", &finished()).await.unwrap();
    let mark = changed(&journal, mark, "finishing the call").await;
    journal.approvals().settle("r1", "c1").await.unwrap();
    changed(&journal, mark, "settling").await;
    journal.close().await;
}

async fn postgres_tells_a_listener_of_each_change(db: Db) {
    let journal = db.open().await;
    let Some(mut changes) = journal.inbox().changes().await.unwrap() else {
        assert!(db.url().starts_with("sqlite:"), "only SQLite has no notifications");
        return;
    };
    // Another process's journal parks and decides.
    let other = db.open().await;
    tool_runtime::question::park(&other, &call("r1", "c1", SystemTime::now(), later())).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), changes.next()).await.expect("told of the park").unwrap();
    tool_runtime::question::decide(&other, "r1", "c1", Decision::Approve, "dana").await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), changes.next()).await.expect("told of the decision").unwrap();
    // The approved call finishes: the inbox shows its outcome.
    other.calls().start("r1", "c1", "refund", &json!({}), "k1").await.unwrap();
    other.calls().finish("k1", &finished()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), changes.next()).await.expect("told of the approved call's outcome").unwrap();
    // A call that never asked for approval finishes, then a call is parked:
    // one notification, the park's (each commit that notifies waits for
    // every other one, so calls the inbox never shows must not).
    other.calls().start("r1", "c2", "lookup", &json!({}), "k2").await.unwrap();
    other.calls().finish("k2", &finished()).await.unwrap();
    tool_runtime::question::park(&other, &call("r1", "c3", SystemTime::now(), later())).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), changes.next()).await.expect("told of the park").unwrap();
    let extra = tokio::time::timeout(Duration::from_millis(500), changes.next()).await;
    assert!(extra.is_err(), "a call without an approval notified the inbox");
    // The listener holds one of the journal's connections until dropped.
    drop(changes);
    other.close().await;
    journal.close().await;
}

/// A call's successful result, as the journal records it.
fn finished() -> JournaledResult {
    JournaledResult {
        kind: ResultKind::Success,
        text: "ok".into(),
        structured: None,
        error_code: None,
        status: None,
        truncated: false,
        ends_run: false,
    }
}

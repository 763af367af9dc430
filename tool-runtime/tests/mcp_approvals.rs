//! The MCP server's approvals at the wire: elicitation accepted,
//! declined, dismissed or never answered, the cap on waiting calls, and,
//! with a journal, decisions made out of band.
//!
//! ```text
//! cargo test -p tool-runtime --features mcp --test suite mcp_approvals::
//! ```
#![cfg(feature = "mcp")]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tool_runtime::mcp::McpServer;
use tool_runtime::prelude::*;

use support::*;

#[tokio::test]
async fn a_call_needing_approval_is_refused_when_the_client_cannot_elicit() {
    let (server, store) = server();
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    wire.call("get_item", json!({"id": 1})).await;
    let refused = wire.call("delete_item", json!({"id": 1})).await;
    assert_eq!(refused["isError"], true);
    assert!(text(&refused).starts_with("code: APPROVAL_UNAVAILABLE, status: 403"), "{refused}");
    assert!(text(&refused).contains("needs a human's approval"), "{refused}");
    assert!(wire.asked.is_empty());
    assert!(store.deleted.lock().unwrap().is_empty());
}

#[tokio::test]
async fn the_human_accepting_the_elicitation_runs_the_call() {
    let (server, store) = server();
    let mut wire = Wire::connect(&server, elicitation(), Human::Accept).await;
    wire.call("get_item", json!({"id": 7})).await;
    let deleted = wire.call("delete_item", json!({"id": 7})).await;
    assert_eq!(deleted["isError"], false, "{deleted}");
    assert_eq!(text(&deleted), "deleted 7");
    assert_eq!(*store.deleted.lock().unwrap(), [7]);
    let asked = &wire.asked[0]["params"];
    assert_eq!(asked["mode"], "form");
    assert!(asked["message"].as_str().unwrap().contains("`delete_item`"), "{asked}");
    assert!(asked["message"].as_str().unwrap().contains("\"id\": 7"), "{asked}");
    assert_eq!(asked["requestedSchema"], json!({"type": "object", "properties": {}}));
}

#[tokio::test]
async fn the_human_declining_or_dismissing_rejects_the_call() {
    for human in [Human::Decline, Human::Dismiss] {
        let (server, store) = server();
        let mut wire = Wire::connect(&server, elicitation(), human).await;
        wire.call("get_item", json!({"id": 7})).await;
        let rejected = wire.call("delete_item", json!({"id": 7})).await;
        assert_eq!(rejected["isError"], true);
        assert!(text(&rejected).starts_with("code: APPROVAL_REJECTED, status: 403"), "{rejected}");
        assert!(store.deleted.lock().unwrap().is_empty());
    }
}

#[tokio::test]
async fn the_users_approval_floor_sends_an_allowed_call_to_approval() {
    let (server, _) = server();
    let server = server.with_user(UserContext::new("u-1").with_floor(ApprovalFloor::default().tool("get_item")));
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let refused = wire.call("get_item", json!({"id": 1})).await;
    assert!(text(&refused).starts_with("code: APPROVAL_UNAVAILABLE"), "{refused}");
}

#[tokio::test]
async fn cancelling_a_call_waiting_for_approval_does_not_run_it() {
    let (server, store) = server();
    let mut wire = Wire::connect(&server, elicitation(), Human::Away).await;
    wire.call("get_item", json!({"id": 3})).await;
    let id = wire.start("tools/call", json!({"name": "delete_item", "arguments": {"id": 3}})).await;
    while wire.asked.is_empty() {
        wire.names().await;
    }
    wire.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    // The human accepts too late: the call was settled as cancelled.
    let ask = wire.asked[0]["id"].clone();
    wire.send(json!({"jsonrpc": "2.0", "id": ask, "result": {"action": "accept", "content": {}}})).await;
    wire.names().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(store.deleted.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_approval_nobody_answers_expires_and_a_late_accept_does_not_run_the_call() {
    let (server, store) = server_of(tools![get_item, delete_item], Some(Duration::from_millis(300)));
    let mut wire = Wire::connect(&server, elicitation(), Human::Away).await;
    wire.call("get_item", json!({"id": 4})).await;
    let expired = wire.call("delete_item", json!({"id": 4})).await;
    assert_eq!(expired["isError"], true);
    assert!(text(&expired).starts_with("code: APPROVAL_EXPIRED, status: 403"), "{expired}");
    assert!(text(&expired).contains("so it was not run"), "{expired}");

    let ask = wire.asked[0]["id"].clone();
    wire.send(json!({"jsonrpc": "2.0", "id": ask, "result": {"action": "accept", "content": {}}})).await;
    wire.names().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(store.deleted.lock().unwrap().is_empty());
}

#[tokio::test]
async fn calls_waiting_for_approval_in_a_session_are_capped() {
    let registry = Registry::<Store>::builder().tools(tools![get_item, delete_item]).max_pending_approvals(1).build().unwrap();
    let store = Arc::new(Store::default());
    let server = McpServer::new(registry, store.clone());
    let mut wire = Wire::connect(&server, elicitation(), Human::Away).await;
    wire.call("get_item", json!({"id": 1})).await;
    let first = wire.start("tools/call", json!({"name": "delete_item", "arguments": {"id": 1}})).await;
    while wire.asked.is_empty() {
        wire.names().await;
    }
    let second = wire.call("delete_item", json!({"id": 2})).await;
    assert_eq!(second["isError"], true, "{second}");
    assert!(text(&second).starts_with("code: TOO_MANY_PENDING, status: 429"), "{second}");
    assert_eq!(wire.asked.len(), 1, "the second call asked nobody");
    // Once the first is settled, a new call may wait again.
    wire.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": first}})).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let third = wire.start("tools/call", json!({"name": "delete_item", "arguments": {"id": 3}})).await;
    while wire.asked.len() < 2 {
        wire.names().await;
    }
    wire.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": third}})).await;
    assert!(store.deleted.lock().unwrap().is_empty());
}

/// A journal on a SQLite file of its own, and its path for "another process".
#[cfg(feature = "sqlite")]
async fn journal(test: &str) -> (tool_runtime::journal::Journal, String) {
    let dir = std::env::temp_dir().join(format!("tool-runtime-mcp-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("journal.db").display().to_string();
    (tool_runtime::journal::Journal::open(&path).await.unwrap(), path)
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_journal_a_decision_made_out_of_band_reaches_the_waiting_call() {
    use tool_runtime::journal::{Decision, Journal};

    let (journal, path) = journal("out_of_band").await;
    let (server, store) = server();
    let server = server.with_user(UserContext::new("u-mcp")).with_journal(journal);
    // The client cannot elicit: with a journal, the call waits for a decision from elsewhere.
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    wire.call("get_item", json!({"id": 1})).await;
    let waiting = wire.start("tools/call", json!({"name": "delete_item", "arguments": {"id": 1}})).await;

    // An admin page in another process.
    let admin = Journal::open(&path).await.unwrap();
    let parked = loop {
        let pending = admin.approvals().pending_for_user("u-mcp").await.unwrap();
        if let Some(parked) = pending.into_iter().next() {
            break parked;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!((parked.tool.as_str(), &parked.input), ("delete_item", &json!({"id": 1})));
    tool_runtime::question::decide(&admin, &parked.run_id, &parked.call_id, Decision::Approve, "alice").await.unwrap();
    let deleted = wire.response(waiting).await;
    assert_eq!(text(&deleted), "deleted 1", "{deleted}");
    assert_eq!(*store.deleted.lock().unwrap(), [1]);
    // The session's run is journaled too.
    let run = admin.runs().load(&parked.run_id).await.unwrap().unwrap();
    assert!(parked.run_id.starts_with("mcp-"), "{}", parked.run_id);
    assert_eq!(run.executed, ["get_item", "delete_item"]);

    // A rejection out of band: the model reads its text.
    let waiting = wire.start("tools/call", json!({"name": "delete_item", "arguments": {"id": 2}})).await;
    let parked = loop {
        if let Some(parked) = admin.approvals().pending_for_user("u-mcp").await.unwrap().into_iter().next() {
            break parked;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    tool_runtime::question::decide(&admin, &parked.run_id, &parked.call_id, Decision::Reject("Item 2 is kept for the audit.".into()), "bob")
        .await
        .unwrap();
    let refused = wire.response(waiting).await;
    assert_eq!(refused["isError"], true);
    assert!(text(&refused).contains("Item 2 is kept for the audit."), "{refused}");
    assert_eq!(*store.deleted.lock().unwrap(), [1]);
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_journal_the_clients_answer_is_journaled_as_the_decision() {
    let (journal, path) = journal("client_answer").await;
    let (server, store) = server();
    let server = server.with_user(UserContext::new("u-mcp")).with_journal(journal.clone());
    let mut wire = Wire::connect(&server, elicitation(), Human::Accept).await;
    wire.call("get_item", json!({"id": 7})).await;
    let deleted = wire.call("delete_item", json!({"id": 7})).await;
    assert_eq!(text(&deleted), "deleted 7", "{deleted}");
    assert_eq!(*store.deleted.lock().unwrap(), [7]);
    assert!(journal.approvals().pending_for_user("u-mcp").await.unwrap().is_empty());
    // The one approval in the journal was decided by the client's user.
    use sqlx::Connection;
    let mut conn = sqlx::SqliteConnection::connect(&path).await.unwrap();
    let decided: Vec<(String, String)> = sqlx::query_as("SELECT decision, decided_by FROM journal_approvals").fetch_all(&mut conn).await.unwrap();
    assert_eq!(decided, [("approve".to_owned(), "u-mcp".to_owned())]);
}

/// Waits for the one call of user `u-mcp` waiting in `admin`'s journal.
#[cfg(feature = "sqlite")]
async fn parked_call(admin: &tool_runtime::journal::Journal) -> tool_runtime::journal::ParkedCall {
    loop {
        if let Some(parked) = admin.approvals().pending_for_user("u-mcp").await.unwrap().into_iter().next() {
            return parked;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One clock, the journal's: a decision it accepted just before the time
/// to live ran out (in this server's last poll interval) is carried out,
/// never dropped as expired.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_journal_a_decision_accepted_in_the_last_moment_of_the_ttl_runs() {
    use tool_runtime::journal::{Decision, Journal};

    // `LAST_MOMENT_PERCENTS` (say `90,91,92,93,94,95`) tries more moments.
    let percents: Vec<u32> =
        std::env::var("LAST_MOMENT_PERCENTS").map(|list| list.split(',').map(|p| p.trim().parse().unwrap()).collect()).unwrap_or_else(|_| vec![95]);
    let ttl = Duration::from_millis(1_000);
    let (journal, path) = journal("last_moment").await;
    let (server, store) = server_of(tools![get_item, delete_item], Some(ttl));
    let server = server.with_user(UserContext::new("u-mcp")).with_journal(journal);
    let admin = Journal::open(&path).await.unwrap();
    let mut carried_out = Vec::new();
    for (id, percent) in (10..).zip(&percents) {
        let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
        wire.call("get_item", json!({"id": id})).await;
        let waiting = wire.start("tools/call", json!({"name": "delete_item", "arguments": {"id": id}})).await;
        let parked = parked_call(&admin).await;
        // That share of the time to live, by the journal's clock.
        let at = parked.parked_at + ttl.mul_f64(f64::from(*percent) / 100.0);
        tokio::time::sleep(at.duration_since(std::time::SystemTime::now()).unwrap_or_default()).await;
        tool_runtime::question::decide(&admin, &parked.run_id, &parked.call_id, Decision::Approve, "alice")
            .await
            .expect("the journal accepts it in time");
        let answered = wire.response(waiting).await;
        if text(&answered) == format!("deleted {id}") {
            carried_out.push(*percent);
        }
    }
    eprintln!("decisions accepted at {percents:?}% of a 1 s TTL: carried out at {carried_out:?}");
    assert_eq!(carried_out, percents, "a decision the journal accepted was dropped");
    assert_eq!(store.deleted.lock().unwrap().len(), percents.len());
}

/// A client that goes away while its call waits for approval: the call is
/// rejected in the journal, and a supervisor deciding it later is told it
/// is gone instead of an Ok that runs nothing.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_journal_a_call_whose_client_left_is_settled_and_its_decider_told() {
    use tool_runtime::journal::{Decision, GONE_BY, Journal, JournalError};

    let (journal, path) = journal("client_left").await;
    let (server, store) = server();
    let server = server.with_user(UserContext::new("u-mcp")).with_journal(journal);
    let admin = Journal::open(&path).await.unwrap();
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    wire.call("get_item", json!({"id": 5})).await;

    // The client cancels its waiting call, then goes away altogether.
    let waiting = wire.start("tools/call", json!({"name": "delete_item", "arguments": {"id": 5}})).await;
    let cancelled = parked_call(&admin).await;
    wire.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": waiting}})).await;
    // A second call waits, and the client's connection closes under it.
    wire.start("tools/call", json!({"name": "delete_item", "arguments": {"id": 6}})).await;
    let dropped = loop {
        let pending = admin.approvals().pending_for_user("u-mcp").await.unwrap();
        if let Some(parked) = pending.into_iter().find(|parked| parked.call_id != cancelled.call_id) {
            break parked;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    drop(wire);

    for parked in [cancelled, dropped] {
        // The session notices its client left; the call is decided for it.
        let started = std::time::Instant::now();
        while admin.approvals().get(&parked.run_id, &parked.call_id).await.unwrap().unwrap().decided.is_none() {
            assert!(started.elapsed() < Duration::from_secs(10), "the call of a client that left still waits: {parked:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let told = match tool_runtime::question::decide(&admin, &parked.run_id, &parked.call_id, Decision::Approve, "supervisor").await {
            Err(error) => error,
            Ok(approval) => panic!("the supervisor's approval of a call whose client left was accepted: {approval:?}"),
        };
        assert!(matches!(&told, JournalError::AlreadyDecided { by, .. } if by == GONE_BY), "{told:?}");
        // Settled right after it is decided, by the same task.
        while admin.approvals().unsettled_for_run(&parked.run_id).await.unwrap().iter().any(|approval| approval.call.call_id == parked.call_id) {
            assert!(started.elapsed() < Duration::from_secs(10), "the call is left unsettled: {parked:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    assert!(store.deleted.lock().unwrap().is_empty(), "nothing ran");
}

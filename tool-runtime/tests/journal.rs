//! The journal against real databases: a SQLite file, and a Postgres
//! server (`TOOL_RUNTIME_TEST_POSTGRES_URL`; under `CI=true` its tests fail
//! without it, locally they say they skip). Every case runs on both
//! backends from one body.
#![cfg(any(feature = "sqlite", feature = "postgres"))]

use crate::db;
#[path = "journal/processes.rs"]
mod processes;

use std::time::{Duration, SystemTime};

use serde_json::json;
use tool_runtime::journal::{
    Approval, CallStart, Decided, Decision, EXPIRED_BY, Journal, JournalError, JournaledResult, ParkedCall, Pruned, Retention, RunRecord,
};
use tool_runtime::{ResultKind, RunState};

use db::Db;

on_both_backends!(
    "":
    opening_twice_migrates_once,
    a_newer_schema_is_refused,
    a_corrupt_run_row_is_an_error,
    a_corrupt_call_row_is_an_error,
    a_corrupt_approval_row_is_an_error,
    runs_are_saved_and_loaded,
    an_update_appends_the_new_tools_and_rewrites_nothing_else,
    a_saved_run_only_moves_forward_and_keeps_its_failures,
    a_version_1_journal_migrates_with_each_executed_tool_once,
    a_finished_call_is_replayed,
    a_started_call_has_an_unknown_outcome,
    racing_starts_of_one_key_start_it_once,
    a_write_the_database_refuses_fails_alone_among_those_sent_with_it,
    racing_decisions_record_one,
    two_runs_holding_one_call_id_are_decided_apart,
    a_version_2_journal_keeps_its_approvals_now_keyed_by_run,
    pending_calls_are_listed_by_run_and_user,
    expiry_rejects_what_waited_too_long,
    pending_lists_leave_out_calls_past_their_time_to_live,
    what_postgres_refuses_is_refused_on_both_before_the_write,
    a_long_key_journaled_before_keys_were_hashed_is_still_found,
    prune_forgets_finished_runs_and_keeps_everything_in_flight,
);

fn result(text: &str) -> JournaledResult {
    JournaledResult {
        kind: ResultKind::Success,
        text: text.into(),
        structured: Some(json!({"refund": 25, "currency": "EUR"})),
        error_code: None,
        status: None,
        truncated: true,
        ends_run: true,
    }
}

fn parked(run_id: &str, call_id: &str, user: Option<&str>, parked_at: SystemTime, expires_at: Option<SystemTime>) -> ParkedCall {
    ParkedCall {
        run_id: run_id.into(),
        call_id: call_id.into(),
        tool: "refund".into(),
        input: json!({"order_id": "A-1", "amount": 25}),
        user_id: user.map(Into::into),
        parked_at,
        expires_at,
        question: tool_runtime::question::Question::Approval(tool_runtime::question::Binding::of_arguments(
            &json!({"order_id": "A-1", "amount": 25}),
        )),
    }
}

/// Whole milliseconds, as the journal stores times.
fn at(seconds: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + seconds)
}

async fn opening_twice_migrates_once(db: Db) {
    // Three processes opening a new database at once, then one more.
    let (a, b, c) = tokio::join!(Journal::open(db.url()), Journal::open(db.url()), Journal::open(db.url()));
    for journal in [a, b, c] {
        journal.expect("concurrent opens all succeed");
    }
    let journal = db.open().await;
    // One row per version, each applied once.
    let applied = db.text("SELECT CAST(COUNT(*) AS TEXT) FROM journal_schema".into()).await;
    assert_eq!(applied, Journal::SCHEMA_VERSION.to_string());
    let version = db.text("SELECT CAST(MAX(version) AS TEXT) FROM journal_schema".into()).await;
    assert_eq!(version, Journal::SCHEMA_VERSION.to_string());
    // The tables work after the second open.
    journal.runs().save(&RunRecord::new("t-1")).await.unwrap();
    assert!(journal.runs().load("t-1").await.unwrap().is_some());
}

async fn a_newer_schema_is_refused(db: Db) {
    db.open().await.close().await;
    let newer = Journal::SCHEMA_VERSION + 1;
    db.exec(format!("INSERT INTO journal_schema (version, applied_at) VALUES ({newer}, 0)")).await;
    let error = Journal::open(db.url()).await.expect_err("a newer schema is refused");
    assert!(matches!(error, JournalError::SchemaTooNew { found, known } if found == newer && known == Journal::SCHEMA_VERSION), "{error:?}");
    let message = error.to_string();
    assert!(message.contains(&format!("version {newer}")) && message.contains("upgrade tool-runtime"), "{message}");
}

fn assert_corrupt(error: JournalError, table: &str, key: &str, problem: &str) {
    match &error {
        JournalError::Corrupt { table: t, key: k, problem: p } => {
            assert_eq!((*t, k.as_str()), (table, key), "{error}");
            assert!(p.contains(problem), "{p:?} should mention {problem:?}");
            assert!(error.to_string().contains(key), "{error}");
        }
        other => panic!("expected a corrupt-row error, got {other:?}"),
    }
}

async fn a_corrupt_run_row_is_an_error(db: Db) {
    let journal = db.open().await;
    journal.runs().save(&RunRecord::new("t-step")).await.unwrap();
    journal.runs().save(&RunRecord::new("t-state")).await.unwrap();
    db.exec("UPDATE journal_runs SET step = -3 WHERE run_id = 't-step'".into()).await;
    db.exec("UPDATE journal_runs SET state = 'paused' WHERE run_id = 't-state'".into()).await;
    assert_corrupt(journal.runs().load("t-step").await.unwrap_err(), "journal_runs", "t-step", "column step holds -3");
    assert_corrupt(journal.runs().load("t-state").await.unwrap_err(), "journal_runs", "t-state", "unknown state \"paused\"");
}

async fn a_corrupt_call_row_is_an_error(db: Db) {
    let journal = db.open().await;
    let input = json!({});
    for key in ["k-kind", "k-json"] {
        journal.calls().start("t-1", key, "refund", &input, key).await.unwrap();
        journal.calls().finish(key, &result("done")).await.unwrap();
    }
    db.exec("UPDATE journal_calls SET kind = 'exploded' WHERE effect_key = 'k-kind'".into()).await;
    db.exec("UPDATE journal_calls SET structured = '{\"refund\": ' WHERE effect_key = 'k-json'".into()).await;
    let error = journal.calls().start("t-1", "c2", "refund", &input, "k-kind").await.unwrap_err();
    assert_corrupt(error, "journal_calls", "k-kind", "unknown result kind \"exploded\"");
    let error = journal.calls().start("t-1", "c2", "refund", &input, "k-json").await.unwrap_err();
    assert_corrupt(error, "journal_calls", "k-json", "structured is not valid JSON");
}

async fn a_corrupt_approval_row_is_an_error(db: Db) {
    let journal = db.open().await;
    tool_runtime::question::park(&journal, &parked("t-1", "c-good", Some("u-1"), at(1), None)).await.unwrap();
    tool_runtime::question::park(&journal, &parked("t-1", "c-bad", Some("u-1"), at(2), None)).await.unwrap();
    db.exec("UPDATE journal_approvals SET input = 'not json' WHERE call_id = 'c-bad'".into()).await;
    // The bad row fails the whole listing: it is not silently left out.
    assert_corrupt(journal.approvals().pending_for_run("t-1").await.unwrap_err(), "journal_approvals", "c-bad", "input is not valid JSON");
    assert_corrupt(journal.approvals().pending_for_user("u-1").await.unwrap_err(), "journal_approvals", "c-bad", "input is not valid JSON");
    db.exec("UPDATE journal_approvals SET input = '{}', decision = 'maybe' WHERE call_id = 'c-bad'".into()).await;
    assert_corrupt(journal.approvals().get("t-1", "c-bad").await.unwrap_err(), "journal_approvals", "c-bad", "unknown decision \"maybe\"");
}

async fn runs_are_saved_and_loaded(db: Db) {
    let journal = db.open().await;
    assert_eq!(journal.runs().load("t-unknown").await.unwrap(), None);
    let before = SystemTime::now() - Duration::from_secs(1);
    let mut run = RunRecord::new("t-1");
    run.step = 2;
    run.executed = vec!["lookup_order".into(), "refund".into()];
    run.state = RunState::Ending { by: "refund".into() };
    journal.runs().save(&run).await.unwrap();

    // Another process reads it back.
    let other = db.open().await;
    let loaded = other.runs().load("t-1").await.unwrap().expect("saved");
    assert!(loaded.updated_at >= before, "updated_at is the save's time");
    assert_eq!(RunRecord { updated_at: run.updated_at, ..loaded }, run);

    // Saving again replaces it.
    run.step = 3;
    run.state = RunState::Finished { by: Some("refund".into()) };
    other.runs().save(&run).await.unwrap();
    let loaded = journal.runs().load("t-1").await.unwrap().unwrap();
    assert_eq!((loaded.step, loaded.state), (3, RunState::Finished { by: Some("refund".into()) }));
    run.state = RunState::Finished { by: None };
    journal.runs().save(&run).await.unwrap();
    assert_eq!(journal.runs().load("t-1").await.unwrap().unwrap().state, RunState::Finished { by: None });
}

async fn an_update_appends_the_new_tools_and_rewrites_nothing_else(db: Db) {
    let journal = db.open().await;
    let mut run = RunRecord::new("t-1");
    run.executed = vec!["lookup".into()];
    journal.runs().save(&run).await.unwrap();
    // Behind the journal's back: an update that rewrote the list would undo it.
    db.exec("UPDATE journal_run_tools SET tool = 'lookup_order' WHERE run_id = 't-1'".into()).await;
    run.step = 4;
    run.executed.push("refund".into());
    journal.runs().update(&run, 1).await.unwrap();
    let loaded = journal.runs().load("t-1").await.unwrap().unwrap();
    assert_eq!((loaded.step, loaded.executed), (4, vec!["lookup_order".to_owned(), "refund".to_owned()]));

    // A save that finishes late, with tools stored already: nothing doubles.
    run.step = 5;
    journal.runs().update(&run, 0).await.unwrap();
    assert_eq!(db.text("SELECT CAST(COUNT(*) AS TEXT) FROM journal_run_tools WHERE run_id = 't-1'".into()).await, "2");
    assert_eq!(journal.runs().load("t-1").await.unwrap().unwrap().step, 5);

    // A run the journal does not know is created; `runs().save` replaces the whole list.
    let mut other = RunRecord::new("t-2");
    other.executed = vec!["ping".into(), "pong".into()];
    other.state = RunState::Ending { by: "pong".into() };
    journal.runs().update(&other, 0).await.unwrap();
    let loaded = journal.runs().load("t-2").await.unwrap().unwrap();
    assert_eq!(RunRecord { updated_at: other.updated_at, ..loaded }, other);
    other.executed = vec!["pong".into()];
    journal.runs().save(&other).await.unwrap();
    assert_eq!(journal.runs().load("t-2").await.unwrap().unwrap().executed, ["pong"]);
}

async fn a_saved_run_only_moves_forward_and_keeps_its_failures(db: Db) {
    let journal = db.open().await;
    let mut run = RunRecord::new("t-1");
    run.state = RunState::Finished { by: Some("refund".into()) };
    run.failures = vec![("lookup".into(), 2)];
    journal.runs().save(&run).await.unwrap();
    // A process that still held the run as active, or ending, saves late.
    let other = db.open().await;
    let mut late = RunRecord::new("t-1");
    late.step = 4;
    other.runs().save(&late).await.unwrap();
    late.state = RunState::Ending { by: "lookup".into() };
    other.runs().update(&late, 0).await.unwrap();
    let loaded = journal.runs().load("t-1").await.unwrap().unwrap();
    assert_eq!((loaded.step, loaded.state), (4, RunState::Finished { by: Some("refund".into()) }), "finished, the step written");
    // An ending run finishes, and does not become active again.
    let mut ending = RunRecord::new("t-2");
    ending.state = RunState::Ending { by: "refund".into() };
    journal.runs().update(&ending, 0).await.unwrap();
    other.runs().update(&RunRecord::new("t-2"), 0).await.unwrap();
    assert_eq!(journal.runs().load("t-2").await.unwrap().unwrap().state, RunState::Ending { by: "refund".into() });
    // Failures: replaced by `runs().save`, raised (never lowered) by `runs().update`.
    let mut counted = RunRecord::new("t-3");
    counted.failures = vec![("lookup".into(), 2), ("refund".into(), 1)];
    journal.runs().update(&counted, 0).await.unwrap();
    counted.failures = vec![("lookup".into(), 1), ("refund".into(), 3)];
    journal.runs().update(&counted, 0).await.unwrap();
    assert_eq!(journal.runs().load("t-3").await.unwrap().unwrap().failures, [("lookup".to_owned(), 2), ("refund".to_owned(), 3)]);
    counted.failures = vec![("refund".into(), 1)];
    journal.runs().save(&counted).await.unwrap();
    assert_eq!(journal.runs().load("t-3").await.unwrap().unwrap().failures, [("refund".to_owned(), 1)]);
}

async fn a_version_1_journal_migrates_with_each_executed_tool_once(db: Db) {
    let version_1 = if db.url().starts_with("postgres") {
        include_str!("../src/journal/sql/postgres/0001_journal.sql")
    } else {
        include_str!("../src/journal/sql/sqlite/0001_journal.sql")
    };
    db.exec(format!(
        "{version_1};
         CREATE TABLE journal_schema (version BIGINT PRIMARY KEY NOT NULL, applied_at BIGINT NOT NULL);
         INSERT INTO journal_schema (version, applied_at) VALUES (1, 0);
         INSERT INTO journal_runs (run_id, step, executed, state, ended_by, updated_at) VALUES
             ('t-1', 5, '[\"lookup\", \"refund\", \"lookup\", \"refund\", \"ping\"]', 'active', NULL, 0),
             ('t-2', 0, '[]', 'active', NULL, 0);"
    ))
    .await;
    let journal = db.open().await;
    let migrated = journal.runs().load("t-1").await.unwrap().unwrap();
    assert_eq!((migrated.step, &migrated.executed[..]), (5, &["lookup".to_owned(), "refund".into(), "ping".into()][..]));
    assert!(journal.runs().load("t-2").await.unwrap().unwrap().executed.is_empty());
    // The next tool goes after them.
    let mut run = migrated;
    run.executed.push("notify".into());
    journal.runs().update(&run, 3).await.unwrap();
    assert_eq!(journal.runs().load("t-1").await.unwrap().unwrap().executed, ["lookup", "refund", "ping", "notify"]);
}

async fn a_finished_call_is_replayed(db: Db) {
    let journal = db.open().await;
    let input = json!({"order_id": "A-1"});
    assert_eq!(journal.calls().start("t-1", "c1", "refund", &input, "refund:A-1").await.unwrap(), CallStart::Started);
    let stored = result("Refunded 25 EUR.");
    journal.calls().finish("refund:A-1", &stored).await.unwrap();

    // After a restart, the same effect (here under a new call id) is answered from the journal.
    let restarted = db.open().await;
    let replay = restarted.calls().start("t-1", "c7", "refund", &input, "refund:A-1").await.unwrap();
    assert_eq!(replay, CallStart::Finished(stored.clone()));
    let CallStart::Finished(replayed) = replay else { unreachable!() };
    let call = replayed.to_call_result("refund", "c7");
    assert_eq!((call.call_id.as_str(), call.kind, call.text.as_str()), ("c7", ResultKind::Success, "Refunded 25 EUR."));
    assert_eq!(call.structured(), Some(&json!({"refund": 25, "currency": "EUR"})));
    assert!(call.ends_run && call.truncated);

    // A failure keeps its code and status.
    let failed = JournaledResult {
        kind: ResultKind::ToolError,
        text: "code: OUT_OF_STOCK, status: 409, userMessage: Sold out.".into(),
        structured: None,
        error_code: Some("OUT_OF_STOCK".into()),
        status: Some(409),
        truncated: false,
        ends_run: false,
    };
    journal.calls().start("t-1", "c2", "reserve", &input, "c2").await.unwrap();
    journal.calls().finish("c2", &failed).await.unwrap();
    assert_eq!(journal.calls().start("t-1", "c2", "reserve", &input, "c2").await.unwrap(), CallStart::Finished(failed));

    // A stored effect is never rewritten; an unknown key cannot be finished.
    let error = journal.calls().finish("refund:A-1", &result("again")).await.unwrap_err();
    assert!(matches!(&error, JournalError::CallAlreadyFinished { effect_key } if effect_key == "refund:A-1"), "{error:?}");
    let error = journal.calls().finish("never-started", &result("x")).await.unwrap_err();
    assert!(matches!(&error, JournalError::CallNotStarted { effect_key } if effect_key == "never-started"), "{error:?}");
}

async fn a_started_call_has_an_unknown_outcome(db: Db) {
    let before = SystemTime::now() - Duration::from_secs(1);
    let crashed = db.open().await;
    let input = json!({"order_id": "A-2"});
    assert_eq!(crashed.calls().start("t-1", "c1", "refund", &input, "refund:A-2").await.unwrap(), CallStart::Started);
    crashed.close().await; // the process dies before it finishes the call

    let restarted = db.open().await;
    match restarted.calls().start("t-1", "c1", "refund", &input, "refund:A-2").await.unwrap() {
        CallStart::UnknownOutcome { call_id, started_at } => {
            assert_eq!(call_id, "c1");
            assert!(started_at >= before && started_at <= SystemTime::now());
        }
        other => panic!("expected an unknown outcome, got {other:?}"),
    }
}

async fn racing_starts_of_one_key_start_it_once(db: Db) {
    let (a, b) = (db.open().await, db.open().await);
    let input = json!({"order_id": "A-3"});
    for round in 0..20 {
        let key = format!("refund:{round}");
        let (x, y) = tokio::join!(
            tokio::spawn({
                let (a, key, input) = (a.clone(), key.clone(), input.clone());
                async move { a.calls().start("t-1", "c-a", "refund", &input, &key).await }
            }),
            tokio::spawn({
                let (b, key, input) = (b.clone(), key.clone(), input.clone());
                async move { b.calls().start("t-1", "c-b", "refund", &input, &key).await }
            }),
        );
        let outcomes = [x.unwrap().unwrap(), y.unwrap().unwrap()];
        let started = outcomes.iter().filter(|o| **o == CallStart::Started).count();
        assert_eq!(started, 1, "round {round}: {outcomes:?}");
        assert!(outcomes.iter().any(|o| matches!(o, CallStart::UnknownOutcome { .. })), "round {round}: {outcomes:?}");
    }
}

/// Starts of `keys` at once on `journal`, each in a task of its own, so
/// that they wait for the database together; their outcomes in order.
async fn start_at_once(journal: &Journal, keys: &[String]) -> Vec<Result<CallStart, JournalError>> {
    let tasks: Vec<_> = keys
        .iter()
        .enumerate()
        .map(|(n, key)| {
            let (journal, key) = (journal.clone(), key.clone());
            tokio::spawn(async move { journal.calls().start("t-1", &format!("c-{n}"), "refund", &json!({}), &key).await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    outcomes
}

async fn a_write_the_database_refuses_fails_alone_among_those_sent_with_it(db: Db) {
    let journal = db.open().await;
    // A trigger refuses the starts of keys beginning with "poison", as the
    // database refuses a write its own checks or a lock timeout refuse.
    if db.url().starts_with("sqlite") {
        db.exec(
            "CREATE TRIGGER poison BEFORE INSERT ON journal_calls WHEN NEW.effect_key LIKE 'poison%' BEGIN SELECT RAISE(ABORT, 'poisoned'); END"
                .into(),
        )
        .await;
    } else {
        db.exec(
            "CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.effect_key LIKE 'poison%' THEN RAISE EXCEPTION 'poisoned'; \
             END IF; RETURN NEW; END $$; CREATE TRIGGER poison BEFORE INSERT ON journal_calls FOR EACH ROW EXECUTE FUNCTION poison()"
                .into(),
        )
        .await;
    }
    for round in 0..5 {
        let keys: Vec<String> = (0..64).map(|n| if n % 16 == 7 { format!("poison:{round}:{n}") } else { format!("refund:{round}:{n}") }).collect();
        for (key, outcome) in keys.iter().zip(start_at_once(&journal, &keys).await) {
            if key.starts_with("poison") {
                let error = outcome.expect_err("the database refuses it");
                assert!(matches!(error, JournalError::Database { .. }) && error.to_string().contains("poisoned"), "{key}: {error}");
                assert_eq!(journal.calls().known(key).await.unwrap(), None, "{key}");
            } else {
                assert_eq!(outcome.unwrap(), CallStart::Started, "{key}");
                assert!(matches!(journal.calls().known(key).await.unwrap(), Some(CallStart::UnknownOutcome { .. })), "{key}");
            }
        }
    }
}

async fn racing_decisions_record_one(db: Db) {
    let (a, b) = (db.open().await, db.open().await);
    for round in 0..20 {
        let call_id = format!("c-{round}");
        tool_runtime::question::park(&a, &parked("t-1", &call_id, Some("u-1"), SystemTime::now(), None)).await.unwrap();
        let (x, y) = tokio::join!(
            tokio::spawn({
                let (a, id) = (a.clone(), call_id.clone());
                async move { tool_runtime::question::decide(&a, "t-1", &id, Decision::Approve, "alice").await }
            }),
            tokio::spawn({
                let (b, id) = (b.clone(), call_id.clone());
                async move { tool_runtime::question::decide(&b, "t-1", &id, Decision::Reject("Not this one.".into()), "bob").await }
            }),
        );
        let (won, lost) = match (x.unwrap(), y.unwrap()) {
            (Ok(won), Err(lost)) | (Err(lost), Ok(won)) => (won, lost),
            other => panic!("round {round}: exactly one decision must win, got {other:?}"),
        };
        let Decided { by: winner, at: when, .. } = won.decided.clone().expect("the winner's decision");
        match lost {
            JournalError::AlreadyDecided { call_id: id, by, at, .. } => {
                assert_eq!((id.as_str(), by.as_str(), at), (call_id.as_str(), winner.as_str(), when), "round {round}");
            }
            other => panic!("round {round}: expected AlreadyDecided, got {other:?}"),
        }
        // What is stored is the winner's decision.
        assert_eq!(a.approvals().get("t-1", &call_id).await.unwrap(), Some(won));
    }
}

/// Two runs hold the call id `call_1` (ids a model or a counter made):
/// each parks its own approval, and a decision, a settlement or a read of
/// one run's call never touches the other's.
async fn two_runs_holding_one_call_id_are_decided_apart(db: Db) {
    let (journal, bobs_host) = (db.open().await, db.open().await);
    tool_runtime::question::park(&journal, &parked("alice-run", "call_1", Some("alice"), at(1), None)).await.unwrap();
    tool_runtime::question::park(&bobs_host, &parked("bob-run", "call_1", Some("bob"), at(2), None))
        .await
        .expect("another run's call of the same id parks");
    let decided = tool_runtime::question::decide(&bobs_host, "bob-run", "call_1", Decision::Approve, "bob").await.unwrap();
    assert_eq!(decided.call.run_id, "bob-run");
    bobs_host.approvals().settle("bob-run", "call_1").await.unwrap();

    let alices = journal.approvals().get("alice-run", "call_1").await.unwrap().expect("alice's call is parked");
    assert_eq!((alices.call.user_id.as_deref(), alices.decided), (Some("alice"), None), "bob's decision reached alice's call");
    assert_eq!(journal.approvals().pending_for_run("alice-run").await.unwrap().len(), 1);
    assert_eq!(journal.approvals().unsettled_for_run("alice-run").await.unwrap().len(), 1, "bob's settlement settled alice's call");
    assert!(journal.approvals().pending_for_run("bob-run").await.unwrap().is_empty());
    // Alice's own decision is hers to make, once.
    tool_runtime::question::decide(&journal, "alice-run", "call_1", Decision::Reject("Keep the account.".into()), "alice").await.unwrap();
    let error = tool_runtime::question::decide(&bobs_host, "alice-run", "call_1", Decision::Approve, "bob").await.unwrap_err();
    assert!(matches!(&error, JournalError::AlreadyDecided { run_id, by, .. } if run_id == "alice-run" && by == "alice"), "{error:?}");
}

/// A journal written before approvals were keyed by run keeps them: each
/// is found under its run, and another run may now park the same call id.
async fn a_version_2_journal_keeps_its_approvals_now_keyed_by_run(db: Db) {
    let (version_1, version_2) = if db.url().starts_with("postgres") {
        (include_str!("../src/journal/sql/postgres/0001_journal.sql"), include_str!("../src/journal/sql/postgres/0002_run_tools.sql"))
    } else {
        (include_str!("../src/journal/sql/sqlite/0001_journal.sql"), include_str!("../src/journal/sql/sqlite/0002_run_tools.sql"))
    };
    db.exec(format!(
        "{version_1};
         {version_2};
         CREATE TABLE journal_schema (version BIGINT PRIMARY KEY NOT NULL, applied_at BIGINT NOT NULL);
         INSERT INTO journal_schema (version, applied_at) VALUES (1, 0), (2, 0);
         INSERT INTO journal_approvals (call_id, run_id, tool, input, user_id, parked_at) VALUES
             ('call_1', 'alice-run', 'refund', '{{\"order_id\": \"A-1\"}}', 'alice', 1000);"
    ))
    .await;
    let journal = db.open().await;
    let kept = journal.approvals().get("alice-run", "call_1").await.unwrap().expect("the approval is kept");
    assert_eq!((kept.call.tool.as_str(), kept.call.input.clone(), kept.decided), ("refund", json!({"order_id": "A-1"}), None));
    tool_runtime::question::park(&journal, &parked("bob-run", "call_1", None, at(2), None)).await.unwrap();
    tool_runtime::question::decide(&journal, "bob-run", "call_1", Decision::Approve, "bob").await.unwrap();
    assert_eq!(journal.approvals().get("alice-run", "call_1").await.unwrap().unwrap().decided, None);
}

async fn pending_calls_are_listed_by_run_and_user(db: Db) {
    let journal = db.open().await;
    tool_runtime::question::park(&journal, &parked("t-1", "c1", Some("ann"), at(1), None)).await.unwrap();
    tool_runtime::question::park(&journal, &parked("t-2", "c2", Some("ann"), at(2), None)).await.unwrap();
    tool_runtime::question::park(&journal, &parked("t-1", "c3", Some("bo"), at(3), None)).await.unwrap();
    tool_runtime::question::park(&journal, &parked("t-1", "c4", None, at(4), Some(at(1_000)))).await.unwrap();

    let ids = |calls: Vec<ParkedCall>| calls.into_iter().map(|c| c.call_id).collect::<Vec<_>>();
    let other = db.open().await;
    assert_eq!(ids(other.approvals().pending_for_run("t-1").await.unwrap()), ["c1", "c3", "c4"]);
    assert_eq!(ids(other.approvals().pending_for_user("ann").await.unwrap()), ["c1", "c2"]);
    // The journal's clock stamps a parked call, and keeps its time to live.
    let c4 = other.approvals().pending_for_run("t-1").await.unwrap().remove(2);
    assert_eq!(ParkedCall { parked_at: at(4), expires_at: Some(at(1_000)), ..c4.clone() }, parked("t-1", "c4", None, at(4), Some(at(1_000))));
    let parked_at = c4.parked_at.duration_since(SystemTime::UNIX_EPOCH).unwrap();
    assert!(SystemTime::now().duration_since(c4.parked_at).unwrap_or_default() < Duration::from_secs(60), "parked now: {parked_at:?}");
    assert_eq!(c4.expires_at.unwrap().duration_since(c4.parked_at).unwrap(), Duration::from_secs(996));

    // A decided call is no longer pending; its decision is kept with who and when.
    let edited = json!({"order_id": "A-1", "amount": 20});
    let decided = tool_runtime::question::decide(&other, "t-1", "c1", Decision::ApproveEdited(edited.clone()), "admin@shop").await.unwrap();
    assert_eq!(ids(journal.approvals().pending_for_run("t-1").await.unwrap()), ["c3", "c4"]);
    assert_eq!(ids(journal.approvals().pending_for_user("ann").await.unwrap()), ["c2"]);
    let stored = journal.approvals().get("t-1", "c1").await.unwrap().unwrap();
    assert_eq!(stored, decided);
    let Decided { decision, by, at: when } = stored.decided.unwrap();
    assert_eq!((decision, by.as_str()), (Decision::ApproveEdited(edited), "admin@shop"));
    assert!(when <= SystemTime::now());

    // Parking a run's call twice, deciding an unknown one: errors that say so.
    let error = tool_runtime::question::park(&journal, &parked("t-2", "c2", None, at(5), None)).await.unwrap_err();
    assert!(matches!(&error, JournalError::AlreadyParked { run_id, call_id } if run_id == "t-2" && call_id == "c2"), "{error:?}");
    let error = tool_runtime::question::decide(&journal, "t-1", "c-none", Decision::Approve, "admin").await.unwrap_err();
    assert!(matches!(&error, JournalError::UnknownApproval { call_id, .. } if call_id == "c-none"), "{error:?}");
    assert_eq!(journal.approvals().get("t-1", "c-none").await.unwrap(), None);
}

async fn expiry_rejects_what_waited_too_long(db: Db) {
    let journal = db.open().await;
    let brief = |run: &str, call_id: &str| {
        let now = SystemTime::now();
        parked(run, call_id, Some("ann"), now, Some(now + Duration::from_millis(100)))
    };
    tool_runtime::question::park(&journal, &brief("t-1", "c-older")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    tool_runtime::question::park(&journal, &brief("t-1", "c-old")).await.unwrap();
    tool_runtime::question::park(&journal, &brief("t-2", "c-elsewhere")).await.unwrap();
    let now = SystemTime::now();
    tool_runtime::question::park(&journal, &parked("t-1", "c-fresh", Some("ann"), now, Some(now + Duration::from_secs(3_600)))).await.unwrap();
    // The journal stamps a park by its clock, in milliseconds: two parks in
    // one millisecond are listed by call id instead.
    tokio::time::sleep(Duration::from_millis(5)).await;
    tool_runtime::question::park(&journal, &parked("t-1", "c-forever", Some("ann"), now, None)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Past its expiry but not yet expired by `expire`: no one can approve it any more.
    let error = tool_runtime::question::decide(&journal, "t-1", "c-old", Decision::Approve, "ann").await.unwrap_err();
    assert!(matches!(&error, JournalError::ApprovalExpired { call_id, .. } if call_id == "c-old"), "{error:?}");

    // A run's expiry expires its own calls, by the journal's clock.
    let text = "The approval expired; ask the user again.";
    let expired = journal.approvals().expire_run("t-1", text).await.unwrap();
    let ids: Vec<_> = expired.iter().map(|a| a.call.call_id.as_str()).collect();
    assert_eq!(ids, ["c-older", "c-old"]);
    for Approval { decided, .. } in &expired {
        let decided = decided.as_ref().unwrap();
        assert_eq!((&decided.decision, decided.by.as_str()), (&Decision::Reject(text.into()), EXPIRED_BY));
    }
    assert!(journal.approvals().expire_run("t-1", text).await.unwrap().is_empty(), "expiring twice expires nothing more");
    assert_eq!(journal.approvals().get("t-2", "c-elsewhere").await.unwrap().unwrap().decided, None, "another run's call is its own");
    let pending: Vec<_> = journal.approvals().pending_for_user("ann").await.unwrap().into_iter().map(|c| c.call_id).collect();
    assert_eq!(pending, ["c-fresh", "c-forever"]);
    // The journal's sweep (an inbox's) expires every run's.
    let swept: Vec<_> = journal.approvals().expire(text).await.unwrap().into_iter().map(|a| a.call.call_id).collect();
    assert_eq!(swept, ["c-elsewhere"]);

    // Deciding an expired call names the expiry as the decider.
    let error = tool_runtime::question::decide(&journal, "t-1", "c-old", Decision::Approve, "ann").await.unwrap_err();
    assert!(matches!(&error, JournalError::AlreadyDecided { by, .. } if by == EXPIRED_BY), "{error:?}");
    tool_runtime::question::decide(&journal, "t-1", "c-fresh", Decision::Approve, "ann").await.expect("not expired yet");
}

async fn pending_lists_leave_out_calls_past_their_time_to_live(db: Db) {
    let journal = db.open().await;
    let now = SystemTime::now();
    tool_runtime::question::park(&journal, &parked("t-1", "c-brief", Some("ann"), now, Some(now + Duration::from_millis(200)))).await.unwrap();
    tool_runtime::question::park(&journal, &parked("t-1", "c-long", Some("ann"), now, Some(now + Duration::from_secs(3_600)))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    // Past its time to live, no one may decide it: it is not listed, though no one expired it yet.
    let by_run: Vec<_> = journal.approvals().pending_for_run("t-1").await.unwrap().into_iter().map(|c| c.call_id).collect();
    let by_user: Vec<_> = journal.approvals().pending_for_user("ann").await.unwrap().into_iter().map(|c| c.call_id).collect();
    assert_eq!((by_run, by_user), (vec!["c-long".to_owned()], vec!["c-long".to_owned()]));
    assert_eq!(journal.approvals().get("t-1", "c-brief").await.unwrap().unwrap().decided, None, "still there, undecided");
}

/// `len` bytes that do not compress (Postgres compresses a long index entry
/// before it checks its size).
fn noise(len: usize) -> String {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(b'a' + (state % 26) as u8)
        })
        .collect()
}

/// An error refusing `field` before anything was written, saying why.
fn assert_refused(error: JournalError, field: &str, why: &str) {
    let message = error.to_string();
    assert!(message.contains(&format!("cannot journal {field}: ")) && message.contains(why), "{message}");
}

async fn what_postgres_refuses_is_refused_on_both_before_the_write(db: Db) {
    let journal = db.open().await;
    let input = json!({"order_id": "A-1"});
    // A long effect key is kept (as its digest) and found again; another long one is another key.
    let key = format!("refund:{}", noise(3_000));
    assert_eq!(journal.calls().start("t-1", "c1", "refund", &input, &key).await.unwrap(), CallStart::Started);
    journal.calls().finish(&key, &result("refunded")).await.unwrap();
    assert_eq!(journal.calls().start("t-1", "c1", "refund", &input, &key).await.unwrap(), CallStart::Finished(result("refunded")));
    assert_eq!(journal.calls().known(&format!("{key}x")).await.unwrap(), None);
    // So is a key holding a NUL.
    assert_eq!(journal.calls().start("t-1", "c2", "refund", &input, "refund:\0A-2").await.unwrap(), CallStart::Started);
    assert!(matches!(journal.calls().known("refund:\0A-2").await.unwrap(), Some(CallStart::UnknownOutcome { .. })));

    // An id over the limit, or with a NUL, is refused naming the field; nothing is written.
    let long = noise(3_000);
    assert_refused(journal.runs().save(&RunRecord::new(&long)).await.unwrap_err(), "run_id", "3000 bytes, over the limit of 1024");
    assert_refused(journal.calls().start(&long, "c3", "refund", &input, "k-3").await.unwrap_err(), "run_id", "3000 bytes");
    assert_refused(journal.calls().start("t-1", &long, "refund", &input, "k-3").await.unwrap_err(), "call_id", "3000 bytes");
    assert_eq!(journal.calls().known("k-3").await.unwrap(), None, "a refused call is not started");
    let error = tool_runtime::question::park(&journal, &parked("t-1", "c\0-4", Some("ann"), at(1), None)).await.unwrap_err();
    assert_refused(error, "call_id", "NUL character (at byte 1)");
    let error = tool_runtime::question::park(&journal, &parked("t-1", "c5", Some(&long), at(1), None)).await.unwrap_err();
    assert_refused(error, "user_id", "3000 bytes");
    assert!(journal.approvals().pending_for_run("t-1").await.unwrap().is_empty(), "a refused call is not parked");

    // A text with a NUL: refused, and the row stays as it was.
    journal.calls().start("t-1", "c6", "refund", &input, "k-6").await.unwrap();
    assert_refused(journal.calls().finish("k-6", &result("refunded\0")).await.unwrap_err(), "text", "NUL");
    assert!(matches!(journal.calls().known("k-6").await.unwrap(), Some(CallStart::UnknownOutcome { .. })));
    tool_runtime::question::park(&journal, &parked("t-1", "c7", Some("ann"), at(1), None)).await.unwrap();
    assert_refused(
        tool_runtime::question::decide(&journal, "t-1", "c7", Decision::Reject("no\0".into()), "ann").await.unwrap_err(),
        "reject_text",
        "NUL",
    );
    assert_refused(tool_runtime::question::decide(&journal, "t-1", "c7", Decision::Approve, "a\0nn").await.unwrap_err(), "decided_by", "NUL");
    assert_eq!(journal.approvals().get("t-1", "c7").await.unwrap().unwrap().decided, None, "a refused decision is not recorded");
}

async fn prune_forgets_finished_runs_and_keeps_everything_in_flight(db: Db) {
    let journal = db.open().await;
    let input = json!({"order_id": "A-1"});
    let finished = |id: &str| RunRecord { state: RunState::Finished { by: None }, ..RunRecord::new(id) };
    let call = |run: &'static str, key: &'static str, finish: bool| {
        let (journal, input) = (&journal, &input);
        async move {
            journal.calls().start(run, key, "refund", input, key).await.unwrap();
            if finish {
                journal.calls().finish(key, &result("done")).await.unwrap();
            }
        }
    };
    // Each run's calls are journaled while it goes; the finished ones then finish.
    // Finished long ago: a finished call and a settled approval.
    call("r-old", "k-old", true).await;
    tool_runtime::question::park(&journal, &parked("r-old", "a-old", None, at(1), None)).await.unwrap();
    tool_runtime::question::decide(&journal, "r-old", "a-old", Decision::Approve, "ann").await.unwrap();
    journal.approvals().settle("r-old", "a-old").await.unwrap();
    journal.runs().save(&RunRecord { executed: vec!["refund".into()], failures: vec![("refund".into(), 2)], ..finished("r-old") }).await.unwrap();
    // Still going, however old.
    journal.runs().save(&RunRecord::new("r-active")).await.unwrap();
    call("r-active", "k-active", true).await;
    // Finished, with a call in doubt.
    call("r-doubt", "k-doubt", false).await;
    journal.runs().save(&finished("r-doubt")).await.unwrap();
    // Finished, with an approval waiting and one decided but not settled.
    tool_runtime::question::park(&journal, &parked("r-waiting", "a-waiting", None, at(1), None)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await; // parked in this order, by the journal's clock
    tool_runtime::question::park(&journal, &parked("r-waiting", "a-unsettled", None, at(2), None)).await.unwrap();
    tool_runtime::question::decide(&journal, "r-waiting", "a-unsettled", Decision::Approve, "ann").await.unwrap();
    journal.runs().save(&finished("r-waiting")).await.unwrap();
    // A call journaled without a run.
    call("r-none", "k-orphan", true).await;
    // Two hours pass for all of them; then a run finishes now.
    let old = (SystemTime::now() - Duration::from_secs(7_200)).duration_since(SystemTime::UNIX_EPOCH).unwrap().as_millis();
    db.exec(format!("UPDATE journal_runs SET updated_at = {old}")).await;
    db.exec(format!("UPDATE journal_calls SET started_at = {old}, finished_at = CASE WHEN finished_at IS NULL THEN NULL ELSE {old} END")).await;
    db.exec(format!("UPDATE journal_approvals SET settled_at = CASE WHEN settled_at IS NULL THEN NULL ELSE {old} END")).await;
    call("r-recent", "k-recent", true).await;
    journal.runs().save(&finished("r-recent")).await.unwrap();

    let pruned = journal.prune(Retention::finished_older_than(Duration::from_secs(3_600))).await.unwrap();
    assert_eq!(pruned, Pruned { runs: 1, calls: 2, approvals: 1, tasks: 0 });
    assert_eq!(journal.runs().load("r-old").await.unwrap(), None);
    assert_eq!(journal.calls().known("k-old").await.unwrap(), None);
    assert_eq!(journal.approvals().get("r-old", "a-old").await.unwrap(), None);
    assert_eq!(journal.calls().known("k-orphan").await.unwrap(), None);
    // Its id used again is a new run, with nothing executed or failed.
    journal.runs().update(&RunRecord::new("r-old"), 0).await.unwrap();
    let again = journal.runs().load("r-old").await.unwrap().unwrap();
    assert_eq!((again.executed.len(), again.failures.len()), (0, 0), "{again:?}");
    // Kept: the run still going, the call in doubt, the open approvals and their runs, the recent run.
    assert!(journal.runs().load("r-active").await.unwrap().is_some());
    assert!(matches!(journal.calls().known("k-active").await.unwrap(), Some(CallStart::Finished(_))));
    assert!(journal.runs().load("r-doubt").await.unwrap().is_some());
    assert!(matches!(journal.calls().known("k-doubt").await.unwrap(), Some(CallStart::UnknownOutcome { .. })));
    assert!(journal.runs().load("r-waiting").await.unwrap().is_some());
    let unsettled: Vec<_> = journal.approvals().unsettled_for_run("r-waiting").await.unwrap().into_iter().map(|a| a.call.call_id).collect();
    assert_eq!(unsettled, ["a-waiting", "a-unsettled"]);
    assert!(matches!(journal.calls().known("k-recent").await.unwrap(), Some(CallStart::Finished(_))));

    // Every finished run, however recent; pruning again finds nothing more.
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(journal.prune(Retention::finished_runs()).await.unwrap(), Pruned { runs: 1, calls: 1, approvals: 0, tasks: 0 });
    assert_eq!(journal.runs().load("r-recent").await.unwrap(), None);
    assert_eq!(journal.prune(Retention::finished_runs()).await.unwrap(), Pruned::default());
    assert!(matches!(journal.calls().known("k-doubt").await.unwrap(), Some(CallStart::UnknownOutcome { .. })));
    assert_eq!(journal.approvals().pending_for_run("r-waiting").await.unwrap().len(), 1);
    // A pruned effect key is new again.
    assert_eq!(journal.calls().start("r-new", "c1", "refund", &input, "k-old").await.unwrap(), CallStart::Started);
}

async fn a_long_key_journaled_before_keys_were_hashed_is_still_found(db: Db) {
    let journal = db.open().await;
    // A finished charge under a 600-byte idempotency key, as an earlier
    // version stored it (the key itself; Postgres indexes that much).
    let key = format!("charge:{}", noise(600));
    let columns = "effect_key, run_id, call_id, tool, input, started_at, finished_at, kind, text, truncated, ends_run";
    db.exec(format!(
        "INSERT INTO journal_calls ({columns}) VALUES ('{key}', 't-1', 'c1', 'charge', '{{}}', 1, 2, 'success', 'charged', false, false)"
    ))
    .await;
    // Sent again after the upgrade: replayed, not charged a second time.
    match journal.calls().start("t-2", "c9", "charge", &json!({}), &key).await.unwrap() {
        CallStart::Finished(replayed) => assert_eq!(replayed.text, "charged"),
        other => panic!("the stored effect must be replayed, got {other:?}"),
    }
    assert!(matches!(journal.calls().known(&key).await.unwrap(), Some(CallStart::Finished(_))));
    // A long key started before the upgrade and finished after it.
    let started = format!("refund:{}", noise(700));
    db.exec(format!("INSERT INTO journal_calls ({columns}) VALUES ('{started}', 't-1', 'c2', 'refund', '{{}}', 1, NULL, NULL, NULL, NULL, NULL)"))
        .await;
    journal.calls().finish(&started, &result("refunded")).await.unwrap();
    assert_eq!(journal.calls().known(&started).await.unwrap(), Some(CallStart::Finished(result("refunded"))));
}

#[cfg(feature = "postgres")]
mod postgres_server {
    use super::*;

    /// Writes that wait for the database at once share transactions, and
    /// so commits: each row of a transaction carries its id (`xmin`).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn starts_waiting_together_share_commits() {
        let Some(db) = Db::postgres("group_commit").await else { return };
        let journal = db.open().await;
        let keys: Vec<String> = (0..200).map(|n| format!("refund:{n}")).collect();
        for outcome in start_at_once(&journal, &keys).await {
            assert_eq!(outcome.unwrap(), CallStart::Started);
        }
        let commits: usize = db.text("SELECT COUNT(DISTINCT xmin::text)::text FROM journal_calls".into()).await.parse().unwrap();
        assert!(commits <= 50, "200 starts waiting together took {commits} commits");
    }

    /// A connection of the pool is pinged only once it idled a second:
    /// one the server closed meanwhile is replaced, not an error.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_connection_closed_while_idle_is_replaced() {
        let Some(db) = Db::postgres("idle_closed").await else { return };
        let journal = db.open().await;
        journal.runs().save(&RunRecord::new("t-1")).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        db.exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()".into()).await;
        assert_eq!(journal.runs().load("t-1").await.unwrap().map(|run| run.run_id), Some("t-1".to_owned()));
    }

    #[tokio::test]
    async fn a_refused_port_fails_fast_saying_it_was_refused() {
        // A port nothing listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let started = std::time::Instant::now();
        let error = Journal::open(&format!("postgres://app:s3cret@127.0.0.1:{port}/journal")).await.unwrap_err();
        let waited = started.elapsed();
        assert!(matches!(error, JournalError::Open { .. }), "{error:?}");
        let message = error.to_string();
        assert!(message.to_lowercase().contains("refused") && !message.contains("s3cret"), "{message}");
        assert!(waited < Duration::from_secs(10), "waited {waited:?}");
    }
}

#[cfg(feature = "sqlite")]
mod sqlite_file {
    use super::*;

    #[tokio::test]
    async fn a_plain_path_opens_a_file_in_wal_mode() {
        let db = Db::sqlite("plain_path");
        let path = db.url().strip_prefix("sqlite:").unwrap().to_owned();
        let journal = Journal::open(&path).await.unwrap();
        journal.runs().save(&RunRecord::new("t-1")).await.unwrap();
        assert!(std::path::Path::new(&path).is_file(), "the file was created");
        assert_eq!(db.text("PRAGMA journal_mode".into()).await, "wal");
    }

    #[tokio::test]
    async fn an_unknown_scheme_is_refused() {
        let error = Journal::open("mysql://app:s3cret@db/journal").await.unwrap_err();
        assert!(matches!(error, JournalError::Url { .. }), "{error:?}");
        let message = error.to_string();
        assert!(message.contains("unknown scheme") && !message.contains("s3cret"), "{message}");
    }

    #[tokio::test]
    async fn an_empty_url_is_refused_saying_what_to_write() {
        for url in ["", "  ", "sqlite:", "sqlite://"] {
            let error = Journal::open(url).await.expect_err("an empty URL keeps nothing");
            assert!(matches!(error, JournalError::Url { .. }), "{url:?}: {error:?}");
            let message = error.to_string();
            assert!(message.contains("names no journal") && message.contains("sqlite:path/to/journal.db"), "{message}");
        }
    }

    #[tokio::test]
    async fn an_in_memory_database_is_refused() {
        let error = Journal::open("sqlite::memory:").await.unwrap_err();
        assert!(matches!(error, JournalError::Url { .. }), "{error:?}");
        assert!(error.to_string().contains("give a file path"), "{error}");
    }
}

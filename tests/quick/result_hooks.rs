//! Result hooks: the registry's (`RegistryBuilder::on_result`) and a
//! tool's own (`#[tool(on_result = path)]`, `DynamicTool::on_result`) see
//! every outcome of a call (a success, a failure, a refusal, a call parked
//! and its decision, an external call handed over and completed) with its
//! timing, off the call's path: a hook that panics or blocks changes nothing
//! of the call.
//!
//! ```text
//! cargo test --test quick result_hooks::
//! ```

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tool_runtime::prelude::*;
use tool_runtime::{CallOutcome, CallReport, ResultKind};

/// What the hooks saw, in the order they saw it.
type Seen = Arc<Mutex<Vec<(&'static str, CallReport)>>>;

/// Waits until `count` reports were seen (hooks run on other threads),
/// and gives them in the order the outcomes began: reports of calls close
/// together may arrive in either order.
async fn seen(reports: &Seen, count: usize) -> Vec<(&'static str, CallReport)> {
    for _ in 0..500 {
        if reports.lock().unwrap().len() >= count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut reports = reports.lock().unwrap().clone();
    reports.sort_by_key(|(_, report)| report.started_at);
    assert_eq!(reports.len(), count, "{:?}", reports.iter().map(|(by, report)| (by, report.result.kind)).collect::<Vec<_>>());
    reports
}

static OWN: Mutex<Vec<CallReport>> = Mutex::new(Vec::new());

fn own_hook(report: &CallReport) {
    OWN.lock().unwrap().push(report.clone());
}

/// Look up an order; slow, and logged by its own hook.
#[tool(on_result = own_hook)]
async fn slow_lookup(order_id: String) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(30)).await;
    match order_id.as_str() {
        "A-1" => Ok("A-1: shipped".into()),
        _ => Err(ToolError::not_found("ORDER_NOT_FOUND", "No such order.")),
    }
}

/// Look up an order, with no hook of its own.
#[tool(read_only)]
async fn lookup(order_id: String) -> String {
    order_id
}

/// Refund an order.
#[tool(policy = needs_approval)]
async fn refund(order_id: String) -> String {
    format!("refunded {order_id}")
}

/// Delete everything; never allowed.
#[tool(policy = deny)]
async fn wipe() -> String {
    "wiped".into()
}

fn registry(reports: &Seen) -> Registry<()> {
    let seen = reports.clone();
    Registry::builder()
        .tools(tools![slow_lookup, refund, wipe])
        .on_result(move |report| seen.lock().unwrap().push(("registry", report.clone())))
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_registrys_hook_sees_every_outcome_with_its_timing_and_the_tools_own_sees_its_calls() {
    let reports = Seen::default();
    let registry = registry(&reports);
    let app = Arc::new(());
    let user = Arc::new(UserContext::new("u-7"));

    let before = std::time::SystemTime::now();
    let ok = registry.call(&app, "slow_lookup", r#"{"order_id": "A-1"}"#).user(user.clone()).thread_id("t-1").await.into_result().unwrap();
    assert_eq!(ok.text, "A-1: shipped");
    registry.invoke(&app, "slow_lookup", r#"{"order_id": "B-2"}"#).await;
    registry.invoke(&app, "slow_lookup", r#"{"order": 1}"#).await;
    registry.invoke(&app, "wipe", "").await;
    registry.invoke(&app, "nothing", "{}").await;
    let CallOutcome::NeedsApproval(pending) = registry.call(&app, "refund", r#"{"order_id": "A-1"}"#).await else { panic!("a refund waits") };
    assert_eq!(registry.approve(pending).await.text, "refunded A-1");
    let CallOutcome::NeedsApproval(pending) = registry.call(&app, "refund", r#"{"order_id": "A-2"}"#).await else { panic!("a refund waits") };
    registry.reject(pending, Some("Not today."));

    let reports = seen(&reports, 9).await;
    let kinds: Vec<(&str, ResultKind)> = reports.iter().map(|(_, report)| (report.result.tool.as_str(), report.result.kind)).collect();
    assert_eq!(
        kinds,
        [
            ("slow_lookup", ResultKind::Success),
            ("slow_lookup", ResultKind::ToolError),
            ("slow_lookup", ResultKind::InvalidArguments),
            ("wipe", ResultKind::Denied),
            ("nothing", ResultKind::UnknownTool),
            ("refund", ResultKind::PendingApproval),
            ("refund", ResultKind::Success),
            ("refund", ResultKind::PendingApproval),
            ("refund", ResultKind::Rejected),
        ]
    );
    let first = &reports[0].1;
    assert_eq!(first.result, ok, "the report carries the result the caller got");
    assert_eq!(first.user.as_deref().and_then(|user| user.id.as_deref()), Some("u-7"));
    assert_eq!(first.thread_id.as_deref(), Some("t-1"));
    assert!(first.elapsed >= Duration::from_millis(30), "the call slept 30 ms: {:?}", first.elapsed);
    assert!(first.started_at >= before);
    assert_eq!(reports[1].1.user, None, "an anonymous caller");

    // The tool's own hook saw its three calls, and nothing else.
    let mut own = OWN.lock().unwrap().clone();
    own.sort_by_key(|report| report.started_at);
    let own: Vec<ResultKind> = own.iter().map(|report| report.result.kind).collect();
    assert_eq!(own, [ResultKind::Success, ResultKind::ToolError, ResultKind::InvalidArguments]);
    assert!(registry.definition("slow_lookup").unwrap().has_result_hook);
    assert!(!registry.definition("refund").unwrap().has_result_hook);
}

fn echo(name: &str) -> DynamicTool<()> {
    DynamicTool::new(name, "Echo.", json!({"type": "object"}), |args: Value, _: Ctx<()>| async move { Ok::<_, ToolError>(args) })
}

#[tokio::test]
async fn a_hook_that_panics_or_blocks_changes_nothing_of_the_call() {
    let reports = Seen::default();
    let seen_by = reports.clone();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let released = Mutex::new(released);
    let panicking = echo("panicking").on_result(|_| panic!("a hook with a bug"));
    let blocking = echo("blocking").on_result(move |_| {
        // Holds its thread until the test has its result (or 10 s).
        let _ = released.lock().unwrap().recv_timeout(Duration::from_secs(10));
    });
    let registry = Registry::builder()
        .tool(panicking)
        .tool(blocking)
        .on_result(move |report| seen_by.lock().unwrap().push(("registry", report.clone())))
        .build()
        .unwrap();
    let app = Arc::new(());

    // The tool's own hook panics: the call is as it was, and the registry's hook still sees it.
    let result = registry.invoke(&app, "panicking", r#"{"a": 1}"#).await;
    assert_eq!((result.kind, result.text.as_str()), (ResultKind::Success, r#"{"a":1}"#));
    assert_eq!(seen(&reports, 1).await[0].1.result, result);

    // The tool's own hook blocks: the call does not wait for it; the registry's hook, after it, does.
    let result = tokio::time::timeout(Duration::from_secs(5), registry.invoke(&app, "blocking", r#"{"a": 2}"#)).await.expect("the call did not wait");
    assert_eq!(result.text, r#"{"a":2}"#);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(reports.lock().unwrap().len(), 1, "the registry's hook waits behind the blocked one");
    release.send(()).unwrap();
    assert_eq!(seen(&reports, 2).await[1].1.result, result);
}

#[tokio::test]
async fn in_a_run_refusals_and_external_results_are_reported_with_the_runs_user_and_thread() {
    let reports = Seen::default();
    let seen_by = reports.clone();
    let pick = DynamicTool::external("pick_slot", "Pick a slot.", json!({"type": "object"}));
    let registry = Registry::builder()
        .tools(tools![lookup])
        .tool(pick)
        .on_result(move |report| seen_by.lock().unwrap().push(("registry", report.clone())))
        .build()
        .unwrap();
    let mut run = registry.run(Arc::new(())).with_user(UserContext::new("u-9")).with_thread_id("thread-3");
    let step = run.execute(vec![ToolCall::new("c1", "pick_slot", "{}"), ToolCall::new("c1", "lookup", r#"{"order_id": "A-1"}"#)]).await;
    assert_eq!(step.results[1].error_code.as_deref(), Some("DUPLICATE_CALL_ID"));
    run.external_calls().complete("c1", json!("10:30")).await.unwrap();

    let reports = seen(&reports, 3).await;
    // Reports of calls close together may arrive in either order.
    let mut kinds: Vec<&str> = reports.iter().map(|(_, report)| report.result.kind.as_str()).collect();
    kinds.sort_unstable();
    assert_eq!(kinds, ["external", "invalid_arguments", "success"]);
    assert!(reports.iter().any(|(_, report)| report.result == step.results[1]), "the refusal, as the model reads it");
    for (_, report) in &reports {
        assert_eq!(report.user.as_deref().and_then(|user| user.id.as_deref()), Some("u-9"));
        assert_eq!(report.thread_id.as_deref(), Some("thread-3"));
    }
}

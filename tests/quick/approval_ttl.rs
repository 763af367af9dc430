//! A call waiting for approval has a time to live: approved after it, the
//! call is not run and the model reads why.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use tool_runtime::prelude::*;
use tool_runtime::{CallOutcome, DEFAULT_APPROVAL_TTL, PendingCall, ResultKind};

#[derive(Default)]
struct Bank {
    transfers: AtomicUsize,
}

/// Move money; a human approves first.
#[tool(policy = needs_approval)]
async fn transfer(ctx: Ctx<Bank>, cents: u64) -> String {
    ctx.app().transfers.fetch_add(1, Ordering::SeqCst);
    format!("moved {cents}")
}

fn registry(ttl: Option<Duration>) -> Registry<Bank> {
    let builder = Registry::builder().tools(tools![transfer]);
    let builder = match ttl {
        Some(ttl) => builder.approval_ttl(ttl),
        None => builder,
    };
    builder.build().unwrap()
}

async fn park(registry: &Registry<Bank>, bank: &Arc<Bank>) -> PendingCall<Bank> {
    match registry.call(bank, "transfer", json!({"cents": 5})).call_id("t-1").await {
        CallOutcome::NeedsApproval(pending) => pending,
        CallOutcome::Done(result) => panic!("expected a pending approval, got {result:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn an_approval_after_the_default_ttl_does_not_run_the_call() {
    let registry = registry(None);
    assert_eq!(registry.approval_ttl(), DEFAULT_APPROVAL_TTL);
    let bank = Arc::new(Bank::default());

    let pending = park(&registry, &bank).await;
    tokio::time::advance(DEFAULT_APPROVAL_TTL + Duration::from_secs(1)).await;
    let result = registry.approve(pending).await;
    assert_eq!(result.kind, ResultKind::Rejected);
    assert_eq!(result.error_code.as_deref(), Some("APPROVAL_EXPIRED"));
    assert_eq!(result.call_id, "t-1");
    assert!(result.text.starts_with("code: APPROVAL_EXPIRED, status: 403"), "{}", result.text);
    assert!(result.text.contains("within 10m, so it was not run"), "{}", result.text);
    assert!(result.text.ends_with("Do not retry this call."), "{}", result.text);

    let pending = park(&registry, &bank).await;
    tokio::time::advance(DEFAULT_APPROVAL_TTL).await;
    let result = registry.approve_with(pending, json!({"cents": 1})).await;
    assert_eq!(result.error_code.as_deref(), Some("APPROVAL_EXPIRED"), "{}", result.text);
    assert_eq!(bank.transfers.load(Ordering::SeqCst), 0, "an expired approval never runs the call");
}

#[tokio::test(start_paused = true)]
async fn an_approval_within_the_ttl_runs_the_call() {
    let registry = registry(Some(Duration::from_secs(30)));
    let bank = Arc::new(Bank::default());
    let pending = park(&registry, &bank).await;
    tokio::time::advance(Duration::from_secs(29)).await;
    assert_eq!(registry.approve(pending).await.text, "moved 5");

    let pending = park(&registry, &bank).await;
    tokio::time::advance(Duration::from_secs(30)).await;
    let result = registry.approve(pending).await;
    assert!(result.text.contains("within 30s, so it was not run"), "{}", result.text);
    assert_eq!(bank.transfers.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn expired_approvals_give_up_their_pending_slots() {
    let registry =
        Registry::<Bank>::builder().tools(tools![transfer]).approval_ttl(Duration::from_secs(30)).max_pending_approvals(3).build().unwrap();
    let bank = Arc::new(Bank::default());
    let mut run = registry.run(bank.clone());
    let calls = |ids: &[&str]| ids.iter().map(|id| tool_runtime::ToolCall::new(*id, "transfer", json!({"cents": 5}))).collect();
    let first = run.execute(calls(&["t-1", "t-2", "t-3"])).await;
    assert_eq!(run.pending().len(), 3);
    assert!(first.has_pending());
    tokio::time::advance(Duration::from_secs(31)).await;

    // Only expired calls wait: a fourth call is parked, not refused.
    let step = run.execute(calls(&["t-4"])).await;
    assert_eq!(step.results[0].kind, ResultKind::PendingApproval, "{}", step.results[0].text);
    assert_eq!(run.pending().iter().map(|p| p.id().as_str()).collect::<Vec<_>>(), ["t-4"]);
    // The expired calls are settled as expired, not dropped: the host
    // gets their results, to replace their pending ones.
    assert_eq!(step.expired.iter().map(|r| r.call_id.as_str()).collect::<Vec<_>>(), ["t-1", "t-2", "t-3"]);
    for expired in &step.expired {
        assert_eq!(expired.kind, ResultKind::Rejected);
        assert_eq!(expired.error_code.as_deref(), Some("APPROVAL_EXPIRED"), "{}", expired.text);
    }
    let mut first = first;
    step.expired.iter().cloned().for_each(|expired| first.settle(expired));
    assert!(!first.has_pending());
    assert!(run.approvals().approve("t-1").await.is_err(), "an expired call is settled once");
    assert_eq!(bank.transfers.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn calls_within_their_ttl_keep_their_slots() {
    let registry =
        Registry::<Bank>::builder().tools(tools![transfer]).approval_ttl(Duration::from_secs(30)).max_pending_approvals(2).build().unwrap();
    let mut run = registry.run(Arc::new(Bank::default()));
    let calls = |ids: &[&str]| ids.iter().map(|id| tool_runtime::ToolCall::new(*id, "transfer", json!({"cents": 5}))).collect();
    run.execute(calls(&["t-1"])).await;
    tokio::time::advance(Duration::from_secs(20)).await;
    run.execute(calls(&["t-2"])).await;
    tokio::time::advance(Duration::from_secs(15)).await;
    // t-1 expired, t-2 has 15 s left: only t-1 is swept.
    let step = run.execute(calls(&["t-3"])).await;
    assert_eq!(step.results[0].kind, ResultKind::PendingApproval);
    assert_eq!(step.expired.iter().map(|r| r.call_id.as_str()).collect::<Vec<_>>(), ["t-1"]);
    assert_eq!(run.pending().iter().map(|p| p.id().as_str()).collect::<Vec<_>>(), ["t-2", "t-3"]);
    let step = run.execute(calls(&["t-4"])).await;
    assert_eq!(step.results[0].error_code.as_deref(), Some("TOO_MANY_PENDING"), "{}", step.results[0].text);
    assert!(step.expired.is_empty());
}

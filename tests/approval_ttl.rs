//! A call waiting for approval has a time to live: approved after it, the
//! call is not run and the model reads why.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tool_runtime::prelude::*;
use tool_runtime::{CallOutcome, PendingCall, ResultKind, DEFAULT_APPROVAL_TTL};

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

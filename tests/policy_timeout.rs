//! A policy predicate is bounded by the registry's policy timeout, sync or
//! async: one that takes longer denies the call (fail closed), at the
//! timeout, not when it is done.
//!
//! ```text
//! cargo test --test policy_timeout
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tool_runtime::ResultKind;
use tool_runtime::prelude::*;

#[derive(Default)]
struct Ledger {
    writes: AtomicUsize,
}

/// Write to the ledger; a slow rule decides first.
#[tool(policy = slow_rule)]
async fn write(ctx: Ctx<Ledger>, entry: String) -> String {
    ctx.app().writes.fetch_add(1, Ordering::SeqCst);
    entry
}

/// A synchronous rule that blocks its thread (a slow lookup in a blocking client).
fn slow_rule(input: &write, _ctx: &Ctx<Ledger>) -> Verdict {
    if input.entry == "slow" {
        std::thread::sleep(Duration::from_millis(1500));
    }
    Verdict::Allow
}

fn registry() -> Registry<Ledger> {
    Registry::builder().tools(tools![write]).policy_timeout(Duration::from_millis(100)).build().unwrap()
}

async fn timed_call(registry: &Registry<Ledger>, ledger: &Arc<Ledger>, entry: &str) -> (tool_runtime::CallResult, Duration) {
    let started = Instant::now();
    let result = registry.invoke(ledger, "write", json!({"entry": entry})).await;
    (result, started.elapsed())
}

async fn a_sync_predicate_over_the_limit_denies_at_the_limit() {
    let (registry, ledger) = (registry(), Arc::new(Ledger::default()));
    let (result, took) = timed_call(&registry, &ledger, "slow").await;
    assert_eq!(result.kind, ResultKind::Denied, "{}", result.text);
    assert_eq!(result.error_code.as_deref(), Some("POLICY_TIMEOUT"));
    assert!(took < Duration::from_millis(1000), "denied after {took:?}, not at the 100 ms limit");
    assert_eq!(ledger.writes.load(Ordering::SeqCst), 0);
    // A quick one still decides, and its call runs.
    let (result, _) = timed_call(&registry, &ledger, "quick").await;
    assert_eq!(result.text, "quick");
    assert_eq!(ledger.writes.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_sync_predicate_is_bounded_on_a_current_thread_runtime() {
    a_sync_predicate_over_the_limit_denies_at_the_limit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_predicate_is_bounded_on_a_multi_thread_runtime() {
    a_sync_predicate_over_the_limit_denies_at_the_limit().await;
}

#[tokio::test]
async fn a_dynamic_tools_sync_predicate_is_bounded_too() {
    let tool =
        DynamicTool::new("note", "Write a note.", json!({"type": "object"}), |_args, _ctx: Ctx<Ledger>| async { Ok::<_, ToolError>(json!("noted")) })
            .policy_fn(|_args, _ctx| {
                std::thread::sleep(Duration::from_millis(1500));
                Verdict::Allow
            });
    let registry = Registry::<Ledger>::builder().tool(tool).policy_timeout(Duration::from_millis(100)).build().unwrap();
    let started = Instant::now();
    let result = registry.invoke(&Arc::new(Ledger::default()), "note", json!({})).await;
    assert_eq!(result.error_code.as_deref(), Some("POLICY_TIMEOUT"), "{}", result.text);
    assert!(started.elapsed() < Duration::from_millis(1000), "denied after {:?}", started.elapsed());
}

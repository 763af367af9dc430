//! `on_error = path`: a tool's own error recovered into a result the model
//! can act on; never for timeouts, cancellation, invalid arguments or
//! policy refusals; a recovery that declines or panics gives the original
//! error.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use tool_runtime::prelude::*;
use tool_runtime::{CancellationToken, ResultKind};

#[derive(Default)]
struct App;

/// Look up a price; the feed is often down.
#[tool(on_error = cached_price)]
async fn price(ctx: Ctx<App>, sku: String) -> Result<String, ToolError> {
    let _ = &ctx;
    Err(ToolError::unavailable("FEED_DOWN", format!("The price feed has no answer for {sku}; try later.")))
}

fn cached_price(input: &price, error: &ToolError) -> String {
    format!("{}: 9.99 (cached; {})", input.sku, error.code())
}

/// Convert a currency; recovers only for known currencies, asynchronously.
#[tool(on_error = convert_offline)]
async fn convert(currency: String) -> Result<u32, std::io::Error> {
    Err(std::io::Error::other(format!("no rate for {currency}")))
}

async fn convert_offline(input: &convert, error: &std::io::Error) -> Result<u32, ToolError> {
    tokio::task::yield_now().await;
    match input.currency.as_str() {
        "EUR" if error.to_string().contains("no rate") => Ok(100),
        _ => Err(ToolError::not_found("NO_RATE", "No offline rate.")),
    }
}

/// A recovery that panics.
#[tool(on_error = broken_recovery)]
async fn flaky() -> Result<String, ToolError> {
    Err(ToolError::conflict("BUSY", "The line is busy; call again in a minute."))
}

fn broken_recovery(_input: &flaky, _error: &ToolError) -> Option<String> {
    panic!("the recovery broke")
}

/// A recovery that panics while it waits.
#[tool(on_error = broken_async_recovery)]
async fn flaky_later() -> Result<String, ToolError> {
    Err(ToolError::conflict("BUSY", "The line is busy; call again in a minute."))
}

async fn broken_async_recovery(_input: &flaky_later, _error: &ToolError) -> Option<String> {
    tokio::task::yield_now().await;
    panic!("the recovery broke while it waited")
}

/// Everything a recovery must never see: a slow tool, a refused one, a
/// cancelled one, one given invalid arguments.
#[tool(on_error = count_recovery, timeout = "20ms", policy = refuse_negative)]
async fn guarded(ctx: Ctx<App>, amount: i32) -> Result<String, ToolError> {
    if amount == 0 {
        return Err(ToolError::bad_request("ZERO", "The amount is zero; ask for an amount."));
    }
    ctx.cancellation().cancelled().await;
    std::future::pending::<()>().await;
    Ok("never".into())
}

fn refuse_negative(input: &guarded, _ctx: &Ctx<App>) -> Verdict {
    if input.amount < 0 { Verdict::deny("Negative amounts are refused.") } else { Verdict::Allow }
}

fn count_recovery(_input: &guarded, _error: &ToolError) -> Option<String> {
    RECOVERIES.fetch_add(1, Ordering::SeqCst);
    Some("recovered".into())
}

static RECOVERIES: AtomicUsize = AtomicUsize::new(0);

/// Close a ticket; a recovered close still ends the run.
#[tool(on_error = close_anyway, ends_run = closed)]
async fn close(ticket: String) -> Result<String, ToolError> {
    Err(ToolError::conflict("LOCKED", format!("Ticket {ticket} is locked; try later.")))
}

fn close_anyway(input: &close, _error: &ToolError) -> String {
    format!("closed {}", input.ticket)
}

fn closed(input: &close, output: &String) -> bool {
    *output == format!("closed {}", input.ticket)
}

fn registry() -> Registry<App> {
    Registry::builder().tools(tools![price, convert, flaky, flaky_later, guarded, close]).build().unwrap()
}

#[tokio::test]
async fn a_recovered_output_is_a_success_that_ends_run_sees() {
    let result = registry().invoke(&Arc::new(App), "close", json!({"ticket": "T-7"})).await;
    assert_eq!(result.text, "closed T-7");
    assert!(result.ends_run);
}

#[tokio::test]
async fn a_sync_recovery_sees_the_input_and_the_error_and_its_output_is_the_result() {
    let result = registry().invoke(&Arc::new(App), "price", json!({"sku": "S-1"})).await;
    assert_eq!(result.kind, ResultKind::Success, "{}", result.text);
    assert_eq!(result.text, "S-1: 9.99 (cached; FEED_DOWN)");
}

#[tokio::test]
async fn an_async_recovery_recovers_or_declines_with_the_original_error() {
    let registry = registry();
    let app = Arc::new(App);
    let recovered = registry.invoke(&app, "convert", json!({"currency": "EUR"})).await;
    assert_eq!(recovered.structured(), Some(&json!(100)), "{}", recovered.text);
    let declined = registry.invoke(&app, "convert", json!({"currency": "XYZ"})).await;
    // The tool's own error (internal: an io::Error), not the recovery's.
    assert_eq!(declined.kind, ResultKind::Internal, "{}", declined.text);
    assert!(!declined.text.contains("NO_RATE"), "{}", declined.text);
}

#[tokio::test]
async fn a_panicking_recovery_gives_the_original_error() {
    let registry = registry();
    let app = Arc::new(App);
    for tool in ["flaky", "flaky_later"] {
        let result = registry.invoke(&app, tool, "{}").await;
        assert_eq!(result.kind, ResultKind::ToolError, "{tool}: {}", result.text);
        assert!(result.text.starts_with("code: BUSY, status: 409"), "{tool}: {}", result.text);
    }
}

#[tokio::test]
async fn a_recovery_is_never_called_for_timeouts_cancellation_invalid_arguments_or_refusals() {
    let registry = registry();
    let app = Arc::new(App);
    let before = RECOVERIES.load(Ordering::SeqCst);
    let timed_out = registry.invoke(&app, "guarded", json!({"amount": 5})).await;
    assert_eq!(timed_out.kind, ResultKind::TimedOut, "{}", timed_out.text);
    let invalid = registry.invoke(&app, "guarded", json!({"amount": "five"})).await;
    assert_eq!(invalid.kind, ResultKind::InvalidArguments, "{}", invalid.text);
    let refused = registry.invoke(&app, "guarded", json!({"amount": -5})).await;
    assert_eq!(refused.kind, ResultKind::Denied, "{}", refused.text);
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(5)).await;
        cancel.cancel();
    });
    let cancelled = registry.call(&app, "guarded", json!({"amount": 5})).cancellation(&token).await.into_result().unwrap();
    assert_eq!(cancelled.kind, ResultKind::Cancelled, "{}", cancelled.text);
    assert_eq!(RECOVERIES.load(Ordering::SeqCst), before, "no recovery for any of them");
    // The tool's own error is recovered.
    assert_eq!(registry.invoke(&app, "guarded", json!({"amount": 0})).await.text, "recovered");
    assert_eq!(RECOVERIES.load(Ordering::SeqCst), before + 1);
}

#[tokio::test]
async fn a_dynamic_tool_recovers_sync_or_async_and_declines_with_the_original_error() {
    let failing = |name: &str| {
        DynamicTool::new(name.to_owned(), "Quote a price.", json!({"type": "object"}), |_args, _ctx: Ctx<()>| async {
            Err::<serde_json::Value, _>(ToolError::unavailable("FEED_DOWN", "The price feed is down; try later."))
        })
    };
    let sync = failing("sync_quote").on_error(|args, error| {
        let code = error.downcast_ref::<ToolError>().map(ToolError::code)?;
        (args["sku"] == json!("S-1")).then(|| json!(format!("9.99 (cached; {code})")))
    });
    let later = failing("async_quote").on_error_async(|args, _error| async move {
        tokio::task::yield_now().await;
        (args["sku"] == json!("S-1")).then(|| json!("9.99 (cached)"))
    });
    let panicking = failing("panicking_quote").on_error(|_args, _error| panic!("the recovery broke"));
    let registry = Registry::<()>::builder().tool(sync).tool(later).tool(panicking).build().unwrap();
    let app = Arc::new(());
    assert_eq!(registry.invoke(&app, "sync_quote", json!({"sku": "S-1"})).await.text, "9.99 (cached; FEED_DOWN)");
    assert_eq!(registry.invoke(&app, "async_quote", json!({"sku": "S-1"})).await.text, "9.99 (cached)");
    for tool in ["sync_quote", "async_quote", "panicking_quote"] {
        let declined = registry.invoke(&app, tool, json!({"sku": "S-2"})).await;
        assert_eq!(declined.kind, ResultKind::ToolError, "{tool}: {}", declined.text);
        assert!(declined.text.starts_with("code: FEED_DOWN, status: 503"), "{tool}: {}", declined.text);
    }
}

//! A Rust host's typed call (`Call::output`): the same pipeline as any
//! call (validation, policy, approval, timeout, output checks), and the
//! tool's output as the value its function returned, not only the text and
//! JSON the model reads.
//!
//! ```text
//! cargo test --test quick typed_output::
//! ```

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use tool_runtime::prelude::*;
use tool_runtime::{OutputError, ResultKind};

/// A price: `Serialize` only, as an output type needs; never read back.
#[derive(Debug, PartialEq, Serialize, schemars::JsonSchema)]
struct Quote {
    cents: u64,
    /// Not sent to the model; the host still gets it.
    #[serde(skip)]
    supplier_ref: String,
}

/// Quote a price, at once.
#[tool(read_only)]
async fn quote(sku: String) -> Result<Quote, ToolError> {
    match sku.as_str() {
        "" => Err(ToolError::bad_request("NO_SKU", "Give a SKU.")),
        _ => Ok(Quote { cents: 999, supplier_ref: format!("sup-{sku}") }),
    }
}

/// Quote a price after asking the supplier.
#[tool(read_only, max_output_chars = 10)]
async fn slow_quote(sku: String) -> Quote {
    tokio::time::sleep(Duration::from_millis(20)).await;
    Quote { cents: 1_234_567_890, supplier_ref: format!("sup-{sku}") }
}

/// Refund an order; a human approves first.
#[tool(policy = needs_approval)]
async fn refund(order_id: String) -> String {
    format!("refunded {order_id}")
}

/// Take too long.
#[tool(timeout = "20ms")]
async fn stuck() -> String {
    tokio::time::sleep(Duration::from_secs(5)).await;
    "never".into()
}

fn registry() -> Registry<()> {
    let echo = DynamicTool::new("echo", "Echo.", json!({"type": "object"}), |args: Value, _: Ctx<()>| async move { Ok::<_, ToolError>(args) });
    Registry::builder().tools(tools![quote, slow_quote, refund, stuck]).tool(echo).build().unwrap()
}

#[tokio::test]
async fn a_typed_call_gives_the_tools_own_value_where_it_runs_at_once_or_waits() {
    let registry = registry();
    let app = Arc::new(());
    let at_once: Quote = registry.call(&app, "quote", r#"{"sku": "K-1"}"#).output().await.unwrap();
    assert_eq!(at_once, Quote { cents: 999, supplier_ref: "sup-K-1".into() }, "what serde skips is kept too");

    let waited: Quote = registry.call(&app, "slow_quote", json!({"sku": "K-2"})).output().await.unwrap();
    assert_eq!(waited, Quote { cents: 1_234_567_890, supplier_ref: "sup-K-2".into() }, "whole, though the model's text is cut");

    // The same calls, untyped: the text and JSON as ever, nothing kept.
    let result = registry.invoke(&app, "slow_quote", r#"{"sku": "K-2"}"#).await;
    assert!(result.truncated, "{}", result.text);
    assert_eq!(registry.invoke(&app, "quote", r#"{"sku": "K-1"}"#).await.text, r#"{"cents":999}"#);
}

#[tokio::test]
async fn a_typed_call_goes_through_the_whole_pipeline_and_says_why_it_gave_no_value() {
    let registry = registry();
    let app = Arc::new(());
    let failed = |error: OutputError<()>| match error {
        OutputError::Failed(result) => result,
        other => panic!("{other}"),
    };

    let invalid = failed(registry.call(&app, "quote", r#"{"sku": 1}"#).output::<Quote>().await.unwrap_err());
    assert_eq!(invalid.kind, ResultKind::InvalidArguments);
    let tool_error = failed(registry.call(&app, "quote", r#"{"sku": ""}"#).output::<Quote>().await.unwrap_err());
    assert_eq!(tool_error.error_code.as_deref(), Some("NO_SKU"));
    let timed_out = failed(registry.call(&app, "stuck", "").output::<String>().await.unwrap_err());
    assert_eq!(timed_out.kind, ResultKind::TimedOut);

    let Err(OutputError::NeedsApproval(pending)) = registry.call(&app, "refund", r#"{"order_id": "A-1"}"#).output::<String>().await else {
        panic!("a refund waits for a human");
    };
    assert_eq!(registry.approve(pending).await.text, "refunded A-1");

    let Err(OutputError::OtherType { result, expected }) = registry.call(&app, "quote", r#"{"sku": "K-1"}"#).output::<String>().await else {
        panic!("a Quote is not a String");
    };
    assert_eq!((result.kind, expected), (ResultKind::Success, "alloc::string::String"));
    let dynamic = registry.call(&app, "echo", "{}").output::<Value>().await.unwrap_err();
    assert!(matches!(dynamic, OutputError::OtherType { .. }), "a dynamic tool's output is JSON already: {dynamic}");
}

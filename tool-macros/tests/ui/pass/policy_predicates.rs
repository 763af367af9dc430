use std::sync::Arc;

use tool_runtime::prelude::*;

struct Bank {
    limit: u64,
}

fn small_refunds(input: &refund, ctx: &Ctx<Bank>) -> Verdict {
    if input.amount <= ctx.app().limit { Verdict::Allow } else { Verdict::needs_approval() }
}

async fn open_accounts(input: &close_account, _ctx: &Ctx<Bank>) -> Result<Verdict, std::io::Error> {
    Ok(if input.account.starts_with("open-") { Verdict::Allow } else { Verdict::deny("That account is closed.") })
}

/// Refund an amount.
#[tool(policy = small_refunds)]
async fn refund(_ctx: Ctx<Bank>, amount: u64) -> String {
    format!("refunded {amount}")
}

/// Close an account.
#[tool(policy = open_accounts)]
async fn close_account(_ctx: Ctx<Bank>, account: String) -> String {
    format!("closed {account}")
}

/// Always refused.
#[tool(policy = deny)]
async fn wipe(_ctx: Ctx<Bank>) -> String {
    String::new()
}

/// Always asks.
#[tool(policy = needs_approval)]
async fn transfer(_ctx: Ctx<Bank>) -> String {
    String::new()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::<Bank>::builder()
        .tools(tools![refund, close_account, wipe, transfer])
        .build()
        .unwrap();
    let app = Arc::new(Bank { limit: 50 });
    assert_eq!(registry.invoke(&app, "refund", r#"{"amount": 10}"#).await.text, "refunded 10");
    let outcome = registry.call(&app, "refund", r#"{"amount": 100}"#).await;
    assert!(outcome.into_result().is_none(), "a large refund waits for a human");
    let text = registry.invoke(&app, "close_account", r#"{"account": "open-1"}"#).await.text;
    assert_eq!(text, "closed open-1");
    assert!(registry.invoke(&app, "close_account", r#"{"account": "x"}"#).await.is_error());
    assert!(registry.invoke(&app, "wipe", "{}").await.is_error());
    assert!(registry.call(&app, "transfer", "{}").await.into_result().is_none());
    assert_eq!(registry.definition("refund").unwrap().policy, PolicyKind::Predicate);
}

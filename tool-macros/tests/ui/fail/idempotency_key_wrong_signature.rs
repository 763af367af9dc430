use tool_runtime::prelude::*;

fn refund_key(order_id: &String, _cents: u64) -> String {
    order_id.clone()
}

/// Refund an order once.
#[tool(idempotency_key = refund_key)]
async fn refund(order_id: String, cents: u64) -> String {
    format!("{order_id} {cents}")
}

fn main() {}

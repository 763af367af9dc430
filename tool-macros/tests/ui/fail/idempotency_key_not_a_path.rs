use tool_runtime::prelude::*;

/// Refund an order once.
#[tool(idempotency_key = "order_id")]
async fn refund(order_id: String) -> String {
    order_id
}

fn main() {}

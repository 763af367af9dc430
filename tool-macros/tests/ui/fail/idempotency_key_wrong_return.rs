use tool_runtime::prelude::*;

fn refund_key(input: &refund) -> u64 {
    input.order
}

/// Refund an order once.
#[tool(idempotency_key = refund_key)]
async fn refund(order: u64) -> String {
    order.to_string()
}

fn main() {}

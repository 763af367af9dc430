use tool_runtime::prelude::*;

fn only_small(amount: u64) -> bool {
    amount < 100
}

/// Refund an order.
#[tool(policy = only_small)]
async fn refund(amount: u64) -> String {
    format!("refunded {amount}")
}

fn main() {}

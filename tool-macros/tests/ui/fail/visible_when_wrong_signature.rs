use tool_runtime::prelude::*;

fn after_first_step(step: usize) -> bool {
    step > 0
}

/// Refund an order.
#[tool(visible_when = after_first_step)]
async fn refund(amount: u64) -> String {
    format!("refunded {amount}")
}

fn main() {}

use tool_runtime::prelude::*;

fn only_small<App>(input: &refund, _ctx: &Ctx<App>) -> bool {
    input.amount < 100
}

/// Refund an amount.
#[tool(policy = only_small)]
async fn refund(amount: u64) -> String {
    format!("refunded {amount}")
}

fn main() {}

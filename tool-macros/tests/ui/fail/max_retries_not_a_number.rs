use tool_runtime::prelude::*;

/// Charge a card.
#[tool(max_retries = "3")]
async fn charge(amount: u32) -> String {
    format!("charged {amount}")
}

fn main() {}

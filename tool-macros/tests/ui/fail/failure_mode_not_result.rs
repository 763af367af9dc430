use tool_runtime::prelude::*;

/// Charge the card.
#[tool(failure_mode = "error")]
async fn charge(cents: u32) -> String {
    format!("charged {cents}")
}

fn main() {}

use tool_runtime::prelude::*;

/// Charge the card.
#[tool(failure_mode = "return")]
async fn charge(cents: u32) -> Result<String, ToolError> {
    Ok(format!("charged {cents}"))
}

fn main() {}

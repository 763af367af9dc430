use tool_runtime::prelude::*;

async fn fallback(_input: &price, _error: &ToolError) -> u32 {
    999
}

/// Look up a price.
#[tool(on_error = fallback)]
async fn price(sku: String) -> Result<String, ToolError> {
    Ok(sku)
}

fn main() {}

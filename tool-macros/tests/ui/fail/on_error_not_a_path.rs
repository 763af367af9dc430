use tool_runtime::prelude::*;

/// Look up a price.
#[tool(on_error = "fallback")]
async fn price(sku: String) -> Result<String, ToolError> {
    Ok(sku)
}

fn main() {}

use tool_runtime::prelude::*;

fn fallback(_error: &ToolError) -> String {
    "cached".into()
}

/// Look up a price.
#[tool(on_error = fallback)]
async fn price(sku: String) -> Result<String, ToolError> {
    Ok(sku)
}

fn main() {}

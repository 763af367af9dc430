use tool_runtime::prelude::*;

/// Read the stock level.
#[tool(replay = true)]
async fn stock(product: String) -> String {
    product
}

fn main() {}

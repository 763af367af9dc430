use tool_runtime::prelude::*;

/// Search the orders of a region.
#[tool(scope = "region")]
async fn search_orders(region: String) -> String {
    region
}

fn main() {}

use tool_runtime::prelude::*;

fn one_region(region: &String) -> String {
    region.clone()
}

/// Search the orders of a region.
#[tool(scope = one_region)]
async fn search_orders(region: String) -> String {
    region
}

fn main() {}

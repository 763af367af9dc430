use serde::Deserialize;
use tool_runtime::prelude::*;

#[derive(Deserialize)]
struct Region {
    code: String,
}

fn one_region(region: &Region, tool: &mut ScopedTool) {
    tool.description = format!("Search the orders of {}.", region.code);
}

/// Search the orders of a region.
#[tool(scope = one_region)]
async fn search_orders(region: String) -> String {
    region
}

fn main() {}

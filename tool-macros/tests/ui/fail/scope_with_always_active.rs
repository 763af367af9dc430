use tool_runtime::prelude::*;

fn one_region(region: &String, tool: &mut ScopedTool) {
    tool.description = format!("Search the orders of {region}.");
}

/// Search the orders of a region.
#[tool(always_active, scope = one_region)]
async fn search_orders(region: String) -> String {
    region
}

fn main() {}

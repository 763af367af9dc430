use tool_runtime::prelude::*;

/// Fetch records.
#[tool(read_only, parallel_safe = small)]
async fn fetch(n: u32) -> String {
    format!("{n} records")
}

fn small(args: &serde_json::Value) -> bool {
    args["n"].as_u64().is_some_and(|n| n < 10)
}

fn main() {}

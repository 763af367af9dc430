use tool_runtime::prelude::*;

/// Fetch records.
#[tool(parallel_safe = small)]
async fn fetch(n: u32) -> String {
    format!("{n} records")
}

fn small(n: &u32) -> bool {
    *n < 10
}

fn main() {}

use tool_runtime::prelude::*;

/// Search the archive.
#[tool(interim = "Still searching...", timeout = "1s")]
async fn search(query: String) -> String {
    query
}

fn main() {}

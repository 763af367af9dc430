use tool_runtime::prelude::*;

/// Search the archive.
#[tool(interim = "Still searching...", interim_after = "5s", timeout = "5s")]
async fn search(query: String) -> String {
    query
}

fn main() {}

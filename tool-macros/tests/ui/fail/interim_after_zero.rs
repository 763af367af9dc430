use tool_runtime::prelude::*;

/// Search the archive.
#[tool(interim = "Still searching...", interim_after = "0s")]
async fn search(query: String) -> String {
    query
}

fn main() {}

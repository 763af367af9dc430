use tool_runtime::prelude::*;

/// Search the archive.
#[tool(interim = "Still searching...", interim_after = "2")]
async fn search(query: String) -> String {
    query
}

fn main() {}

use tool_runtime::prelude::*;

/// Search the archive.
#[tool(interim_after = "2s")]
async fn search(query: String) -> String {
    query
}

fn main() {}

use tool_runtime::prelude::*;

/// Search the archive.
#[tool(interim = "")]
async fn search(query: String) -> String {
    query
}

fn main() {}

use tool_runtime::prelude::*;

/// Search the archive.
#[tool(interim = 3)]
async fn search(query: String) -> String {
    query
}

fn main() {}

use tool_runtime::prelude::*;
use tool_runtime::{stream, Streamed};

fn nothing_found(_input: &search, _error: &ToolError) -> u32 {
    0
}

/// Search the archive, reporting what it found so far.
#[tool(on_error = nothing_found)]
async fn search(query: String) -> Streamed<u32> {
    Streamed::new(stream::iter([query.len() as u32]))
}

fn main() {}

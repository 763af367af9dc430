use tool_runtime::prelude::*;

fn fallback(_input: &greet, _error: &ToolError) -> String {
    "hello".into()
}

/// Greet.
#[tool(on_error = fallback)]
async fn greet(name: String) -> String {
    name
}

fn main() {}

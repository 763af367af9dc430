use tool_runtime::prelude::*;

/// Say hello.
#[tool(max_output_chars = 0)]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

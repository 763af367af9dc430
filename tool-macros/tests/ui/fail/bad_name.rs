use tool_runtime::prelude::*;

/// Say hello.
#[tool(name = "Say-Hello")]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

use tool_runtime::prelude::*;

/// Say hello.
#[tool(timeout = "5")]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

use tool_runtime::prelude::*;

/// Say hello.
#[tool(timeout = "5s", timeout = "10s")]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

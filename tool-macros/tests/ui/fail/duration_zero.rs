use tool_runtime::prelude::*;

/// Say hello.
#[tool(timeout = "0s")]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

use tool_runtime::prelude::*;

/// Say hello.
#[tool(related("login", "hello"))]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

use tool_runtime::prelude::*;

/// Say hello.
#[tool(requires("login", "hello"))]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

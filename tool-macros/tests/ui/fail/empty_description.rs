use tool_runtime::prelude::*;

/// Say hello.
#[tool(description = "")]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

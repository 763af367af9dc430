use tool_runtime::prelude::*;

/// Say hello.
#[tool(meta(owner = "ops", owner = "billing"))]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

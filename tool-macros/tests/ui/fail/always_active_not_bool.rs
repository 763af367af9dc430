use tool_runtime::prelude::*;

/// Say hello.
#[tool(always_active = "yes")]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

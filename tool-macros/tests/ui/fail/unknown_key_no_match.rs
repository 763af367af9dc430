use tool_runtime::prelude::*;

/// Say hello.
#[tool(cache)]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

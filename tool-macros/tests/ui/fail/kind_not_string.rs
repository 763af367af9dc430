use tool_runtime::prelude::*;

/// Say hello.
#[tool(kind = read)]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

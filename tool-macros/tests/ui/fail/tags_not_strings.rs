use tool_runtime::prelude::*;

/// Say hello.
#[tool(tags(greeting, 5))]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

use tool_runtime::prelude::*;

/// Say hello.
#[tool]
async fn hello(name: &str) -> String {
    format!("Hello, {name}!")
}

fn main() {}

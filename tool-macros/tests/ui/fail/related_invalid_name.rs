use tool_runtime::prelude::*;

/// Say hello.
#[tool(related("sayGoodbye"))]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

use tool_runtime::prelude::*;

/// Say hello.
#[tool(tags("greeting", "social", "greeting"))]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

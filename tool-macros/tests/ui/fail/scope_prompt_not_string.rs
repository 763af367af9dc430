use tool_runtime::prelude::*;

/// Say hello.
#[tool(scope_prompt = 3)]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

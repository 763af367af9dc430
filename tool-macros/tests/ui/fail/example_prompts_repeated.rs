use tool_runtime::prelude::*;

/// Say hello.
#[tool(example_prompts("Greet Ada", "Greet Ada"))]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

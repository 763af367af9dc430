use tool_runtime::prelude::*;

/// Say hello.
#[tool(meta(owner = OWNER, cost = 1 + 1))]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

const OWNER: &str = "ops";

fn main() {}

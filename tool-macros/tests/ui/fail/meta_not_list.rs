use tool_runtime::prelude::*;

/// Say hello.
#[tool(meta = "owner")]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

use tool_runtime::prelude::*;

/// Say hello.
#[tool(timout = "5s")]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

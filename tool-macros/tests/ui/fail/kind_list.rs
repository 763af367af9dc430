use tool_runtime::prelude::*;

/// Say hello.
#[tool(kind("read", "write"))]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

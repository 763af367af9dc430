use tool_runtime::prelude::*;

#[tool]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

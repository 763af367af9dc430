use tool_runtime::prelude::*;

/// Say hello.
#[tool(examples(hello("Ada")))]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

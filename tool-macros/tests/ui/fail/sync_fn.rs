use tool_runtime::prelude::*;

/// Say hello.
#[tool]
fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

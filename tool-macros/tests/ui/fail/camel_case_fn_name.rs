use tool_runtime::prelude::*;

/// Say hello.
#[tool]
#[allow(non_snake_case)]
async fn sayHello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {}

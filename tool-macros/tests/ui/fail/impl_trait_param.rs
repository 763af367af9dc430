use tool_runtime::prelude::*;

/// Echo a value.
#[tool]
async fn echo(value: impl ToString) -> String {
    value.to_string()
}

fn main() {}

use tool_runtime::prelude::*;

/// Say hello.
#[tool]
struct Hello {
    name: String,
}

fn main() {}

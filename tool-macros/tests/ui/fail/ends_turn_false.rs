use tool_runtime::prelude::*;

/// Hand over.
#[tool(ends_turn = false)]
async fn hand_over() -> String {
    "Handed over.".into()
}

fn main() {}

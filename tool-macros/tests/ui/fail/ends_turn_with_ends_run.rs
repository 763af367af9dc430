use tool_runtime::prelude::*;

/// Hand over.
#[tool(ends_run, ends_turn)]
async fn hand_over() -> String {
    "Handed over.".into()
}

fn main() {}

use tool_runtime::prelude::*;

/// Ask the user what they mean.
#[tool(always_active, as_intent)]
async fn clarify(question: String) -> String {
    question
}

fn main() {}

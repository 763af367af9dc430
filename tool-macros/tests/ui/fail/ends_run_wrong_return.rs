use tool_runtime::prelude::*;

async fn is_final(_input: &answer, output: &String) -> String {
    output.clone()
}

/// Give the final answer.
#[tool(ends_run = is_final)]
async fn answer(text: String) -> String {
    text
}

fn main() {}

use tool_runtime::prelude::*;
use tool_runtime::Form;

#[tool_data(Deserialize, JsonSchema)]
#[derive(Form)]
struct Tags {
    /// The ticket's tags.
    tags: Vec<String>,
}

fn main() {}

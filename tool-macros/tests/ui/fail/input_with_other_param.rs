use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Query {
    text: String,
}

/// Search the catalogue.
#[tool]
async fn search(Input(query): Input<Query>, limit: u32) -> String {
    format!("{} ({limit})", query.text)
}

fn main() {}

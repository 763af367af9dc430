use tool_runtime::prelude::*;

struct Query {
    text: String,
}

/// Search the catalogue.
#[tool]
async fn search(Input(query): Input<Query>) -> String {
    query.text
}

fn main() {}

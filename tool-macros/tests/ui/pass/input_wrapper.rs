use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::prelude::*;

/// A search.
#[derive(Deserialize, JsonSchema)]
struct Query {
    /// What to look for.
    text: String,
    #[serde(default)]
    limit: u32,
}

/// Search the catalogue.
#[tool]
async fn search(Input(query): Input<Query>) -> String {
    format!("{} ({})", query.text, query.limit)
}

/// Search the archive.
#[tool]
async fn search_archive(ctx: Ctx<()>, query: Input<Query>) -> String {
    let _ = ctx;
    query.0.text
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::<()>::builder().tools(tools![search, search_archive]).build().unwrap();
    let schema = &registry.definition("search").unwrap().input_schema;
    assert_eq!(schema["properties"]["text"]["description"], "What to look for.");
    let app = Arc::new(());
    assert_eq!(registry.invoke(&app, "search", r#"{"text": "pen"}"#).await.text, "pen (0)");
    assert_eq!(registry.invoke(&app, "search_archive", r#"{"text": "ink"}"#).await.text, "ink");
}

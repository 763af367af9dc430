use std::sync::Arc;

use tool_runtime::prelude::*;

/// Find items of a type.
#[tool]
async fn find(r#type: String, r#match: Option<String>) -> String {
    format!("{type} {match:?}", type = r#type, match = r#match)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::<()>::builder().tools(tools![find]).build().unwrap();
    let schema = &registry.definition("find").unwrap().input_schema;
    assert_eq!(schema["required"], serde_json::json!(["type"]));
    assert!(schema["properties"].get("match").is_some());
    assert_eq!(registry.invoke(&Arc::new(()), "find", r#"{"type": "pen"}"#).await.text, "pen None");
}

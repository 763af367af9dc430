use std::sync::Arc;

use tool_runtime::prelude::*;

/// Tell the time.
#[tool]
async fn now() -> String {
    "noon".into()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::<()>::builder().tools(tools![now]).build().unwrap();
    let schema = &registry.definition("now").unwrap().input_schema;
    assert_eq!(schema["properties"], serde_json::json!({}));
    assert_eq!(registry.invoke(&Arc::new(()), "now", "").await.text, "noon");
}

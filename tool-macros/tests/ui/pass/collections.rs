use std::collections::HashMap;
use std::sync::Arc;

use tool_runtime::prelude::*;

/// Count words.
#[tool]
async fn count(words: Vec<String>, weights: HashMap<String, u32>) -> u32 {
    words.iter().map(|word| weights.get(word).copied().unwrap_or(1)).sum()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::<()>::builder().tools(tools![count]).build().unwrap();
    let schema = &registry.definition("count").unwrap().input_schema;
    assert_eq!(schema["properties"]["words"]["type"], "array");
    assert_eq!(schema["properties"]["weights"]["type"], "object");
    let text = registry
        .invoke(&Arc::new(()), "count", r#"{"words": ["a", "b", "a"], "weights": {"a": 5}}"#)
        .await
        .text;
    assert_eq!(text, "11");
}

use std::sync::Arc;

use tool_runtime::prelude::*;

/// Greet someone.
#[tool]
async fn greet(name: String, title: Option<String>) -> String {
    match title {
        Some(title) => format!("Hello, {title} {name}!"),
        None => format!("Hello, {name}!"),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::<()>::builder().tools(tools![greet]).build().unwrap();
    let schema = &registry.definition("greet").unwrap().input_schema;
    assert_eq!(schema["required"], serde_json::json!(["name"]));
    let app = Arc::new(());
    assert_eq!(registry.invoke(&app, "greet", r#"{"name": "Ada"}"#).await.text, "Hello, Ada!");
    let text = registry.invoke(&app, "greet", r#"{"name": "Ada", "title": "Dr"}"#).await.text;
    assert_eq!(text, "Hello, Dr Ada!");
}

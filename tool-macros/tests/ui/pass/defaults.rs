use std::sync::Arc;

use tool_runtime::prelude::*;

/// List orders.
#[tool]
async fn list_orders(
    /// Include cancelled orders.
    #[tool(default)]
    cancelled: bool,
    /// How many orders to list.
    #[tool(default = 10)]
    limit: u32,
    /// The sort key.
    #[tool(default = String::from("date"))]
    sort: String,
) -> String {
    format!("{cancelled} {limit} {sort}")
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::<()>::builder().tools(tools![list_orders]).build().unwrap();
    let schema = &registry.definition("list_orders").unwrap().input_schema;
    assert_eq!(schema["required"], serde_json::json!([]));
    assert_eq!(schema["properties"]["limit"]["default"], 10);
    assert_eq!(schema["properties"]["sort"]["default"], "date");
    let app = Arc::new(());
    assert_eq!(registry.invoke(&app, "list_orders", "{}").await.text, "false 10 date");
    let text = registry.invoke(&app, "list_orders", r#"{"limit": 3, "cancelled": true}"#).await.text;
    assert_eq!(text, "true 3 date");
}

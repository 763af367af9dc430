use std::sync::Arc;

use tool_runtime::prelude::*;

/// Look up an order.
#[tool]
async fn lookup_order(
    /// The order number.
    #[serde(rename = "orderId")]
    order_id: String,
) -> String {
    order_id
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::<()>::builder().tools(tools![lookup_order]).build().unwrap();
    let schema = &registry.definition("lookup_order").unwrap().input_schema;
    assert_eq!(schema["properties"]["orderId"]["description"], "The order number.");
    assert_eq!(schema["required"], serde_json::json!(["orderId"]));
    let text = registry.invoke(&Arc::new(()), "lookup_order", r#"{"orderId": "A-1"}"#).await.text;
    assert_eq!(text, "A-1");
}

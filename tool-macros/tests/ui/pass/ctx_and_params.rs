use std::sync::Arc;

use tool_runtime::prelude::*;

struct Shop {
    currency: &'static str,
}

/// Price an order.
#[tool]
async fn price(context: Ctx<Shop>, amount: u32) -> String {
    format!("{amount} {}", context.app().currency)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::<Shop>::builder().tools(tools![price]).build().unwrap();
    let schema = &registry.definition("price").unwrap().input_schema;
    assert_eq!(schema["required"], serde_json::json!(["amount"]));
    let text = registry.invoke(&Arc::new(Shop { currency: "EUR" }), "price", r#"{"amount": 5}"#).await.text;
    assert_eq!(text, "5 EUR");
}

use std::sync::Arc;

use tool_runtime::prelude::*;

/// Describe a product.
#[tool]
async fn describe(
    /// The product name.
    name: String,
    in_stock: bool,
    count: i64,
    rating: u8,
    price: f64,
    grade: char,
) -> String {
    format!("{name} {in_stock} {count} {rating} {price} {grade}")
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::<()>::builder().tools(tools![describe]).build().unwrap();
    let schema = &registry.definition("describe").unwrap().input_schema;
    assert_eq!(schema["properties"]["name"]["type"], "string");
    assert_eq!(schema["properties"]["name"]["description"], "The product name.");
    assert_eq!(schema["properties"]["in_stock"]["type"], "boolean");
    assert_eq!(schema["properties"]["count"]["type"], "integer");
    assert_eq!(schema["properties"]["price"]["type"], "number");
    assert_eq!(schema["required"].as_array().unwrap().len(), 6);
    let result = registry
        .invoke(&Arc::new(()),
            "describe",
            r#"{"name": "pen", "in_stock": true, "count": -2, "rating": 5, "price": 1.5, "grade": "A"}"#,
        )
        .await;
    assert_eq!(result.text, "pen true -2 5 1.5 A");
}

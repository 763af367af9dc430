use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_runtime::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Address {
    street: String,
    city: String,
}

#[derive(Deserialize, JsonSchema)]
struct Customer {
    name: String,
    address: Address,
}

#[derive(Serialize, JsonSchema)]
struct Label {
    lines: Vec<String>,
}

/// Print a shipping label.
#[tool]
async fn label(customer: Customer) -> Label {
    Label { lines: vec![customer.name, customer.address.street, customer.address.city] }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::<()>::builder().tools(tools![label]).build().unwrap();
    let definition = registry.definition("label").unwrap();
    assert!(definition.input_schema.to_string().contains("street"));
    assert!(definition.output_schema.is_some());
    let result = registry
        .invoke(&Arc::new(()), "label", r#"{"customer": {"name": "Ada", "address": {"street": "1 Way", "city": "Bath"}}}"#)
        .await;
    assert_eq!(result.structured.unwrap()["lines"][2], "Bath");
}

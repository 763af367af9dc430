use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::prelude::*;

/// How fast to ship.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Speed {
    Standard,
    Express,
}

/// Where to ship.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Destination {
    Home { street: String },
    Locker { id: u32 },
}

/// Ship an order.
#[tool]
async fn ship(speed: Speed, destination: Destination) -> String {
    let speed = match speed {
        Speed::Standard => "standard",
        Speed::Express => "express",
    };
    match destination {
        Destination::Home { street } => format!("{speed} to {street}"),
        Destination::Locker { id } => format!("{speed} to locker {id}"),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::<()>::builder().tools(tools![ship]).build().unwrap();
    let schema = registry.definition("ship").unwrap().input_schema.to_string();
    assert!(schema.contains("express"), "{schema}");
    let text = registry
        .invoke(&Arc::new(()), "ship", r#"{"speed": "express", "destination": {"kind": "locker", "id": 7}}"#)
        .await
        .text;
    assert_eq!(text, "express to locker 7");
}

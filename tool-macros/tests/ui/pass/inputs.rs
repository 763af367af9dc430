//! A tool's parameters become its input schema and are read from the
//! model's arguments: every kind of parameter, its docs and defaults,
//! serde's and schemars' attributes, a derived input struct, none at all.
//!
//! Each module is one case, named after it; `main` runs them all.

mod no_params {
    use std::sync::Arc;

    use tool_runtime::prelude::*;

    /// Tell the time.
    #[tool]
    async fn now() -> String {
        "noon".into()
    }

    pub async fn main() {
        let registry = Registry::<()>::builder().tools(tools![now]).build().unwrap();
        let schema = &registry.definition("now").unwrap().input_schema;
        assert_eq!(schema["properties"], serde_json::json!({}));
        assert_eq!(registry.invoke(&Arc::new(()), "now", "").await.text, "noon");
    }
}

mod scalars {
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

    pub async fn main() {
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
}

mod option {
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

    pub async fn main() {
        let registry = Registry::<()>::builder().tools(tools![greet]).build().unwrap();
        let schema = &registry.definition("greet").unwrap().input_schema;
        assert_eq!(schema["required"], serde_json::json!(["name"]));
        let app = Arc::new(());
        assert_eq!(registry.invoke(&app, "greet", r#"{"name": "Ada"}"#).await.text, "Hello, Ada!");
        let text = registry.invoke(&app, "greet", r#"{"name": "Ada", "title": "Dr"}"#).await.text;
        assert_eq!(text, "Hello, Dr Ada!");
    }
}

mod defaults {
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

    pub async fn main() {
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
}

mod collections {
    use std::collections::HashMap;
    use std::sync::Arc;

    use tool_runtime::prelude::*;

    /// Count words.
    #[tool]
    async fn count(words: Vec<String>, weights: HashMap<String, u32>) -> u32 {
        words.iter().map(|word| weights.get(word).copied().unwrap_or(1)).sum()
    }

    pub async fn main() {
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
}

mod enums {
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

    pub async fn main() {
        let registry = Registry::<()>::builder().tools(tools![ship]).build().unwrap();
        let schema = registry.definition("ship").unwrap().input_schema.to_string();
        assert!(schema.contains("express"), "{schema}");
        let text = registry
            .invoke(&Arc::new(()), "ship", r#"{"speed": "express", "destination": {"kind": "locker", "id": 7}}"#)
            .await
            .text;
        assert_eq!(text, "express to locker 7");
    }
}

mod nested_structs {
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

    pub async fn main() {
        let registry = Registry::<()>::builder().tools(tools![label]).build().unwrap();
        let definition = registry.definition("label").unwrap();
        assert!(definition.input_schema.to_string().contains("street"));
        assert!(definition.output_schema.is_some());
        let result = registry
            .invoke(&Arc::new(()), "label", r#"{"customer": {"name": "Ada", "address": {"street": "1 Way", "city": "Bath"}}}"#)
            .await;
        assert_eq!(result.structured.unwrap()["lines"][2], "Bath");
    }
}

mod serde_rename {
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

    pub async fn main() {
        let registry = Registry::<()>::builder().tools(tools![lookup_order]).build().unwrap();
        let schema = &registry.definition("lookup_order").unwrap().input_schema;
        assert_eq!(schema["properties"]["orderId"]["description"], "The order number.");
        assert_eq!(schema["required"], serde_json::json!(["orderId"]));
        let text = registry.invoke(&Arc::new(()), "lookup_order", r#"{"orderId": "A-1"}"#).await.text;
        assert_eq!(text, "A-1");
    }
}

mod schemars_range {
    use std::sync::Arc;

    use tool_runtime::prelude::*;

    /// Rate a product.
    #[tool]
    async fn rate(
        /// From 1 to 5.
        #[schemars(range(min = 1, max = 5))]
        stars: u8,
    ) -> String {
        format!("{stars} stars")
    }

    pub async fn main() {
        let registry = Registry::<()>::builder().tools(tools![rate]).build().unwrap();
        let schema = &registry.definition("rate").unwrap().input_schema;
        assert_eq!(schema["properties"]["stars"]["maximum"], 5);
        let app = Arc::new(());
        assert_eq!(registry.invoke(&app, "rate", r#"{"stars": 4}"#).await.text, "4 stars");
        assert!(registry.invoke(&app, "rate", r#"{"stars": 9}"#).await.is_error());
    }
}

mod raw_identifiers {
    use std::sync::Arc;

    use tool_runtime::prelude::*;

    /// Find items of a type.
    #[tool]
    async fn find(r#type: String, r#match: Option<String>) -> String {
        format!("{type} {match:?}", type = r#type, match = r#match)
    }

    pub async fn main() {
        let registry = Registry::<()>::builder().tools(tools![find]).build().unwrap();
        let schema = &registry.definition("find").unwrap().input_schema;
        assert_eq!(schema["required"], serde_json::json!(["type"]));
        assert!(schema["properties"].get("match").is_some());
        assert_eq!(registry.invoke(&Arc::new(()), "find", r#"{"type": "pen"}"#).await.text, "pen None");
    }
}

mod input_wrapper {
    use std::sync::Arc;

    use schemars::JsonSchema;
    use serde::Deserialize;
    use tool_runtime::prelude::*;

    /// A search.
    #[derive(Deserialize, JsonSchema)]
    struct Query {
        /// What to look for.
        text: String,
        #[serde(default)]
        limit: u32,
    }

    /// Search the catalogue.
    #[tool]
    async fn search(Input(query): Input<Query>) -> String {
        format!("{} ({})", query.text, query.limit)
    }

    /// Search the archive.
    #[tool]
    async fn search_archive(ctx: Ctx<()>, query: Input<Query>) -> String {
        let _ = ctx;
        query.0.text
    }

    pub async fn main() {
        let registry = Registry::<()>::builder().tools(tools![search, search_archive]).build().unwrap();
        let schema = &registry.definition("search").unwrap().input_schema;
        assert_eq!(schema["properties"]["text"]["description"], "What to look for.");
        let app = Arc::new(());
        assert_eq!(registry.invoke(&app, "search", r#"{"text": "pen"}"#).await.text, "pen (0)");
        assert_eq!(registry.invoke(&app, "search_archive", r#"{"text": "ink"}"#).await.text, "ink");
    }
}

mod ctx_and_params {
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

    pub async fn main() {
        let registry = Registry::<Shop>::builder().tools(tools![price]).build().unwrap();
        let schema = &registry.definition("price").unwrap().input_schema;
        assert_eq!(schema["required"], serde_json::json!(["amount"]));
        let text = registry.invoke(&Arc::new(Shop { currency: "EUR" }), "price", r#"{"amount": 5}"#).await.text;
        assert_eq!(text, "5 EUR");
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    no_params::main().await;
    scalars::main().await;
    option::main().await;
    defaults::main().await;
    collections::main().await;
    enums::main().await;
    nested_structs::main().await;
    serde_rename::main().await;
    schemars_range::main().await;
    raw_identifiers::main().await;
    input_wrapper::main().await;
    ctx_and_params::main().await;
}

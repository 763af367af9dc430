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

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::<()>::builder().tools(tools![rate]).build().unwrap();
    let schema = &registry.definition("rate").unwrap().input_schema;
    assert_eq!(schema["properties"]["stars"]["maximum"], 5);
    let app = Arc::new(());
    assert_eq!(registry.invoke(&app, "rate", r#"{"stars": 4}"#).await.text, "4 stars");
    assert!(registry.invoke(&app, "rate", r#"{"stars": 9}"#).await.is_error());
}

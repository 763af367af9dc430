use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::prelude::*;

#[derive(Deserialize, JsonSchema)]
enum Carrier {
    Post,
    Courier,
}

/// Ship an order.
#[tool]
async fn ship(
    order_id: String,
    /// Who carries the parcel.
    #[tool(default)]
    carrier: Carrier,
) -> String {
    let _ = carrier;
    order_id
}

fn main() {}

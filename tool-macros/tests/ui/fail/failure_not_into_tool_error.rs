use schemars::JsonSchema;
use serde::Serialize;
use tool_runtime::prelude::*;

/// Serialize + JsonSchema, but no `From<SoldOut> for ToolError`.
#[derive(Serialize, JsonSchema)]
struct SoldOut {
    available: u32,
}

/// Reserve a seat.
#[tool]
async fn reserve(flight: String) -> Result<String, SoldOut> {
    if flight.is_empty() { Err(SoldOut { available: 0 }) } else { Ok(flight) }
}

fn main() {}

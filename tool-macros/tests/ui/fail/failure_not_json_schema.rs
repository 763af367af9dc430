use serde::Serialize;
use tool_runtime::prelude::*;

/// Serialize and converts into ToolError, but has no JsonSchema.
#[derive(Serialize)]
struct SoldOut {
    available: u32,
}

impl From<SoldOut> for ToolError {
    fn from(sold_out: SoldOut) -> Self {
        ToolError::conflict("SOLD_OUT", format!("Only {} left.", sold_out.available))
    }
}

/// Reserve a seat.
#[tool]
async fn reserve(flight: String) -> Result<String, SoldOut> {
    if flight.is_empty() { Err(SoldOut { available: 0 }) } else { Ok(flight) }
}

fn main() {}

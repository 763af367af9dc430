// A `#[serde]` or `#[schemars]` attribute on a parameter makes `#[tool]`
// derive the input struct, so a field type that is not `Deserialize +
// JsonSchema` is reported by those derives, in their words, on the type
// (compare `param_not_deserialize.rs`, which gets one error of ours).
use tool_runtime::prelude::*;

struct Address {
    street: String,
}

/// Ship an order.
#[tool]
async fn ship(
    #[serde(rename = "orderId")]
    order_id: String,
    address: Address,
) -> String {
    format!("{order_id} to {}", address.street)
}

fn main() {}

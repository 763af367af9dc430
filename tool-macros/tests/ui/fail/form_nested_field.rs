use tool_runtime::prelude::*;
use tool_runtime::Form;

#[tool_data(Deserialize, JsonSchema)]
struct Address {
    street: String,
}

#[tool_data(Deserialize, JsonSchema)]
#[derive(Form)]
struct Delivery {
    /// Where the parcel goes.
    address: Address,
}

fn main() {}

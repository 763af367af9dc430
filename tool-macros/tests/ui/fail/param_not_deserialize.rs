use tool_runtime::prelude::*;

struct Address {
    street: String,
}

/// Ship an order.
#[tool]
async fn ship(order_id: String, address: Address) -> String {
    format!("{order_id} to {}", address.street)
}

fn main() {}

use tool_runtime::prelude::*;

struct Order {
    id: String,
}

/// Look up an order.
#[tool]
async fn lookup_order(order_id: String) -> Order {
    Order { id: order_id }
}

fn main() {}

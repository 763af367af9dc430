use tool_runtime::prelude::*;

/// Look up an order.
#[tool(as_intent = false)]
async fn lookup_order(order_id: String) -> String {
    order_id
}

fn main() {}

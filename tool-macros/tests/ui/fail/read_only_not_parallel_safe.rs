use tool_runtime::prelude::*;

/// Look up an order.
#[tool(read_only, parallel_safe = false)]
async fn lookup_order(order_id: String) -> String {
    order_id
}

fn main() {}

use tool_runtime::prelude::*;

/// Delete an order.
#[tool(read_only, destructive)]
async fn delete_order(order_id: String) -> String {
    order_id
}

fn main() {}

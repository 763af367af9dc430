use tool_runtime::prelude::*;

#[derive(Debug)]
struct NotFound;

/// Look up an order.
#[tool]
async fn lookup_order(order_id: String) -> Result<String, NotFound> {
    if order_id.is_empty() { Err(NotFound) } else { Ok(order_id) }
}

fn main() {}

use tool_runtime::prelude::*;

struct Shop;

/// Look up an order.
#[tool]
async fn lookup_order(order_id: String, ctx: Ctx<Shop>) -> String {
    let _ = ctx;
    order_id
}

fn main() {}

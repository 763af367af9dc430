use tool_runtime::prelude::*;

/// Look up an order.
#[tool]
async fn lookup_order(ctx: Ctx, order_id: String) -> String {
    let _ = ctx;
    order_id
}

fn main() {}

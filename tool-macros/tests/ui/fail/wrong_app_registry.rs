use tool_runtime::prelude::*;

struct Shop;
struct Bank;

/// Look up an order.
#[tool]
async fn lookup_order(ctx: Ctx<Shop>, order_id: String) -> String {
    let _ = ctx;
    order_id
}

fn main() {
    let _ = Registry::<Bank>::builder().tools(tools![lookup_order]).build();
}

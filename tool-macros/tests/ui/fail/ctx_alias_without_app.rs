use tool_runtime::{tool, Registry};

struct Shop;

/// An alias that hides the app type from `#[tool]`.
type Ctx = tool_runtime::Ctx<Shop>;

/// Look up an order.
#[tool]
async fn lookup_order(ctx: Ctx, order_id: String) -> String {
    let _ = ctx;
    order_id
}

fn main() {
    let _ = Registry::<Shop>::builder();
}

use tool_runtime::{tool, Registry};

/// The user's own type, which happens to be called `Ctx`.
struct Ctx<T>(T);

struct Shop;

/// Look up an order.
#[tool]
async fn lookup_order(ctx: Ctx<Shop>, order_id: String) -> String {
    let _ = ctx.0;
    order_id
}

fn main() {
    let _ = Registry::<Shop>::builder();
}

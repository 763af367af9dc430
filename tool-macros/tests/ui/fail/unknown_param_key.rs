use tool_runtime::prelude::*;

/// List orders.
#[tool]
async fn list_orders(
    /// How many orders to list.
    #[tool(defualt = 10)]
    limit: u32,
) -> String {
    format!("{limit} orders")
}

fn main() {}

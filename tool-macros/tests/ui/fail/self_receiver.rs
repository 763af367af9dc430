use tool_runtime::prelude::*;

struct Shop;

impl Shop {
    /// Count the orders.
    #[tool]
    async fn count_orders(&self) -> u32 {
        0
    }
}

fn main() {}

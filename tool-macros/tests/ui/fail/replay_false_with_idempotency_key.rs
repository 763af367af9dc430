use tool_runtime::prelude::*;

fn stock_key(_input: &stock) -> String {
    "stock".to_owned()
}

/// Read the stock level.
#[tool(idempotency_key = stock_key, replay = false)]
async fn stock(product: String) -> String {
    product
}

fn main() {}

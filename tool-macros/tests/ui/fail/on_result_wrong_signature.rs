use tool_runtime::prelude::*;

fn log_result(text: &str) {
    println!("{text}");
}

/// Look up an order.
#[tool(on_result = log_result)]
async fn lookup_order(order_id: String) -> String {
    order_id
}

fn main() {}

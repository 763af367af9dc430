use tool_runtime::prelude::*;

#[tool(timout = "5s", read_only, destructive, tags("a", "a"))]
fn LookupOrder(order_id: &str, (a, b): (u8, u8)) -> String {
    format!("{order_id} {a} {b}")
}

fn main() {}

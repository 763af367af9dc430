use tool_runtime::prelude::*;

/// Whether the refund happened: it answers a bare `String`, not a
/// `Reconciled` (or an `Option`), and takes no context.
fn refunded(input: &refund) -> String {
    format!("refunded {}", input.order_id)
}

/// Refund an order.
#[tool(reconcile = refunded)]
async fn refund(order_id: String) -> String {
    format!("refunded {order_id}")
}

fn main() {}

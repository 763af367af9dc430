use tool_runtime::prelude::*;

/// Book a slot.
#[tool(interruptible = "no")]
async fn book(slot: String) -> String {
    slot
}

fn main() {}

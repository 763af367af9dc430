use tool_runtime::prelude::*;

/// Book a slot.
#[tool(interruptible)]
async fn book(slot: String) -> String {
    slot
}

fn main() {}

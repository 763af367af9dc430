use tool_runtime::prelude::*;

fn to_minutes(_input: &book_slot) -> Result<u32, String> {
    Ok(60)
}

/// Book a slot.
#[tool(resolve = to_minutes)]
async fn book_slot(hours: u32) -> String {
    format!("booked {hours}h")
}

fn main() {}

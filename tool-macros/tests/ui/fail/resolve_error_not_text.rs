use tool_runtime::prelude::*;

struct NotText;

fn to_minutes(input: &book_slot) -> Result<u32, NotText> {
    if input.hours == 0 { Err(NotText) } else { Ok(input.hours * 60) }
}

/// Let the user book a slot in their calendar app.
#[tool(external, resolve = to_minutes)]
async fn book_slot(hours: u32) -> String;

fn main() {}

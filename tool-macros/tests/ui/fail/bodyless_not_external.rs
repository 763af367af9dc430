use tool_runtime::prelude::*;

/// Let the user pick a day in their calendar app.
#[tool]
async fn pick_day(month: u32) -> String;

fn main() {}

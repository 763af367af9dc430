use tool_runtime::prelude::*;

/// Let the user pick a day in their calendar app.
#[tool(external)]
async fn pick_day(month: u32) -> String {
    month.to_string()
}

fn main() {}

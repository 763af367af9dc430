use tool_runtime::prelude::*;

fn any_day(_input: &pick_day, _error: &ToolError) -> String {
    "monday".into()
}

/// Let the user pick a day in their calendar app.
#[tool(external, on_error = any_day, interim = "Waiting for the user...")]
async fn pick_day(month: u32) -> Result<String, ToolError>;

fn main() {}

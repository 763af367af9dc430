use tool_runtime::prelude::*;

/// Let the user pick a date in their calendar app.
#[tool(external, failure_mode = "error")]
async fn pick_date(month: u32) -> Result<String, ToolError>;

fn main() {}

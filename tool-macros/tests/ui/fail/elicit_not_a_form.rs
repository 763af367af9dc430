use tool_runtime::prelude::*;

#[tool_data(Deserialize, JsonSchema)]
struct Confirm {
    go_ahead: bool,
}

/// Close an account once its owner confirms.
#[tool]
async fn close_account(ctx: Ctx<()>, account: String) -> Result<String, ToolError> {
    let _ = ctx.elicit::<Confirm>("Close it for good?").await?;
    Ok(account)
}

fn main() {}

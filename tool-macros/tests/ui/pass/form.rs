use tool_runtime::prelude::*;
use tool_runtime::Form;
use tool_runtime::question::Reply;

/// How the money goes back.
#[tool_data(Deserialize, JsonSchema)]
#[derive(Form, Debug, PartialEq)]
enum Method {
    /// To the card.
    Card,
    /// As a voucher.
    Voucher,
}

#[tool_data(Deserialize, JsonSchema)]
#[derive(Form)]
struct Refund {
    /// Go ahead.
    go_ahead: bool,
    /// How much, in cents.
    cents: u32,
    /// How.
    method: Method,
    /// Also tell.
    #[serde(default)]
    notify: Vec<Method>,
    /// A note.
    note: Option<String>,
    /// How sure, from 0 to 1.
    #[serde(default)]
    confidence: f64,
}

/// Refund an order, as its owner says.
#[tool]
async fn refund(ctx: Ctx<()>, order: String) -> Result<String, ToolError> {
    match ctx.elicit::<Refund>(format!("Refund {order}?")).await? {
        Reply::Answered(refund) if refund.go_ahead => Ok(format!("{} cents by {:?}", refund.cents, refund.method)),
        _ => Ok("not refunded".into()),
    }
}

fn main() {
    let _ = tools![refund];
}

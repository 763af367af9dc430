use tool_runtime::prelude::*;
use tool_runtime::Form;

#[tool_data(Deserialize, JsonSchema)]
#[derive(Form)]
enum Method {
    Card,
    Voucher { code: String },
}

fn main() {}

use tool_runtime::prelude::*;
use tool_runtime::Form;

#[tool_data(Deserialize, JsonSchema)]
#[derive(Form)]
struct Confirm(bool);

fn main() {}

use tool_runtime::prelude::*;

#[tool_data(Serialize)]
fn order() -> String {
    String::new()
}

fn main() {}

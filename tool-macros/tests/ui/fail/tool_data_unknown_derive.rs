use tool_runtime::prelude::*;

#[tool_data(Serialize, Jsonschema)]
struct Order {
    id: String,
}

fn main() {}

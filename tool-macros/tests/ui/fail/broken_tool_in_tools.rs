use tool_runtime::prelude::*;

struct Shop;

// The tool's own mistake is the only error: `tools![...]` still finds its type.
#[tool]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

fn main() {
    let _ = Registry::<Shop>::builder().tools(tools![hello]).build();
}

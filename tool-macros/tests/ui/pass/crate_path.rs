// A crate that re-exports the runtime under another path.

mod framework {
    pub use tool_runtime as runtime;
}

use framework::runtime::{tool, tools, Registry};

/// Say hello.
#[tool(crate = framework::runtime)]
async fn hello(name: String) -> String {
    format!("Hello, {name}!")
}

/// Say hello, with a carried attribute (the derived input struct), and the
/// path from the crate's root (this case is the module `crate_path` of the
/// pass cases' test binary).
#[tool(crate = crate::crate_path::framework::runtime)]
async fn hello_renamed(#[serde(rename = "who")] name: String) -> String {
    name
}

fn main() {
    let registry = Registry::<()>::builder().tools(tools![hello, hello_renamed]).build().unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["hello", "hello_renamed"]);
}

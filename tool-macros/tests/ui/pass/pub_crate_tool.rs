mod tools_module {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool]
    pub(crate) async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

use tool_runtime::prelude::*;

fn main() {
    let registry = Registry::<()>::builder().tools(tools![tools_module::hello]).build().unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["hello"]);
}

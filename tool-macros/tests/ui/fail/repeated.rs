//! A key, a tag, a prompt or a meta entry given twice.
//!
//! Each module is one mistake, named after it; the macro reports each on
//! its own item, so the snapshot holds every module's errors.

mod duplicate_key {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(timeout = "5s", timeout = "10s")]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod example_prompts_repeated {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(example_prompts("Greet Ada", "Greet Ada"))]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod tags_repeated {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(tags("greeting", "social", "greeting"))]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod meta_repeated_key {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(meta(owner = "ops", owner = "billing"))]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

fn main() {}

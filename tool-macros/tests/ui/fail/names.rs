//! Tool names that are not valid, and tools that name themselves.
//!
//! Each module is one mistake, named after it; the macro reports each on
//! its own item, so the snapshot holds every module's errors.

mod bad_name {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(name = "Say-Hello")]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod camel_case_fn_name {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool]
    #[allow(non_snake_case)]
    async fn sayHello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod related_invalid_name {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(related("sayGoodbye"))]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod related_itself {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(related("login", "hello"))]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod requires_itself {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(requires("login", "hello"))]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

fn main() {}

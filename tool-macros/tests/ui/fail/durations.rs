//! A duration that is not one: no unit, an unknown unit, zero.
//!
//! Each module is one mistake, named after it; the macro reports each on
//! its own item, so the snapshot holds every module's errors.

mod duration_no_unit {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(timeout = "5")]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod duration_unknown_unit {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(timeout = "5h")]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod duration_zero {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(timeout = "0s")]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod interim_after_no_unit {
    use tool_runtime::prelude::*;

    /// Search the archive.
    #[tool(interim = "Still searching...", interim_after = "2")]
    async fn search(query: String) -> String {
        query
    }
}

mod interim_after_zero {
    use tool_runtime::prelude::*;

    /// Search the archive.
    #[tool(interim = "Still searching...", interim_after = "0s")]
    async fn search(query: String) -> String {
        query
    }
}

fn main() {}

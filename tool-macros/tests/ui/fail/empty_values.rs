//! A text that is empty, a count that is zero.
//!
//! Each module is one mistake, named after it; the macro reports each on
//! its own item, so the snapshot holds every module's errors.

mod classification_empty {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(classification = "")]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod empty_description {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(description = "")]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod interim_empty {
    use tool_runtime::prelude::*;

    /// Search the archive.
    #[tool(interim = "")]
    async fn search(query: String) -> String {
        query
    }
}

mod max_output_chars_zero {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(max_output_chars = 0)]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod max_retries_zero {
    use tool_runtime::prelude::*;

    /// Charge a card.
    #[tool(max_retries = 0)]
    async fn charge(amount: u32) -> String {
        format!("charged {amount}")
    }
}

fn main() {}

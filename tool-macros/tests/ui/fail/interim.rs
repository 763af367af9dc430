//! `interim` and `interim_after` written wrong, or never able to fire.
//!
//! Each module is one mistake, named after it; the macro reports each on
//! its own item, so the snapshot holds every module's errors.

mod interim_after_not_string {
    use tool_runtime::prelude::*;

    /// Search the archive.
    #[tool(interim = "Still searching...", interim_after = 2)]
    async fn search(query: String) -> String {
        query
    }
}

mod interim_after_timeout {
    use tool_runtime::prelude::*;

    /// Search the archive.
    #[tool(interim = "Still searching...", interim_after = "5s", timeout = "5s")]
    async fn search(query: String) -> String {
        query
    }
}

mod interim_after_without_interim {
    use tool_runtime::prelude::*;

    /// Search the archive.
    #[tool(interim_after = "2s")]
    async fn search(query: String) -> String {
        query
    }
}

mod interim_default_after_timeout {
    use tool_runtime::prelude::*;

    /// Search the archive.
    #[tool(interim = "Still searching...", timeout = "1s")]
    async fn search(query: String) -> String {
        query
    }
}

mod interim_not_string {
    use tool_runtime::prelude::*;

    /// Search the archive.
    #[tool(interim = 3)]
    async fn search(query: String) -> String {
        query
    }
}

fn main() {}

//! Keys that contradict each other, or the signature they are on.
//!
//! Each module is one mistake, named after it; the macro reports each on
//! its own item, so the snapshot holds every module's errors.

mod ends_turn_with_ends_run {
    use tool_runtime::prelude::*;

    /// Hand over.
    #[tool(ends_run, ends_turn)]
    async fn hand_over() -> String {
        "Handed over.".into()
    }
}

mod external_with_on_error {
    use tool_runtime::prelude::*;

    fn any_day(_input: &pick_day, _error: &ToolError) -> String {
        "monday".into()
    }

    /// Let the user pick a day in their calendar app.
    #[tool(external, on_error = any_day, interim = "Waiting for the user...")]
    async fn pick_day(month: u32) -> Result<String, ToolError>;
}

mod parallel_safe_predicate_read_only {
    use tool_runtime::prelude::*;

    /// Fetch records.
    #[tool(read_only, parallel_safe = small)]
    async fn fetch(n: u32) -> String {
        format!("{n} records")
    }

    fn small(args: &serde_json::Value) -> bool {
        args["n"].as_u64().is_some_and(|n| n < 10)
    }
}

mod read_only_destructive {
    use tool_runtime::prelude::*;

    /// Delete an order.
    #[tool(read_only, destructive)]
    async fn delete_order(order_id: String) -> String {
        order_id
    }
}

mod read_only_not_parallel_safe {
    use tool_runtime::prelude::*;

    /// Look up an order.
    #[tool(read_only, parallel_safe = false)]
    async fn lookup_order(order_id: String) -> String {
        order_id
    }
}

mod replay_false_with_idempotency_key {
    use tool_runtime::prelude::*;

    fn stock_key(_input: &stock) -> String {
        "stock".to_owned()
    }

    /// Read the stock level.
    #[tool(idempotency_key = stock_key, replay = false)]
    async fn stock(product: String) -> String {
        product
    }
}

mod scope_with_always_active {
    use tool_runtime::prelude::*;

    fn one_region(region: &String, tool: &mut ScopedTool) {
        tool.description = format!("Search the orders of {region}.");
    }

    /// Search the orders of a region.
    #[tool(always_active, scope = one_region)]
    async fn search_orders(region: String) -> String {
        region
    }
}

mod streamed_with_on_error {
    use tool_runtime::prelude::*;
    use tool_runtime::{stream, Streamed};

    fn nothing_found(_input: &search, _error: &ToolError) -> u32 {
        0
    }

    /// Search the archive, reporting what it found so far.
    #[tool(on_error = nothing_found)]
    async fn search(query: String) -> Streamed<u32> {
        Streamed::new(stream::iter([query.len() as u32]))
    }
}

mod meta_kind_collision {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(kind = "read", meta(kind = "write"))]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod on_error_not_result {
    use tool_runtime::prelude::*;

    fn fallback(_input: &greet, _error: &ToolError) -> String {
        "hello".into()
    }

    /// Greet.
    #[tool(on_error = fallback)]
    async fn greet(name: String) -> String {
        name
    }
}

fn main() {}

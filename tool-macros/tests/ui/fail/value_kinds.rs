//! A key given the wrong kind of value: a list, a string, a bool, a number, a path.
//!
//! Each module is one mistake, named after it; the macro reports each on
//! its own item, so the snapshot holds every module's errors.

mod always_active_not_bool {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(always_active = "yes")]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod interruptible_not_bool {
    use tool_runtime::prelude::*;

    /// Book a slot.
    #[tool(interruptible = "no")]
    async fn book(slot: String) -> String {
        slot
    }
}

mod replay_not_bool {
    use tool_runtime::prelude::*;

    /// Read the stock level.
    #[tool(replay = "never")]
    async fn stock(product: String) -> String {
        product
    }
}

mod kind_list {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(kind("read", "write"))]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod kind_not_string {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(kind = read)]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod scope_prompt_not_string {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(scope_prompt = 3)]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod examples_not_strings {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(examples(hello("Ada")))]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod tags_not_strings {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(tags(greeting, 5))]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod max_retries_not_a_number {
    use tool_runtime::prelude::*;

    /// Charge a card.
    #[tool(max_retries = "3")]
    async fn charge(amount: u32) -> String {
        format!("charged {amount}")
    }
}

mod meta_not_list {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(meta = "owner")]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod meta_not_literal {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(meta(owner = OWNER, cost = 1 + 1))]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }

    const OWNER: &str = "ops";
}

mod idempotency_key_not_a_path {
    use tool_runtime::prelude::*;

    /// Refund an order once.
    #[tool(idempotency_key = "order_id")]
    async fn refund(order_id: String) -> String {
        order_id
    }
}

mod on_error_not_a_path {
    use tool_runtime::prelude::*;

    /// Look up a price.
    #[tool(on_error = "fallback")]
    async fn price(sku: String) -> Result<String, ToolError> {
        Ok(sku)
    }
}

mod scope_not_a_path {
    use tool_runtime::prelude::*;

    /// Search the orders of a region.
    #[tool(scope = "region")]
    async fn search_orders(region: String) -> String {
        region
    }
}

fn main() {}

//! Parameters the macro cannot take as inputs, and a context out of place.
//!
//! Each module is one mistake, named after it; the macro reports each on
//! its own item, so the snapshot holds every module's errors.

mod borrowed_str {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool]
    async fn hello(name: &str) -> String {
        format!("Hello, {name}!")
    }
}

mod borrowed_slice {
    use tool_runtime::prelude::*;

    /// Add numbers.
    #[tool]
    async fn sum(numbers: &[i64]) -> i64 {
        numbers.iter().sum()
    }
}

mod impl_trait_param {
    use tool_runtime::prelude::*;

    /// Echo a value.
    #[tool]
    async fn echo(value: impl ToString) -> String {
        value.to_string()
    }
}

mod destructuring_pattern {
    use tool_runtime::prelude::*;

    /// Add two numbers.
    #[tool]
    async fn add((a, b): (i64, i64)) -> i64 {
        a + b
    }
}

mod ctx_not_first {
    use tool_runtime::prelude::*;

    struct Shop;

    /// Look up an order.
    #[tool]
    async fn lookup_order(order_id: String, ctx: Ctx<Shop>) -> String {
        let _ = ctx;
        order_id
    }
}

mod input_with_other_param {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use tool_runtime::prelude::*;

    #[derive(Deserialize, JsonSchema)]
    struct Query {
        text: String,
    }

    /// Search the catalogue.
    #[tool]
    async fn search(Input(query): Input<Query>, limit: u32) -> String {
        format!("{} ({limit})", query.text)
    }
}

fn main() {}

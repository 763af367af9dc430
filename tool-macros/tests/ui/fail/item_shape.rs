//! `#[tool]` on something other than a free `async fn` with a body (or an `external` one without).
//!
//! Each module is one mistake, named after it; the macro reports each on
//! its own item, so the snapshot holds every module's errors.

mod sync_fn {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool]
    fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod self_receiver {
    use tool_runtime::prelude::*;

    struct Shop;

    impl Shop {
        /// Count the orders.
        #[tool]
        async fn count_orders(&self) -> u32 {
            0
        }
    }
}

mod generic_params {
    use tool_runtime::prelude::*;

    /// Echo a value.
    #[tool]
    async fn echo<T: ToString>(value: T) -> String {
        value.to_string()
    }
}

mod tool_on_struct {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool]
    struct Hello {
        name: String,
    }
}

mod bodyless_not_external {
    use tool_runtime::prelude::*;

    /// Let the user pick a day in their calendar app.
    #[tool]
    async fn pick_day(month: u32) -> String;
}

mod external_with_body {
    use tool_runtime::prelude::*;

    /// Let the user pick a day in their calendar app.
    #[tool(external)]
    async fn pick_day(month: u32) -> String {
        month.to_string()
    }
}

fn main() {}

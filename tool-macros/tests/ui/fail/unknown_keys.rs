//! Keys the macro does not know, with the nearest valid one suggested where there is one.
//!
//! Each module is one mistake, named after it; the macro reports each on
//! its own item, so the snapshot holds every module's errors.

mod unknown_key {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(timout = "5s")]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod unknown_key_no_match {
    use tool_runtime::prelude::*;

    /// Say hello.
    #[tool(cache)]
    async fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

mod unknown_param_key {
    use tool_runtime::prelude::*;

    /// List orders.
    #[tool]
    async fn list_orders(
        /// How many orders to list.
        #[tool(defualt = 10)]
        limit: u32,
    ) -> String {
        format!("{limit} orders")
    }
}

fn main() {}

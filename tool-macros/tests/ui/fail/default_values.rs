//! A key written with the value it has by default, which says nothing.
//!
//! Each module is one mistake, named after it; the macro reports each on
//! its own item, so the snapshot holds every module's errors.

mod ends_turn_false {
    use tool_runtime::prelude::*;

    /// Hand over.
    #[tool(ends_turn = false)]
    async fn hand_over() -> String {
        "Handed over.".into()
    }
}

mod interruptible_true {
    use tool_runtime::prelude::*;

    /// Book a slot.
    #[tool(interruptible)]
    async fn book(slot: String) -> String {
        slot
    }
}

mod replay_true {
    use tool_runtime::prelude::*;

    /// Read the stock level.
    #[tool(replay = true)]
    async fn stock(product: String) -> String {
        product
    }
}

fn main() {}

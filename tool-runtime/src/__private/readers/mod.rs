//! The readers of a call's arguments into a tool's input: from the text
//! (`fields`), from a parsed object (`args`), and the value reader both
//! fall back on (`exact`).

mod args;
mod exact;
mod fields;

pub use args::{parse_struct, Args};
pub(crate) use args::MissingField;
pub use fields::{parse_struct_text, Fields};

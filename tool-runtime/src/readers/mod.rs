//! The one reader of a call's arguments into a tool's input (`args`), over
//! its two sources: the text split into fields (`fields`), and the
//! validated object, whose values are read exactly (`exact`); and what the
//! input was read from, kept beside it (`parsed_from`).

mod args;
mod exact;
mod fields;
mod parsed_from;

pub use args::Args;
pub use parsed_from::ParsedFrom;

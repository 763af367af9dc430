//! The one reader of a call's arguments into a tool's input (`args`), over
//! its two sources: the text split into fields (`fields`), and the
//! validated object, whose values are read exactly (`exact`).

mod args;
mod exact;
mod fields;

pub use args::Args;

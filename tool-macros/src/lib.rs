//! The `#[tool]` attribute. Depend on `tool-runtime`, which re-exports it
//! and documents every key; this crate only parses, validates and expands.
//!
//! Phases, one module each: `attrs` and `signature` parse the attribute
//! and the function into a model that keeps spans, `checks` validates
//! across keys, `expand` writes tokens, and `fallback` what stands beside
//! an item with errors. Errors are collected in `diag::Errors` so that one
//! compile shows every mistake in an item.

#![forbid(unsafe_code)]

mod attrs;
mod checks;
mod diag;
mod expand;
mod fallback;
mod signature;

use proc_macro::TokenStream;

/// Turns an `async fn` into a tool. See `tool_runtime` for the keys.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::tool(args.into(), item.into()).into()
}

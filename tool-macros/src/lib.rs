//! The `#[tool]` attribute. Depend on `tool-runtime`, which re-exports it
//! and documents every key; this crate only parses, checks and expands.
//!
//! Three phases, each importing only the ones before it and `diag` (the
//! wording of errors, at the bottom):
//!
//! 1. parse: `attrs` (the keys of `#[tool(...)]`) and `signature` (the
//!    function: its parameters, docs and return type) into an owned model
//!    that keeps spans;
//! 2. check: `checks`, the rules across several keys and the signature;
//! 3. expand: `expand` writes the tokens of a valid tool, and `fallback`
//!    what stands beside an item with errors.
//!
//! This file only wires them. Errors are collected in `diag::Errors` so
//! that one compile shows every mistake in an item.
//!
//! `#[tool_data]` (`data`), the derives of a tool's input and output types
//! from the runtime's re-exports, is small enough to be one file; so is
//! `#[derive(Form)]` (`form`), a form a tool asks its user to fill in.

#![forbid(unsafe_code)]

mod attrs;
mod checks;
mod data;
mod diag;
mod expand;
mod fallback;
mod form;
mod signature;

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Item, ItemFn};

use crate::attrs::ToolAttrs;
use crate::diag::{Errors, error_at, with_help};
use crate::signature::ToolFn;

/// Turns an `async fn` into a tool. See `tool_runtime` for the keys.
#[proc_macro_attribute]
pub fn tool(args: proc_macro::TokenStream, item: proc_macro::TokenStream) -> proc_macro::TokenStream {
    generate(args.into(), item.into()).into()
}

/// Derives `Serialize`, `Deserialize` and `JsonSchema` from the serde and
/// schemars `tool_runtime` re-exports. See `tool_runtime::tool_data`.
#[proc_macro_attribute]
pub fn tool_data(args: proc_macro::TokenStream, item: proc_macro::TokenStream) -> proc_macro::TokenStream {
    data::generate(args.into(), item.into()).into()
}

/// A struct a tool asks its user to fill in as a form, or an enum of its
/// choices. See `tool_runtime::Form`.
#[proc_macro_derive(Form, attributes(form))]
pub fn derive_form(item: proc_macro::TokenStream) -> proc_macro::TokenStream {
    form::derive(item.into()).into()
}

/// The whole attribute: parse, check, expand. On any error the user's
/// function is still emitted, with every error beside it and a stub of the
/// tool's type, so that `tools![...]` naming it reports nothing more.
fn generate(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut bodyless = None;
    let item_fn: ItemFn = match syn::parse2::<Item>(item.clone()) {
        Ok(Item::Fn(item_fn)) => item_fn,
        // A function declared without a body: an `external` tool.
        Ok(Item::Verbatim(tokens)) if let Ok(declared) = syn::parse2::<syn::ForeignItemFn>(tokens.clone()) => {
            bodyless = Some(declared.semi_token);
            signature::external_fn(declared)
        }
        Ok(other) => {
            let error = with_help(
                error_at(&fallback::item_kind_token(&other), "`#[tool]` goes on an `async fn`"),
                "write the tool as a free `async fn`; its parameters become the tool's input",
            );
            return fallback::with_errors(item, syn::Error::from(error).to_compile_error());
        }
        Err(error) => return fallback::with_errors(item, error.to_compile_error()),
    };
    let mut errors = Errors::default();
    let attrs = ToolAttrs::parse(args, &mut errors);
    let mut tool_fn = ToolFn::parse(item_fn, &mut errors);
    tool_fn.bodyless = bodyless;
    let name = checks::validate(&attrs, &tool_fn, &mut errors);
    // A declaration without a body is not emitted: rustc would refuse it.
    let item = tool_fn.bodyless.is_none().then_some(&tool_fn.item);
    let ctx_probe = tool_fn.ctx_without_app.as_ref().map(|ty| fallback::ctx_app_probe(ty, &attrs));
    if !errors.is_empty() || ctx_probe.is_some() {
        let compile_errors = errors.to_compile_errors();
        // A method with `self` sits in an impl, where no type can be declared.
        let stub = tool_fn.item.sig.receiver().is_none().then(|| fallback::stub(&attrs, &tool_fn, &name));
        return quote!(#item #compile_errors #ctx_probe #stub);
    }
    let generated = expand::expand(&attrs, &tool_fn, &name);
    quote!(#item #generated)
}

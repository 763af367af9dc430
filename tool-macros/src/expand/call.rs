//! The generated `Tool::call` of the tools that do not simply run their
//! function: an `external` tool, whose calls the host runs, and a
//! streaming tool (`-> Streamed<T>`), whose items before the last are sent
//! as preliminary results; and the function an external tool's
//! declaration (without a body) stands for.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

/// The pieces of the ordinary `call` a streaming tool's reuses.
pub(super) struct Parts<'a> {
    pub p: &'a TokenStream,
    pub app: &'a TokenStream,
    pub args: &'a TokenStream,
    pub take_ctx: &'a TokenStream,
    pub again: &'a TokenStream,
    pub call: &'a TokenStream,
    pub ends_run: &'a TokenStream,
    pub serialize: &'a TokenStream,
}

/// An external tool's `call`: never reached, since the registry hands its
/// calls to the host, and its declaration has no body to call.
pub(super) fn external(p: &TokenStream, app: &TokenStream) -> TokenStream {
    quote! {
        fn call(
            _input: Self::Input,
            _call: &mut #p::CallState<'_, #app>,
            _args: &#p::ParsedFrom<'_>,
        ) -> #p::CallFuture {
            ::std::boxed::Box::pin(::core::future::ready(::core::result::Result::Err(#p::Failure::Internal(
                ::std::convert::From::from("an external tool is run by the host, not by the registry"),
            ))))
        }
    }
}

/// A streaming tool's `call`: the call's state lends the progress sink
/// before the tool runs; the stream is read to its end inside the call's
/// future, so the timeout and cancellation cover all of it.
pub(super) fn streamed(parts: &Parts<'_>, item_ty: &syn::Type, takes_ctx: bool) -> TokenStream {
    let Parts { p, app, args, take_ctx, again, call, ends_run, serialize } = parts;
    let state = if takes_ctx { quote!(__call) } else { quote!(__state) };
    let drain = quote_spanned!(item_ty.span()=> #p::drain(returned, preliminary));
    quote! {
        fn call(
            input: Self::Input,
            #state: &mut #p::CallState<'_, #app>,
            #args: &#p::ParsedFrom<'_>,
        ) -> #p::CallFuture {
            let preliminary = #state.preliminary();
            #take_ctx
            #again
            ::std::boxed::Box::pin(async move {
                let returned = #call.await;
                let output = #drain.await?;
                let ends_run = #ends_run;
                #serialize
            })
        }
    }
}

/// The function an `external` tool's declaration stands for, so that the
/// rest of the expansion reads it like any tool. Its body is never emitted
/// and never called: the registry hands the tool's calls to the host.
pub(super) fn external_fn(declared: syn::ForeignItemFn) -> syn::ItemFn {
    let block = Box::new(syn::parse_quote!({ ::core::unreachable!() }));
    syn::ItemFn { attrs: declared.attrs, vis: declared.vis, modifiers: declared.modifiers, sig: declared.sig, block }
}

//! Expand phase: the checked model into tokens. The output names runtime
//! types and calls generic runtime helpers; schemas are built at run time,
//! once, so each tool costs the compiler little.
//!
//! One generator per generated item or method, each in the file of its
//! idea: `input.rs` the input struct, its schema and its parser; `meta.rs`
//! the constants; `output.rs` the output and failure schemas; `hooks.rs`
//! the methods that call a function the user named in a key (`policy`,
//! `visible_when`, `scope`, ...); `call.rs` the call itself (`recovery.rs`
//! its `on_error`). [`expand`] only composes them. This phase reads the
//! parse phase's model and writes; it neither parses nor checks.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};

use crate::attrs::ToolAttrs;
use crate::signature::ToolFn;

/// What every generator reads: the model, and the names the output uses.
pub(crate) struct Gen<'a> {
    pub attrs: &'a ToolAttrs,
    pub tool_fn: &'a ToolFn,
    /// The tool's name, checked.
    pub name: &'a str,
    /// The runtime crate: `::tool_runtime`, or the path of `crate = path`.
    pub krate: TokenStream,
    /// `#krate::__private`, where every name generated code uses lives.
    pub p: TokenStream,
    /// The `App` of `Tool<App>`: the context's, or `__AnyApp` for a tool
    /// without one (it then registers with any app).
    pub app: TokenStream,
    /// The function's doc comment, as one `&'static str` expression.
    pub doc: TokenStream,
}

impl<'a> Gen<'a> {
    fn new(attrs: &'a ToolAttrs, tool_fn: &'a ToolFn, name: &'a str) -> Self {
        let krate = runtime_path(attrs);
        let p = quote!(#krate::__private);
        let app = match &tool_fn.ctx {
            Some(ctx) => ctx.app.to_token_stream(),
            None => quote!(__AnyApp),
        };
        Gen { attrs, tool_fn, name, krate, p, app, doc: concat_docs(&tool_fn.docs) }
    }
}

/// The generated items of a valid tool: the input struct (named like the
/// function), and in an anonymous constant its `Named` and `Tool` impls.
pub fn expand(attrs: &ToolAttrs, tool_fn: &ToolFn, name: &str) -> TokenStream {
    let g = Gen::new(attrs, tool_fn, name);
    let input_struct = input::input_struct(&g);
    let scope_fn = hooks::scope_fn(&g);
    let named = named_impl(&g);
    let tool = tool_impl(&g);
    let body_fn = call::body_fn(&g);
    quote! {
        #input_struct

        const _: () = {
            #scope_fn
            #body_fn
            #named
            #tool
        };
    }
}

/// `impl Named`: the tool's name, which `tools![...]` checks for duplicates
/// at compile time.
fn named_impl(g: &Gen<'_>) -> TokenStream {
    let (p, ident, name) = (&g.p, &g.tool_fn.ident, g.name);
    quote! {
        impl #p::Named for #ident {
            const NAME: &'static str = #name;
        }
    }
}

/// `impl Tool<App>`: its constants and methods, one generator each; a
/// method the tool has no key for is left out, keeping the trait's default.
fn tool_impl(g: &Gen<'_>) -> TokenStream {
    let (p, app, ident) = (&g.p, &g.app, &g.tool_fn.ident);
    let impl_generics = match &g.tool_fn.ctx {
        Some(_) => quote!(),
        None => quote!(<__AnyApp: ::core::marker::Send + ::core::marker::Sync + 'static>),
    };
    let input_ty = input::input_type(g);
    let meta = meta::meta(g.attrs, g.name, &g.doc, p);
    let metadata = meta::metadata(g.attrs, p);
    let execution = meta::execution(g.attrs, p);
    let input_schema = input::input_schema_fn(g);
    let output_schema = output::output_schema_fn(g);
    let failure_schema = output::failure_schema_fn(g);
    let parse = input::parse_fn(g);
    let verdict = hooks::verdict_fn(g);
    let visible = hooks::visible_fn(g);
    let parallel_safe = hooks::parallel_safe_fn(g);
    let effect_key = hooks::effect_key_fn(g);
    let reconcile = hooks::reconcile_fn(g);
    let on_result = hooks::on_result_fn(g);
    let resolve = hooks::resolve_fn(g);
    let scope = hooks::scope_methods(g);
    let call = call::call_fn(g);
    quote! {
        impl #impl_generics #p::Tool<#app> for #ident {
            type Input = #input_ty;

            const META: #p::ToolMeta = #meta;
            #metadata
            #execution

            #input_schema
            #output_schema
            #failure_schema
            #parse

            #verdict
            #visible
            #parallel_safe
            #effect_key
            #reconcile
            #on_result
            #resolve
            #scope

            #call
        }
    }
}

/// `tokens` with every span set to `span`, so that rustc points at the
/// user's token rather than at the whole attribute. (Only moving the
/// location, `located_at`, is not enough: an expression whose tokens come
/// from two expansion contexts is reported at the macro's call site.) The
/// generated tokens are absolute paths and names local to the expansion,
/// which resolve the same from the user's span.
pub(crate) fn respan(tokens: &TokenStream, span: Span) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .map(|mut token| {
            if let proc_macro2::TokenTree::Group(group) = &token {
                let mut inner = proc_macro2::Group::new(group.delimiter(), respan(&group.stream(), span));
                inner.set_span(span);
                token = proc_macro2::TokenTree::Group(inner);
            } else {
                token.set_span(span);
            }
            token
        })
        .collect()
}

/// `::tool_runtime`, or the path of `crate = path`.
fn runtime_path(attrs: &ToolAttrs) -> TokenStream {
    match &attrs.krate {
        Some(path) => path.to_token_stream(),
        None => quote!(::tool_runtime),
    }
}

/// `::tool_runtime::__private`, or under the path of `crate = path`.
pub(crate) fn private_path(attrs: &ToolAttrs) -> TokenStream {
    let krate = runtime_path(attrs);
    quote!(#krate::__private)
}

/// The path `{krate}::{tail}` as the string literal serde's and
/// schemars' `crate = "..."` attributes take.
pub(crate) fn crate_path_literal(krate: &TokenStream, tail: &str) -> syn::LitStr {
    syn::LitStr::new(&format!("{krate}::{tail}").replace(' ', ""), Span::call_site())
}

/// The doc comment of the generated type.
pub(crate) fn struct_doc(name: &str) -> String {
    format!(
        "The input of the tool `{name}`, generated by `#[tool]` beside the function of the same name; \
         list it in `tools![...]` to register the tool."
    )
}

/// Every doc line joined with `\n`, as one `&'static str` expression.
fn concat_docs(docs: &[TokenStream]) -> TokenStream {
    match docs {
        [] => quote!(""),
        [single] => quote!(#single),
        many => {
            let mut parts = Vec::with_capacity(many.len() * 2);
            for (i, doc) in many.iter().enumerate() {
                if i > 0 {
                    parts.push(quote!("\n"));
                }
                parts.push(doc.clone());
            }
            quote!(::core::concat!(#(#parts),*))
        }
    }
}

mod call;
mod hooks;
mod input;
pub(crate) mod meta;
mod output;
mod recovery;
#[cfg(test)]
mod tests;

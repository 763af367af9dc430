//! The tool's input: the struct named like the function (one field per
//! parameter, or empty for `Input<T>`), the functions that make its
//! defaults, `Tool::Input`, `Tool::input_schema` and `Tool::parse`.
//!
//! Plain parameters take the fast path: the schema is built property by
//! property and the input read field by field through `ToolParam`, with no
//! derive. A parameter carrying `#[serde]` or `#[schemars]` makes the
//! struct derived, so those attributes mean what they mean on any struct.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::LitStr;
use syn::spanned::Spanned;

use super::{Gen, concat_docs, respan, struct_doc};
use crate::attrs::ParamDefault;
use crate::signature::{InputKind, Param, generic_argument};

/// The struct named like the function, and the functions of its defaults.
pub(super) fn input_struct(g: &Gen<'_>) -> TokenStream {
    let (ident, vis) = (&g.tool_fn.ident, &g.tool_fn.vis);
    let struct_doc = struct_doc(g.name);
    let item = match &g.tool_fn.input {
        InputKind::Whole { .. } => quote! {
            #[doc = #struct_doc]
            #[allow(non_camel_case_types)]
            #vis struct #ident {}
        },
        InputKind::Params(params) => {
            let defaults = default_fns(params, g);
            let definition = if is_derived(params) { derived_struct(params, g) } else { plain_struct(params, g) };
            quote!(#definition #defaults)
        }
    };
    // The host reads an external tool's input, as JSON: nothing here does.
    match g.tool_fn.bodyless {
        Some(_) => quote!(#[allow(dead_code)] #item),
        None => item,
    }
}

/// `Tool::Input`: the struct itself, or `T` of `Input<T>`.
pub(super) fn input_type(g: &Gen<'_>) -> TokenStream {
    match &g.tool_fn.input {
        InputKind::Whole { ty } => whole_input(ty, &g.p).0,
        InputKind::Params(_) => quote!(Self),
    }
}

/// `Tool::input_schema`.
pub(super) fn input_schema_fn(g: &Gen<'_>) -> TokenStream {
    let (p, doc) = (&g.p, &g.doc);
    let body = match &g.tool_fn.input {
        InputKind::Whole { ty } => {
            let (inner, probe, span) = whole_input(ty, p);
            quote_spanned!(span=> <#inner as #probe::ToolInput>::schema(generator))
        }
        InputKind::Params(params) if is_derived(params) => quote!(#p::struct_schema::<Self>(generator)),
        InputKind::Params(params) => {
            let schema_params = params.iter().map(|param| schema_param(param, p));
            quote! {
                let mut schema = #p::InputSchema::new(#doc);
                #(#schema_params)*
                schema.finish()
            }
        }
    };
    quote! {
        fn input_schema(generator: &mut #p::schemars::SchemaGenerator) -> #p::schemars::Schema {
            #body
        }
    }
}

/// `Tool::parse`: the input from the call's arguments.
pub(super) fn parse_fn(g: &Gen<'_>) -> TokenStream {
    let p = &g.p;
    // A tool without parameters reads nothing: its argument is bound to `_`.
    let mut args = quote!(args);
    let body = match &g.tool_fn.input {
        InputKind::Whole { ty } => {
            let (inner, probe, span) = whole_input(ty, p);
            quote_spanned!(span=> <#inner as #probe::ToolInput>::parse(args))
        }
        InputKind::Params(params) if reads_whole(params) => quote!(args.parse_struct::<Self>()),
        InputKind::Params(params) => {
            if params.is_empty() {
                args = quote!(_);
            }
            let takes = params.iter().map(|param| take_param(param, p));
            quote!(::core::result::Result::Ok(Self { #(#takes,)* }))
        }
    };
    quote! {
        fn parse(#args: &mut #p::Args<'_>) -> ::core::result::Result<Self::Input, #p::serde_json::Error> {
            #body
        }
    }
}

/// For `Input<T>`: `<Input<T> as InputParam>::Inner` and the path to the
/// runtime, spanned on `T`, where a `T` that is not an input is reported.
fn whole_input(ty: &syn::Type, p: &TokenStream) -> (TokenStream, TokenStream, Span) {
    let span = generic_argument(ty).map_or_else(|| ty.span(), |inner| inner.span());
    let probe = respan(p, span);
    let wrapper = respan(&ty.to_token_stream(), span);
    (quote_spanned!(span=> <#wrapper as #probe::InputParam>::Inner), probe, span)
}

/// Whether the struct is derived: a parameter carries `#[serde]` or
/// `#[schemars]`.
fn is_derived(params: &[Param]) -> bool {
    params.iter().any(|param| !param.carried.is_empty())
}

/// Whether `parse` reads the derived struct whole: a parameter carries
/// `#[serde]`, which changes how its field is read (a rename, a
/// `deserialize_with`). `#[schemars]` only changes the schema, so those
/// parameters are still read one at a time, as plain ones are.
fn reads_whole(params: &[Param]) -> bool {
    params.iter().flat_map(|param| &param.carried).any(|attr| attr.path().is_ident("serde"))
}

/// The fields' visibility: the function's, so that a `pub` tool's input
/// can be built by its callers.
fn field_vis(g: &Gen<'_>) -> TokenStream {
    match &g.tool_fn.vis {
        syn::Visibility::Inherited => quote!(),
        other => other.to_token_stream(),
    }
}

/// The struct on the fast path: one field per parameter, no derive.
fn plain_struct(params: &[Param], g: &Gen<'_>) -> TokenStream {
    let (ident, vis) = (&g.tool_fn.ident, &g.tool_fn.vis);
    let field_vis = field_vis(g);
    let struct_doc = struct_doc(g.name);
    let fields = params.iter().map(|param| {
        let (field, ty) = (&param.ident, &param.ty);
        quote!(#field_vis #field: #ty)
    });
    quote! {
        #[doc = #struct_doc]
        #[allow(non_camel_case_types)]
        #vis struct #ident { #(#fields,)* }
    }
}

/// The struct when a parameter carries `#[serde]` or `#[schemars]`:
/// derived, its fields described from the docs unless a carried
/// `#[schemars(description)]` says otherwise.
fn derived_struct(params: &[Param], g: &Gen<'_>) -> TokenStream {
    let (ident, vis, p, krate, doc) = (&g.tool_fn.ident, &g.tool_fn.vis, &g.p, &g.krate, &g.doc);
    let field_vis = field_vis(g);
    let struct_doc = struct_doc(g.name);
    let serde_crate = super::crate_path_literal(krate, "__private::serde");
    let schemars_crate = super::crate_path_literal(krate, "__private::schemars");
    let fields = params.iter().map(|param| {
        let (field, ty, name, carried) = (&param.ident, &param.ty, &param.name, &param.carried);
        let param_doc = concat_docs(&param.docs);
        let has_description = carried.iter().any(sets_description);
        let description = (!has_description).then(|| quote!(#[schemars(description = #p::param_description(#doc, #name, #param_doc))]));
        let default = (!matches!(param.default, ParamDefault::None)).then(|| {
            let path = LitStr::new(&format!("{ident}::{}", default_fn(param)), Span::call_site());
            quote!(#[serde(default = #path)])
        });
        let checked = quote_spanned!(ty.span()=> #ty);
        quote!(#(#carried)* #description #default #field_vis #field: #checked)
    });
    quote! {
        #[doc = #struct_doc]
        #[allow(non_camel_case_types)]
        #[derive(#p::serde::Deserialize, #p::schemars::JsonSchema)]
        #[serde(crate = #serde_crate)]
        #[schemars(crate = #schemars_crate)]
        #vis struct #ident { #(#fields,)* }
    }
}

/// Whether a carried attribute is `#[schemars(description = ...)]`, which
/// then wins over the parameter's doc comment.
pub(super) fn sets_description(attr: &syn::Attribute) -> bool {
    let syn::Meta::List(list) = &attr.meta else { return false };
    attr.path().is_ident("schemars")
        && darling::ast::NestedMeta::parse_meta_list(list.tokens.clone())
            .is_ok_and(|items| items.iter().any(|item| matches!(item, darling::ast::NestedMeta::Meta(meta) if meta.path().is_ident("description"))))
}

/// The name of the function that makes a parameter's default.
fn default_fn(param: &Param) -> syn::Ident {
    format_ident!("__tool_default_{}", param.name)
}

/// One function per parameter with a default, on the tool's type, so that
/// the schema, both parsers and serde all call the expression the user
/// wrote from one place (and the compiler checks it once). `#[tool(default)]`
/// calls `<T as DefaultParam>::default_param`, spanned on `default`: a type
/// without `Default` is reported there.
fn default_fns(params: &[Param], g: &Gen<'_>) -> TokenStream {
    let (ident, p) = (&g.tool_fn.ident, &g.p);
    let fns: Vec<TokenStream> = params
        .iter()
        .filter_map(|param| {
            let ty = &param.ty;
            let body = match &param.default {
                ParamDefault::None => return None,
                ParamDefault::Trait(span) => {
                    let (ty, p) = (respan(&ty.to_token_stream(), *span), respan(p, *span));
                    quote_spanned!(*span=> <#ty as #p::DefaultParam>::default_param())
                }
                ParamDefault::Expr(expr) => expr.to_token_stream(),
            };
            let function = default_fn(param);
            Some(quote!(#[doc(hidden)] fn #function() -> #ty { #body }))
        })
        .collect();
    if fns.is_empty() {
        return TokenStream::new();
    }
    quote!(impl #ident { #(#fns)* })
}

/// One parameter's part of `input_schema` (plain parameters). Through
/// `ToolParam`, spanned on the type: a type that is not
/// `Deserialize + JsonSchema` is reported once, on the parameter.
fn schema_param(param: &Param, p: &TokenStream) -> TokenStream {
    let ty = &param.ty;
    let name = &param.name;
    let doc = concat_docs(&param.docs);
    let default = match &param.default {
        ParamDefault::None => quote!(::core::option::Option::None),
        ParamDefault::Trait(_) | ParamDefault::Expr(_) => {
            let function = default_fn(param);
            quote!(::core::option::Option::Some({
                #[allow(unused_imports)]
                use #p::NotJson as _;
                #p::MaybeJson(&Self::#function()).to_json()
            }))
        }
    };
    let p = respan(p, ty.span());
    quote_spanned!(ty.span()=> <#ty as #p::ToolParam>::add_to(&mut schema, generator, #name, #doc, #default);)
}

/// One field of `parse` (plain parameters): taken from `Args` by name.
fn take_param(param: &Param, p: &TokenStream) -> TokenStream {
    let (field, ty, name) = (&param.ident, &param.ty, &param.name);
    let probe = respan(p, ty.span());
    let take = match &param.default {
        ParamDefault::None => quote_spanned!(ty.span()=> <#ty as #probe::ToolParam>::take_from(args, #name)?),
        ParamDefault::Trait(_) | ParamDefault::Expr(_) => {
            let function = default_fn(param);
            quote_spanned!(ty.span()=> <#ty as #probe::ToolParam>::take_or_else_from(args, #name, Self::#function)?)
        }
    };
    quote!(#field: #take)
}

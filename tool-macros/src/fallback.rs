//! Expand phase, for an item with errors: what is emitted beside it, as
//! thiserror's fallback does: the user's item as written, every error, the
//! probes rustc needs to word its own error on the user's token, and a stub
//! of the tool's type, so that other code naming the tool (`tools![...]`)
//! compiles and the item's own errors are the only ones reported. It uses
//! `expand`'s pieces; `expand` knows nothing of it.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};
use syn::Item;
use syn::spanned::Spanned;

use crate::attrs::ToolAttrs;
use crate::expand::meta::meta;
use crate::expand::{private_path, respan, struct_doc};
use crate::signature::ToolFn;

pub(crate) fn with_errors(item: TokenStream, errors: TokenStream) -> TokenStream {
    quote!(#item #errors)
}

/// The tokens to point at for an item that is not a function: its keyword
/// and name (`struct Hello`), past its attributes and doc comment.
pub(crate) fn item_kind_token(item: &Item) -> TokenStream {
    match item {
        Item::Struct(item) => keyword_and_name(&item.struct_token, &item.ident),
        Item::Enum(item) => keyword_and_name(&item.enum_token, &item.ident),
        Item::Union(item) => keyword_and_name(&item.union_token, &item.ident),
        Item::Trait(item) => keyword_and_name(&item.trait_token, &item.ident),
        Item::Type(item) => keyword_and_name(&item.type_token, &item.ident),
        Item::Const(item) => keyword_and_name(&item.const_token, &item.ident),
        Item::Static(item) => keyword_and_name(&item.static_token, &item.ident),
        Item::Mod(item) => keyword_and_name(&item.mod_token, &item.ident),
        Item::Impl(item) => keyword_and_name(&item.impl_token, &item.self_ty),
        other => other.to_token_stream().into_iter().take(2).collect(),
    }
}

fn keyword_and_name(keyword: &impl ToTokens, name: &impl ToTokens) -> TokenStream {
    quote!(#keyword #name)
}

/// A bare `Ctx` as the first parameter: rustc reports it (missing generics)
/// and this probe then resolves to an error type and stays silent; `Ctx` as
/// an alias of `Ctx<App>` compiles, and the probe fails with the type to write.
pub(crate) fn ctx_app_probe(ty: &syn::Type, attrs: &ToolAttrs) -> TokenStream {
    let p = respan(&private_path(attrs), ty.span());
    quote_spanned! {ty.span()=>
        const _: () = <#ty as #p::CtxAppWritten>::CHECKED;
    }
}

/// The tool's type for an item with errors: it registers with any app and
/// is never called (the crate does not compile), so that other code naming
/// it compiles and the item's own errors are the only ones reported.
pub(crate) fn stub(attrs: &ToolAttrs, tool_fn: &ToolFn, name: &str) -> TokenStream {
    let p = private_path(attrs);
    let (ident, vis) = (&tool_fn.ident, &tool_fn.vis);
    let meta = meta(attrs, name, &quote!(""), &p);
    let struct_doc = struct_doc(name);
    quote! {
        #[doc = #struct_doc]
        #[allow(non_camel_case_types)]
        #vis struct #ident {}

        const _: () = {
            impl #p::Named for #ident {
                const NAME: &'static str = #name;
            }

            impl<__AnyApp: ::core::marker::Send + ::core::marker::Sync + 'static> #p::Tool<__AnyApp> for #ident {
                type Input = ();
                const META: #p::ToolMeta = #meta;

                fn input_schema(_: &mut #p::schemars::SchemaGenerator) -> #p::schemars::Schema {
                    ::core::unreachable!()
                }

                fn output_schema(_: &mut #p::schemars::SchemaGenerator) -> ::core::option::Option<#p::schemars::Schema> {
                    ::core::unreachable!()
                }

                fn parse(_: &mut #p::Args<'_>) -> ::core::result::Result<(), #p::serde_json::Error> {
                    ::core::unreachable!()
                }

                fn call(_: (), _: &mut #p::CallState<'_, __AnyApp>, _: &#p::ParsedFrom<'_>) -> #p::CallFuture {
                    ::core::unreachable!()
                }
            }
        };
    }
}

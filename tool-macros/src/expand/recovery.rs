//! `on_error = path` in `Tool::call`: the recovery sees the input again,
//! parsed from the arguments, kept for it (the call consumed the input),
//! and the tool's error; what it gives back becomes the output.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::{Gen, respan};

/// For a tool with `on_error`: the statement before the call's future that
/// keeps the arguments, and the statements in it that recover from the
/// tool's error. Spanned on the path: a recovery of the wrong signature or
/// return type is reported there.
pub(super) fn recovery(g: &Gen<'_>) -> Option<(TokenStream, TokenStream)> {
    let path = g.attrs.on_error.as_ref()?;
    let (p, app) = (&g.p, &g.app);
    let probe = respan(p, path.span());
    let none = quote!(::core::option::Option::None);
    let invoke = quote_spanned! {path.span()=>
        match #probe::recovery_call(#path, input, &error, output_type) {
            ::core::option::Option::Some(probe) => probe.decide().await,
            ::core::option::Option::None => #none,
        }
    };
    let keep_args = quote!(let recovery_args = #p::ParsedFrom::into_owned(::core::clone::Clone::clone(args)););
    let recover = quote! {
        let output_type = #p::output_of(&returned);
        let returned = match returned {
            ::core::result::Result::Err(error) => {
                #[allow(unused_imports)]
                use #p::SyncRecovery as _;
                let input = <Self as #p::Tool<#app>>::parse_again(&recovery_args);
                let recovered = match &input {
                    ::core::option::Option::Some(input) => #invoke,
                    ::core::option::Option::None => #none,
                };
                match recovered {
                    ::core::option::Option::Some(output) => ::core::result::Result::Ok(output),
                    ::core::option::Option::None => ::core::result::Result::Err(error),
                }
            }
            returned => returned,
        };
    };
    Some((keep_args, recover))
}

//! `#[derive(Form)]`: a struct a tool asks its user to fill in (MCP
//! elicitation), or an enum of unit variants offered as a form's choices.
//!
//! The derive only checks the shape and names the runtime's traits; what a
//! form is (its schema, the answer's check) is the runtime's
//! (`tool_runtime::question`). A struct's fields are named, and each
//! field's type must be one MCP's flat forms carry: a trait bound
//! (`FormField`), written at the field's type, so the error points at the
//! field and the runtime's `#[diagnostic::on_unimplemented]` says what is
//! allowed. An enum's variants are unit variants. Every mistake of an item
//! is reported at once; the item itself is the user's (a derive adds only
//! items).

use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Path};

use crate::diag::{Errors, error_at, with_help};

/// The whole derive: the impls, or every error.
pub fn derive(item: TokenStream) -> TokenStream {
    let input = match syn::parse2::<DeriveInput>(item) {
        Ok(input) => input,
        Err(error) => return error.to_compile_error(),
    };
    let mut errors = Errors::default();
    let krate = runtime_path(&input, &mut errors);
    if !input.generics.params.is_empty() {
        errors.push(with_help(error_at(&input.generics, "a form has no generic parameters"), "ask for a concrete struct or enum"));
    }
    let name = &input.ident;
    let expanded = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(fields) => {
                let checks = fields.named.iter().map(|field| {
                    let ty = &field.ty;
                    quote_spanned!(ty.span()=> #krate::__private::form_field::<#ty>();)
                });
                quote! {
                    impl #krate::question::Form for #name {}
                    const _: () = {
                        #[allow(dead_code)]
                        fn __tool_runtime_form_fields() {
                            #(#checks)*
                        }
                    };
                }
            }
            other => {
                errors.push(with_help(
                    error_at(&shape_token(other, name), "a form's fields are named"),
                    "write the struct with named fields: each is a field of the form, named and described by it",
                ));
                TokenStream::new()
            }
        },
        Data::Enum(data) => {
            for variant in data.variants.iter().filter(|variant| !matches!(variant.fields, Fields::Unit)) {
                errors.push(with_help(
                    error_at(&variant.fields, "a form's choice is a unit variant"),
                    "an enum with `#[derive(Form)]` offers its variants as choices; ask for their data in a field of its own",
                ));
            }
            quote! {
                impl #krate::question::FormField for #name {}
                impl #krate::question::FormChoice for #name {}
            }
        }
        Data::Union(data) => {
            errors
                .push(with_help(error_at(&data.union_token, "`#[derive(Form)]` goes on a struct or an enum"), "ask for a struct with named fields"));
            TokenStream::new()
        }
    };
    if !errors.is_empty() {
        return errors.to_compile_errors();
    }
    expanded
}

/// What the item's fields are, to point at: a tuple struct's parentheses,
/// or a unit struct's name.
fn shape_token(fields: &Fields, name: &syn::Ident) -> TokenStream {
    match fields {
        Fields::Unit => name.to_token_stream(),
        other => other.to_token_stream(),
    }
}

/// The runtime's path: `#[form(crate = path)]`, else `::tool_runtime`.
fn runtime_path(input: &DeriveInput, errors: &mut Errors) -> TokenStream {
    let mut krate: Option<Path> = None;
    for attr in input.attrs.iter().filter(|attr| attr.path().is_ident("form")) {
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                if krate.is_some() {
                    return Err(meta.error("`crate` is given twice"));
                }
                krate = Some(meta.value()?.parse::<Path>()?);
                return Ok(());
            }
            Err(meta.error("unknown key of `#[form(...)]`; it takes `crate = path`"))
        });
        errors.handle(parsed);
    }
    krate.map_or_else(|| quote!(::tool_runtime), |path| path.to_token_stream())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_struct_s_fields_are_checked_each_at_its_type() {
        let out = derive(quote!(
            struct Confirm {
                go_ahead: bool,
                note: Option<String>,
            }
        ))
        .to_string();
        assert!(out.contains("impl :: tool_runtime :: question :: Form for Confirm"), "{out}");
        assert!(out.contains("form_field :: < bool >") && out.contains("form_field :: < Option < String > >"), "{out}");
    }

    #[test]
    fn every_mistake_of_an_item_is_reported() {
        let out = derive(quote!(
            enum Choice<T> {
                A(T),
                B { b: u8 },
                C,
            }
        ))
        .to_string();
        assert_eq!(out.matches("compile_error").count(), 3, "{out}");
    }
}

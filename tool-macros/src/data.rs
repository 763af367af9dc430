//! `#[tool_data(Serialize, Deserialize, JsonSchema)]`: the derives a tool's
//! input and output types need, from the serde and schemars the runtime
//! re-exports, so that a crate depending on `tool-runtime` alone can write
//! them. serde's and schemars' derives name their crate by path (`serde::`,
//! `schemars::`), which such a crate does not have; each takes a
//! `crate = "..."` attribute for that, which this attribute writes beside
//! the derive (a derive cannot: it adds items, never attributes).
//!
//! Parse, check and expand are one small function each, in this file: the
//! attribute has one list and no rules across keys.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::punctuated::Punctuated;
use syn::{Item, Meta, Path, Token};

use crate::diag::{Errors, error_at, with_help};

/// The derives `#[tool_data]` writes, each with the crate it comes from.
const DERIVES: [(&str, &str); 3] = [("Serialize", "serde"), ("Deserialize", "serde"), ("JsonSchema", "schemars")];

/// What `#[tool_data(...)]` asks for: derives from `DERIVES`, in the order
/// written, and the runtime's path.
struct DataArgs {
    derives: Vec<(syn::Ident, &'static str)>,
    krate: Option<Path>,
}

/// The whole attribute: the item with the derives and the crate
/// attributes they need, or the item as written and every error.
pub fn generate(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let parsed = syn::parse2::<Item>(item.clone());
    if let Ok(other) = &parsed
        && !matches!(other, Item::Struct(_) | Item::Enum(_))
    {
        errors.push(with_help(
            error_at(&crate::fallback::item_kind_token(other), "`#[tool_data]` goes on a struct or an enum"),
            "put it on the types a tool takes or returns",
        ));
    }
    let args = parse(args, &mut errors);
    if !errors.is_empty() {
        let errors = errors.to_compile_errors();
        return quote!(#item #errors);
    }
    expand(&args, item)
}

/// The list: each derive once, `crate = path` at most once.
fn parse(args: TokenStream, errors: &mut Errors) -> DataArgs {
    let mut out = DataArgs { derives: Vec::new(), krate: None };
    let help = "write the derives it takes, such as `#[tool_data(Serialize, JsonSchema)]`: `Serialize`, `Deserialize` and `JsonSchema`";
    let Some(items) = errors.handle(syn::parse::Parser::parse2(Punctuated::<Meta, Token![,]>::parse_terminated, args.clone())) else {
        return out;
    };
    if items.is_empty() {
        // Nothing was written to point at: the attribute itself.
        let attribute = syn::Ident::new("tool_data", Span::call_site());
        errors.push(with_help(error_at(&attribute, "`#[tool_data]` needs the derives to write"), help));
    }
    for meta in &items {
        match meta {
            Meta::NameValue(pair) if pair.path.is_ident("crate") => match &pair.value {
                _ if out.krate.is_some() => errors.push(with_help(error_at(&pair.path, "`crate` is given twice"), "remove one of them")),
                syn::Expr::Path(path) => out.krate = Some(path.path.clone()),
                other => errors.push(with_help(error_at(other, "`crate` takes a path"), "write `crate = path::to::tool_runtime`")),
            },
            Meta::Path(path) if let Some(ident) = path.get_ident() => derive(ident, &mut out, help, errors),
            other => errors.push(with_help(error_at(other, "expected the name of a derive"), help)),
        }
    }
    out
}

/// One derive of the list, checked against `DERIVES`.
fn derive(ident: &syn::Ident, out: &mut DataArgs, help: &str, errors: &mut Errors) {
    let name = ident.to_string();
    match DERIVES.iter().find(|(known, _)| *known == name) {
        Some(_) if out.derives.iter().any(|(seen, _)| *seen == name) => {
            errors.push(with_help(error_at(ident, format!("`{name}` is listed twice")), "remove the repeated entry"));
        }
        Some((_, krate)) => out.derives.push((ident.clone(), krate)),
        None => {
            let near = DERIVES.iter().find(|(known, _)| known.eq_ignore_ascii_case(&name));
            let help = match near {
                Some((known, _)) => format!("did you mean `{known}`?"),
                None => format!("{help}; write any other derive in `#[derive(...)]`"),
            };
            errors.push(with_help(error_at(ident, format!("`#[tool_data]` does not derive `{name}`")), help));
        }
    }
}

/// The derives, each from the runtime's re-export, and each crate's
/// `crate = "..."` attribute once.
fn expand(args: &DataArgs, item: TokenStream) -> TokenStream {
    let krate = match &args.krate {
        Some(path) => path.to_token_stream(),
        None => quote!(::tool_runtime),
    };
    let derives = args.derives.iter().map(|(ident, from)| {
        let from = syn::Ident::new(from, Span::call_site());
        quote!(#krate::#from::#ident)
    });
    let uses = |from: &str| args.derives.iter().any(|(_, krate)| *krate == from);
    let serde = uses("serde").then(|| {
        let path = crate::expand::crate_path_literal(&krate, "serde");
        quote!(#[serde(crate = #path)])
    });
    let schemars = uses("schemars").then(|| {
        let path = crate::expand::crate_path_literal(&krate, "schemars");
        quote!(#[schemars(crate = #path)])
    });
    quote! {
        #[derive(#(#derives),*)]
        #serde
        #schemars
        #item
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(args: TokenStream, item: TokenStream) -> String {
        generate(args, item).to_string()
    }

    /// A struct to put the attribute on.
    fn order() -> TokenStream {
        quote!(
            struct Order {
                id: String,
            }
        )
    }

    #[test]
    fn each_derive_comes_from_the_runtime_with_its_crate_attribute() {
        let tokens = messages(quote!(Serialize, JsonSchema), order());
        assert!(tokens.contains("derive (:: tool_runtime :: serde :: Serialize , :: tool_runtime :: schemars :: JsonSchema)"), "{tokens}");
        assert!(tokens.contains("serde (crate = \"::tool_runtime::serde\")"), "{tokens}");
        assert!(tokens.contains("schemars (crate = \"::tool_runtime::schemars\")"), "{tokens}");
        let only_schema = messages(quote!(JsonSchema), order());
        assert!(!only_schema.contains("serde (crate"), "no serde derive, no serde attribute: {only_schema}");
        let moved = messages(
            quote!(Deserialize, crate = my::rt),
            quote!(
                enum Region {
                    Eu,
                }
            ),
        );
        assert!(moved.contains("my :: rt :: serde :: Deserialize") && moved.contains("\"my::rt::serde\""), "{moved}");
    }

    #[test]
    fn a_mistake_is_spanned_and_the_item_kept() {
        let tokens = messages(quote!(Serialise, Serialize, Serialize), order());
        assert!(tokens.contains("`#[tool_data]` does not derive `Serialise`"), "{tokens}");
        assert!(tokens.contains("`Serialize` is listed twice"), "{tokens}");
        assert!(tokens.contains("struct Order"), "{tokens}");
        let near = messages(quote!(Jsonschema), order());
        assert!(near.contains("did you mean `JsonSchema`?"), "{near}");
        let on_fn = messages(
            quote!(Serialize),
            quote!(
                fn order() {}
            ),
        );
        assert!(on_fn.contains("`#[tool_data]` goes on a struct or an enum"), "{on_fn}");
    }
}

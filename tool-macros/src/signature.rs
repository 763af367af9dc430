//! Parse phase, part two: the function's signature and docs into the model
//! the expansion works from.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{Attribute, Expr, FnArg, GenericArgument, Ident, ItemFn, Lit, Meta, Pat, PathArguments, ReturnType, Type, Visibility};

use crate::attrs::{ParamDefault, parse_param};
use crate::diag::{Errors, error_at, with_help};

/// The function, read.
pub struct ToolFn {
    /// The function as it will be emitted: parameter attributes removed.
    pub item: ItemFn,
    pub ident: Ident,
    pub vis: Visibility,
    /// The `#[doc]` values of the function, in order.
    pub docs: Vec<TokenStream>,
    pub ctx: Option<CtxParam>,
    /// A first parameter `Ctx` written without its app type.
    pub ctx_without_app: Option<Type>,
    pub input: InputKind,
    /// The return type; `()` when none is written.
    pub output: Type,
    /// The `;` of a function declared without a body (an `external` tool),
    /// which stands in for the body when the item is emitted.
    pub bodyless: Option<syn::token::Semi>,
    /// Whether the function never waits: its future is ready on its first
    /// poll (see `waits.rs`).
    pub never_waits: bool,
}

pub struct CtxParam {
    /// The type as written (`Ctx<Shop>`).
    pub ty: Type,
    /// The app type (`Shop`).
    pub app: Type,
}

#[allow(clippy::large_enum_variant, reason = "one per item the macro expands, read once")]
pub enum InputKind {
    /// One property per parameter.
    Params(Vec<Param>),
    /// The whole input as one struct: `Input<T>`.
    Whole { ty: Type },
}

pub struct Param {
    pub ident: Ident,
    /// The property name (the identifier without `r#`).
    pub name: String,
    pub ty: Type,
    pub docs: Vec<TokenStream>,
    pub default: ParamDefault,
    /// `#[serde(...)]` and `#[schemars(...)]`, carried onto the input field.
    pub carried: Vec<Attribute>,
}

impl ToolFn {
    /// Reads the function, recording every problem in `errors`.
    pub fn parse(mut item: ItemFn, errors: &mut Errors) -> ToolFn {
        check_header(&item, errors);
        let docs = doc_values(&item.attrs);
        let mut ctx = None;
        let mut ctx_without_app = None;
        let mut params = Vec::new();
        let mut whole: Option<Type> = None;
        let arg_count = item.sig.inputs.len();
        for (position, arg) in item.sig.inputs.iter_mut().enumerate() {
            let typed = match arg {
                FnArg::Receiver(receiver) => {
                    errors.push(with_help(
                        error_at(receiver, "a tool cannot take `self`"),
                        "make the tool a free function and reach shared state through a first parameter `ctx: Ctx<App>`",
                    ));
                    continue;
                }
                FnArg::Typed(typed) => typed,
            };
            let attrs = std::mem::take(&mut typed.attrs);
            let (kept, param_docs, default, carried) = split_param_attrs(attrs, errors);
            typed.attrs = kept;
            let ty = (*typed.ty).clone();
            match last_segment(&ty).as_deref() {
                Some("Ctx") => {
                    if position != 0 {
                        errors.push(with_help(
                            error_at(&typed.ty, "the context must be the first parameter"),
                            "move `Ctx<App>` before the tool's inputs",
                        ));
                    }
                    check_no_param_attrs(&default, &carried, &param_docs, &typed.ty, "the context", errors);
                    match generic_argument(&ty) {
                        Some(app) => ctx = Some(CtxParam { ty, app }),
                        // rustc already reports a bare `Ctx` (missing generics, with the
                        // fix); a macro error would say it twice. Only an alias of `Ctx`
                        // compiles, and expansion makes that fail with its own message.
                        None => ctx_without_app = Some(ty),
                    }
                    continue;
                }
                Some("Input") => {
                    let others = arg_count - usize::from(ctx.is_some()) - 1;
                    if others > 0 || whole.is_some() {
                        errors.push(with_help(
                            error_at(&typed.ty, "`Input<T>` must be the tool's only input"),
                            "take every input as a field of `T`, or drop `Input` and take the fields as parameters",
                        ));
                    }
                    check_no_param_attrs(&default, &carried, &param_docs, &typed.ty, "`Input<T>`", errors);
                    if !matches!(&*typed.pat, Pat::Ident(_) | Pat::TupleStruct(_)) {
                        errors.push(with_help(
                            error_at(&typed.pat, "this pattern cannot bind `Input<T>`"),
                            "write `input: Input<T>` or `Input(input): Input<T>`",
                        ));
                    }
                    whole = Some(ty);
                    continue;
                }
                _ => {}
            }
            check_param_type(&ty, errors);
            let ident = match &*typed.pat {
                Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => pat.ident.clone(),
                other => {
                    errors.push(with_help(
                        error_at(other, "a tool parameter needs a plain name: it becomes the property name in the schema"),
                        "bind the parameter to a name and destructure it in the body",
                    ));
                    continue;
                }
            };
            let name = ident.to_string().trim_start_matches("r#").to_owned();
            params.push(Param { ident, name, ty, docs: param_docs, default, carried });
        }
        let output = match &item.sig.output {
            ReturnType::Default => syn::parse_quote!(()),
            ReturnType::Type(_, ty) => {
                if let Type::ImplTrait(_) = &**ty {
                    errors.push(with_help(
                        error_at(ty, "a tool cannot return `impl Trait`"),
                        "return a concrete type that implements `Serialize` (and `JsonSchema` for an output schema)",
                    ));
                }
                (**ty).clone()
            }
        };
        let input = match whole {
            Some(ty) => InputKind::Whole { ty },
            None => InputKind::Params(params),
        };
        let never_waits = waits::never_waits(&item);
        ToolFn { ident: item.sig.ident.clone(), vis: item.vis.clone(), docs, ctx, ctx_without_app, input, output, item, bodyless: None, never_waits }
    }

    pub fn has_docs(&self) -> bool {
        !self.docs.is_empty()
    }
}

fn check_header(item: &ItemFn, errors: &mut Errors) {
    let sig = &item.sig;
    if sig.asyncness.is_none() {
        errors.push(with_help(
            error_at(&sig.fn_token, "`#[tool]` needs an `async fn`"),
            "write `async fn`; a tool that does no waiting can still be async",
        ));
    }
    if let Some(constness) = &sig.constness {
        errors.push(error_at(constness, "a tool cannot be a `const fn`"));
    }
    if !matches!(sig.safety, syn::Safety::Default) {
        errors.push(error_at(&sig.safety, "a tool cannot be an `unsafe fn`"));
    }
    if let Some(abi) = &sig.abi {
        errors.push(error_at(abi, "a tool cannot have an `extern` ABI"));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push(with_help(
            error_at(&sig.generics, "a tool cannot be generic"),
            "its schema is fixed when the registry is built; use concrete types",
        ));
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(error_at(variadic, "a tool cannot be variadic"));
    }
}

fn check_param_type(ty: &Type, errors: &mut Errors) {
    match ty {
        Type::Reference(reference) => {
            let owned = match &*reference.elem {
                Type::Path(path) if path.path.is_ident("str") => "`String`".to_owned(),
                Type::Slice(slice) => format!("`Vec<{}>`", slice.elem.to_token_stream()),
                other => format!("`{}`", other.to_token_stream()),
            };
            errors.push(with_help(
                error_at(ty, "a tool parameter cannot be borrowed: its value is deserialized from the model's arguments"),
                format!("take an owned value, {owned}"),
            ));
        }
        Type::ImplTrait(_) => errors.push(with_help(
            error_at(ty, "a tool parameter cannot be `impl Trait`"),
            "name a concrete type that implements `Deserialize` and `JsonSchema`",
        )),
        _ => {}
    }
}

fn check_no_param_attrs(default: &ParamDefault, carried: &[Attribute], docs: &[TokenStream], ty: &Type, what: &str, errors: &mut Errors) {
    if !matches!(default, ParamDefault::None) {
        errors.push(error_at(ty, format!("{what} cannot have a default")));
    }
    if let Some(attr) = carried.first() {
        errors.push(with_help(
            error_at(attr, format!("{what} is not a property of the input; `#[serde]` and `#[schemars]` do not apply")),
            "put these attributes on the fields of the input struct",
        ));
    }
    if !docs.is_empty() && what == "the context" {
        errors.push(error_at(ty, "the context is not shown to the model; its doc comment would be lost"));
    }
}

/// Sorts a parameter's attributes: those kept on the function, the docs,
/// the `#[tool]` default and the attributes carried onto the input field.
fn split_param_attrs(attrs: Vec<Attribute>, errors: &mut Errors) -> (Vec<Attribute>, Vec<TokenStream>, ParamDefault, Vec<Attribute>) {
    let mut kept = Vec::new();
    let mut default = ParamDefault::None;
    let mut carried = Vec::new();
    let docs = doc_values(&attrs);
    for attr in attrs {
        let path = attr.path();
        if path.is_ident("doc") {
            continue;
        } else if path.is_ident("tool") {
            let parsed = parse_param(&attr.meta, errors);
            if !matches!(default, ParamDefault::None) && !matches!(parsed, ParamDefault::None) {
                errors.push(error_at(&attr, "duplicate `#[tool(default)]` on one parameter"));
            } else if !matches!(parsed, ParamDefault::None) {
                default = parsed;
            }
        } else if path.is_ident("serde") || path.is_ident("schemars") {
            carried.push(attr);
        } else {
            kept.push(attr);
        }
    }
    (kept, docs, default, carried)
}

/// The values of `#[doc = ...]` attributes: literals, or expressions such
/// as `include_str!(...)`, which `concat!` accepts too.
fn doc_values(attrs: &[Attribute]) -> Vec<TokenStream> {
    attrs
        .iter()
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(nv) if nv.path.is_ident("doc") => Some(match &nv.value {
                Expr::Lit(lit) if matches!(lit.lit, Lit::Str(_)) => lit.lit.to_token_stream(),
                other => quote!(#other),
            }),
            _ => None,
        })
        .collect()
}

/// The last segment's name of a path type: `Ctx` for `tool_runtime::Ctx<A>`.
fn last_segment(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// The first generic type argument of a path type.
pub fn generic_argument(ty: &Type) -> Option<Type> {
    let Type::Path(path) = ty else { return None };
    let PathArguments::AngleBracketed(args) = &path.path.segments.last()?.arguments else {
        return None;
    };
    args.args.iter().find_map(|arg| match arg {
        GenericArgument::Type(ty) => Some(ty.clone()),
        _ => None,
    })
}

/// The function an `external` tool's declaration (a function without a
/// body) stands for, so that the rest of the macro reads it like any tool.
/// Its body is never emitted and never called: the registry hands the
/// tool's calls to the host.
pub fn external_fn(declared: syn::ForeignItemFn) -> ItemFn {
    let block = Box::new(syn::parse_quote!({ ::core::unreachable!() }));
    ItemFn { attrs: declared.attrs, vis: declared.vis, modifiers: declared.modifiers, sig: declared.sig, block }
}

mod returns;
mod waits;
pub use returns::{error_type, is_streamed, returns_result, stream_item, success_type, typed_failure};

//! Expand phase: the model into tokens. The output names runtime types and
//! calls generic runtime helpers; schemas are built at run time, once, so
//! each tool costs the compiler little.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{Item, ItemFn, LitStr};

use crate::attrs::{EndsRunAttr, Flag, ParamDefault, PolicyAttr, ToolAttrs};
use crate::checks;
use crate::diag::{error_at, with_help, Errors};
use crate::signature::{InputKind, Param, ToolFn};

/// The whole attribute: parse, validate, expand. On any error the user's
/// function is still emitted, with every error beside it and a stub of the
/// tool's type, so that `tools![...]` naming it reports nothing more.
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    let item_fn: ItemFn = match syn::parse2::<Item>(item.clone()) {
        Ok(Item::Fn(item_fn)) => item_fn,
        Ok(other) => {
            let error = with_help(
                error_at(&item_kind_token(&other), "`#[tool]` goes on an `async fn`"),
                "write the tool as a free `async fn`; its parameters become the tool's input",
            );
            return with_errors(item, syn::Error::from(error).to_compile_error());
        }
        Err(error) => return with_errors(item, error.to_compile_error()),
    };
    let mut errors = Errors::default();
    let attrs = ToolAttrs::parse(args, &mut errors);
    let tool_fn = ToolFn::parse(item_fn, &mut errors);
    let name = checks::validate(&attrs, &tool_fn, &mut errors);
    let item = &tool_fn.item;
    let ctx_probe = tool_fn.ctx_without_app.as_ref().map(|ty| ctx_app_probe(ty, &attrs));
    if !errors.is_empty() || ctx_probe.is_some() {
        let compile_errors = errors.to_compile_errors();
        // A method with `self` sits in an impl, where no type can be declared.
        let stub = tool_fn.item.sig.receiver().is_none().then(|| stub(&attrs, &tool_fn, &name));
        return quote!(#item #compile_errors #ctx_probe #stub);
    }
    let generated = expand(&attrs, &tool_fn, &name);
    quote!(#item #generated)
}

fn with_errors(item: TokenStream, errors: TokenStream) -> TokenStream {
    quote!(#item #errors)
}

/// The tokens to point at for an item that is not a function: its keyword
/// and name (`struct Hello`), past its attributes and doc comment.
fn item_kind_token(item: &Item) -> TokenStream {
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
fn ctx_app_probe(ty: &syn::Type, attrs: &ToolAttrs) -> TokenStream {
    let krate = match &attrs.krate {
        Some(path) => path.to_token_stream(),
        None => quote!(::tool_runtime),
    };
    let p = respan(&quote!(#krate::__private), ty.span());
    quote_spanned! {ty.span()=>
        const _: () = <#ty as #p::CtxAppWritten>::CHECKED;
    }
}

/// `tokens` with every span set to `span`, so that rustc points at the
/// user's token rather than at the whole attribute. (Only moving the
/// location, `located_at`, is not enough: an expression whose tokens come
/// from two expansion contexts is reported at the macro's call site.) The
/// generated tokens are absolute paths and names local to the expansion,
/// which resolve the same from the user's span.
fn respan(tokens: &TokenStream, span: Span) -> TokenStream {
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

/// The tool's type for an item with errors: it registers with any app and
/// is never called (the crate does not compile), so that other code naming
/// it compiles and the item's own errors are the only ones reported.
fn stub(attrs: &ToolAttrs, tool_fn: &ToolFn, name: &str) -> TokenStream {
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

                fn parse(
                    _: &#p::serde_json::Map<::std::string::String, #p::serde_json::Value>,
                ) -> ::core::result::Result<(), #p::serde_json::Error> {
                    ::core::unreachable!()
                }

                fn parse_text(_: &str, _: ::core::option::Option<&[::std::boxed::Box<str>]>) -> ::core::option::Option<()> {
                    ::core::unreachable!()
                }

                fn call(_: (), _: &mut #p::CallState<'_, __AnyApp>, _: &#p::ParsedFrom<'_>) -> #p::CallFuture {
                    ::core::unreachable!()
                }
            }
        };
    }
}

/// `::tool_runtime::__private`, or under the path of `crate = path`.
fn private_path(attrs: &ToolAttrs) -> TokenStream {
    let krate = match &attrs.krate {
        Some(path) => path.to_token_stream(),
        None => quote!(::tool_runtime),
    };
    quote!(#krate::__private)
}

/// The doc comment of the generated type.
fn struct_doc(name: &str) -> String {
    format!(
        "The input of the tool `{name}`, generated by `#[tool]` beside the function of the same name; \
         list it in `tools![...]` to register the tool."
    )
}

/// The generated items for a valid tool.
fn expand(attrs: &ToolAttrs, tool_fn: &ToolFn, name: &str) -> TokenStream {
    let krate = match &attrs.krate {
        Some(path) => path.to_token_stream(),
        None => quote!(::tool_runtime),
    };
    let p = quote!(#krate::__private);
    let ident = &tool_fn.ident;
    let vis = &tool_fn.vis;
    let doc = concat_docs(&tool_fn.docs);
    let (impl_generics, app) = match &tool_fn.ctx {
        Some(ctx) => (quote!(), ctx.app.to_token_stream()),
        None => (
            quote!(<__AnyApp: ::core::marker::Send + ::core::marker::Sync + 'static>),
            quote!(__AnyApp),
        ),
    };
    let meta = meta(attrs, name, &doc, &p);
    let ctx_arg = tool_fn.ctx.as_ref().map(|ctx| {
        let ty = &ctx.ty;
        let app = &ctx.app;
        quote_spanned!(ty.span()=> <#ty as #p::CtxParam<#app>>::from_ctx(ctx),)
    });
    // The runtime lends the call's state: only a tool that takes a context
    // has one made, and holds a handle of its own.
    let (call_state, take_ctx) = match &tool_fn.ctx {
        Some(_) => (quote!(__call), quote!(let ctx = ::core::clone::Clone::clone(__call.ctx());)),
        None => (quote!(_), quote!()),
    };
    let struct_doc = struct_doc(name);

    // Unused arguments of the trait's methods are bound to `_`.
    let (mut args_of_parse, mut properties) = (quote!(args), quote!(properties));
    let (input_struct, input_ty, input_schema, parse, parse_text, call) = match &tool_fn.input {
        InputKind::Whole { ty } => {
            // Reported on `T` of `Input<T>`.
            let span = crate::signature::generic_argument(ty).map_or_else(|| ty.span(), |inner| inner.span());
            let probe = respan(&p, span);
            let wrapper = respan(&ty.to_token_stream(), span);
            let inner = quote_spanned!(span=> <#wrapper as #probe::InputParam>::Inner);
            (
                quote! {
                    #[doc = #struct_doc]
                    #[allow(non_camel_case_types)]
                    #vis struct #ident {}
                },
                inner.clone(),
                quote_spanned!(span=> <#inner as #probe::ToolInput>::schema(generator)),
                quote_spanned!(span=> <#inner as #probe::ToolInput>::parse(args)),
                quote_spanned!(span=> <#inner as #probe::ToolInput>::parse_text(text, properties)),
                quote!(#ident(#ctx_arg <#ty as #p::InputParam>::wrap(input))),
            )
        }
        InputKind::Params(params) => {
            let derive = params.iter().any(|param| !param.carried.is_empty());
            let field_vis = match vis {
                syn::Visibility::Inherited => quote!(),
                other => other.to_token_stream(),
            };
            let args = params.iter().map(|param| {
                let field = &param.ident;
                quote!(input.#field)
            });
            let call = quote!(#ident(#ctx_arg #(#args),*));
            if derive {
                let (definition, defaults) = derived_struct(params, ident, vis, &field_vis, &doc, &struct_doc, &p, &krate);
                (
                    quote!(#definition #defaults),
                    quote!(Self),
                    quote!(#p::struct_schema::<Self>(generator)),
                    quote!(#p::parse_struct::<Self>(args)),
                    quote!(#p::parse_struct_text::<Self>(text, properties)),
                    call,
                )
            } else {
                let fields = params.iter().map(|param| {
                    let (field, ty) = (&param.ident, &param.ty);
                    quote!(#field_vis #field: #ty)
                });
                let defaults = default_fns(params, ident, &p);
                let schema_params = params.iter().map(|param| schema_param(param, &p));
                let takes = params.iter().map(|param| take_param(param, &p));
                let parse = if params.is_empty() {
                    args_of_parse = quote!(_);
                    quote!(::core::result::Result::Ok(Self {}))
                } else {
                    quote! {
                        let mut args = #p::Args::new(args);
                        ::core::result::Result::Ok(Self { #(#takes,)* })
                    }
                };
                // The parameters' names are the schema's properties.
                properties = quote!(_);
                let values: Vec<_> = (0..params.len()).map(|i| format_ident!("__value{i}")).collect();
                let reads = params.iter().zip(&values).map(|(param, value)| read_param(param, value, &p));
                let fields_from_values = params.iter().zip(&values).map(|(param, value)| field_from_value(param, value, &p));
                (
                    quote! {
                        #[doc = #struct_doc]
                        #[allow(non_camel_case_types)]
                        #vis struct #ident { #(#fields,)* }
                        #defaults
                    },
                    quote!(Self),
                    quote! {
                        let mut schema = #p::InputSchema::new(#doc);
                        #(#schema_params)*
                        schema.finish()
                    },
                    parse,
                    quote! {
                        let mut fields = #p::Fields::open(text)?;
                        #(let mut #values = ::core::option::Option::None;)*
                        while let ::core::option::Option::Some(key) = fields.next_key().ok()? {
                            match key {
                                #(#reads)*
                                _ => return ::core::option::Option::None,
                            }
                        }
                        ::core::option::Option::Some(Self { #(#fields_from_values,)* })
                    },
                    call,
                )
            }
        }
    };

    let decide = match &attrs.policy {
        Some((PolicyAttr::Predicate(path), _)) => {
            // Coercing to a fn pointer reports a wrong signature on the path,
            // as a mismatch with the expected one, and only once.
            let expected = respan(&quote!(fn(&'a Self::Input, &'a #p::Ctx<#app>) -> _), path.span());
            let probe = respan(&p, path.span());
            let invoke = quote_spanned! {path.span()=>
                let predicate: #expected = #path;
                let returned = predicate(input, ctx);
                #probe::PolicyProbe(returned).into_policy()
            };
            Some(quote! {
                fn decide<'a>(input: &'a Self::Input, ctx: &'a #p::Ctx<#app>) -> #p::PolicyFuture<'a> {
                    #[allow(unused_imports)]
                    use #p::SyncPolicy as _;
                    #invoke
                }
            })
        }
        _ => None,
    };
    let visible = attrs.visible_when.as_ref().map(|path| {
        let probe = respan(&p, path.span());
        let invoke = quote_spanned!(path.span()=> #probe::VisibleWhen::<#app>::visible(&#path, view));
        quote! {
            fn visible(view: &#p::StepView<'_, #app>) -> bool {
                #invoke
            }
        }
    });
    let (args_of_call, again, ends_run) = match &attrs.ends_run {
        Some(EndsRunAttr::Predicate(path)) => {
            let probe = respan(&p, path.span());
            let invoke = quote_spanned!(path.span()=> #probe::EndsRunWhen::ends_run(&#path, again, &output));
            (
                quote!(args),
                quote!(let again = <Self as #p::Tool<#app>>::parse_again(args);),
                quote!(match &again { ::core::option::Option::Some(again) => #invoke, ::core::option::Option::None => false }),
            )
        }
        Some(EndsRunAttr::Flag(Flag { value: true, .. })) => (quote!(_), quote!(), quote!(true)),
        _ => (quote!(_), quote!(), quote!(false)),
    };
    let output_ty = &tool_fn.output;
    let error_span = error_type(output_ty).span();
    let returned = {
        let probe = respan(&p, error_span);
        quote_spanned!(error_span=> #probe::Returned(returned).into_result())
    };
    let success_span = success_type(output_ty).span();
    let probe = respan(&p, success_span);
    let serialize = quote_spanned!(success_span=> #probe::ToolReturn::to_output(output, ends_run));

    quote! {
        #input_struct

        const _: () = {
            impl #p::Named for #ident {
                const NAME: &'static str = #name;
            }

            impl #impl_generics #p::Tool<#app> for #ident {
                type Input = #input_ty;

                const META: #p::ToolMeta = #meta;

                fn input_schema(generator: &mut #p::schemars::SchemaGenerator) -> #p::schemars::Schema {
                    #input_schema
                }

                fn output_schema(
                    generator: &mut #p::schemars::SchemaGenerator,
                ) -> ::core::option::Option<#p::schemars::Schema> {
                    #[allow(unused_imports)]
                    use #p::{NoOutputSchema as _, PlainOutputSchema as _};
                    (&#p::OutputSchema::<#output_ty>::new()).get(generator)
                }

                fn parse(
                    #args_of_parse: &#p::serde_json::Map<::std::string::String, #p::serde_json::Value>,
                ) -> ::core::result::Result<Self::Input, #p::serde_json::Error> {
                    #parse
                }

                fn parse_text(
                    text: &str,
                    #properties: ::core::option::Option<&[::std::boxed::Box<str>]>,
                ) -> ::core::option::Option<Self::Input> {
                    #parse_text
                }

                #decide
                #visible

                fn call(
                    input: Self::Input,
                    #call_state: &mut #p::CallState<'_, #app>,
                    #args_of_call: &#p::ParsedFrom<'_>,
                ) -> #p::CallFuture {
                    #take_ctx
                    #again
                    ::std::boxed::Box::pin(async move {
                        #[allow(unused_imports)]
                        use #p::PlainReturn as _;
                        let returned = #call.await;
                        let output = #returned?;
                        let ends_run = #ends_run;
                        #serialize
                    })
                }
            }
        };
    }
}

/// The success type of a return type: `T` of `Result<T, E>` (and of
/// `io::Result<T>`), else the type itself; where an output error points.
fn success_type(ty: &syn::Type) -> &syn::Type {
    result_argument(ty, 0).unwrap_or(ty)
}

/// The error type of a return type written `Result<T, E>`, else the type
/// itself; where an error type that is not an error points.
fn error_type(ty: &syn::Type) -> &syn::Type {
    result_argument(ty, 1).unwrap_or(ty)
}

/// The type argument at `index` of a type written `...Result<...>`.
fn result_argument(ty: &syn::Type, index: usize) -> Option<&syn::Type> {
    let syn::Type::Path(path) = ty else { return None };
    let last = path.path.segments.last().filter(|last| last.ident == "Result")?;
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else { return None };
    match args.args.iter().nth(index)? {
        syn::GenericArgument::Type(ty) => Some(ty),
        _ => None,
    }
}

/// The `ToolMeta` literal.
fn meta(attrs: &ToolAttrs, name: &str, doc: &TokenStream, p: &TokenStream) -> TokenStream {
    let opt_str = |lit: &Option<LitStr>| match lit {
        Some(lit) => quote!(::core::option::Option::Some(#lit)),
        None => quote!(::core::option::Option::None),
    };
    let opt_bool = |flag: Option<Flag>| match flag {
        Some(Flag { value, .. }) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    };
    let description = opt_str(&attrs.description);
    let title = opt_str(&attrs.title);
    let tags = &attrs.tags;
    let requires = &attrs.requires;
    let (read_only, destructive, idempotent, open_world) = (
        opt_bool(attrs.read_only),
        opt_bool(attrs.destructive),
        opt_bool(attrs.idempotent),
        opt_bool(attrs.open_world),
    );
    let policy = match &attrs.policy {
        None | Some((PolicyAttr::Allow, _)) => quote!(Allow),
        Some((PolicyAttr::Deny, _)) => quote!(Deny),
        Some((PolicyAttr::NeedsApproval, _)) => quote!(NeedsApproval),
        Some((PolicyAttr::Predicate(_), _)) => quote!(Predicate),
    };
    let visible_when = attrs.visible_when.is_some();
    let ends_run = match &attrs.ends_run {
        Some(EndsRunAttr::Predicate(_)) => quote!(Predicate),
        Some(EndsRunAttr::Flag(Flag { value: true, .. })) => quote!(Always),
        _ => quote!(Never),
    };
    let timeout = match &attrs.timeout {
        Some(timeout) => {
            let millis = timeout.millis;
            quote!(::core::option::Option::Some(#p::Duration::from_millis(#millis)))
        }
        None => quote!(::core::option::Option::None),
    };
    let max_output_chars = match attrs.max_output_chars {
        Some(chars) => quote!(::core::option::Option::Some(#chars)),
        None => quote!(::core::option::Option::None),
    };
    let read_only_flag = attrs.read_only.is_some_and(|flag| flag.value);
    let parallel_safe = attrs.parallel_safe.map_or(read_only_flag, |flag| flag.value);
    let strict = opt_bool(attrs.strict);
    quote! {
        #p::ToolMeta {
            name: #name,
            doc: #doc,
            description: #description,
            title: #title,
            tags: &[#(#tags),*],
            annotations: #p::Annotations {
                read_only: #read_only,
                destructive: #destructive,
                idempotent: #idempotent,
                open_world: #open_world,
            },
            policy: #p::PolicyKind::#policy,
            visible_when: #visible_when,
            requires: &[#(#requires),*],
            ends_run: #p::EndsRun::#ends_run,
            timeout: #timeout,
            max_output_chars: #max_output_chars,
            parallel_safe: #parallel_safe,
            strict: #strict,
        }
    }
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

/// The name of the function that makes a parameter's default.
fn default_fn(param: &Param) -> syn::Ident {
    format_ident!("__tool_default_{}", param.name)
}

/// One function per parameter with a default, on the tool's type, so that
/// the schema, both parsers and serde all call the expression the user
/// wrote from one place (and the compiler checks it once). `#[tool(default)]`
/// calls `<T as DefaultParam>::default_param`, spanned on `default`: a type
/// without `Default` is reported there.
fn default_fns(params: &[Param], ident: &syn::Ident, p: &TokenStream) -> TokenStream {
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

/// One parameter's part of the fast path's `input_schema`. Through
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

/// One field of the fast path's `parse`.
fn take_param(param: &Param, p: &TokenStream) -> TokenStream {
    let (field, ty, name) = (&param.ident, &param.ty, &param.name);
    let probe = respan(p, ty.span());
    let take = match &param.default {
        ParamDefault::None => quote_spanned!(ty.span()=> <#ty as #probe::ToolParam>::take_from(&mut args, #name)?),
        ParamDefault::Trait(_) | ParamDefault::Expr(_) => {
            let function = default_fn(param);
            quote_spanned!(ty.span()=> <#ty as #probe::ToolParam>::take_or_else_from(&mut args, #name, Self::#function)?)
        }
    };
    quote!(#field: #take)
}

/// The match arm of the fast path's parse that reads one parameter (each
/// once: a repeated key stops the fast path).
fn read_param(param: &Param, value: &syn::Ident, p: &TokenStream) -> TokenStream {
    let (ty, name) = (&param.ty, &param.name);
    let probe = respan(p, ty.span());
    let read = quote_spanned!(ty.span()=> <#ty as #probe::ToolParam>::read(&mut fields)?);
    quote! {
        #name if #value.is_none() => #value = ::core::option::Option::Some(#read),
    }
}

/// One field of the fast path's input, from the value read for it, or its
/// default when the text left it out.
fn field_from_value(param: &Param, value: &syn::Ident, p: &TokenStream) -> TokenStream {
    let (field, ty) = (&param.ident, &param.ty);
    let probe = respan(p, ty.span());
    let read = match &param.default {
        ParamDefault::None => quote_spanned!(ty.span()=> match #value {
            ::core::option::Option::Some(value) => value,
            ::core::option::Option::None => <#ty as #probe::ToolParam>::missing()?,
        }),
        ParamDefault::Trait(_) | ParamDefault::Expr(_) => {
            let function = default_fn(param);
            quote_spanned!(ty.span()=> #value.unwrap_or_else(Self::#function))
        }
    };
    quote!(#field: #read)
}

/// The input struct when a parameter carries `#[serde]` or `#[schemars]`:
/// derived, so those attributes mean exactly what they mean on any struct.
#[allow(clippy::too_many_arguments)]
fn derived_struct(
    params: &[Param],
    ident: &syn::Ident,
    vis: &syn::Visibility,
    field_vis: &TokenStream,
    doc: &TokenStream,
    struct_doc: &str,
    p: &TokenStream,
    krate: &TokenStream,
) -> (TokenStream, TokenStream) {
    let serde_crate = LitStr::new(&format!("{krate}::__private::serde").replace(' ', ""), Span::call_site());
    let schemars_crate = LitStr::new(&format!("{krate}::__private::schemars").replace(' ', ""), Span::call_site());
    let fields = params.iter().map(|param| {
        let (field, ty, name, carried) = (&param.ident, &param.ty, &param.name, &param.carried);
        let param_doc = concat_docs(&param.docs);
        let has_description = carried.iter().any(sets_description);
        let description = (!has_description).then(|| {
            quote!(#[schemars(description = #p::param_description(#doc, #name, #param_doc))])
        });
        let default = (!matches!(param.default, ParamDefault::None)).then(|| {
            let path = LitStr::new(&format!("{ident}::{}", default_fn(param)), Span::call_site());
            quote!(#[serde(default = #path)])
        });
        let checked = quote_spanned!(ty.span()=> #ty);
        quote!(#(#carried)* #description #default #field_vis #field: #checked)
    });
    let fields: Vec<TokenStream> = fields.collect();
    let definition = quote! {
        #[doc = #struct_doc]
        #[allow(non_camel_case_types)]
        #[derive(#p::serde::Deserialize, #p::schemars::JsonSchema)]
        #[serde(crate = #serde_crate)]
        #[schemars(crate = #schemars_crate)]
        #vis struct #ident { #(#fields,)* }
    };
    let defaults = default_fns(params, ident, p);
    (definition, defaults)
}

/// Whether a carried attribute is `#[schemars(description = ...)]`, which
/// then wins over the parameter's doc comment.
fn sets_description(attr: &syn::Attribute) -> bool {
    let syn::Meta::List(list) = &attr.meta else { return false };
    attr.path().is_ident("schemars")
        && darling::ast::NestedMeta::parse_meta_list(list.tokens.clone()).is_ok_and(|items| {
            items.iter().any(|item| matches!(item, darling::ast::NestedMeta::Meta(meta) if meta.path().is_ident("description")))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn errors_of(args: TokenStream, item: ItemFn) -> Vec<String> {
        let mut errors = Errors::default();
        let attrs = ToolAttrs::parse(args, &mut errors);
        let tool_fn = ToolFn::parse(item, &mut errors);
        checks::validate(&attrs, &tool_fn, &mut errors);
        errors.messages()
    }

    #[test]
    fn a_valid_tool_has_no_errors() {
        let errors = errors_of(
            quote!(read_only, tags("a"), timeout = "5s", policy = needs_approval),
            parse_quote! {
                /// Docs.
                async fn look(ctx: Ctx<Shop>, id: String, #[tool(default)] all: bool) -> u8 { 1 }
            },
        );
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn every_mistake_is_collected() {
        let errors = errors_of(
            quote!(timout = "5s", read_only, destructive),
            parse_quote! {
                fn Bad(x: &str) {}
            },
        );
        let joined = errors.join("\n");
        for expected in [
            "unknown key `timout`",
            "needs an `async fn`",
            "cannot be borrowed",
            "`Bad` is not a valid tool name",
            "has no description",
            "contradict each other",
        ] {
            assert!(joined.contains(expected), "missing {expected:?} in {joined}");
        }
    }

    #[test]
    fn docs_that_start_with_a_heading_give_no_description() {
        let errors = errors_of(
            quote!(),
            parse_quote! {
                /// # Errors
                /// Sometimes.
                async fn look() {}
            },
        );
        assert!(errors.iter().any(|e| e.contains("starts with a heading")), "{errors:?}");
    }

    #[test]
    fn only_a_description_key_counts_as_an_explicit_description() {
        let regex: syn::Attribute = parse_quote!(#[schemars(regex(pattern = "no description here"))]);
        let explicit: syn::Attribute = parse_quote!(#[schemars(description = "x")]);
        assert!(!sets_description(&regex));
        assert!(sets_description(&explicit));
    }

    #[test]
    fn the_fast_path_emits_no_derive() {
        let tokens = tool(
            quote!(),
            quote! {
                /// Docs.
                async fn look(id: String) -> String { id }
            },
        )
        .to_string();
        assert!(!tokens.contains("derive"), "{tokens}");
        assert!(tokens.contains("InputSchema"), "{tokens}");
    }

    #[test]
    fn serde_attributes_switch_to_a_derived_struct() {
        let tokens = tool(
            quote!(),
            quote! {
                /// Docs.
                async fn look(#[serde(rename = "ID")] id: String) -> String { id }
            },
        )
        .to_string();
        assert!(tokens.contains("derive"), "{tokens}");
        assert!(tokens.contains("rename"), "{tokens}");
    }

    #[test]
    fn a_context_without_its_app_type_is_left_to_rustc_and_probed() {
        let tokens = tool(
            quote!(),
            quote! {
                /// Docs.
                async fn look(ctx: Ctx, id: String) -> String { id }
            },
        )
        .to_string();
        assert!(!tokens.contains("compile_error"), "{tokens}");
        assert!(tokens.contains("CtxAppWritten"), "{tokens}");
        assert!(tokens.contains("unreachable"), "only the stub is generated: {tokens}");
        assert!(!tokens.contains("InputSchema"), "only the stub is generated: {tokens}");
    }

    #[test]
    fn the_function_and_a_stub_type_are_emitted_even_with_errors() {
        let tokens = tool(quote!(bogus), quote!(async fn look() {})).to_string();
        assert!(tokens.contains("async fn look"), "{tokens}");
        assert!(tokens.contains("compile_error"), "{tokens}");
        assert!(tokens.contains("struct look"), "{tokens}");
        assert!(tokens.contains("Named for look"), "{tokens}");
        assert!(tokens.contains("Tool < __AnyApp > for look"), "{tokens}");
    }

    #[test]
    fn generated_code_binds_no_filler() {
        let tokens = tool(
            quote!(),
            quote! {
                /// Docs.
                async fn look(id: String, #[tool(default = 3)] limit: u32) -> String { id }
            },
        )
        .to_string();
        assert!(!tokens.contains("let _"), "{tokens}");
        assert!(!tokens.contains("unused_mut"), "{tokens}");
    }

    #[test]
    fn each_default_expression_is_written_once() {
        let tokens = tool(
            quote!(),
            quote! {
                /// Docs.
                async fn look(#[tool(default = 40 + 2)] limit: u32, #[tool(default)] all: bool) -> u32 { limit }
            },
        )
        .to_string();
        assert_eq!(tokens.matches("40 + 2").count(), 1, "{tokens}");
        assert_eq!(tokens.matches("default_param").count(), 1, "{tokens}");
    }

    #[test]
    fn input_must_be_alone() {
        let errors = errors_of(
            quote!(),
            parse_quote! {
                /// Docs.
                async fn look(input: Input<Query>, extra: u8) {}
            },
        );
        assert!(errors.iter().any(|e| e.contains("only input")), "{errors:?}");
    }
}

/// Prints the expansion of a three-parameter tool, to measure how much code
/// one tool costs the compiler: `cargo test -p tool-macros --lib
/// print_three_parameter_expansion -- --ignored --nocapture | rustfmt`.
#[cfg(test)]
#[test]
#[ignore = "prints the expansion; run by hand to measure it"]
fn print_three_parameter_expansion() {
    let tokens = tool(
        quote!(),
        quote! {
            /// Docs.
            async fn look(ctx: Ctx<Shop>, id: String, #[tool(default = 3)] limit: u32, #[tool(default)] all: bool) -> String { id }
        },
    );
    println!("{tokens}");
}

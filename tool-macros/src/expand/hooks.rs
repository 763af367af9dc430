//! The `Tool` methods that call a function the user named in a key:
//! `policy = path` (`verdict`), `visible_when` (`visible`),
//! `parallel_safe = path`, `idempotency_key` (`effect_key`), `on_result`,
//! `resolve`, `reconcile` and `scope`. Each is emitted only for a tool that writes its
//! key.
//!
//! The user's path is called through a runtime probe, spanned on the path:
//! a function of the wrong signature is reported there, once, as a
//! mismatch with the expected one.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::{Gen, respan};
use crate::attrs::{ParallelSafeAttr, PolicyAttr};

/// `Tool::verdict`, for `policy = path`.
pub(super) fn verdict_fn(g: &Gen<'_>) -> Option<TokenStream> {
    let Some((PolicyAttr::Predicate(path), _)) = &g.attrs.policy else { return None };
    let (p, app) = (&g.p, &g.app);
    // Coercing to a fn pointer reports a wrong signature on the path, as a
    // mismatch with the expected one, and only once.
    let expected = respan(&quote!(fn(&'a Self::Input, &'a #p::Ctx<#app>) -> _), path.span());
    let probe = respan(p, path.span());
    // Not called here: the runtime calls it under the policy timeout (a
    // sync one on a blocking thread).
    let invoke = quote_spanned! {path.span()=>
        let predicate: #expected = #path;
        #probe::PolicyProbe(move || predicate(input, ctx)).into_policy()
    };
    Some(quote! {
        fn verdict<'a>(input: &'a Self::Input, ctx: &'a #p::Ctx<#app>) -> #p::PolicyCall<'a> {
            #[allow(unused_imports)]
            use #p::SyncPolicy as _;
            #invoke
        }
    })
}

/// `Tool::visible`, for `visible_when = path`.
pub(super) fn visible_fn(g: &Gen<'_>) -> Option<TokenStream> {
    let path = g.attrs.visible_when.as_ref()?;
    let (p, app) = (&g.p, &g.app);
    let probe = respan(p, path.span());
    let invoke = quote_spanned!(path.span()=> #probe::VisibleWhen::<#app>::visible(&#path, view));
    Some(quote! {
        fn visible(view: &#p::StepView<'_, #app>) -> bool {
            #invoke
        }
    })
}

/// `Tool::parallel_safe`, for `parallel_safe = path` (decided on the raw
/// arguments).
pub(super) fn parallel_safe_fn(g: &Gen<'_>) -> Option<TokenStream> {
    let Some(ParallelSafeAttr::Predicate(path)) = &g.attrs.parallel_safe else { return None };
    let p = &g.p;
    let probe = respan(p, path.span());
    let invoke = quote_spanned!(path.span()=> #probe::ParallelSafeWhen::parallel_safe(&#path, args));
    Some(quote! {
        fn parallel_safe(args: &#p::serde_json::Value) -> ::core::option::Option<bool> {
            ::core::option::Option::Some(#invoke)
        }
    })
}

/// `Tool::effect_key`, for `idempotency_key = path`. Coercing to a fn
/// pointer in `effect_key_call` reports a wrong signature on the path; a
/// wrong return type fails on `EffectKey`.
pub(super) fn effect_key_fn(g: &Gen<'_>) -> Option<TokenStream> {
    let path = g.attrs.idempotency_key.as_ref()?;
    let probe = respan(&g.p, path.span());
    let invoke = quote_spanned!(path.span()=> #probe::effect_key_call(#path, input));
    Some(quote! {
        fn effect_key(input: &Self::Input) -> ::core::option::Option<::std::string::String> {
            ::core::option::Option::Some(#invoke)
        }
    })
}

/// `Tool::on_result`, for `on_result = path`, checked as
/// [`effect_key_fn`]'s path is.
pub(super) fn on_result_fn(g: &Gen<'_>) -> Option<TokenStream> {
    let path = g.attrs.on_result.as_ref()?;
    let p = &g.p;
    let probe = respan(p, path.span());
    let invoke = quote_spanned!(path.span()=> #probe::on_result_call(#path, report));
    Some(quote! {
        fn on_result(report: &#p::CallReport) {
            #invoke
        }
    })
}

/// `Tool::resolve`, for an external tool's `resolve = path`, checked as
/// [`effect_key_fn`]'s path is; an error that cannot be read as text fails
/// on `ResolveError`.
pub(super) fn resolve_fn(g: &Gen<'_>) -> Option<TokenStream> {
    let path = g.attrs.resolve.as_ref()?;
    let p = &g.p;
    let probe = respan(p, path.span());
    let invoke = quote_spanned!(path.span()=> #probe::resolve_call(#path, input));
    Some(quote! {
        fn resolve(input: &Self::Input) -> ::core::option::Option<::core::result::Result<#p::Proposal, ::std::string::String>> {
            ::core::option::Option::Some(#invoke)
        }
    })
}

/// `Tool::reconcile`, for `reconcile = path` (`fn(&Input, &Ctx<App>)`),
/// checked as [`effect_key_fn`]'s path is; an answer that is not one fails
/// on `IntoReconciled`.
pub(super) fn reconcile_fn(g: &Gen<'_>) -> Option<TokenStream> {
    let path = g.attrs.reconcile.as_ref()?;
    let (p, app) = (&g.p, &g.app);
    let probe = respan(p, path.span());
    let invoke = quote_spanned!(path.span()=> #probe::reconcile_call(#path, input, ctx));
    Some(quote! {
        fn reconcile(input: &Self::Input, ctx: &#p::Ctx<#app>) -> #p::Reconciled<::core::result::Result<#p::ToolOutput, #p::Failure>> {
            #invoke
        }
    })
}

/// For `scope = path`, the function `__scope` beside the impl: the scope
/// type is the path's first parameter, named only through it. It coerces
/// the path to a fn pointer once, so a wrong signature is reported on the
/// path once; both [`scope_methods`] use what it gives, which names no
/// scope type.
pub(super) fn scope_fn(g: &Gen<'_>) -> Option<TokenStream> {
    let path = g.attrs.scope.as_ref()?;
    let p = &g.p;
    let probe = respan(p, path.span());
    let coerced = quote_spanned!(path.span()=> #probe::scope_fn(#path));
    Some(quote! {
        fn __scope() -> #p::ScopeFn {
            #coerced
        }
    })
}

/// `Tool::scope_schema` and `Tool::scope`, for `scope = path`, through
/// [`scope_fn`]'s `__scope`.
pub(super) fn scope_methods(g: &Gen<'_>) -> Option<TokenStream> {
    g.attrs.scope.as_ref()?;
    let p = &g.p;
    Some(quote! {
        fn scope_schema(generator: &mut #p::schemars::SchemaGenerator) -> ::core::option::Option<#p::schemars::Schema> {
            ::core::option::Option::Some(__scope().schema(generator))
        }

        fn scope(scope: &#p::serde_json::Value, tool: &mut #p::ScopedTool) -> ::core::result::Result<(), #p::serde_json::Error> {
            __scope().call(scope, tool)
        }
    })
}

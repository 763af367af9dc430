//! `Tool::call`: the future that runs the user's function on the parsed
//! input and turns what it returns into the tool's output. Three shapes:
//! the ordinary call; a streaming tool's (`-> Streamed<T>`), whose items
//! before the last are sent as preliminary results; and an `external`
//! tool's, never reached, since the host runs its calls. The pieces they
//! share (the function call, the context, `ends_run`, the output) each
//! have a generator here; `on_error` has its own file, `recovery.rs`.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;

use super::{Gen, recovery, respan};
use crate::attrs::{EndsRunAttr, Flag};
use crate::signature::{InputKind, error_type, stream_item, success_type, typed_failure};

/// `Tool::call`, in the shape the tool needs.
pub(super) fn call_fn(g: &Gen<'_>) -> TokenStream {
    // An external tool's calls are handed to the host: its `call` is never
    // reached, and its declaration has no body to call.
    if is_external(g) {
        return external(g);
    }
    match stream_item(&g.tool_fn.output) {
        Some(item_ty) => streamed(g, item_ty),
        None => plain(g),
    }
}

/// An external tool whose declaration has no body.
fn is_external(g: &Gen<'_>) -> bool {
    g.tool_fn.bodyless.is_some() && g.attrs.external.is_some_and(|flag| flag.value)
}

/// The ordinary `call`: runs the function, recovers from its error with
/// `on_error`, decides `ends_run` and serialises the output. For a tool
/// that runs where it is first polled, the body is [`body_fn`]'s, which
/// `call_now` shares.
fn plain(g: &Gen<'_>) -> TokenStream {
    let (p, app) = (&g.p, &g.app);
    let (call_state, take_ctx) = ctx_handle(g);
    let args = args_name(g);
    let EndsRun { again, .. } = ends_run(g);
    let keep_args = recovery::recovery(g).map(|(keep_args, _)| keep_args);
    let (future, call_now) = if runs_now(g) { (body_call(g), Some(call_now(g))) } else { (body(g), None) };
    quote! {
        fn call(
            input: Self::Input,
            #call_state: &mut #p::CallState<'_, #app>,
            #args: &#p::ParsedFrom<'_>,
        ) -> #p::CallFuture {
            #take_ctx
            #again
            #keep_args
            ::std::boxed::Box::pin(#future)
        }

        #call_now
    }
}

/// Whether the tool runs where its call is first polled (`call_now`): an
/// ordinary `call` (not a streaming or an external tool's) whose function
/// never waits, and whose `on_error` and `ends_run` call nothing, so the
/// whole body waits only where the function does.
fn runs_now(g: &Gen<'_>) -> bool {
    let plain = !is_external(g) && stream_item(&g.tool_fn.output).is_none();
    plain && g.tool_fn.never_waits && g.attrs.on_error.is_none() && !matches!(g.attrs.ends_run, Some(EndsRunAttr::Predicate(_)))
}

/// The body of the ordinary `call`, as one `async` block.
fn body(g: &Gen<'_>) -> TokenStream {
    let p = &g.p;
    let EndsRun { decide: ends_run, .. } = ends_run(g);
    let recover = recovery::recovery(g).map(|(_, recover)| recover);
    let call = function_call(g);
    let returned = returned(g);
    let serialize = serialize(g);
    let untyped = typed_failure(&g.tool_fn.output).map(|_| quote!(#[allow(unused_imports)] use #p::UntypedFailure as _;));
    quote! {
        async move {
            #[allow(unused_imports)]
            use #p::PlainReturn as _;
            #untyped
            let returned = #call.await;
            #recover
            let output = #returned?;
            let ends_run = #ends_run;
            #serialize
        }
    }
}

/// For a tool that runs where it is first polled: its body as a function
/// of its own beside the impl, so that `call` and `call_now` share one
/// copy (written in both, it doubled the compiler's work on the tool).
/// `None` for any other tool.
pub(super) fn body_fn(g: &Gen<'_>) -> Option<TokenStream> {
    if !runs_now(g) {
        return None;
    }
    let p = &g.p;
    let input_ty = match &g.tool_fn.input {
        InputKind::Whole { .. } => super::input::input_type(g),
        InputKind::Params(_) => g.tool_fn.ident.to_token_stream(),
    };
    let ctx = g.tool_fn.ctx.as_ref().map(|ctx| {
        let app = &ctx.app;
        quote!(ctx: #p::Ctx<#app>,)
    });
    let body = body(g);
    Some(quote! {
        fn __tool_body(input: #input_ty, #ctx) -> impl ::core::future::Future<Output = ::core::result::Result<#p::ToolOutput, #p::Failure>> {
            #body
        }
    })
}

/// The shared body called on the call's input (and context).
fn body_call(g: &Gen<'_>) -> TokenStream {
    match &g.tool_fn.ctx {
        Some(_) => quote!(__tool_body(input, ctx)),
        None => quote!(__tool_body(input)),
    }
}

/// `call_now`, for a tool that runs where it is first polled: the shared
/// body pinned where it is made and polled once, ready on that poll.
fn call_now(g: &Gen<'_>) -> TokenStream {
    let (p, app) = (&g.p, &g.app);
    let (call_state, take_ctx) = ctx_handle(g);
    let future = body_call(g);
    let waited = format!("tool `{}` waited, although its function has no `.await` and calls no macro that writes one", g.name);
    quote! {
        fn call_now(
            input: Self::Input,
            #call_state: &mut #p::CallState<'_, #app>,
            _: &#p::ParsedFrom<'_>,
        ) -> ::core::result::Result<::core::result::Result<#p::ToolOutput, #p::Failure>, Self::Input> {
            #take_ctx
            let future = ::core::pin::pin!(#future);
            match ::core::future::Future::poll(future, &mut ::core::task::Context::from_waker(::core::task::Waker::noop())) {
                ::core::task::Poll::Ready(returned) => ::core::result::Result::Ok(returned),
                ::core::task::Poll::Pending => ::core::unreachable!(#waited),
            }
        }
    }
}

/// A streaming tool's `call`: the call's state lends the progress sink
/// before the tool runs; the stream is read to its end inside the call's
/// future, so the timeout and cancellation cover all of it.
fn streamed(g: &Gen<'_>, item_ty: &syn::Type) -> TokenStream {
    let (p, app) = (&g.p, &g.app);
    let (_, take_ctx) = ctx_handle(g);
    let state = if g.tool_fn.ctx.is_some() { quote!(__call) } else { quote!(__state) };
    let args = args_name(g);
    let EndsRun { again, decide: ends_run } = ends_run(g);
    let call = function_call(g);
    let serialize = serialize(g);
    let drain = quote_spanned!(item_ty.span()=> #p::drain(returned, preliminary));
    quote! {
        fn call(
            input: Self::Input,
            #state: &mut #p::CallState<'_, #app>,
            #args: &#p::ParsedFrom<'_>,
        ) -> #p::CallFuture {
            let preliminary = #p::Preliminary::of(#state);
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

/// An external tool's `call`: never reached, since the registry hands its
/// calls to the host, and its declaration has no body to call.
fn external(g: &Gen<'_>) -> TokenStream {
    let (p, app) = (&g.p, &g.app);
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

/// The user's function called on the input: the context first (made from
/// the call's), then each field, or the whole `Input<T>`.
fn function_call(g: &Gen<'_>) -> TokenStream {
    let (p, ident) = (&g.p, &g.tool_fn.ident);
    let ctx_arg = g.tool_fn.ctx.as_ref().map(|ctx| {
        let (ty, app) = (&ctx.ty, &ctx.app);
        quote_spanned!(ty.span()=> <#ty as #p::CtxParam<#app>>::from_ctx(ctx),)
    });
    match &g.tool_fn.input {
        InputKind::Whole { ty } => quote!(#ident(#ctx_arg <#ty as #p::InputParam>::wrap(input))),
        InputKind::Params(params) => {
            let fields = params.iter().map(|param| {
                let field = &param.ident;
                quote!(input.#field)
            });
            quote!(#ident(#ctx_arg #(#fields),*))
        }
    }
}

/// The name of the call's state and the statement that takes the context
/// from it. The runtime lends the call's state: only a tool that takes a
/// context has one made, and holds a handle of its own; the others bind
/// the state to `_`.
fn ctx_handle(g: &Gen<'_>) -> (TokenStream, TokenStream) {
    match &g.tool_fn.ctx {
        Some(_) => (quote!(__call), quote!(let ctx = ::core::clone::Clone::clone(__call.ctx());)),
        None => (quote!(_), quote!()),
    }
}

/// The name of the call's arguments: `args` when `ends_run = path` or
/// `on_error` reads the input again from them, else `_`.
fn args_name(g: &Gen<'_>) -> TokenStream {
    let reads_again = matches!(g.attrs.ends_run, Some(EndsRunAttr::Predicate(_))) || g.attrs.on_error.is_some();
    if reads_again { quote!(args) } else { quote!(_) }
}

/// Whether a successful call ends the run: the statement before the future
/// that reads the input again for a predicate, and the decision.
struct EndsRun {
    again: TokenStream,
    decide: TokenStream,
}

/// `ends_run`: `true` or `false` as written, or the predicate called on the
/// input read again and the output, spanned on its path.
fn ends_run(g: &Gen<'_>) -> EndsRun {
    let (p, app) = (&g.p, &g.app);
    match &g.attrs.ends_run {
        Some(EndsRunAttr::Predicate(path)) => {
            let probe = respan(p, path.span());
            let invoke = quote_spanned!(path.span()=> #probe::ends_run_call(#path, again, &output).decide().await);
            EndsRun {
                again: quote!(let again = <Self as #p::Tool<#app>>::parse_again(args);),
                decide: quote!(match &again {
                    ::core::option::Option::Some(again) => {
                        #[allow(unused_imports)]
                        use #p::SyncEndsRun as _;
                        #invoke
                    }
                    ::core::option::Option::None => false,
                }),
            }
        }
        Some(EndsRunAttr::Flag(Flag { value: true, .. })) => EndsRun { again: quote!(), decide: quote!(true) },
        _ => EndsRun { again: quote!(), decide: quote!(false) },
    }
}

/// What the function returned, into `Result<output, Failure>`, spanned on
/// the error type, where an error that is not one is reported. A typed
/// failure (`Result<T, E>` with its own `E`) keeps its value.
fn returned(g: &Gen<'_>) -> TokenStream {
    let output_ty = &g.tool_fn.output;
    let error_span = error_type(output_ty).span();
    let probe = respan(&g.p, error_span);
    match typed_failure(output_ty) {
        Some(_) => quote_spanned!(error_span=> #probe::FailureProbe(returned).into_result()),
        None => quote_spanned!(error_span=> #probe::Returned(returned).into_result()),
    }
}

/// The output into the tool's result, spanned on the success type, where
/// an output that cannot be serialised is reported.
fn serialize(g: &Gen<'_>) -> TokenStream {
    let success_span = success_type(&g.tool_fn.output).span();
    let probe = respan(&g.p, success_span);
    quote_spanned!(success_span=> #probe::ToolReturn::to_output(output, ends_run))
}

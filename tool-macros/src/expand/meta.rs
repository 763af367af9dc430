//! The tool's static description in generated code: the `ToolMeta`
//! literal (name, docs, annotations, policy, limits) and, for a tool that
//! writes any metadata key, its `Metadata` constant, and for one that
//! writes an execution key (`interim`, `interruptible`, `idempotency_key`,
//! `replay`), its `Execution` constant.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::LitStr;

use crate::attrs::{EndsRunAttr, Flag, MetaLit, ParallelSafeAttr, PolicyAttr, ToolAttrs};

/// The `ToolMeta` literal.
pub(crate) fn meta(attrs: &ToolAttrs, name: &str, doc: &TokenStream, p: &TokenStream) -> TokenStream {
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
    let (read_only, destructive, idempotent, open_world) =
        (opt_bool(attrs.read_only), opt_bool(attrs.destructive), opt_bool(attrs.idempotent), opt_bool(attrs.open_world));
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
    let ends_turn = attrs.ends_turn.is_some_and(|flag| flag.value);
    let max_retries = match attrs.max_retries {
        Some(retries) => quote!(::core::option::Option::Some(#retries)),
        None => quote!(::core::option::Option::None),
    };
    let read_only_flag = attrs.read_only.is_some_and(|flag| flag.value);
    let parallel_safe = match &attrs.parallel_safe {
        Some(ParallelSafeAttr::Flag(flag)) => flag.value,
        // Decided per call, on its arguments.
        Some(ParallelSafeAttr::Predicate(_)) => false,
        None => read_only_flag,
    };
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
            max_retries: #max_retries,
            ends_turn: #ends_turn,
            parallel_safe: #parallel_safe,
            strict: #strict,
        }
    }
}

/// `const METADATA` of the `Tool` impl, with only the keys written (the
/// rest from `Metadata::EMPTY`); nothing for a tool without them, which
/// keeps the trait's default.
pub(super) fn metadata(attrs: &ToolAttrs, p: &TokenStream) -> TokenStream {
    let mut fields = Vec::new();
    let some = |lit: &LitStr| quote!(::core::option::Option::Some(#lit));
    if let Some(kind) = &attrs.kind {
        let kind = some(kind);
        fields.push(quote!(kind: #kind));
    }
    for (field, list) in [("examples", &attrs.examples), ("example_prompts", &attrs.example_prompts), ("related", &attrs.related)] {
        if !list.is_empty() {
            let field = format_ident!("{field}");
            fields.push(quote!(#field: &[#(#list),*]));
        }
    }
    if attrs.always_active.is_some_and(|flag| flag.value) {
        fields.push(quote!(always_active: true));
    }
    if let Some(text) = &attrs.classification {
        let text = some(text);
        fields.push(quote!(classification: #text));
    }
    if let Some(text) = &attrs.scope_prompt {
        let text = some(text);
        fields.push(quote!(scope_prompt: #text));
    }
    if !attrs.meta.is_empty() {
        let entries = attrs.meta.iter().map(|entry| {
            let key = entry.key.to_string();
            let value = match &entry.value {
                MetaLit::Str(lit) => quote!(Str(#lit)),
                MetaLit::Int(number) => quote!(Int(#number)),
                MetaLit::Float(number) => quote!(Float(#number)),
                MetaLit::Bool(flag) => quote!(Bool(#flag)),
            };
            quote!((#key, #p::MetaValue::#value))
        });
        fields.push(quote!(meta: &[#(#entries),*]));
    }
    if fields.is_empty() {
        return TokenStream::new();
    }
    // Every key written leaves the update nothing to fill: allowed, narrowly.
    quote!(#[allow(clippy::needless_update)] const METADATA: #p::Metadata = #p::Metadata { #(#fields,)* ..#p::Metadata::EMPTY };)
}

/// `const EXECUTION` of the `Tool` impl, with only the keys written (the
/// rest from `Execution::DEFAULT`); nothing for a tool without them, which
/// keeps the trait's default.
pub(super) fn execution(attrs: &ToolAttrs, p: &TokenStream) -> TokenStream {
    let mut fields = Vec::new();
    if let Some(text) = &attrs.interim {
        let after = match &attrs.interim_after {
            Some(after) => {
                let millis = after.millis;
                quote!(#p::Duration::from_millis(#millis))
            }
            None => quote!(#p::Interim::DEFAULT_AFTER),
        };
        fields.push(quote!(interim: ::core::option::Option::Some((#text, #after))));
    }
    if attrs.interruptible.is_some_and(|flag| !flag.value) {
        fields.push(quote!(interruptible: false));
    }
    if attrs.idempotency_key.is_some() {
        fields.push(quote!(idempotency_key: true));
    }
    if attrs.replay.is_some_and(|flag| !flag.value) {
        fields.push(quote!(replay: false));
    }
    if attrs.external.is_some_and(|flag| flag.value) {
        fields.push(quote!(external: true));
    }
    if fields.is_empty() {
        return TokenStream::new();
    }
    quote!(#[allow(clippy::needless_update)] const EXECUTION: #p::Execution = #p::Execution { #(#fields,)* ..#p::Execution::DEFAULT };)
}

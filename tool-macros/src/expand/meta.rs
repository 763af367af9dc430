//! The tool's static description in generated code: the `ToolMeta`
//! literal (name, docs, annotations, policy, limits; only the keys the tool
//! sets, the rest from `ToolMeta::DEFAULT`) and, for a tool that
//! writes any metadata key, its `Metadata` constant, and for one that
//! writes an execution key (`interim`, `interruptible`, `idempotency_key`,
//! `replay`, `external`, `failure_mode`, `on_result`, `resolve`), its
//! `Execution` constant.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::LitStr;

use crate::attrs::{EndsRunAttr, Flag, MetaLit, ParallelSafeAttr, PolicyAttr, ToolAttrs};

/// The `ToolMeta` literal: the keys the tool sets, the rest from
/// `ToolMeta::DEFAULT` (its annotations from the default's).
pub(crate) fn meta(attrs: &ToolAttrs, name: &str, doc: &TokenStream, p: &TokenStream) -> TokenStream {
    let some = |value: &dyn ToTokens| quote!(::core::option::Option::Some(#value));
    let mut fields = vec![quote!(name: #name), quote!(doc: #doc)];
    for (field, lit) in [("description", &attrs.description), ("title", &attrs.title)] {
        if let Some(lit) = lit {
            let (field, value) = (format_ident!("{field}"), some(lit));
            fields.push(quote!(#field: #value));
        }
    }
    let list = |field: &str, list: &[LitStr]| {
        let field = format_ident!("{field}");
        (!list.is_empty()).then(|| quote!(#field: &[#(#list),*]))
    };
    fields.extend(list("tags", &attrs.tags));
    fields.extend(annotations(attrs, p));
    let policy = match &attrs.policy {
        None | Some((PolicyAttr::Allow, _)) => None,
        Some((PolicyAttr::Deny, _)) => Some(quote!(Deny)),
        Some((PolicyAttr::NeedsApproval, _)) => Some(quote!(NeedsApproval)),
        Some((PolicyAttr::Predicate(_), _)) => Some(quote!(Predicate)),
    };
    fields.extend(policy.map(|policy| quote!(policy: #p::PolicyKind::#policy)));
    if attrs.visible_when.is_some() {
        fields.push(quote!(visible_when: true));
    }
    fields.extend(list("requires", &attrs.requires));
    let ends_run = match &attrs.ends_run {
        Some(EndsRunAttr::Predicate(_)) => Some(quote!(Predicate)),
        Some(EndsRunAttr::Flag(Flag { value: true, .. })) => Some(quote!(Always)),
        _ => None,
    };
    fields.extend(ends_run.map(|ends_run| quote!(ends_run: #p::EndsRun::#ends_run)));
    if let Some(timeout) = &attrs.timeout {
        let millis = timeout.millis;
        let value = some(&quote!(#p::Duration::from_millis(#millis)));
        fields.push(quote!(timeout: #value));
    }
    fields.extend(attrs.max_output_chars.map(|chars| some(&chars)).map(|value| quote!(max_output_chars: #value)));
    fields.extend(attrs.max_retries.map(|retries| some(&retries)).map(|value| quote!(max_retries: #value)));
    if attrs.ends_turn.is_some_and(|flag| flag.value) {
        fields.push(quote!(ends_turn: true));
    }
    let parallel_safe = match &attrs.parallel_safe {
        Some(ParallelSafeAttr::Flag(flag)) => flag.value,
        // Decided per call, on its arguments.
        Some(ParallelSafeAttr::Predicate(_)) => false,
        None => attrs.read_only.is_some_and(|flag| flag.value),
    };
    if parallel_safe {
        fields.push(quote!(parallel_safe: true));
    }
    fields.extend(attrs.strict.map(|Flag { value, .. }| some(&value)).map(|value| quote!(strict: #value)));
    // A struct update that leaves nothing to fill is a lint (needless_update).
    let rest = (fields.len() < TOOL_META_FIELDS).then(|| quote!(..#p::ToolMeta::DEFAULT));
    quote!(#p::ToolMeta { #(#fields,)* #rest })
}

/// How many fields `ToolMeta` has.
const TOOL_META_FIELDS: usize = 16;

/// The `annotations` field of `ToolMeta`, when an effect key is written:
/// the hints written, the rest from the default's.
fn annotations(attrs: &ToolAttrs, p: &TokenStream) -> Option<TokenStream> {
    let hints =
        [("read_only", attrs.read_only), ("destructive", attrs.destructive), ("idempotent", attrs.idempotent), ("open_world", attrs.open_world)];
    let written: Vec<TokenStream> = hints
        .iter()
        .filter_map(|(field, flag)| {
            let (field, value) = (format_ident!("{field}"), flag.as_ref()?.value);
            Some(quote!(#field: ::core::option::Option::Some(#value)))
        })
        .collect();
    if written.is_empty() {
        return None;
    }
    let rest = (written.len() < hints.len()).then(|| quote!(..#p::ToolMeta::DEFAULT.annotations));
    Some(quote!(annotations: #p::Annotations { #(#written,)* #rest }))
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
    if attrs.as_intent.is_some_and(|flag| flag.value) {
        fields.push(quote!(as_intent: true));
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
    if attrs.failure_mode.as_ref().is_some_and(|mode| mode.value() == "error") {
        fields.push(quote!(failure_mode: #p::FailureMode::Error));
    }
    if attrs.on_result.is_some() {
        fields.push(quote!(on_result: true));
    }
    if attrs.resolve.is_some() {
        fields.push(quote!(resolve: true));
    }
    if fields.is_empty() {
        return TokenStream::new();
    }
    quote!(#[allow(clippy::needless_update)] const EXECUTION: #p::Execution = #p::Execution { #(#fields,)* ..#p::Execution::DEFAULT };)
}

//! Check phase: every rule on the parsed model (the name, the description,
//! and the rules across several keys). It reads the parse phase's model
//! (`attrs`, `signature`) and nothing of the expansion; parsing only reads,
//! expansion only writes.

use proc_macro2::TokenStream;
use syn::LitStr;

use crate::attrs::{EndsRunAttr, ParallelSafeAttr, ToolAttrs};
use crate::diag::{Errors, error_at, with_help};
use crate::signature::{ToolFn, is_streamed, returns_result};

/// `^[a-z][a-z0-9_]{0,63}$`: the names every provider accepts.
pub fn valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && bytes[0].is_ascii_lowercase()
        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
}

/// A valid name close to an invalid one, to suggest: `sayHello` and
/// `Say-Hello` become `say_hello`.
pub fn suggest_name(name: &str) -> Option<String> {
    let mut out = String::new();
    let mut previous: Option<char> = None;
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            if previous.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit()) {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
        previous = Some(c);
    }
    let trimmed = out.trim_start_matches(|c: char| !c.is_ascii_lowercase()).trim_end_matches('_');
    (valid_name(trimmed) && trimmed != name).then(|| trimmed.to_owned())
}

/// Every rule on the parsed attribute and function; returns the tool's name
/// (checked or not, so that expansion can still name it).
pub fn validate(attrs: &ToolAttrs, tool_fn: &ToolFn, errors: &mut Errors) -> String {
    let name = tool_name(attrs, tool_fn, errors);
    check_description(attrs, tool_fn, errors);
    check_keys(attrs, &name, errors);
    check_recovery(attrs, tool_fn, errors);
    check_failure_mode(attrs, tool_fn, errors);
    check_scope(attrs, errors);
    check_as_intent(attrs, errors);
    check_external(attrs, tool_fn, errors);
    check_streamed(attrs, tool_fn, errors);
    name
}

/// A streaming tool's items are its output; its failures are `Err` items
/// (`Streamed::try_new`), which no recovery sees.
fn check_streamed(attrs: &ToolAttrs, tool_fn: &ToolFn, errors: &mut Errors) {
    if let Some(path) = &attrs.on_error
        && is_streamed(&tool_fn.output)
    {
        errors.push(with_help(
            error_at(path, "`on_error` does not apply to a streaming tool"),
            "a `Streamed` tool fails with an `Err` item (`Streamed::try_new`), and the items before it were sent already: \
             handle the error where the stream makes its items, or remove `on_error`",
        ));
    }
}

/// An `external` tool is declared without a body (the host runs it), and
/// only an external tool is; the keys about running the tool here
/// contradict it.
fn check_external(attrs: &ToolAttrs, tool_fn: &ToolFn, errors: &mut Errors) {
    let external = attrs.external.filter(|flag| flag.value);
    match (external, &tool_fn.bodyless) {
        (Some(flag), None) => errors.push(with_help(
            error_at(&quote_span(flag.span), "an `external` tool has no body: the host runs it"),
            "end the declaration with `;` instead of the body, as in `async fn pick_date(month: u32) -> Date;`",
        )),
        (None, Some(semi)) => errors.push(with_help(
            error_at(semi, "a tool needs a body"),
            "write the body, or mark the tool `#[tool(external)]` if the host runs it (a frontend, a worker)",
        )),
        _ => {}
    }
    if external.is_none() {
        if let Some(path) = &attrs.resolve {
            errors.push(with_help(
                error_at(path, "`resolve` is for an `external` tool"),
                "`resolve` converts a call's input into what the host runs; the registry runs this tool: \
                 mark it `external` (declared without a body), or remove `resolve`",
            ));
        }
        return;
    }
    let here: [(&str, Option<proc_macro2::Span>); 7] = [
        ("on_error", attrs.on_error.as_ref().map(syn::spanned::Spanned::span)),
        ("failure_mode", attrs.failure_mode.as_ref().map(LitStr::span)),
        ("interim", attrs.interim.as_ref().map(LitStr::span)),
        ("interruptible", attrs.interruptible.map(|flag| flag.span)),
        ("idempotency_key", attrs.idempotency_key.as_ref().map(syn::spanned::Spanned::span)),
        ("reconcile", attrs.reconcile.as_ref().map(syn::spanned::Spanned::span)),
        (
            "ends_run = path",
            match &attrs.ends_run {
                Some(EndsRunAttr::Predicate(path)) => Some(syn::spanned::Spanned::span(path)),
                _ => None,
            },
        ),
    ];
    for (key, span) in here {
        if let Some(span) = span {
            errors.push(with_help(
                error_at(&quote_span(span), format!("`{key}` contradicts `external`")),
                format!("`{key}` is about running the tool here, but the host runs an external tool: remove `{key}` or `external`"),
            ));
        }
    }
}

/// `as_intent` lists the tool to the intent classifier where the registry
/// lists only the tools that opt in; off is the default, and an
/// `always_active` tool is never listed.
fn check_as_intent(attrs: &ToolAttrs, errors: &mut Errors) {
    let Some(flag) = attrs.as_intent else { return };
    if !flag.value {
        errors.push(with_help(
            error_at(&quote_span(flag.span), "`as_intent = false` is the default"),
            "remove it, or write `as_intent` to list the tool to the intent classifier of a registry built with `intent_opt_in(true)`",
        ));
    } else if attrs.always_active.is_some_and(|flag| flag.value) {
        errors.push(with_help(
            error_at(&quote_span(flag.span), "`as_intent` contradicts `always_active`"),
            "an always-active tool is offered in every turn and never listed to the intent classifier: \
             remove `always_active` to let the classifier choose the tool, or remove `as_intent`",
        ));
    }
}

/// An `always_active` tool is never chosen by the intent classifier, so it
/// never gets a scope value.
fn check_scope(attrs: &ToolAttrs, errors: &mut Errors) {
    if let Some(path) = &attrs.scope
        && attrs.always_active.is_some_and(|flag| flag.value)
    {
        errors.push(with_help(
            error_at(path, "`scope` contradicts `always_active`"),
            "an always-active tool is offered in every turn without being chosen, so no scope value ever reaches it: \
             remove `always_active` to let the intent classifier choose and scope the tool, or remove `scope`",
        ));
    }
}

fn tool_name(attrs: &ToolAttrs, tool_fn: &ToolFn, errors: &mut Errors) -> String {
    let rule = "a tool name has 1 to 64 lowercase letters, digits and `_`, and starts with a letter";
    match &attrs.name {
        Some(lit) => {
            let name = lit.value();
            if !valid_name(&name) {
                let help = match suggest_name(&name) {
                    Some(suggestion) => format!("{rule}: write `name = \"{suggestion}\"`"),
                    None => rule.to_owned(),
                };
                errors.push(with_help(error_at(lit, format!("invalid tool name \"{name}\"")), help));
            }
            name
        }
        None => {
            let name = tool_fn.ident.to_string().trim_start_matches("r#").to_owned();
            if !valid_name(&name) {
                let help = match suggest_name(&name) {
                    Some(suggestion) => {
                        format!("{rule}: rename the function to `{suggestion}`, or keep it and write `#[tool(name = \"{suggestion}\")]`")
                    }
                    None => format!("{rule}: rename the function, or write `#[tool(name = \"...\")]`"),
                };
                errors.push(with_help(error_at(&tool_fn.ident, format!("`{name}` is not a valid tool name")), help));
            }
            name
        }
    }
}

/// `failure_mode = "error"` needs a tool that can fail; `"return"` is the
/// default.
fn check_failure_mode(attrs: &ToolAttrs, tool_fn: &ToolFn, errors: &mut Errors) {
    let Some(mode) = &attrs.failure_mode else { return };
    if mode.value() == "return" {
        errors.push(with_help(
            error_at(mode, "`failure_mode = \"return\"` is the default"),
            "remove it, or write `failure_mode = \"error\"` to end a failed call as an error the host handles",
        ));
    } else if !returns_result(&tool_fn.output) && !is_streamed(&tool_fn.output) {
        errors.push(with_help(
            error_at(mode, "`failure_mode` is about the tool's own failure, but the tool does not return a `Result`"),
            "return `Result<T, E>` from the tool, or remove `failure_mode`",
        ));
    }
}

/// `on_error` needs a tool that can fail.
fn check_recovery(attrs: &ToolAttrs, tool_fn: &ToolFn, errors: &mut Errors) {
    if let Some(path) = &attrs.on_error
        && !returns_result(&tool_fn.output)
        && !is_streamed(&tool_fn.output)
    {
        errors.push(with_help(
            error_at(path, "`on_error` recovers from the tool's error, but the tool does not return a `Result`"),
            "return `Result<T, E>` from the tool, or remove `on_error`",
        ));
    }
}

fn check_description(attrs: &ToolAttrs, tool_fn: &ToolFn, errors: &mut Errors) {
    match &attrs.description {
        Some(lit) if lit.value().trim().is_empty() => {
            errors.push(with_help(error_at(lit, "`description` is empty"), "say what the tool does and when the model should call it"))
        }
        Some(_) => {}
        None if !tool_fn.has_docs() => errors.push(with_help(
            error_at(&tool_fn.ident, format!("tool `{}` has no description", tool_fn.ident)),
            "add a doc comment (`/// What the tool does and when to call it.`) or `#[tool(description = \"...\")]`",
        )),
        None if starts_with_heading(&tool_fn.docs) => errors.push(with_help(
            error_at(&tool_fn.ident, format!("the doc comment of tool `{}` starts with a heading, so its description is empty", tool_fn.ident)),
            "the description is the text before the first heading: write a sentence saying what the tool does first",
        )),
        None => {}
    }
}

/// Whether the first line of text in literal docs is a rustdoc heading.
/// Docs that are not all literals (`include_str!`) are not checked.
fn starts_with_heading(docs: &[TokenStream]) -> bool {
    let mut text = String::new();
    for doc in docs {
        match syn::parse2::<LitStr>(doc.clone()) {
            Ok(lit) => {
                text.push_str(&lit.value());
                text.push('\n');
            }
            Err(_) => return false,
        }
    }
    text.lines().map(str::trim).find(|line| !line.is_empty()).is_some_and(|line| {
        let hashes = line.bytes().take_while(|&b| b == b'#').count();
        (1..=6).contains(&hashes) && line[hashes..].starts_with(' ')
    })
}

/// The rules across keys.
fn check_keys(attrs: &ToolAttrs, tool_name: &str, errors: &mut Errors) {
    let is = |flag: Option<crate::attrs::Flag>| flag.is_some_and(|flag| flag.value);
    if is(attrs.read_only) && is(attrs.destructive) {
        let destructive = attrs.destructive.unwrap();
        errors.push(with_help(
            error_at(&quote_span(destructive.span), "`read_only` and `destructive` contradict each other"),
            "a tool that changes nothing cannot destroy anything; remove one of them",
        ));
    }
    match &attrs.parallel_safe {
        Some(ParallelSafeAttr::Flag(flag)) if is(attrs.read_only) && !flag.value => errors.push(with_help(
            error_at(&quote_span(flag.span), "`parallel_safe = false` contradicts `read_only`"),
            "a read-only tool is always parallel-safe; remove `parallel_safe = false`",
        )),
        Some(ParallelSafeAttr::Predicate(path)) if is(attrs.read_only) => errors.push(with_help(
            error_at(path, "`parallel_safe = predicate` contradicts `read_only`"),
            "a read-only tool is always parallel-safe; remove the predicate or `read_only`",
        )),
        _ => {}
    }
    if let Some(EndsRunAttr::Flag(flag)) = &attrs.ends_run
        && !flag.value
    {
        errors.push(with_help(
            error_at(&quote_span(flag.span), "`ends_run = false` is the default"),
            "remove it, or write `ends_run` / `ends_run = path::to::predicate`",
        ));
    }
    match attrs.ends_turn {
        Some(flag) if !flag.value => {
            errors.push(with_help(error_at(&quote_span(flag.span), "`ends_turn = false` is the default"), "remove it, or write `ends_turn`"))
        }
        Some(flag) if attrs.ends_run.is_some() => errors.push(with_help(
            error_at(&quote_span(flag.span), "`ends_turn` and `ends_run` cannot both be set"),
            "`ends_turn` halts the run at once; `ends_run` gives the model one more step to answer: keep one",
        )),
        _ => {}
    }
    if let Some(flag) = attrs.interruptible
        && flag.value
    {
        errors.push(with_help(
            error_at(&quote_span(flag.span), "`interruptible = true` is the default"),
            "remove it, or write `interruptible = false` to keep the tool running when its caller cancels",
        ));
    }
    check_replay(attrs, errors);
    let lists = [
        (&attrs.requires, "requires", "cannot require itself", "`requires` names tools that must run before this one"),
        (&attrs.related, "related", "cannot be related to itself", "`related` names other tools often used together with this one"),
    ];
    for (names, key, itself, itself_help) in lists {
        for name in names {
            if name.value() == tool_name {
                errors.push(with_help(error_at(name, format!("tool `{tool_name}` {itself}")), itself_help));
            } else if !valid_name(&name.value()) {
                let help = match suggest_name(&name.value()) {
                    Some(suggestion) => format!("tool names match ^[a-z][a-z0-9_]{{0,63}}$: write \"{suggestion}\""),
                    None => "tool names match ^[a-z][a-z0-9_]{0,63}$".to_owned(),
                };
                errors.push(with_help(error_at(name, format!("`{key}` names \"{}\", which is not a valid tool name", name.value())), help));
            }
        }
    }
    check_interim(attrs, errors);
    if let Some(kind) = &attrs.kind
        && let Some(entry) = attrs.meta.iter().find(|entry| entry.key == "kind")
    {
        errors.push(with_help(
            error_at(&entry.key, format!("`meta(kind = ...)` collides with `kind = \"{}\"`", kind.value())),
            "MCP `_meta` exports `kind` under that key; rename the `meta` entry or remove one of them",
        ));
    }
}

/// `replay` is on by default, so only `replay = false` is written; it
/// contradicts `idempotency_key` (a tool that always runs again never reads
/// the key it would be journaled under). On a `destructive` tool it is
/// allowed: a tool that writes a file or runs a command must run again, and
/// the runtime still refuses to run a call over an unfinished one of it.
fn check_replay(attrs: &ToolAttrs, errors: &mut Errors) {
    let Some(replay) = attrs.replay else { return };
    let span = quote_span(replay.span);
    if replay.value {
        errors.push(with_help(
            error_at(&span, "`replay` is on by default"),
            "remove it, or write `replay = false` to run the tool again in a durable run even when the journal holds its result \
             (a tool that observes something that changes)",
        ));
        return;
    }
    if attrs.idempotency_key.is_some() {
        errors.push(with_help(
            error_at(&span, "`replay = false` contradicts `idempotency_key`"),
            "a tool that always runs again never answers from the journal, so its key would never be used: \
             keep `idempotency_key` for a tool whose effect must happen once, or `replay = false` for one that only observes",
        ));
    }
}

/// The delay of `interim` when `interim_after` is not written, in
/// milliseconds (the runtime's `Interim::DEFAULT_AFTER`).
const DEFAULT_INTERIM_AFTER: u64 = 2_000;

/// `interim_after` needs `interim`, and the delay must be shorter than the
/// tool's own timeout, or the text would never be sent.
fn check_interim(attrs: &ToolAttrs, errors: &mut Errors) {
    match (&attrs.interim, &attrs.interim_after) {
        (None, Some(after)) => errors.push(with_help(
            error_at(&quote_span(after.span), "`interim_after` without `interim`"),
            "`interim_after` is when the interim text is sent: add the text, such as \
             `interim = \"Still searching the archive...\"`, or remove `interim_after`",
        )),
        (Some(text), after) => {
            let Some(timeout) = &attrs.timeout else { return };
            let millis = after.as_ref().map_or(DEFAULT_INTERIM_AFTER, |after| after.millis);
            if millis < timeout.millis {
                return;
            }
            let (span, written) = match after {
                Some(after) => (after.span, "`interim_after`".to_owned()),
                None => (text.span(), format!("`interim` (sent after {DEFAULT_INTERIM_AFTER}ms by default)")),
            };
            errors.push(with_help(
                error_at(&quote_span(span), format!("{written} is not shorter than `timeout`, so the text would never be sent")),
                format!("the call ends at its timeout of {}ms: write an `interim_after` shorter than that, or a longer `timeout`", timeout.millis),
            ));
        }
        (None, None) => {}
    }
}

/// A token stream carrying only `span`, to point an error at it.
fn quote_span(span: proc_macro2::Span) -> proc_macro2::TokenStream {
    quote::quote_spanned!(span=> x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(valid_name("lookup_order"));
        assert!(!valid_name("lookupOrder"));
        assert!(!valid_name("_x"));
        assert!(!valid_name(&"a".repeat(65)));
    }

    #[test]
    fn invalid_names_suggest_a_valid_one() {
        assert_eq!(suggest_name("sayHello").as_deref(), Some("say_hello"));
        assert_eq!(suggest_name("Say-Hello").as_deref(), Some("say_hello"));
        assert_eq!(suggest_name("LookupOrder").as_deref(), Some("lookup_order"));
        assert_eq!(suggest_name("get HTTP page").as_deref(), Some("get_http_page"));
        assert_eq!(suggest_name("_x1").as_deref(), Some("x1"));
        assert_eq!(suggest_name("--"), None);
        assert_eq!(suggest_name(&"a".repeat(65)), None);
    }
}

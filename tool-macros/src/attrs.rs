//! Parse phase, part one: the keys of `#[tool(...)]`, on the function and
//! on its parameters, into an owned model that keeps every span.
//!
//! The keys are declared once, as the fields of [`ToolKeys`] and
//! [`ParamKeys`]: darling matches them and suggests the nearest key for a
//! typo. Each field keeps the `Meta` the user wrote, so that every value is
//! then read here with its own message, spanned on its own tokens.

use std::collections::HashSet;

use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{Expr, Lit, LitInt, LitStr, Meta, Path};

use crate::diag::{Diag, Errors, error_at, with_help};

/// The keys of `#[tool(...)]` on the function, in the order the keys
/// page (`tool-runtime/docs/keys.md`) lists them, each as the user wrote it.
#[derive(Default, FromMeta)]
struct ToolKeys {
    name: Option<Meta>,
    description: Option<Meta>,
    title: Option<Meta>,
    tags: Option<Meta>,
    read_only: Option<Meta>,
    destructive: Option<Meta>,
    idempotent: Option<Meta>,
    open_world: Option<Meta>,
    policy: Option<Meta>,
    visible_when: Option<Meta>,
    requires: Option<Meta>,
    ends_run: Option<Meta>,
    ends_turn: Option<Meta>,
    on_error: Option<Meta>,
    failure_mode: Option<Meta>,
    on_result: Option<Meta>,
    interruptible: Option<Meta>,
    idempotency_key: Option<Meta>,
    reconcile: Option<Meta>,
    replay: Option<Meta>,
    timeout: Option<Meta>,
    interim: Option<Meta>,
    interim_after: Option<Meta>,
    max_output_chars: Option<Meta>,
    max_retries: Option<Meta>,
    parallel_safe: Option<Meta>,
    strict: Option<Meta>,
    kind: Option<Meta>,
    examples: Option<Meta>,
    example_prompts: Option<Meta>,
    related: Option<Meta>,
    always_active: Option<Meta>,
    as_intent: Option<Meta>,
    classification: Option<Meta>,
    scope_prompt: Option<Meta>,
    scope: Option<Meta>,
    external: Option<Meta>,
    resolve: Option<Meta>,
    meta: Option<Meta>,
    #[darling(rename = "crate")]
    krate: Option<Meta>,
}

/// The keys of `#[tool(...)]` on a parameter.
#[derive(Default, FromMeta)]
struct ParamKeys {
    default: Option<Meta>,
}

/// A `bool` key, with the span of what the user wrote.
#[derive(Clone, Copy)]
pub struct Flag {
    pub value: bool,
    pub span: Span,
}

pub enum PolicyAttr {
    Allow,
    Deny,
    NeedsApproval,
    Predicate(Path),
}

pub enum EndsRunAttr {
    Flag(Flag),
    Predicate(Path),
}

/// `parallel_safe`, `parallel_safe = bool` or `parallel_safe = path`.
pub enum ParallelSafeAttr {
    Flag(Flag),
    Predicate(Path),
}

/// A duration key (`timeout`, `interim_after`), with the span of its value.
pub struct Millis {
    pub millis: u64,
    pub span: Span,
}

/// One entry of `meta(key = value, ...)`.
pub struct MetaEntry {
    pub key: syn::Ident,
    pub value: MetaLit,
}

/// The literal value of a `meta` entry.
pub enum MetaLit {
    Str(LitStr),
    Int(i64),
    Float(f64),
    Bool(bool),
}

/// The parsed `#[tool(...)]` of the function.
#[derive(Default)]
pub struct ToolAttrs {
    pub name: Option<LitStr>,
    pub description: Option<LitStr>,
    pub title: Option<LitStr>,
    pub tags: Vec<LitStr>,
    pub read_only: Option<Flag>,
    pub destructive: Option<Flag>,
    pub idempotent: Option<Flag>,
    pub open_world: Option<Flag>,
    pub policy: Option<(PolicyAttr, Span)>,
    pub visible_when: Option<Path>,
    pub requires: Vec<LitStr>,
    pub ends_run: Option<EndsRunAttr>,
    pub ends_turn: Option<Flag>,
    pub on_error: Option<Path>,
    /// `failure_mode = "return"` or `"error"`, as written (checked).
    pub failure_mode: Option<LitStr>,
    pub on_result: Option<Path>,
    pub interruptible: Option<Flag>,
    pub idempotency_key: Option<Path>,
    pub reconcile: Option<Path>,
    pub replay: Option<Flag>,
    pub timeout: Option<Millis>,
    pub interim: Option<LitStr>,
    pub interim_after: Option<Millis>,
    pub max_output_chars: Option<usize>,
    pub max_retries: Option<u32>,
    pub parallel_safe: Option<ParallelSafeAttr>,
    pub strict: Option<Flag>,
    pub kind: Option<LitStr>,
    pub examples: Vec<LitStr>,
    pub example_prompts: Vec<LitStr>,
    pub related: Vec<LitStr>,
    pub always_active: Option<Flag>,
    pub as_intent: Option<Flag>,
    pub classification: Option<LitStr>,
    pub scope_prompt: Option<LitStr>,
    pub scope: Option<Path>,
    pub external: Option<Flag>,
    pub resolve: Option<Path>,
    pub meta: Vec<MetaEntry>,
    pub krate: Option<Path>,
}

/// The parsed `#[tool(...)]` of one parameter.
#[derive(Default)]
pub enum ParamDefault {
    #[default]
    None,
    /// `#[tool(default)]`: `Default::default()`.
    Trait(Span),
    /// `#[tool(default = expr)]`.
    Expr(Expr),
}

impl ToolAttrs {
    /// Parses the attribute's arguments, collecting every error.
    pub fn parse(args: TokenStream, errors: &mut Errors) -> ToolAttrs {
        let Some(items) = errors.handle(NestedMeta::parse_meta_list(args)) else {
            return ToolAttrs::default();
        };
        let keys: ToolKeys = read_keys(
            items,
            "`#[tool(...)]`",
            "the keys are listed in the documentation of `#[tool]`, such as `name`, `read_only` or `timeout`",
            errors,
        );
        ToolAttrs {
            name: keys.name.and_then(|meta| errors.handle(LitStr::from_meta(&meta))),
            description: keys.description.and_then(|meta| errors.handle(LitStr::from_meta(&meta))),
            title: keys.title.and_then(|meta| errors.handle(LitStr::from_meta(&meta))),
            tags: keys.tags.map(|meta| string_list(&meta, "tags", errors)).unwrap_or_default(),
            read_only: keys.read_only.and_then(|meta| flag(&meta, errors)),
            destructive: keys.destructive.and_then(|meta| flag(&meta, errors)),
            idempotent: keys.idempotent.and_then(|meta| flag(&meta, errors)),
            open_world: keys.open_world.and_then(|meta| flag(&meta, errors)),
            policy: keys.policy.and_then(|meta| policy(&meta, errors).map(|policy| (policy, meta.span()))),
            visible_when: keys.visible_when.and_then(|meta| predicate_path(&meta, "visible_when", errors)),
            requires: keys.requires.map(|meta| string_list(&meta, "requires", errors)).unwrap_or_default(),
            ends_run: keys.ends_run.and_then(|meta| ends_run(&meta, errors)),
            ends_turn: keys.ends_turn.and_then(|meta| flag(&meta, errors)),
            on_error: keys.on_error.and_then(|meta| predicate_path(&meta, "on_error", errors)),
            failure_mode: keys.failure_mode.and_then(|meta| failure_mode(&meta, errors)),
            on_result: keys.on_result.and_then(|meta| predicate_path(&meta, "on_result", errors)),
            interruptible: keys.interruptible.and_then(|meta| flag(&meta, errors)),
            idempotency_key: keys.idempotency_key.and_then(|meta| predicate_path(&meta, "idempotency_key", errors)),
            reconcile: keys.reconcile.and_then(|meta| predicate_path(&meta, "reconcile", errors)),
            replay: keys.replay.and_then(|meta| replay(&meta, errors)),
            timeout: keys.timeout.and_then(|meta| duration(&meta, "timeout", "a timeout of zero would fail every call", errors)),
            interim: keys.interim.and_then(|meta| text(&meta, "interim", "Still searching the archive...", errors)),
            interim_after: keys
                .interim_after
                .and_then(|meta| duration(&meta, "interim_after", "a delay of zero would send the interim text on every call that waits", errors)),
            max_output_chars: keys.max_output_chars.and_then(|meta| positive(&meta, "max_output_chars", "4000", errors)),
            max_retries: keys.max_retries.and_then(|meta| positive(&meta, "max_retries", "3", errors)),
            parallel_safe: keys.parallel_safe.and_then(|meta| parallel_safe(&meta, errors)),
            strict: keys.strict.and_then(|meta| flag(&meta, errors)),
            kind: keys.kind.and_then(|meta| text(&meta, "kind", "read", errors)),
            examples: keys.examples.map(|meta| string_list(&meta, "examples", errors)).unwrap_or_default(),
            example_prompts: keys.example_prompts.map(|meta| string_list(&meta, "example_prompts", errors)).unwrap_or_default(),
            related: keys.related.map(|meta| string_list(&meta, "related", errors)).unwrap_or_default(),
            always_active: keys.always_active.and_then(|meta| flag(&meta, errors)),
            as_intent: keys.as_intent.and_then(|meta| flag(&meta, errors)),
            classification: keys.classification.and_then(|meta| text(&meta, "classification", "Look up one order by its number", errors)),
            scope_prompt: keys.scope_prompt.and_then(|meta| text(&meta, "scope_prompt", "Scope to one customer when the user names one", errors)),
            scope: keys.scope.and_then(|meta| predicate_path(&meta, "scope", errors)),
            external: keys.external.and_then(|meta| flag(&meta, errors)),
            resolve: keys.resolve.and_then(|meta| predicate_path(&meta, "resolve", errors)),
            meta: keys.meta.map(|meta| meta_entries(&meta, errors)).unwrap_or_default(),
            krate: keys.krate.and_then(|meta| errors.handle(Path::from_meta(&meta))),
        }
    }
}

/// Parses `#[tool(...)]` on a parameter.
pub fn parse_param(attr_meta: &Meta, errors: &mut Errors) -> ParamDefault {
    let help = "write `#[tool(default)]` or `#[tool(default = expr)]`";
    let tokens = match attr_meta {
        Meta::List(list) => list.tokens.clone(),
        other => {
            errors.push(with_help(error_at(other, "`#[tool]` on a parameter needs a key"), help));
            return ParamDefault::None;
        }
    };
    let Some(items) = errors.handle(NestedMeta::parse_meta_list(tokens)) else {
        return ParamDefault::None;
    };
    let keys: ParamKeys = read_keys(items, "`#[tool(...)]` on a parameter", help, errors);
    match keys.default {
        None => ParamDefault::None,
        Some(Meta::Path(path)) => ParamDefault::Trait(path.span()),
        Some(Meta::NameValue(nv)) => ParamDefault::Expr(nv.value),
        Some(Meta::List(list)) => {
            errors.push(with_help(error_at(&list, "`default` takes no list"), help));
            ParamDefault::None
        }
    }
}

/// Reads the items of one `#[tool(...)]` into `K`, whose fields are the
/// keys. A literal, an unknown key or a repeated key is reported (on the
/// token the user wrote) and left out, so that the other keys are still read
/// and checked.
fn read_keys<K: FromMeta + Default>(items: Vec<NestedMeta>, context: &str, keys_help: &str, errors: &mut Errors) -> K {
    let mut seen = HashSet::new();
    let mut known = Vec::new();
    for item in items {
        let meta = match item {
            NestedMeta::Meta(meta) => meta,
            NestedMeta::Lit(lit) => {
                errors.push(with_help(error_at(&lit, format!("expected a key in {context}, found a literal")), keys_help));
                continue;
            }
            NestedMeta::NameValueInvalidExpr(invalid) => {
                errors.push(with_help(
                    error_at(&invalid.value, format!("the value of `{}` is not a valid expression", path_text(&invalid.path))),
                    "write a string literal, a number, `true`/`false` or a path",
                ));
                continue;
            }
        };
        let (key, path) = (path_text(meta.path()), meta.path().clone());
        let item = NestedMeta::Meta(meta);
        // Every field takes any `Meta`: alone, an item fails only when its key is unknown.
        if let Err(error) = K::from_list(std::slice::from_ref(&item)) {
            errors.push(unknown_key(&path, &key, context, &error, keys_help));
            continue;
        }
        if !seen.insert(key.clone()) {
            errors.push(with_help(error_at(&path, format!("duplicate key `{key}` in {context}")), "each key may appear once; remove one of them"));
            continue;
        }
        known.push(item);
    }
    errors.handle(K::from_list(&known)).unwrap_or_default()
}

/// darling's unknown-key error, worded as the crate's other errors and
/// spanned on the key: its suggestion (`Did you mean `x`?`) or its list of
/// keys when it has one, else `keys_help`.
fn unknown_key(path: &Path, key: &str, context: &str, error: &darling::Error, keys_help: &str) -> Diag {
    let text = error.to_string();
    let quoted = |marker: &str| {
        let rest = &text[text.find(marker)? + marker.len()..];
        Some(rest.trim_end_matches(['.', '?']).to_owned())
    };
    let help = if let Some(near) = quoted("Did you mean ") {
        format!("did you mean {near}?")
    } else if let Some(keys) = quoted("Available values: ") {
        format!("valid keys are {keys}")
    } else {
        keys_help.to_owned()
    };
    with_help(error_at(path, format!("unknown key `{key}` in {context}")), help)
}

fn path_text(path: &Path) -> String {
    path.segments.iter().map(|segment| segment.ident.to_string()).collect::<Vec<_>>().join("::")
}

fn flag(meta: &Meta, errors: &mut Errors) -> Option<Flag> {
    let key = path_text(meta.path());
    match bool::from_meta(meta) {
        Ok(value) => Some(Flag { value, span: meta.span() }),
        Err(_) => {
            errors.push(with_help(
                error_at(meta, format!("`{key}` takes no value or a bool")),
                format!("write `{key}` or `{key} = true` / `{key} = false`"),
            ));
            None
        }
    }
}

fn string_list(meta: &Meta, key: &str, errors: &mut Errors) -> Vec<LitStr> {
    let help = format!("write `{key}(\"a\", \"b\")`");
    let Meta::List(list) = meta else {
        errors.push(with_help(error_at(meta, format!("`{key}` takes a list of strings")), help));
        return Vec::new();
    };
    let Some(items) = errors.handle(NestedMeta::parse_meta_list(list.tokens.clone())) else {
        return Vec::new();
    };
    let mut out: Vec<LitStr> = Vec::new();
    for item in items {
        match item {
            NestedMeta::Lit(Lit::Str(lit)) => {
                if lit.value().is_empty() {
                    errors.push(error_at(&lit, format!("an entry of `{key}` is empty")));
                } else if out.iter().any(|seen| seen.value() == lit.value()) {
                    errors.push(with_help(error_at(&lit, format!("`{key}` lists \"{}\" twice", lit.value())), "remove the repeated entry"));
                } else {
                    out.push(lit);
                }
            }
            other => errors.push(with_help(error_at(&other, format!("`{key}` takes string literals")), help.clone())),
        }
    }
    out
}

/// A key that takes one non-empty string, such as `kind = "read"`.
fn text(meta: &Meta, key: &str, example: &str, errors: &mut Errors) -> Option<LitStr> {
    let help = format!("write `{key} = \"{example}\"`");
    let lit = match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(syn::ExprLit { lit: Lit::Str(lit), .. }) => lit.clone(),
            other => {
                errors.push(with_help(error_at(other, format!("`{key}` takes a string")), help));
                return None;
            }
        },
        Meta::List(list) => {
            errors.push(with_help(error_at(list, format!("`{key}` takes one string, not a list")), help));
            return None;
        }
        Meta::Path(path) => {
            errors.push(with_help(error_at(path, format!("`{key}` needs a value")), help));
            return None;
        }
    };
    if lit.value().trim().is_empty() {
        errors.push(with_help(error_at(&lit, format!("`{key}` is empty")), help));
        return None;
    }
    Some(lit)
}

/// `meta(key = value, ...)`: identifiers set to literals, each key once.
fn meta_entries(meta: &Meta, errors: &mut Errors) -> Vec<MetaEntry> {
    let help = "write `meta(key = \"text\", n = 3, flag = true)`: each value a string, number or bool literal";
    let Meta::List(list) = meta else {
        errors.push(with_help(error_at(meta, "`meta` takes a list of `key = value` entries"), help));
        return Vec::new();
    };
    let Some(items) = errors.handle(NestedMeta::parse_meta_list(list.tokens.clone())) else {
        return Vec::new();
    };
    let mut out: Vec<MetaEntry> = Vec::new();
    for item in items {
        let nv = match item {
            NestedMeta::Meta(Meta::NameValue(nv)) => nv,
            NestedMeta::NameValueInvalidExpr(invalid) => {
                let key = path_text(&invalid.path);
                errors.push(with_help(error_at(&invalid.value, format!("the value of `meta({key})` must be a literal")), help));
                continue;
            }
            other => {
                errors.push(with_help(error_at(&other, "`meta` takes `key = value` entries"), help));
                continue;
            }
        };
        let Some(key) = nv.path.get_ident().cloned() else {
            errors.push(with_help(error_at(&nv.path, "a `meta` key is one identifier"), help));
            continue;
        };
        let Some(value) = meta_value(&nv.value, &key, help, errors) else { continue };
        if out.iter().any(|entry| entry.key == key) {
            errors.push(with_help(error_at(&key, format!("`meta` sets `{key}` twice")), "remove the repeated entry"));
            continue;
        }
        out.push(MetaEntry { key, value });
    }
    out
}

fn meta_value(expr: &Expr, key: &syn::Ident, help: &str, errors: &mut Errors) -> Option<MetaLit> {
    let (negative, lit) = match expr {
        Expr::Lit(lit) => (false, Some(&lit.lit)),
        Expr::Unary(syn::ExprUnary { op: syn::UnOp::Neg(_), expr: inner, .. }) => match &**inner {
            Expr::Lit(lit) if matches!(lit.lit, Lit::Int(_) | Lit::Float(_)) => (true, Some(&lit.lit)),
            _ => (false, None),
        },
        _ => (false, None),
    };
    let sign = if negative { "-" } else { "" };
    let value = match lit {
        Some(Lit::Str(lit)) => Ok(MetaLit::Str(lit.clone())),
        Some(Lit::Bool(lit)) => Ok(MetaLit::Bool(lit.value)),
        Some(Lit::Int(lit)) => format!("{sign}{}", lit.base10_digits())
            .parse::<i64>()
            .map(MetaLit::Int)
            .map_err(|_| format!("`meta({key})` is out of range for a 64-bit integer")),
        Some(Lit::Float(lit)) => match format!("{sign}{}", lit.base10_digits()).parse::<f64>() {
            Ok(number) if number.is_finite() => Ok(MetaLit::Float(number)),
            _ => Err(format!("`meta({key})` is not a finite number")),
        },
        _ => {
            let message = format!("the value of `meta({key})` must be a string, number or bool literal");
            let help = "the macro reads literals only, not constants or expressions: write the value itself, \
                        such as `meta(owner = \"billing\", cost = 3, beta = true)`";
            errors.push(with_help(error_at(expr, message), help));
            return None;
        }
    };
    match value {
        Ok(value) => Some(value),
        Err(message) => {
            errors.push(with_help(error_at(expr, message), help));
            None
        }
    }
}

fn policy(meta: &Meta, errors: &mut Errors) -> Option<PolicyAttr> {
    let help = "write `policy = allow`, `policy = deny`, `policy = needs_approval` or `policy = path::to::predicate`";
    let Meta::NameValue(nv) = meta else {
        errors.push(with_help(error_at(meta, "`policy` needs a value"), help));
        return None;
    };
    let Expr::Path(expr) = &nv.value else {
        errors.push(with_help(error_at(&nv.value, "`policy` takes a verdict or the path of a predicate"), help));
        return None;
    };
    let path = &expr.path;
    Some(match path.get_ident().map(ToString::to_string).as_deref() {
        Some("allow") => PolicyAttr::Allow,
        Some("deny") => PolicyAttr::Deny,
        Some("needs_approval") => PolicyAttr::NeedsApproval,
        _ => PolicyAttr::Predicate(path.clone()),
    })
}

fn predicate_path(meta: &Meta, key: &str, errors: &mut Errors) -> Option<Path> {
    let help = match key {
        "on_error" => format!("write `{key} = path::to::recovery`"),
        "scope" => format!("write `{key} = path::to::function`, a `fn(&Scope, &mut ScopedTool)` that narrows the tool to a scope value"),
        "idempotency_key" => format!(
            "write `{key} = path::to::function`, a `fn(&Input) -> String` that returns the key of the call's effect \
             from the tool's input (`Input` is the type named like the tool, or `T` of `Input<T>`)"
        ),
        "resolve" => format!(
            "write `{key} = path::to::function`, a `fn(&Input) -> Result<Proposal, E>` that converts an external call's input \
             into what the host runs; its error's text is the refusal the model reads"
        ),
        "on_result" => format!(
            "write `{key} = path::to::hook`, a `fn(&CallReport)` that sees each outcome of the tool's calls \
             (its result, who called, how long it took)"
        ),
        "reconcile" => format!(
            "write `{key} = path::to::function`, a `fn(&Input) -> Option<Output>` that says whether a call cut off midway \
             took effect: its output when it did, `None` when that is unknown"
        ),
        _ => format!("write `{key} = path::to::predicate`"),
    };
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Path(expr) => Some(expr.path.clone()),
            other => {
                errors.push(with_help(error_at(other, format!("`{key}` takes the path of a function")), help));
                None
            }
        },
        other => {
            errors.push(with_help(error_at(other, format!("`{key}` needs a value")), help));
            None
        }
    }
}

fn ends_run(meta: &Meta, errors: &mut Errors) -> Option<EndsRunAttr> {
    match meta {
        Meta::NameValue(nv) if matches!(&nv.value, Expr::Path(_)) => predicate_path(meta, "ends_run", errors).map(EndsRunAttr::Predicate),
        _ => flag(meta, errors).map(EndsRunAttr::Flag),
    }
}

fn parallel_safe(meta: &Meta, errors: &mut Errors) -> Option<ParallelSafeAttr> {
    match meta {
        Meta::NameValue(nv) if matches!(&nv.value, Expr::Path(_)) => predicate_path(meta, "parallel_safe", errors).map(ParallelSafeAttr::Predicate),
        _ => flag(meta, errors).map(ParallelSafeAttr::Flag),
    }
}

/// `failure_mode = "error"` or `"return"`: who reads the tool's own failure.
fn failure_mode(meta: &Meta, errors: &mut Errors) -> Option<LitStr> {
    let lit = text(meta, "failure_mode", "error", errors)?;
    if matches!(lit.value().as_str(), "return" | "error") {
        return Some(lit);
    }
    errors.push(with_help(
        error_at(&lit, format!("unknown failure mode \"{}\"", lit.value())),
        "write `failure_mode = \"error\"` to end a failed call as an error the host handles (the model reads the generic line), \
         or leave the key out for the default, `\"return\"`: the model reads the failure",
    ));
    None
}

/// `replay`, `replay = bool`: only `replay = false` means anything (the
/// rules reject the default), so the help names that form alone.
fn replay(meta: &Meta, errors: &mut Errors) -> Option<Flag> {
    match bool::from_meta(meta) {
        Ok(value) => Some(Flag { value, span: meta.span() }),
        Err(_) => {
            let written = match meta {
                Meta::NameValue(nv) => error_at(&nv.value, "`replay` takes a bool"),
                other => error_at(other, "`replay` takes a bool"),
            };
            errors.push(with_help(written, "write `replay = false` to run the tool again in a durable run even when the journal holds its result"));
            None
        }
    }
}

/// A key that takes a duration string (`"500ms"`, `"5s"`, `"2m"`);
/// `zero` says why zero is refused.
fn duration(meta: &Meta, key: &str, zero: &str, errors: &mut Errors) -> Option<Millis> {
    let help = format!("write a duration such as `{key} = \"500ms\"`, `\"5s\"` or `\"2m\"`");
    let lit = match LitStr::from_meta(meta) {
        Ok(lit) => lit,
        Err(_) => {
            let message = format!("`{key}` takes a string");
            let error = match meta {
                Meta::NameValue(written) => error_at(&written.value, message),
                other => error_at(other, message),
            };
            errors.push(with_help(error, help));
            return None;
        }
    };
    match duration::parse_duration(&lit.value(), zero) {
        Ok(millis) => Some(Millis { millis, span: lit.span() }),
        Err(reason) => {
            errors.push(with_help(error_at(&lit, format!("invalid `{key}` \"{}\": {reason}", lit.value())), help));
            None
        }
    }
}

/// A key whose value is a whole number of at least 1 (`max_output_chars`,
/// `max_retries`); `example` is a good value for the help line.
fn positive<N: std::str::FromStr + PartialEq + From<u8>>(meta: &Meta, key: &str, example: &str, errors: &mut Errors) -> Option<N>
where
    N::Err: std::fmt::Display,
{
    let help = format!("write a positive whole number, such as `{key} = {example}`");
    let lit = match LitInt::from_meta(meta) {
        Ok(lit) => lit,
        Err(_) => {
            let message = format!("`{key}` takes a whole number");
            let error = match meta {
                Meta::NameValue(written) => error_at(&written.value, message),
                other => error_at(other, message),
            };
            errors.push(with_help(error, help));
            return None;
        }
    };
    match lit.base10_parse::<N>() {
        Ok(value) if value == N::from(0) => {
            errors.push(with_help(error_at(&lit, format!("`{key}` must be at least 1")), help));
            None
        }
        Ok(value) => Some(value),
        Err(err) => {
            errors.push(with_help(error_at(&lit, format!("invalid `{key}`: {err}")), help));
            None
        }
    }
}

mod duration;
#[cfg(test)]
mod tests;

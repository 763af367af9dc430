//! Parse phase, part one: the keys of `#[tool(...)]`, on the function and
//! on its parameters, into an owned model that keeps every span.

use std::collections::HashMap;

use darling::ast::NestedMeta;
use crate::diag::Errors;
use darling::FromMeta;
use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{Expr, Lit, LitInt, LitStr, Meta, Path};

use crate::checks;
use crate::diag::{error_at, with_help};

/// Every key of `#[tool(...)]`, in the order the README lists them.
pub const TOOL_KEYS: &[&str] = &[
    "name",
    "description",
    "title",
    "tags",
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
    "policy",
    "visible_when",
    "requires",
    "ends_run",
    "timeout",
    "max_output_chars",
    "parallel_safe",
    "strict",
    "crate",
];

/// The keys of `#[tool(...)]` on a parameter.
pub const PARAM_KEYS: &[&str] = &["default"];

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

pub struct Timeout {
    pub millis: u64,
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
    pub timeout: Option<Timeout>,
    pub max_output_chars: Option<usize>,
    pub parallel_safe: Option<Flag>,
    pub strict: Option<Flag>,
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
        let mut attrs = ToolAttrs::default();
        let Some(items) = errors.handle(NestedMeta::parse_meta_list(args)) else {
            return attrs;
        };
        let mut seen: HashMap<String, Span> = HashMap::new();
        for item in items {
            let Some((key, meta)) = key_of(&item, TOOL_KEYS, "`#[tool(...)]`", errors) else {
                continue;
            };
            if seen.insert(key.clone(), meta.path().span()).is_some() {
                errors.push(with_help(
                    error_at(meta.path(), format!("duplicate key `{key}` in `#[tool(...)]`")),
                    "each key may appear once; remove one of them",
                ));
                continue;
            }
            attrs.set(&key, &meta, errors);
        }
        attrs
    }

    fn set(&mut self, key: &str, meta: &Meta, errors: &mut Errors) {
        match key {
            "name" => self.name = errors.handle(LitStr::from_meta(meta)),
            "description" => self.description = errors.handle(LitStr::from_meta(meta)),
            "title" => self.title = errors.handle(LitStr::from_meta(meta)),
            "tags" => self.tags = string_list(meta, "tags", errors),
            "requires" => self.requires = string_list(meta, "requires", errors),
            "read_only" => self.read_only = flag(meta, errors),
            "destructive" => self.destructive = flag(meta, errors),
            "idempotent" => self.idempotent = flag(meta, errors),
            "open_world" => self.open_world = flag(meta, errors),
            "parallel_safe" => self.parallel_safe = flag(meta, errors),
            "strict" => self.strict = flag(meta, errors),
            "policy" => self.policy = policy(meta, errors).map(|policy| (policy, meta.span())),
            "visible_when" => self.visible_when = predicate_path(meta, "visible_when", errors),
            "ends_run" => self.ends_run = ends_run(meta, errors),
            "timeout" => self.timeout = timeout(meta, errors),
            "max_output_chars" => self.max_output_chars = max_output_chars(meta, errors),
            "crate" => self.krate = errors.handle(Path::from_meta(meta)),
            _ => unreachable!("key_of only returns known keys"),
        }
    }
}

/// Parses `#[tool(...)]` on a parameter.
pub fn parse_param(attr_meta: &Meta, errors: &mut Errors) -> ParamDefault {
    let tokens = match attr_meta {
        Meta::List(list) => list.tokens.clone(),
        other => {
            errors.push(with_help(
                error_at(other, "`#[tool]` on a parameter needs a key"),
                "write `#[tool(default)]` or `#[tool(default = expr)]`",
            ));
            return ParamDefault::None;
        }
    };
    let Some(items) = errors.handle(NestedMeta::parse_meta_list(tokens)) else {
        return ParamDefault::None;
    };
    let mut result = ParamDefault::None;
    for item in items {
        let Some((_, meta)) = key_of(&item, PARAM_KEYS, "`#[tool(...)]` on a parameter", errors) else {
            continue;
        };
        if !matches!(result, ParamDefault::None) {
            errors.push(with_help(
                error_at(meta.path(), "duplicate key `default` in `#[tool(...)]`"),
                "each key may appear once; remove one of them",
            ));
            continue;
        }
        result = match &meta {
            Meta::Path(path) => ParamDefault::Trait(path.span()),
            Meta::NameValue(nv) => ParamDefault::Expr(nv.value.clone()),
            Meta::List(list) => {
                errors.push(with_help(
                    error_at(list, "`default` takes no list"),
                    "write `#[tool(default)]` or `#[tool(default = expr)]`",
                ));
                ParamDefault::None
            }
        };
    }
    result
}

/// The key of one item, when it is a known key; otherwise an error that
/// suggests the nearest known key.
fn key_of(item: &NestedMeta, keys: &[&str], context: &str, errors: &mut Errors) -> Option<(String, Meta)> {
    let meta = match item {
        NestedMeta::Meta(meta) => meta.clone(),
        NestedMeta::Lit(lit) => {
            errors.push(with_help(
                error_at(lit, format!("expected a key in {context}, found a literal")),
                format!("valid keys are {}", list(keys)),
            ));
            return None;
        }
        NestedMeta::NameValueInvalidExpr(invalid) => {
            errors.push(with_help(
                error_at(&invalid.value, format!("the value of `{}` is not a valid expression", path_text(&invalid.path))),
                "write a string literal, a number, `true`/`false` or a path",
            ));
            return None;
        }
    };
    let key = path_text(meta.path());
    if keys.contains(&key.as_str()) {
        return Some((key, meta));
    }
    let help = match checks::nearest(&key, keys) {
        Some(near) => format!("did you mean `{near}`?"),
        None => format!("valid keys are {}", list(keys)),
    };
    errors.push(with_help(error_at(meta.path(), format!("unknown key `{key}` in {context}")), help));
    None
}

fn path_text(path: &Path) -> String {
    path.segments.iter().map(|segment| segment.ident.to_string()).collect::<Vec<_>>().join("::")
}

fn list(keys: &[&str]) -> String {
    keys.iter().map(|key| format!("`{key}`")).collect::<Vec<_>>().join(", ")
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
                    errors.push(with_help(
                        error_at(&lit, format!("`{key}` lists \"{}\" twice", lit.value())),
                        "remove the repeated entry",
                    ));
                } else {
                    out.push(lit);
                }
            }
            other => errors.push(with_help(error_at(&other, format!("`{key}` takes string literals")), help.clone())),
        }
    }
    out
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
    let help = format!("write `{key} = path::to::predicate`");
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
        Meta::NameValue(nv) if matches!(&nv.value, Expr::Path(_)) => {
            predicate_path(meta, "ends_run", errors).map(EndsRunAttr::Predicate)
        }
        _ => flag(meta, errors).map(EndsRunAttr::Flag),
    }
}

fn timeout(meta: &Meta, errors: &mut Errors) -> Option<Timeout> {
    let help = "write a duration such as `timeout = \"500ms\"`, `\"5s\"` or `\"2m\"`";
    let lit = match LitStr::from_meta(meta) {
        Ok(lit) => lit,
        Err(_) => {
            errors.push(with_help(error_at(meta, "`timeout` takes a string"), help));
            return None;
        }
    };
    match checks::parse_duration(&lit.value()) {
        Ok(millis) => Some(Timeout { millis }),
        Err(reason) => {
            errors.push(with_help(error_at(&lit, format!("invalid `timeout` \"{}\": {reason}", lit.value())), help));
            None
        }
    }
}

fn max_output_chars(meta: &Meta, errors: &mut Errors) -> Option<usize> {
    let help = "write a positive whole number, such as `max_output_chars = 4000`";
    let lit = match LitInt::from_meta(meta) {
        Ok(lit) => lit,
        Err(_) => {
            errors.push(with_help(error_at(meta, "`max_output_chars` takes a whole number"), help));
            return None;
        }
    };
    match lit.base10_parse::<usize>() {
        Ok(0) => {
            errors.push(with_help(error_at(&lit, "`max_output_chars` must be at least 1"), help));
            None
        }
        Ok(value) => Some(value),
        Err(err) => {
            errors.push(with_help(error_at(&lit, format!("invalid `max_output_chars`: {err}")), help));
            None
        }
    }
}

//! The attribute parser's unit tests.

use super::*;
use quote::quote;

fn messages(args: TokenStream) -> Vec<String> {
    let mut errors = Errors::default();
    ToolAttrs::parse(args, &mut errors);
    errors.messages()
}

#[test]
fn typos_suggest_the_nearest_key() {
    assert_eq!(messages(quote!(timout = "5s")), ["unknown key `timout` in `#[tool(...)]`\nhelp: did you mean `timeout`?"]);
    assert!(messages(quote!(readonly))[0].ends_with("did you mean `read_only`?"));
    assert!(messages(quote!(krate = x))[0].ends_with("did you mean `crate`?"));
    let far = messages(quote!(zzz));
    assert!(far[0].starts_with("unknown key `zzz`") && far[0].contains("documentation of `#[tool]`"), "{far:?}");
}

#[test]
fn an_unknown_or_repeated_key_leaves_the_others_read() {
    let mut errors = Errors::default();
    let attrs = ToolAttrs::parse(quote!(cache, read_only, timeout = "5s", timeout = "1s", tags("a")), &mut errors);
    let messages = errors.messages();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(messages[0].starts_with("unknown key `cache`"), "{messages:?}");
    assert!(messages[1].starts_with("duplicate key `timeout`"), "{messages:?}");
    assert!(attrs.read_only.is_some_and(|flag| flag.value));
    assert_eq!(attrs.timeout.map(|timeout| timeout.millis), Some(5_000));
    assert_eq!(attrs.tags.len(), 1);
}

#[test]
fn the_attribute_syntax_is_kept() {
    let mut errors = Errors::default();
    let attrs = ToolAttrs::parse(
        quote!(
            name = "n",
            description = "d",
            title = "t",
            tags("a", "b"),
            read_only = false,
            destructive,
            idempotent = true,
            open_world,
            policy = needs_approval,
            visible_when = a::b,
            requires("x"),
            ends_run = c::d,
            timeout = "2m",
            max_output_chars = 10,
            parallel_safe,
            strict = false,
            crate = ::x
        ),
        &mut errors,
    );
    assert!(errors.is_empty(), "{:?}", errors.messages());
    assert_eq!(attrs.name.map(|lit| lit.value()).as_deref(), Some("n"));
    assert_eq!(attrs.tags.len(), 2);
    assert!(attrs.read_only.is_some_and(|flag| !flag.value));
    assert!(matches!(attrs.policy, Some((PolicyAttr::NeedsApproval, _))));
    assert!(matches!(attrs.ends_run, Some(EndsRunAttr::Predicate(_))));
    assert_eq!(attrs.timeout.map(|timeout| timeout.millis), Some(120_000));
    assert_eq!(attrs.max_output_chars, Some(10));
    assert!(attrs.strict.is_some_and(|flag| !flag.value));
    assert!(attrs.krate.is_some());
}

#[test]
fn the_metadata_keys_are_read() {
    let mut errors = Errors::default();
    let attrs = ToolAttrs::parse(
        quote!(
            kind = "read",
            examples("look(1)"),
            example_prompts("where is it?", "find it"),
            related("other"),
            always_active,
            classification = "finds things",
            scope_prompt = "scope to one",
            meta(owner = "ops", cost = 3, neg = -2, ratio = 0.5, beta = true)
        ),
        &mut errors,
    );
    assert!(errors.is_empty(), "{:?}", errors.messages());
    assert_eq!(attrs.kind.map(|lit| lit.value()).as_deref(), Some("read"));
    assert_eq!(attrs.examples.len(), 1);
    assert_eq!(attrs.example_prompts.len(), 2);
    assert_eq!(attrs.related[0].value(), "other");
    assert!(attrs.always_active.is_some_and(|flag| flag.value));
    assert!(attrs.classification.is_some() && attrs.scope_prompt.is_some());
    let keys: Vec<String> = attrs.meta.iter().map(|entry| entry.key.to_string()).collect();
    assert_eq!(keys, ["owner", "cost", "neg", "ratio", "beta"]);
    assert!(matches!(attrs.meta[1].value, MetaLit::Int(3)));
    assert!(matches!(attrs.meta[2].value, MetaLit::Int(-2)));
    assert!(matches!(attrs.meta[3].value, MetaLit::Float(value) if value == 0.5));
    assert!(matches!(attrs.meta[4].value, MetaLit::Bool(true)));
}

#[test]
fn metadata_misuse_is_reported_per_value() {
    let found = messages(quote!(kind("read"), classification = 3, scope_prompt = "", meta(a = some::path, b = 1, b = 2, c = 99999999999999999999)));
    assert!(found[0].starts_with("`kind` takes one string, not a list"), "{found:?}");
    assert!(found[1].starts_with("`classification` takes a string"), "{found:?}");
    assert!(found[2].starts_with("`scope_prompt` is empty"), "{found:?}");
    assert!(found[3].starts_with("the value of `meta(a)` must be a string, number or bool literal"), "{found:?}");
    assert!(found[4].starts_with("`meta` sets `b` twice"), "{found:?}");
    assert!(found[5].starts_with("`meta(c)` is out of range"), "{found:?}");
    assert_eq!(found.len(), 6, "{found:?}");
}

#[test]
fn a_parameter_key_is_read_or_suggested() {
    let mut errors = Errors::default();
    let meta: Meta = syn::parse_quote!(tool(defualt = 10));
    assert!(matches!(parse_param(&meta, &mut errors), ParamDefault::None));
    assert_eq!(errors.messages(), ["unknown key `defualt` in `#[tool(...)]` on a parameter\nhelp: did you mean `default`?"]);
    let meta: Meta = syn::parse_quote!(tool(default = 10));
    assert!(matches!(parse_param(&meta, &mut errors), ParamDefault::Expr(_)));
    let meta: Meta = syn::parse_quote!(tool(default, default));
    assert!(matches!(parse_param(&meta, &mut errors), ParamDefault::Trait(_)));
    assert!(errors.messages()[1].starts_with("duplicate key `default`"));
}

#[test]
fn the_durable_run_keys_are_read() {
    let mut errors = Errors::default();
    let attrs = ToolAttrs::parse(quote!(idempotency_key = keys::order_key, replay = false), &mut errors);
    assert!(errors.is_empty(), "{:?}", errors.messages());
    assert_eq!(attrs.idempotency_key.map(|path| path_text(&path)).as_deref(), Some("keys::order_key"));
    assert!(attrs.replay.is_some_and(|flag| !flag.value));
    // The default is read too (the rules reject it, with their own message).
    let attrs = ToolAttrs::parse(quote!(replay), &mut errors);
    assert!(errors.is_empty(), "{:?}", errors.messages());
    assert!(attrs.replay.is_some_and(|flag| flag.value));
}

#[test]
fn durable_run_key_misuse_says_what_to_write() {
    let found = messages(quote!(idempotency_key = "order_id", replay = "no"));
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].starts_with(
            "`idempotency_key` takes the path of a function\nhelp: write `idempotency_key = path::to::function`, a `fn(&Input) -> String`"
        ),
        "{found:?}"
    );
    assert_eq!(
        found[1],
        "`replay` takes a bool\nhelp: write `replay = false` to run the tool again in a durable run even when the journal holds its result"
    );
    let found = messages(quote!(idempotency_key, replay(false)));
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].starts_with("`idempotency_key` needs a value\nhelp: write `idempotency_key = path::to::function`"), "{found:?}");
    assert!(found[1].starts_with("`replay` takes a bool"), "{found:?}");
}

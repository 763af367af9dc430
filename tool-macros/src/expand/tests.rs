//! Unit tests of the expansion, on functions parsed with `parse_quote!`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{ItemFn, parse_quote};

use super::input::sets_description;
use crate::attrs::ToolAttrs;
use crate::checks;
use crate::diag::Errors;
use crate::generate as tool;
use crate::signature::ToolFn;

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
    let tokens = tool(
        quote!(bogus),
        quote!(
            async fn look() {}
        ),
    )
    .to_string();
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

/// Prints the expansion of a three-parameter tool, to measure how much code
/// one tool costs the compiler: `cargo test -p tool-macros --lib
/// print_three_parameter_expansion -- --ignored --nocapture | rustfmt`.
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

#[test]
fn a_tool_without_metadata_keys_emits_nothing_for_them() {
    let tokens = tool(
        quote!(read_only),
        quote! { /// Docs.
        async fn look() -> String { String::new() } },
    )
    .to_string();
    assert!(!tokens.contains("METADATA") && !tokens.contains("Metadata"), "{tokens}");
    let tokens = tool(
        quote!(kind = "read", meta(cost = 2)),
        quote! { /// Docs.
        async fn look() -> String { String::new() } },
    )
    .to_string();
    assert!(tokens.contains("const METADATA : :: tool_runtime :: __private :: Metadata = :: tool_runtime :: __private :: Metadata {"), "{tokens}");
    assert!(tokens.contains("kind : :: core :: option :: Option :: Some (\"read\")"), "{tokens}");
    assert!(tokens.contains("(\"cost\" , :: tool_runtime :: __private :: MetaValue :: Int (2i64))"), "{tokens}");
    assert!(tokens.contains(".. :: tool_runtime :: __private :: Metadata :: EMPTY"), "{tokens}");
    assert!(!tokens.contains("examples"), "only the keys written are emitted: {tokens}");
}

#[test]
fn related_and_meta_are_checked_against_the_tool() {
    let errors = errors_of(
        quote!(related("look", "Other-Tool"), kind = "read", meta(kind = "write")),
        parse_quote! {
            /// Docs.
            async fn look() {}
        },
    );
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors[0].starts_with("tool `look` cannot be related to itself"), "{errors:?}");
    assert!(errors[1].contains("\"Other-Tool\", which is not a valid tool name") && errors[1].ends_with("write \"other_tool\""), "{errors:?}");
    assert!(errors[2].starts_with("`meta(kind = ...)` collides with `kind = \"read\"`"), "{errors:?}");
}

#[test]
fn only_a_tool_written_result_with_its_own_error_type_probes_for_a_typed_failure() {
    let expand = |output: TokenStream| {
        tool(
            quote!(),
            quote! { /// Docs.
            async fn look() -> #output { todo!() } },
        )
        .to_string()
    };
    let typed = expand(quote!(Result<String, OrderFailure>));
    assert!(typed.contains("fn failure_schema"), "{typed}");
    assert!(typed.contains("FailureSchema :: < OrderFailure >"), "{typed}");
    assert!(typed.contains("FailureProbe (returned) . into_result ()"), "{typed}");
    assert!(typed.contains("UntypedFailure as _"), "{typed}");
    for untyped in [
        quote!(Result<String, ToolError>),
        quote!(Result<String, tool_runtime::ToolError>),
        quote!(std::io::Result<String>),
        quote!(LookResult),
        quote!(String),
    ] {
        let tokens = expand(untyped.clone());
        let typed_names = ["fn failure_schema", "FailureSchema", "FailureProbe", "UntypedFailure"];
        assert!(!typed_names.iter().any(|name| tokens.contains(name)), "{untyped} emits what it did before typed failures: {tokens}");
        assert!(tokens.contains("Returned (returned) . into_result ()"), "{tokens}");
    }
}

#[test]
fn only_a_tool_with_interim_emits_an_execution_constant() {
    let tokens = tool(
        quote!(read_only, timeout = "5s"),
        quote! { /// Docs.
        async fn look() -> String { String::new() } },
    )
    .to_string();
    assert!(!tokens.contains("EXECUTION") && !tokens.contains("Execution"), "{tokens}");
    let tokens = tool(
        quote!(interim = "Still looking...", interim_after = "1500ms"),
        quote! { /// Docs.
        async fn look() -> String { String::new() } },
    )
    .to_string();
    assert!(tokens.contains("const EXECUTION : :: tool_runtime :: __private :: Execution = :: tool_runtime :: __private :: Execution {"), "{tokens}");
    assert!(
        tokens.contains("interim : :: core :: option :: Option :: Some ((\"Still looking...\" , :: tool_runtime :: __private :: Duration :: from_millis (1500u64)))"),
        "{tokens}"
    );
    assert!(tokens.contains(".. :: tool_runtime :: __private :: Execution :: DEFAULT"), "{tokens}");
    let tokens = tool(
        quote!(interim = "Still looking..."),
        quote! { /// Docs.
        async fn look() -> String { String::new() } },
    )
    .to_string();
    assert!(tokens.contains(":: tool_runtime :: __private :: Interim :: DEFAULT_AFTER"), "the runtime's default delay: {tokens}");
}

#[test]
fn interim_mistakes_are_reported_on_their_keys() {
    let cases: [(TokenStream, &str); 6] = [
        (quote!(interim_after = "2s"), "`interim_after` without `interim`"),
        (quote!(interim = ""), "`interim` is empty"),
        (quote!(interim = 3), "`interim` takes a string"),
        (quote!(interim = "Wait.", interim_after = "0s"), "invalid `interim_after` \"0s\": a delay of zero"),
        (quote!(interim = "Wait.", interim_after = "2"), "invalid `interim_after` \"2\": it needs a unit"),
        (quote!(interim = "Wait.", interim_after = "5s", timeout = "5s"), "`interim_after` is not shorter than `timeout`"),
    ];
    for (args, expected) in cases {
        let errors = errors_of(
            args.clone(),
            parse_quote! {
                /// Docs.
                async fn look() {}
            },
        );
        assert_eq!(errors.len(), 1, "{args}: {errors:?}");
        assert!(errors[0].starts_with(expected), "{args}: {errors:?}");
    }
    let errors = errors_of(
        quote!(interim = "Wait.", timeout = "2s"),
        parse_quote! {
            /// Docs.
            async fn look() {}
        },
    );
    assert!(errors.len() == 1 && errors[0].starts_with("`interim` (sent after 2000ms by default) is not shorter"), "{errors:?}");
    let errors = errors_of(
        quote!(interim = "Wait.", interim_after = "1s", timeout = "2s"),
        parse_quote! {
            /// Docs.
            async fn look() {}
        },
    );
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn only_the_durable_run_keys_written_reach_the_execution_constant() {
    let tokens = tool(
        quote!(idempotency_key = order_key),
        quote! { /// Docs.
        async fn look(order: String) -> String { order } },
    )
    .to_string();
    assert!(tokens.contains("Execution { idempotency_key : true , .. :: tool_runtime :: __private :: Execution :: DEFAULT }"), "{tokens}");
    assert!(!tokens.contains("replay"), "{tokens}");
    let tokens = tool(
        quote!(replay = false),
        quote! { /// Docs.
        async fn look(order: String) -> String { order } },
    )
    .to_string();
    assert!(tokens.contains("Execution { replay : false , .. :: tool_runtime :: __private :: Execution :: DEFAULT }"), "{tokens}");
    assert!(!tokens.contains("idempotency_key") && !tokens.contains("fn effect_key"), "{tokens}");
}

#[test]
fn idempotency_key_calls_its_function_through_the_probe() {
    let tokens = tool(
        quote!(idempotency_key = keys::order_key),
        quote! { /// Docs.
        async fn look(order: String) -> String { order } },
    )
    .to_string();
    assert!(
        tokens.contains(
            "fn effect_key (input : & Self :: Input) -> :: core :: option :: Option < :: std :: string :: String > { \
             :: core :: option :: Option :: Some (:: tool_runtime :: __private :: effect_key_call (keys :: order_key , input)) }"
        ),
        "{tokens}"
    );
    let tokens = tool(
        quote!(read_only),
        quote! { /// Docs.
        async fn look(order: String) -> String { order } },
    )
    .to_string();
    assert!(!tokens.contains("effect_key"), "no key function without the key: {tokens}");
}

#[test]
fn reconcile_calls_its_hook_through_the_probe() {
    let tokens = tool(
        quote!(reconcile = bank::paid),
        quote! { /// Docs.
        async fn pay(order: String) -> String { order } },
    )
    .to_string();
    assert!(tokens.contains(":: tool_runtime :: __private :: reconcile_call (bank :: paid , input , ctx)"), "{tokens}");
    assert!(tokens.contains("fn reconcile (input : & Self :: Input , ctx : & :: tool_runtime :: __private :: Ctx <"), "{tokens}");
    let tokens = tool(
        quote!(read_only),
        quote! { /// Docs.
        async fn pay(order: String) -> String { order } },
    )
    .to_string();
    assert!(!tokens.contains("reconcile"), "no hook without the key: {tokens}");
}

#[test]
fn replay_contradictions_are_reported_on_replay() {
    let cases: [(TokenStream, &str); 3] = [
        (quote!(replay), "`replay` is on by default\nhelp: remove it, or write `replay = false`"),
        (quote!(replay = true), "`replay` is on by default"),
        (quote!(replay = false, idempotency_key = key), "`replay = false` contradicts `idempotency_key`\nhelp: a tool that always runs again"),
    ];
    for (args, expected) in cases {
        let errors = errors_of(
            args.clone(),
            parse_quote! {
                /// Docs.
                async fn look() {}
            },
        );
        assert_eq!(errors.len(), 1, "{args}: {errors:?}");
        assert!(errors[0].starts_with(expected), "{args}: {errors:?}");
    }
    // A destructive tool may run again on every call (a shell command, a
    // file written): `replay = false` says so.
    let allowed = [
        quote!(replay = false, destructive),
        quote!(replay = false, read_only),
        quote!(replay = false, destructive, idempotent),
        quote!(replay = false, destructive = false),
        quote!(idempotency_key = key, destructive),
    ];
    for args in allowed {
        let errors = errors_of(
            args.clone(),
            parse_quote! {
                /// Docs.
                async fn look() {}
            },
        );
        assert!(errors.is_empty(), "{args}: {errors:?}");
    }
}

#[test]
fn the_meta_constant_states_only_the_keys_written() {
    let tokens = tool(
        quote!(),
        quote! { /// Docs.
        async fn look() -> String { String::new() } },
    )
    .to_string();
    assert!(
        tokens.contains(
            "const META : :: tool_runtime :: __private :: ToolMeta = :: tool_runtime :: __private :: ToolMeta { \
             name : \"look\" , doc : r\" Docs.\" , .. :: tool_runtime :: __private :: ToolMeta :: DEFAULT } ;"
        ),
        "{tokens}"
    );
    let tokens = tool(
        quote!(read_only, timeout = "5s"),
        quote! { /// Docs.
        async fn look() -> String { String::new() } },
    )
    .to_string();
    assert!(
        tokens.contains(
            "annotations : :: tool_runtime :: __private :: Annotations { read_only : :: core :: option :: Option :: Some (true) , \
             .. :: tool_runtime :: __private :: ToolMeta :: DEFAULT . annotations }"
        ),
        "{tokens}"
    );
    assert!(
        tokens.contains("timeout : :: core :: option :: Option :: Some (:: tool_runtime :: __private :: Duration :: from_millis (5000u64))"),
        "{tokens}"
    );
    // `read_only` implies `parallel_safe`, which is written out.
    assert!(tokens.contains("parallel_safe : true"), "{tokens}");
    let meta = &tokens[tokens.find("const META").unwrap()..];
    let meta = &meta[..meta.find("DEFAULT } ;").unwrap()];
    for left_out in ["destructive", "policy", "ends_run", "ends_turn", "visible_when", "strict"] {
        assert!(!meta.contains(left_out), "{left_out} is not written: {meta}");
    }
}

#[test]
fn only_a_function_that_never_waits_is_run_where_it_is_polled() {
    let expand = |args: TokenStream, body: TokenStream| {
        tool(
            args,
            quote!(/// Docs.
    async fn look(id: String) -> String #body),
        )
        .to_string()
    };
    assert!(expand(quote!(), quote!({ format!("{id}") })).contains("fn call_now"));
    assert!(!expand(quote!(), quote!({ fetch(id).await })).contains("fn call_now"), "it awaits");
    // `on_error` and an `ends_run` predicate may wait themselves.
    assert!(!expand(quote!(on_error = recover), quote!({ id })).contains("fn call_now"));
    assert!(!expand(quote!(ends_run = done), quote!({ id })).contains("fn call_now"));
    assert!(expand(quote!(ends_run), quote!({ id })).contains("fn call_now"));
    // A streaming tool's `call` reads its stream to the end: it waits.
    let streamed = tool(
        quote!(),
        quote!(
            /// Docs.
            async fn look(id: String) -> Streamed<String> {
                stream(id)
            }
        ),
    );
    let streamed = streamed.to_string();
    assert!(!streamed.contains("fn call_now") && !streamed.contains("__tool_body"), "{streamed}");
}

#[test]
fn call_and_call_now_share_one_copy_of_the_body() {
    let tokens = tool(
        quote!(),
        quote!(
            /// Docs.
            async fn look(id: String) -> String {
                format!("{id}")
            }
        ),
    )
    .to_string();
    assert_eq!(tokens.matches("async move").count(), 1, "{tokens}");
    assert_eq!(tokens.matches("look (input . id)").count(), 1, "{tokens}");
    assert!(tokens.contains("Box :: pin (__tool_body (input))"), "{tokens}");
    assert!(tokens.contains("pin ! (__tool_body (input))"), "{tokens}");
}

#[test]
fn the_keys_of_the_last_seeds_add_code_only_to_a_tool_that_writes_them() {
    let plain = tool(
        quote!(read_only),
        quote! { /// Docs.
        async fn look(order: String) -> Result<String, ToolError> { Ok(order) } },
    )
    .to_string();
    for absent in ["failure_mode", "FailureMode", "as_intent", "fn on_result", "fn resolve", "EXECUTION", "METADATA"] {
        assert!(!plain.contains(absent), "{absent} in a tool without its key: {plain}");
    }
    let written = tool(
        quote!(failure_mode = "error", as_intent),
        quote! { /// Docs.
        async fn look(order: String) -> Result<String, ToolError> { Ok(order) } },
    )
    .to_string();
    assert!(
        written.contains("Execution { failure_mode : :: tool_runtime :: __private :: FailureMode :: Error , .. :: tool_runtime :: __private :: Execution :: DEFAULT }"),
        "{written}"
    );
    assert!(written.contains("Metadata { as_intent : true , .. :: tool_runtime :: __private :: Metadata :: EMPTY }"), "{written}");
    let hooked = tool(
        quote!(on_result = log::report),
        quote! { /// Docs.
        async fn look(order: String) -> String { order } },
    )
    .to_string();
    assert!(hooked.contains("Execution { on_result : true , .. :: tool_runtime :: __private :: Execution :: DEFAULT }"), "{hooked}");
    assert!(
        hooked.contains(
            "fn on_result (report : & :: tool_runtime :: __private :: CallReport) { :: tool_runtime :: __private :: on_result_call (log :: report , report) }"
        ),
        "{hooked}"
    );
}

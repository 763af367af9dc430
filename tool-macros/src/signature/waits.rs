//! Whether a tool's function can wait: whether its future can be pending
//! when it is first polled. Only an `.await` suspends an `async fn`. One
//! written in the body is in its tokens; one a macro would write is not,
//! so the body may call only macros known to write none (the standard
//! library's, and `json!`), and the function may carry only attributes
//! that leave its body as it is. A function that never waits is run where
//! its call is first polled, with no future boxed (`Tool::call_now`).
//!
//! The answer errs one way only: `if !(a)` reads as a call of a macro
//! named `if` would, and so as a function that may wait, which costs a
//! box, never a wrong result. The one wrong answer is a macro of the
//! user's own that takes a name on the list (`format!`, say) and writes
//! an `.await`: the tool is then pending on its first poll, and `call_now`
//! panics with a message naming it, which the call reports as a panic.

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::ItemFn;

/// The macros a body may call and still never wait: none writes an
/// `.await` of its own.
const MACROS_THAT_NEVER_WAIT: &[&str] = &[
    "assert",
    "assert_eq",
    "assert_ne",
    "cfg",
    "column",
    "concat",
    "dbg",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "env",
    "eprint",
    "eprintln",
    "file",
    "format",
    "format_args",
    "include_bytes",
    "include_str",
    "json",
    "line",
    "matches",
    "module_path",
    "option_env",
    "panic",
    "print",
    "println",
    "stringify",
    "todo",
    "unimplemented",
    "unreachable",
    "vec",
    "write",
    "writeln",
];

/// The attributes the function may carry that no macro expands: the body
/// the compiler sees is the one written.
const INERT_ATTRIBUTES: &[&str] = &["allow", "cold", "deny", "deprecated", "doc", "expect", "forbid", "inline", "must_use", "track_caller", "warn"];

/// Whether `item` never waits (see the module docs).
pub fn never_waits(item: &ItemFn) -> bool {
    let inert = item.attrs.iter().all(|attr| INERT_ATTRIBUTES.iter().any(|name| attr.path().is_ident(name)));
    inert && tokens_never_wait(item.block.to_token_stream())
}

/// Whether `tokens` hold no `await` and call no macro but those that never
/// wait, at any depth (a macro's own arguments included).
fn tokens_never_wait(tokens: TokenStream) -> bool {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    tokens.iter().enumerate().all(|(at, token)| match token {
        TokenTree::Group(group) => tokens_never_wait(group.stream()),
        TokenTree::Ident(ident) => ident != "await",
        TokenTree::Punct(punct) if punct.as_char() == '!' => match (at.checked_sub(1).map(|before| &tokens[before]), tokens.get(at + 1)) {
            (Some(TokenTree::Ident(name)), Some(TokenTree::Group(_))) => MACROS_THAT_NEVER_WAIT.iter().any(|known| name == known),
            _ => true,
        },
        TokenTree::Punct(_) | TokenTree::Literal(_) => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waits(item: &str) -> bool {
        !never_waits(&syn::parse_str(item).unwrap())
    }

    #[test]
    fn a_body_without_await_and_with_the_standard_macros_never_waits() {
        assert!(!waits("async fn f(a: u32) -> String { format!(\"{a}\") }"));
        assert!(!waits("async fn f(a: u32) -> Vec<u32> { assert!(a != 0, \"{}\", line!()); let v = vec![a]; v }"));
        assert!(!waits("/// Docs.\n#[allow(unused)] async fn f() -> serde_json::Value { serde_json::json!({ \"a\": [1, 2] }) }"));
        assert!(!waits("async fn f(a: bool) -> bool { !a && a != !(a) }"), "a `!` that calls no macro");
    }

    #[test]
    fn an_await_or_a_macro_that_may_write_one_may_wait() {
        assert!(waits("async fn f() { g().await }"));
        assert!(waits("async fn f() { let x = { h(g().await) }; }"), "nested in a block and a call");
        assert!(waits("async fn f() -> String { format!(\"{}\", g().await) }"), "in a standard macro's arguments");
        assert!(waits("async fn f() { let c = async { g().await }; drop(c) }"), "in an inner async block: erring one way");
        assert!(waits("async fn f() { tokio::join!(g(), h()); }"));
        assert!(waits("async fn f() { my_macro!(); }"));
        assert!(waits("async fn f() { tracing::info!(\"x\"); }"), "only macros known to write no `.await`");
    }

    #[test]
    fn an_attribute_that_may_rewrite_the_body_may_wait() {
        assert!(waits("#[tracing::instrument] async fn f() {}"));
        assert!(waits("#[cfg_attr(test, some::attr)] async fn f() {}"));
        assert!(!waits("#[doc = \"x\"] #[must_use] async fn f() -> u32 { 1 }"));
    }
}

//! Arbitrary tool names and argument bytes against the support-desk tools
//! (plus a tool that panics and one that fails with an internal error),
//! through `Registry::invoke` and through the steps of a `Run`.
//!
//! Invariants checked on every result:
//! - no panic escapes the registry (libFuzzer reports one as a crash);
//! - a failure is one line, `code: ..., status: ..., userMessage: ...`;
//! - internal detail (the planted secrets) never reaches the model unless
//!   the input itself carries it;
//! - a success's text is at most `max_output_chars` characters plus the
//!   truncation marker;
//! - arguments as text get the same result from a registry that validates
//!   every call, which never takes the fast path (the text read straight
//!   into the tool's input);
//! - arguments already parsed (as MCP hands them over) get the same result
//!   as the text they were parsed from.
//!
//! Run: `cd fuzz && RUSTC_BOOTSTRAP=1 cargo +1.95.0 fuzz run call corpus/call -- -dict=call.dict -max_total_time=900`
//! (`call.dict` holds the tricky tokens: numbers at the edges of 64 bits,
//! `-0`, escapes, the tools' property names).

#![no_main]

#[path = "../../examples/common/shop.rs"]
#[allow(dead_code)]
mod shop;

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tool_runtime::prelude::*;
use tool_runtime::{CallResult, ResultKind};

use shop::Shop;

const PANIC_SECRET: &str = "SECRET-panic-7f3a";
const ERROR_SECRET: &str = "SECRET-error-91c2";
const LIMIT: usize = 300;
/// The longest truncation marker: the fixed text plus two counts.
const MARKER_MAX: usize = 200;

/// Panics with a secret.
#[tool]
async fn explode(depth: u8) -> String {
    panic!("{PANIC_SECRET} at depth {depth}")
}

/// Fails with an internal error carrying a secret.
#[tool]
async fn break_down(#[tool(default)] note: String) -> Result<String, std::io::Error> {
    Err(std::io::Error::other(format!("{ERROR_SECRET}: {note}")))
}

/// Returns a long output.
#[tool]
async fn echo_many(text: String, #[tool(default)] times: u16) -> String {
    text.repeat(usize::from(times.min(2000)))
}

/// Mixes types the fast path reads: a string, integers, a float, a list,
/// a default and any JSON.
#[tool]
async fn mix(name: String, count: u32, ratio: f64, tags: Vec<String>, #[tool(default)] flag: bool, extra: Option<Value>) -> String {
    format!("{name} {count} {ratio} {tags:?} {flag} {extra:?}")
}

/// Wide integers and a float: integers beyond 64 bits, which a parsed
/// value cannot hold, and `-0.0`, which only a float keeps.
#[tool]
async fn wide(big: u128, signed: i128, ratio: f64, #[tool(default)] offset: i64) -> String {
    format!("{big} {signed} {ratio} {offset}")
}

fn registry() -> &'static Registry<Shop> {
    static REGISTRY: OnceLock<Registry<Shop>> = OnceLock::new();
    REGISTRY.get_or_init(|| build(false))
}

/// The same tools, never on the fast path.
fn full_path_registry() -> &'static Registry<Shop> {
    static REGISTRY: OnceLock<Registry<Shop>> = OnceLock::new();
    REGISTRY.get_or_init(|| build(true))
}

fn build(validate_every_call: bool) -> Registry<Shop> {
    // The planted panics are expected: keep libFuzzer's output readable,
    // but show every other panic (a failed invariant).
    static QUIET: std::sync::Once = std::sync::Once::new();
    QUIET.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let planted = info.payload().downcast_ref::<String>().is_some_and(|message| message.starts_with(PANIC_SECRET));
            if !planted {
                default(info);
            }
        }));
    });
    Registry::builder()
        .tools(tools![
            shop::classify_request,
            shop::lookup_order,
            shop::refund,
            shop::issue_voucher,
            shop::hand_over,
            explode,
            break_down,
            echo_many,
            mix,
            wide
        ])
        .validate_every_call(validate_every_call)
        .default_max_output_chars(LIMIT)
        .build()
        .expect("the fuzz registry builds")
}

const NAMES: &[&str] = &[
    "classify_request",
    "lookup_order",
    "refund",
    "issue_voucher",
    "hand_over",
    "explode",
    "break_down",
    "echo_many",
    "mix",
    "wide",
];

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap())
}

/// One call's name and arguments from a chunk of the input: the first byte
/// picks a registered name (or, past the list, the next bytes up to `\t`
/// are the name), the rest are the argument text.
fn call_of(chunk: &[u8]) -> (String, String) {
    let Some((&pick, rest)) = chunk.split_first() else {
        return (String::new(), String::new());
    };
    let pick = usize::from(pick);
    if pick < 128 {
        (NAMES[pick % NAMES.len()].to_owned(), String::from_utf8_lossy(rest).into_owned())
    } else {
        let split = rest.iter().position(|&b| b == b'\t').unwrap_or(rest.len());
        let name = String::from_utf8_lossy(&rest[..split]).into_owned();
        let args = String::from_utf8_lossy(rest.get(split + 1..).unwrap_or_default()).into_owned();
        (name, args)
    }
}

fn check(result: &CallResult, input: &[u8]) {
    let carries = |secret: &str| input.windows(secret.len()).any(|window| window == secret.as_bytes());
    for secret in [PANIC_SECRET, ERROR_SECRET] {
        if !carries(secret) {
            assert!(!result.text.contains(secret), "internal detail leaked: {}", result.text);
        }
    }
    match result.kind {
        ResultKind::Success => {
            let chars = result.text.chars().count();
            assert!(chars <= LIMIT + MARKER_MAX, "{chars} characters over the limit");
            assert_eq!(result.truncated, result.text.contains("\n[output truncated: "), "{}", result.text);
        }
        _ => {
            assert!(!result.text.contains('\n') && !result.text.contains('\r'), "a failure of more than one line: {:?}", result.text);
            assert!(result.text.starts_with("code: "), "{}", result.text);
            let code = result.error_code.as_deref().expect("a failure has a code");
            let status = result.status.expect("a failure has a status");
            assert!(result.text.starts_with(&format!("code: {code}, status: {status}, userMessage: ")), "{}", result.text);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let registry = registry();
    let app = Arc::new(Shop::demo());
    runtime().block_on(async {
        match mode % 3 {
            // One call, arguments as text.
            0 => {
                let (name, args) = call_of(rest);
                let result = registry.invoke(&app, &name, args.as_str()).await;
                check(&result, data);
                let full = full_path_registry().invoke(&Arc::new(Shop::demo()), &name, args.as_str()).await;
                let seen = |result: &CallResult| (result.kind, result.text.clone(), result.error_code.clone(), result.structured.clone());
                assert_eq!(seen(&result), seen(&full), "the fast path and the full path differ on {name}: {args:?}");
            }
            // One call, arguments already parsed (as MCP hands them over).
            1 => {
                let (name, args) = call_of(rest);
                let Ok(value) = serde_json::from_str::<Value>(&args) else {
                    return;
                };
                let result = registry.invoke(&app, &name, value).await;
                check(&result, data);
                let text = registry.invoke(&Arc::new(Shop::demo()), &name, args.as_str()).await;
                let seen = |result: &CallResult| (result.kind, result.text.clone(), result.error_code.clone(), result.structured.clone());
                assert_eq!(seen(&result), seen(&text), "a parsed value and its text differ on {name}: {args:?}");
            }
            // A run: steps separated by `\n\n`, calls by `\n`.
            _ => {
                let mut run = registry.run(app);
                for (i, step) in rest.split(|&b| b == 0xff).take(4).enumerate() {
                    let calls: Vec<ToolCall> = step
                        .split(|&b| b == b'\n')
                        .take(6)
                        .enumerate()
                        .map(|(j, chunk)| {
                            let (name, args) = call_of(chunk);
                            ToolCall::new(format!("c{i}_{j}"), name, args)
                        })
                        .collect();
                    let offered = run.offered_names();
                    let results = run.execute(calls).await;
                    for result in &results.results {
                        check(result, data);
                        if !offered.iter().any(|name| *name == result.tool) {
                            assert_eq!(result.kind, ResultKind::UnknownTool, "a tool not offered ran: {}", result.tool);
                        }
                    }
                    for pending in run.pending().iter().map(|p| p.id().clone()).collect::<Vec<_>>() {
                        let result = if i % 2 == 0 { run.approvals().approve(&pending).await } else { run.approvals().reject(&pending, None).await };
                        check(&result.expect("the pending call is known"), data);
                    }
                }
            }
        }
    });
});

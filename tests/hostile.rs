//! Hostile input and misuse: each test is a defect an adversarial pass
//! found, and fails on the code before its fix.
//!
//! Memory is measured by a counting allocator (this file's global
//! allocator): the peak of live heap bytes while one call runs, above what
//! was live before it. The tests run one at a time.
#![allow(
    clippy::await_holding_lock,
    reason = "each test holds the process-wide serial lock for its whole body, across awaits, on purpose: the allocation counters are the whole process's, and each test has its own runtime, so no task waits on a lock another task holds"
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};
use tool_runtime::prelude::*;
use tool_runtime::{Arguments, BuildProblem, CallOutcome, ErrorKind, ErrorReport, ResultKind, ToolCall};

// ------------------------------------------------------------- allocator

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        ptr
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            if new_size > layout.size() {
                let live = LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size - layout.size();
                PEAK.fetch_max(live, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One test at a time: the counters are the whole process's, and every
/// test allocates.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `f` and returns its output and the peak of heap bytes live while
/// it ran, above those live before.
fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let out = f();
    (out, PEAK.load(Ordering::SeqCst).saturating_sub(before))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

// ----------------------------------------------------------------- tools

/// Sum a list of ids.
#[tool]
async fn sum_ids(ids: Vec<u32>) -> u64 {
    ids.iter().map(|&id| u64::from(id)).sum()
}

/// Store a note; a human approves first.
#[tool(policy = needs_approval)]
async fn store_note(note: String) -> usize {
    note.len()
}

/// Store a list of ids; a human approves first.
#[tool(policy = needs_approval)]
async fn store_ids(ids: Vec<u32>) -> usize {
    ids.len()
}

/// Asks a policy service that never answers.
#[tool(policy = ask_forever)]
async fn stuck(order_id: String) -> String {
    order_id
}

async fn ask_forever<A>(_input: &stuck, _ctx: &Ctx<A>) -> Verdict {
    std::future::pending().await
}

/// A string whose `Deserialize` panics on "boom".
#[derive(JsonSchema)]
#[schemars(transparent)]
struct Touchy(String);

impl<'de> Deserialize<'de> for Touchy {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        assert!(text != "boom", "touchy input exploded");
        Ok(Touchy(text))
    }
}

/// Echo a touchy string.
#[tool]
async fn touchy(value: Touchy) -> String {
    value.0
}

/// Echo a touchy string; a human approves first.
#[tool(policy = needs_approval)]
async fn touchy_approved(value: Touchy) -> String {
    value.0
}

/// Waits one poll without Tokio.
#[tool]
async fn yields() -> &'static str {
    YieldOnce(false).await;
    "done"
}

struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Echo.
#[tool(read_only)]
async fn echo(text: String) -> String {
    text
}

fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !format!("{info}").contains("touchy input exploded") {
                default(info);
            }
        }));
    });
}

// -------------------------------------------------- 7: invalid arguments

/// Invalid arguments of 1 MiB for a `Vec<u32>`: each item wrong. Wording
/// 1 MiB of `[{},{},...]` once took 167 MB and 214 ms (the validator's list
/// of every item's error); the target is under 8 times the text.
#[test]
fn a_large_invalid_argument_is_worded_in_under_8x_its_size() {
    let _serial = serial();
    let registry = Registry::<()>::builder().tools(tools![sum_ids]).build().unwrap();
    let app = Arc::new(());
    let runtime = runtime();
    // 350,000 empty objects: more values than a call may hold.
    let objects = format!(r#"{{"ids":[{}]}}"#, vec!["{}"; (1024 * 1024 - 16) / 3].join(","));
    // 30,000 strings of 31 characters: within the value limit, every one
    // of the wrong type.
    let strings = format!(r#"{{"ids":[{}]}}"#, vec![format!("\"{}\"", "x".repeat(31)); 30_000].join(","));
    for (text, code, problem) in [(&objects, "ARGUMENTS_TOO_MANY_VALUES", "32768 values"), (&strings, "INVALID_ARGUMENTS", "/ids/0")] {
        assert!(text.len() > 1_000_000 && text.len() <= 1024 * 1024, "{}", text.len());
        let started = Instant::now();
        let (result, peak) = peak_during(|| runtime.block_on(registry.invoke(&app, "sum_ids", text.as_str())));
        let elapsed = started.elapsed();
        assert_eq!(result.kind, ResultKind::InvalidArguments, "{}", result.text);
        assert_eq!(result.error_code.as_deref(), Some(code), "{}", result.text);
        assert!(result.text.contains(problem), "{}", result.text);
        assert!(result.text.len() < 2_000, "the model reads a few problems, not all: {} bytes", result.text.len());
        eprintln!("invalid argument of {} bytes ({code}): peak {peak} bytes above the text, {elapsed:?}", text.len());
        assert!(peak < 8 * text.len(), "peak {peak} bytes for {} bytes of arguments", text.len());
    }
}

/// The value limit holds on the fast path as on the full one.
#[test]
fn the_value_limit_is_the_same_on_the_fast_path_and_the_full_path() {
    let _serial = serial();
    let fast = Registry::<()>::builder().tools(tools![sum_ids]).build().unwrap();
    let full = Registry::<()>::builder().tools(tools![sum_ids]).validate_every_call(true).build().unwrap();
    let app = Arc::new(());
    let runtime = runtime();
    let ids = |n: usize| format!(r#"{{"ids":[{}]}}"#, vec!["1"; n].join(","));
    // The object and its list are two values besides the items.
    for (items, code) in [(32_766, None), (32_767, Some("ARGUMENTS_TOO_MANY_VALUES"))] {
        let text = ids(items);
        for registry in [&fast, &full] {
            let result = runtime.block_on(registry.invoke(&app, "sum_ids", text.as_str()));
            assert_eq!(result.error_code.as_deref(), code, "{items} items: {}", result.text);
        }
    }
}

// ------------------------------------------------- 8: pending approvals

#[test]
fn a_pending_call_keeps_its_arguments_once() {
    let _serial = serial();
    let registry = Registry::<()>::builder().tools(tools![store_note]).build().unwrap();
    let app = Arc::new(());
    let note = "n".repeat(1024 * 1024 - 32);
    let text = json!({ "note": note }).to_string();
    let runtime = runtime();
    let before = LIVE.load(Ordering::SeqCst);
    let outcome = runtime.block_on(registry.call(&app, "store_note", text.as_str()).call_id("c1").into_future());
    let kept = LIVE.load(Ordering::SeqCst).saturating_sub(before);
    let CallOutcome::NeedsApproval(pending) = outcome else { panic!("expected a pending call") };
    eprintln!("a pending call of {} bytes of arguments keeps {kept} bytes", text.len());
    // The parsed input (the note) and the text it came from: no third copy.
    assert!(kept < 2 * text.len() + 64 * 1024, "a pending call keeps {kept} bytes for {} bytes of arguments", text.len());
    assert_eq!(pending.arguments()["note"].as_str().map(str::len), Some(note.len()));
    let result = runtime.block_on(registry.approve(pending));
    assert_eq!(result.text, note.len().to_string());

    // Many small values: a JSON value of them would be 72 bytes each.
    let registry = Registry::<()>::builder().tools(tools![store_ids]).build().unwrap();
    let zeros = vec!["0"; (1024 * 1024 - 16) / 2].join(",");
    let text = format!(r#"{{"ids":[{zeros}]}}"#);
    let before = LIVE.load(Ordering::SeqCst);
    let outcome = runtime.block_on(registry.call(&app, "store_ids", text.as_str()).call_id("c2").into_future());
    let kept = LIVE.load(Ordering::SeqCst).saturating_sub(before);
    eprintln!("a pending call of {} bytes of small values keeps {kept} bytes", text.len());
    assert!(kept < 4 * text.len(), "a pending call keeps {kept} bytes for {} bytes of arguments", text.len());
    drop(outcome);
}

/// A run that is not durable keeps a pending call's arguments once, in
/// the call: its memory parked a second copy as a JSON value, 72 bytes a
/// number, and a 64 KiB list of numbers waiting in a run cost 39.0 times
/// its text, 38.0 more when the host gave a parsed value (now 3.0 and
/// 2.0). Measured as the heap bytes live after the step that parked it,
/// less those before its `ToolCall` was made (the host's value was made
/// before).
#[test]
fn a_pending_call_of_a_run_keeps_its_arguments_once() {
    let _serial = serial();
    let registry = Registry::<()>::builder().tools(tools![store_ids]).build().unwrap();
    let zeros = vec!["0"; 32 * 1024 - 8].join(",");
    let text = format!(r#"{{"ids":[{zeros}]}}"#);
    let value: Value = serde_json::from_str(&text).unwrap();
    runtime().block_on(async {
        let mut run = registry.run(Arc::new(()));
        // Warm: the first parked call allocates what every later one reuses.
        drop(run.execute(vec![ToolCall::new("c0", "store_ids", json!({"ids": [1]}))]).await);
        for (id, arguments) in [("c1", Arguments::Text(text.as_str().into())), ("c2", Arguments::Value(value.clone()))] {
            let before = LIVE.load(Ordering::SeqCst);
            let step = run.execute(vec![ToolCall::new(id, "store_ids", arguments)]).await;
            assert_eq!(step.results[0].kind, ResultKind::PendingApproval, "{}", step.results[0].text);
            drop(step);
            let kept = LIVE.load(Ordering::SeqCst).saturating_sub(before);
            let times = kept as f64 / text.len() as f64;
            eprintln!("a pending call ({id}) of a run keeps {kept} bytes for {} bytes of arguments: {times:.1} times", text.len());
            assert!(times < 4.0, "a pending call of a run ({id}) keeps {times:.1} times its text");
        }
        assert_eq!(run.approvals().approve("c1").await.unwrap().text, (32 * 1024 - 8).to_string());
    });
}

#[tokio::test]
async fn pending_calls_of_a_run_are_capped() {
    let _serial = serial();
    let registry = Registry::<()>::builder().tools(tools![store_note]).max_pending_approvals(2).build().unwrap();
    let mut run = registry.run(Arc::new(()));
    let calls = (0..3).map(|i| ToolCall::new(format!("c{i}"), "store_note", json!({"note": "x"}))).collect();
    let step = run.execute(calls).await;
    let kinds: Vec<ResultKind> = step.results.iter().map(|result| result.kind).collect();
    assert_eq!(kinds, [ResultKind::PendingApproval, ResultKind::PendingApproval, ResultKind::Denied]);
    assert_eq!(step.results[2].error_code.as_deref(), Some("TOO_MANY_PENDING"), "{}", step.results[2].text);
    assert!(step.results[2].text.contains("2 calls already wait"), "{}", step.results[2].text);
    assert_eq!(run.pending().len(), 2);
    // Deciding one makes room.
    run.approvals().approve("c0").await.unwrap();
    let step = run.execute(vec![ToolCall::new("c3", "store_note", json!({"note": "y"}))]).await;
    assert_eq!(step.results[0].kind, ResultKind::PendingApproval);
}

// ------------------------------------ 8b: calls that never finished

/// Calls of `charge_slowly` that started, each by its order.
static CHARGES_STARTED: AtomicUsize = AtomicUsize::new(0);

/// Charge an order, once per order; it never answers, so every call times out.
#[tool(timeout = "10ms", idempotency_key = charged_order)]
async fn charge_slowly(order_id: String, note: String) -> String {
    CHARGES_STARTED.fetch_add(1, Ordering::SeqCst);
    std::future::pending::<()>().await;
    format!("charged {order_id}: {note}")
}

fn charged_order(input: &charge_slowly) -> String {
    input.order_id.clone()
}

/// A run that is not durable keeps a keyed call's effect only while it is
/// under way: 500 calls of 1 KiB that timed out once grew its memory by
/// 926,876 bytes (each kept for the whole run, as 6,000 grew an MCP
/// session by 10.3 MB; now 0), and a later call of the same key read `OUTCOME_UNKNOWN`
/// saying "started before a restart" though nothing restarted. Now it
/// runs, as after a finished call; so does the key of a call its caller
/// dropped. In a durable run the start stays, and the refusal says what
/// may have happened.
#[test]
fn a_run_that_is_not_durable_forgets_keyed_calls_that_never_finished() {
    let _serial = serial();
    let registry = Registry::<()>::builder().tools(tools![charge_slowly]).build().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
    let note = "n".repeat(1024);
    let charge = |id: &str, order: &str| ToolCall::new(id, "charge_slowly", json!({"order_id": order, "note": note}));
    runtime.block_on(async {
        let mut run = registry.run(Arc::new(()));
        let code = |step: &tool_runtime::StepResults| step.results[0].error_code.clone().unwrap_or_default();
        // Warm: the first call allocates what every later one reuses.
        assert_eq!(code(&run.execute(vec![charge("c0", "A-0")]).await), "TOOL_TIMEOUT");
        tokio::time::sleep(Duration::from_millis(1)).await;
        let before = LIVE.load(Ordering::SeqCst);
        for i in 1..=500 {
            let step = run.execute(vec![charge(&format!("c{i}"), &format!("A-{i}"))]).await;
            assert_eq!(code(&step), "TOOL_TIMEOUT", "{}", step.results[0].text);
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
        let grown = LIVE.load(Ordering::SeqCst).saturating_sub(before);
        eprintln!("500 keyed calls of 1 KiB that timed out grew the run's memory by {grown} bytes");
        assert!(grown < 100 * 1024, "the run kept what its calls that timed out started: {grown} bytes");

        let started = CHARGES_STARTED.load(Ordering::SeqCst);
        let again = run.execute(vec![charge("again", "A-7")]).await;
        assert_eq!(code(&again), "TOOL_TIMEOUT", "the key of a call that timed out runs again: {}", again.results[0].text);
        assert_eq!(CHARGES_STARTED.load(Ordering::SeqCst), started + 1);

        // Dropped by its caller while the tool runs.
        let dropped = tokio::time::timeout(Duration::from_millis(2), run.execute(vec![charge("dropped", "B-1")])).await;
        assert!(dropped.is_err(), "the call was dropped mid-way");
        tokio::time::sleep(Duration::from_millis(1)).await;
        let after_drop = run.execute(vec![charge("after-drop", "B-1")]).await;
        assert_eq!(code(&after_drop), "TOOL_TIMEOUT", "the key of a dropped call runs again: {}", after_drop.results[0].text);

        // A durable run keeps the start: the refusal says what may have happened, and nothing of a restart.
        let mut durable = registry.run(Arc::new(())).durable(&tool_runtime::memory::LocalMemory::default(), "durable").await.unwrap();
        assert_eq!(code(&durable.execute(vec![charge("d1", "C-1")]).await), "TOOL_TIMEOUT");
        let refused = durable.execute(vec![charge("d2", "C-1")]).await;
        let text = &refused.results[0].text;
        assert_eq!(code(&refused), "OUTCOME_UNKNOWN", "{text}");
        assert!(text.contains("timed out, was cancelled, or its process stopped") && !text.contains("restart"), "{text}");
    });
}

// ------------------------------------------------ 9: policy predicates

#[tokio::test]
async fn a_predicate_that_never_answers_denies_at_the_policy_timeout() {
    let _serial = serial();
    let reports = Arc::new(Mutex::new(Vec::<ErrorReport>::new()));
    let sink = reports.clone();
    let registry = Registry::<()>::builder()
        .tools(tools![stuck])
        .policy_timeout(Duration::from_millis(200))
        .on_tool_error(move |report: &ErrorReport| sink.lock().unwrap().push(report.clone()))
        .build()
        .unwrap();
    let result = registry.invoke(&Arc::new(()), "stuck", r#"{"order_id": "A-1"}"#).await;
    assert_eq!(result.kind, ResultKind::Denied);
    assert_eq!(result.error_code.as_deref(), Some("POLICY_TIMEOUT"), "{}", result.text);
    assert!(result.text.contains("within 200ms"), "{}", result.text);
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].kind, ErrorKind::Policy);
}

#[tokio::test]
async fn a_predicate_stops_when_its_run_is_cancelled() {
    let _serial = serial();
    let registry = Registry::<()>::builder().tools(tools![stuck]).build().unwrap();
    let mut run = registry.run(Arc::new(()));
    let cancel = run.cancellation().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let step = run.execute(vec![ToolCall::new("c1", "stuck", r#"{"order_id": "A-1"}"#)]);
    let step = tokio::time::timeout(Duration::from_secs(5), step).await.expect("the step waited for the predicate");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(step.results[0].kind, ResultKind::Cancelled, "{}", step.results[0].text);
}

// ------------------------------------------------------ 10: depth limit

#[test]
fn a_depth_limit_beyond_what_json_parses_is_refused_at_build() {
    let _serial = serial();
    let error = Registry::<()>::builder().tools(tools![echo]).max_argument_depth(100_000).build().unwrap_err();
    assert!(error.problems.contains(&BuildProblem::DepthLimitTooHigh { depth: 100_000, max: tool_runtime::MAX_ARGUMENT_DEPTH }), "{error}");
    assert!(error.to_string().contains("lower it"), "{error}");
}

#[tokio::test]
async fn a_value_at_the_largest_depth_limit_is_checked_without_overflow() {
    let _serial = serial();
    /// Takes any JSON.
    #[tool]
    async fn swallow(value: Value) -> usize {
        value.to_string().len()
    }
    let registry = Registry::<()>::builder().tools(tools![swallow]).max_argument_depth(tool_runtime::MAX_ARGUMENT_DEPTH).build().unwrap();
    let mut deep = json!(1);
    for _ in 0..200_000 {
        deep = Value::Array(vec![deep]);
    }
    // Moved into the call, never copied or dropped here: both recurse.
    let arguments = serde_json::Map::from_iter([("value".to_owned(), deep)]);
    let result = registry.invoke(&Arc::new(()), "swallow", arguments).await;
    assert_eq!(result.kind, ResultKind::InvalidArguments, "{}", result.text);
    let mut fits = json!(1);
    for _ in 0..tool_runtime::MAX_ARGUMENT_DEPTH - 2 {
        fits = Value::Array(vec![fits]);
    }
    let result = registry.invoke(&Arc::new(()), "swallow", json!({ "value": fits })).await;
    assert_eq!(result.kind, ResultKind::Success, "{}", result.text);
}

// ------------------------------------- 14: a panicking `Deserialize`

#[tokio::test]
async fn a_panicking_deserialize_gives_the_generic_500_on_every_path() {
    let _serial = serial();
    quiet_panics();
    let app = Arc::new(());
    let fast = Registry::<()>::builder().tools(tools![touchy, touchy_approved]).build().unwrap();
    let full = Registry::<()>::builder().tools(tools![touchy, touchy_approved]).validate_every_call(true).build().unwrap();
    for registry in [&fast, &full] {
        for tool in ["touchy", "touchy_approved"] {
            let as_text = registry.invoke(&app, tool, r#"{"value": "boom"}"#).await;
            let as_value = registry.invoke(&app, tool, json!({"value": "boom"})).await;
            for result in [as_text, as_value] {
                assert_eq!(result.kind, ResultKind::Internal, "{tool}: {}", result.text);
                assert!(!result.text.contains("exploded"), "{}", result.text);
            }
        }
    }
    assert_eq!(fast.invoke(&app, "touchy", r#"{"value": "calm"}"#).await.text, "calm");
}

// ------------------------------------------ 15: duplicate call ids

#[tokio::test]
async fn two_calls_with_one_id_in_a_step_lose_no_result() {
    let _serial = serial();
    let registry = Registry::<()>::builder().tools(tools![store_note, echo]).build().unwrap();
    let mut run = registry.run(Arc::new(()));
    let step = run
        .execute(vec![ToolCall::new("same", "store_note", json!({"note": "first"})), ToolCall::new("same", "echo", json!({"text": "second"}))])
        .await;
    assert_eq!(step.results[0].kind, ResultKind::PendingApproval);
    assert_eq!(step.results[1].kind, ResultKind::InvalidArguments);
    assert_eq!(step.results[1].error_code.as_deref(), Some("DUPLICATE_CALL_ID"), "{}", step.results[1].text);
    assert!(step.results[1].text.contains("`same`"), "{}", step.results[1].text);
    // The pending call is the first one, and stays decidable.
    let approved = run.approvals().approve("same").await.unwrap();
    assert_eq!(approved.text, "5");
    // An id still waiting from an earlier step is taken too.
    run.execute(vec![ToolCall::new("later", "store_note", json!({"note": "x"}))]).await;
    let step = run.execute(vec![ToolCall::new("later", "echo", json!({"text": "y"}))]).await;
    assert_eq!(step.results[0].error_code.as_deref(), Some("DUPLICATE_CALL_ID"));
    assert_eq!(run.pending().len(), 1);
}

// ----------------------------------------- 16: outside a Tokio runtime

#[test]
fn a_tool_that_waits_outside_tokio_fails_with_what_it_needs() {
    let _serial = serial();
    let reports = Arc::new(Mutex::new(Vec::<ErrorReport>::new()));
    let sink = reports.clone();
    let registry = Registry::<()>::builder()
        .tools(tools![yields, echo])
        .on_tool_error(move |report: &ErrorReport| sink.lock().unwrap().push(report.clone()))
        .build()
        .unwrap();
    let app = Arc::new(());
    let result = poll_to_end(registry.invoke(&app, "yields", "{}"));
    assert_eq!(result.kind, ResultKind::Internal, "{}", result.text);
    let reports = reports.lock().unwrap();
    assert!(reports[0].error.contains("needs a Tokio runtime"), "{:?}", reports[0].error);
    // A tool that does not wait needs no runtime.
    assert_eq!(poll_to_end(registry.invoke(&app, "echo", r#"{"text": "hi"}"#)).text, "hi");
}

/// Polls a future on this thread with no runtime at all.
fn poll_to_end<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(std::task::Waker::noop());
    for _ in 0..1_000 {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
    panic!("the call did not finish in 1,000 polls");
}

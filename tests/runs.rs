//! Runs, rule by rule: what a run offers each step, how a step's calls
//! execute, approvals inside a run, and how a run ends.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tool_runtime::prelude::*;
use tool_runtime::{ErrorKind, ProgressSink, ResultKind, Run, RunState};

#[derive(Default)]
struct Desk {
    stock: AtomicUsize,
    reports: Mutex<Vec<tool_runtime::ErrorReport>>,
}

/// Classify the request; offered on the first step only.
#[tool(visible_when = first_step)]
async fn classify(text: String) -> String {
    if text.contains("refund") { "refund".into() } else { "other".into() }
}

// A tool without `Ctx` works with any app, so its predicates are generic.
fn first_step<App>(view: &StepView<'_, App>) -> bool {
    view.step == 0
}

/// Look up an order.
#[tool(read_only)]
async fn lookup(order_id: String) -> String {
    tokio::time::sleep(Duration::from_millis(150)).await;
    format!("order {order_id}")
}

/// Check the stock; parallel-safe.
#[tool(parallel_safe)]
async fn check(sku: String) -> String {
    tokio::time::sleep(Duration::from_millis(150)).await;
    format!("in stock: {sku}")
}

/// Refund; offered only after `lookup` ran.
#[tool(requires("lookup"))]
async fn refund(order_id: String) -> String {
    format!("refunded {order_id}")
}

/// Take one item from stock.
#[tool]
async fn take(ctx: Ctx<Desk>) -> String {
    tokio::time::sleep(Duration::from_millis(150)).await;
    let left = ctx.app().stock.fetch_sub(1, Ordering::SeqCst) - 1;
    format!("left: {left}")
}

/// Take one item, but only while the stock lasts (the policy reads state).
#[tool(policy = while_in_stock)]
async fn take_checked(ctx: Ctx<Desk>) -> String {
    let left = ctx.app().stock.fetch_sub(1, Ordering::SeqCst) - 1;
    format!("left: {left}")
}

fn while_in_stock(_input: &take_checked, ctx: &Ctx<Desk>) -> Verdict {
    if ctx.app().stock.load(Ordering::SeqCst) > 0 { Verdict::Allow } else { Verdict::deny("Out of stock.") }
}

/// Hand the case to a human; ends the run.
#[tool(ends_run)]
async fn hand_over() -> String {
    "A human agent takes over.".into()
}

/// Needs approval.
#[tool(policy = needs_approval)]
async fn wire(amount: u32) -> String {
    format!("wired {amount}")
}

/// Reports progress.
#[tool]
async fn crunch(ctx: Ctx<Desk>) -> String {
    ctx.progress(1.0, Some(2.0), Some("half"));
    ctx.progress(2.0, Some(2.0), None);
    "done".into()
}

/// Waits until cancelled.
#[tool(timeout = "10s")]
async fn wait(ctx: Ctx<Desk>) -> String {
    ctx.cancellation().cancelled().await;
    "stopped".into()
}

/// Its visibility predicate panics.
#[tool(visible_when = broken_visibility)]
async fn flaky() -> String {
    "x".into()
}

fn broken_visibility<App>(_view: &StepView<'_, App>) -> bool {
    panic!("visibility bug")
}

fn registry(desk: &Arc<Desk>) -> Registry<Desk> {
    let sink = desk.clone();
    Registry::builder()
        .tools(tools![classify, lookup, check, refund, take, take_checked, hand_over, wire, crunch, wait, flaky])
        .on_tool_error(move |report| sink.reports.lock().unwrap().push(report.clone()))
        .build()
        .unwrap()
}

fn desk(stock: usize) -> Arc<Desk> {
    Arc::new(Desk { stock: AtomicUsize::new(stock), ..Desk::default() })
}

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new(id, name, args)
}

#[tokio::test]
async fn a_hidden_tool_is_not_offered_and_cannot_be_called_by_name() {
    let desk = desk(5);
    let mut run = registry(&desk).run(desk.clone());
    assert!(run.offered_names().contains(&"classify".to_owned()));
    run.execute(vec![call("1", "classify", json!({"text": "refund"}))]).await;
    assert!(!run.offered_names().contains(&"classify".to_owned()));
    let step = run.execute(vec![call("2", "classify", json!({"text": "refund"}))]).await;
    assert_eq!(step.results[0].kind, ResultKind::UnknownTool);
    assert_eq!(run.executed(), ["classify"]);
}

#[tokio::test]
async fn requires_offers_a_tool_only_after_its_prerequisite_ran_successfully() {
    let desk = desk(5);
    let mut run = registry(&desk).run(desk.clone());
    assert!(!run.offered_names().contains(&"refund".to_owned()));
    let step = run.execute(vec![call("1", "refund", json!({"order_id": "A"}))]).await;
    assert_eq!(step.results[0].kind, ResultKind::UnknownTool, "not offered, so not callable");
    // A failed call of the prerequisite does not count.
    run.execute(vec![call("2", "lookup", json!({"order_id": 7}))]).await;
    assert!(!run.offered_names().contains(&"refund".to_owned()));
    run.execute(vec![call("3", "lookup", json!({"order_id": "A"}))]).await;
    assert!(run.offered_names().contains(&"refund".to_owned()));
    let step = run.execute(vec![call("4", "refund", json!({"order_id": "A"}))]).await;
    assert_eq!(step.results[0].text, "refunded A");
}

#[tokio::test]
async fn an_offered_tool_passes_both_visibility_and_requires_in_declaration_order() {
    let desk = desk(5);
    let mut run = registry(&desk).run(desk.clone());
    assert_eq!(run.offered_names(), ["classify", "lookup", "check", "take", "take_checked", "hand_over", "wire", "crunch", "wait"]);
    run.execute(vec![call("1", "lookup", json!({"order_id": "A"}))]).await;
    assert_eq!(run.offered_names(), ["lookup", "check", "refund", "take", "take_checked", "hand_over", "wire", "crunch", "wait"]);
}

#[tokio::test]
async fn a_visibility_predicate_that_panics_hides_its_tool_and_is_reported() {
    let desk = desk(5);
    let run = registry(&desk).run(desk.clone());
    assert!(!run.offered_names().contains(&"flaky".to_owned()));
    let reports = desk.reports.lock().unwrap();
    assert!(reports.iter().any(|r| r.tool == "flaky" && r.kind == ErrorKind::Visibility && r.error.contains("visibility bug")));
}

#[tokio::test]
async fn calls_of_a_step_run_concurrently_when_all_are_parallel_safe() {
    let desk = desk(5);
    let mut run = registry(&desk).run(desk.clone());
    let started = Instant::now();
    let step = run.execute(vec![call("1", "lookup", json!({"order_id": "A"})), call("2", "check", json!({"sku": "S"}))]).await;
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_millis(290), "two 150 ms calls took {elapsed:?}");
    assert_eq!(step.results[0].text, "order A");
    assert_eq!(step.results[1].text, "in stock: S");
}

#[tokio::test]
async fn calls_of_a_step_run_in_order_when_one_is_not_parallel_safe() {
    let desk = desk(5);
    let mut run = registry(&desk).run(desk.clone());
    let started = Instant::now();
    let step = run.execute(vec![call("1", "lookup", json!({"order_id": "A"})), call("2", "take", json!({}))]).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(step.results.iter().map(|r| r.call_id.as_str()).collect::<Vec<_>>(), ["1", "2"]);
}

/// Put one item back in stock; parallel-safe, and slow.
#[tool(parallel_safe)]
async fn restock(ctx: Ctx<Desk>) -> String {
    tokio::time::sleep(Duration::from_millis(100)).await;
    let left = ctx.app().stock.fetch_add(1, Ordering::SeqCst) + 1;
    format!("left: {left}")
}

/// Take one item while the stock lasts; parallel-safe.
#[tool(parallel_safe, policy = while_in_stock_parallel)]
async fn take_parallel(ctx: Ctx<Desk>) -> String {
    let left = ctx.app().stock.fetch_sub(1, Ordering::SeqCst) - 1;
    format!("left: {left}")
}

fn while_in_stock_parallel(_input: &take_parallel, ctx: &Ctx<Desk>) -> Verdict {
    if ctx.app().stock.load(Ordering::SeqCst) > 0 { Verdict::Allow } else { Verdict::deny("Out of stock.") }
}

#[tokio::test]
async fn in_a_concurrent_step_a_predicate_is_decided_after_the_earlier_calls_finished() {
    let desk = desk(0);
    let registry = Registry::<Desk>::builder().tools(tools![restock, check, take_parallel]).build().unwrap();
    let mut run = registry.run(desk.clone());
    let started = Instant::now();
    let step =
        run.execute(vec![call("1", "restock", json!({})), call("2", "check", json!({"sku": "S"})), call("3", "take_parallel", json!({}))]).await;
    // The predicate read the stock the restock put back.
    assert_eq!(step.results[2].kind, ResultKind::Success, "{}", step.results[2].text);
    assert_eq!(step.results[2].text, "left: 0");
    // The calls before it still ran side by side (100 ms and 150 ms).
    assert!(started.elapsed() < Duration::from_millis(240), "took {:?}", started.elapsed());
}

#[tokio::test]
async fn a_sequential_predicate_sees_what_earlier_calls_of_the_step_changed() {
    let desk = desk(1);
    let mut run = registry(&desk).run(desk.clone());
    let step = run.execute(vec![call("1", "take_checked", json!({})), call("2", "take_checked", json!({}))]).await;
    assert_eq!(step.results[0].text, "left: 0");
    assert_eq!(step.results[1].kind, ResultKind::Denied, "the second call is decided after the first ran");
    assert!(step.results[1].text.contains("Out of stock."));
}

#[tokio::test]
async fn after_a_run_ending_call_the_step_finishes_then_one_last_step_has_no_tools() {
    let desk = desk(5);
    let mut run = registry(&desk).run(desk.clone());
    let step = run.execute(vec![call("1", "hand_over", json!({})), call("2", "lookup", json!({"order_id": "B"}))]).await;
    assert!(step.results[0].ends_run);
    assert_eq!(step.results[1].text, "order B", "the rest of the step still runs");
    assert_eq!(run.state(), &RunState::Ending { by: "hand_over".into() });
    assert!(run.offered().is_empty());
    let late = run.execute(vec![call("3", "lookup", json!({"order_id": "C"}))]).await;
    assert_eq!(late.results[0].kind, ResultKind::UnknownTool);
    run.finish().await;
    assert_eq!(run.state(), &RunState::Finished { by: Some("hand_over".into()) });
    assert_eq!(run.ended_by(), Some("hand_over"));
}

#[tokio::test]
async fn approvals_inside_a_run_settle_pending_calls() {
    let desk = desk(5);
    let mut run = registry(&desk).run(desk.clone());
    let mut step = run.execute(vec![call("w1", "wire", json!({"amount": 10})), call("w2", "wire", json!({"amount": 20}))]).await;
    assert!(step.has_pending());
    assert_eq!(run.pending().iter().map(|p| p.id().as_str()).collect::<Vec<_>>(), ["w1", "w2"]);
    let approved = run.approvals().approve_with("w1", json!({"amount": 15})).await.unwrap();
    assert_eq!(approved.text, "wired 15");
    step.settle(approved);
    let rejected = run.approvals().reject("w2", Some("Too much today.")).await.unwrap();
    step.settle(rejected);
    assert!(!step.has_pending());
    assert_eq!(step.results[1].kind, ResultKind::Rejected);
    assert_eq!(run.executed(), ["wire"]);
    assert!(run.approvals().approve("w2").await.is_err(), "an approval settles once");
}

#[tokio::test]
async fn tools_report_progress_to_the_host_with_their_call_id() {
    let desk = desk(5);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let mut run = registry(&desk).run(desk.clone()).with_progress(ProgressSink::new(move |progress| sink.lock().unwrap().push(progress)));
    run.execute(vec![call("p1", "crunch", json!({}))]).await;
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].call_id, "p1");
    assert_eq!(seen[0].message.as_deref(), Some("half"));
    assert_eq!(seen[1].progress, 2.0);
}

#[tokio::test]
async fn cancelling_the_run_cancels_its_running_calls() {
    let desk = desk(5);
    let mut run = registry(&desk).run(desk.clone());
    let token = run.cancellation().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        token.cancel();
    });
    let started = Instant::now();
    let step = run.execute(vec![call("c1", "wait", json!({}))]).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(step.results[0].kind, ResultKind::Cancelled);
}

#[tokio::test]
async fn each_call_gets_the_runs_user_and_thread_and_its_own_call_id() {
    /// Who am I.
    #[tool]
    async fn whoami(ctx: Ctx<()>) -> String {
        format!("{}:{}:{}", ctx.user().id.as_deref().unwrap_or("-"), ctx.thread_id().unwrap_or("-"), ctx.call_id())
    }
    let registry = Registry::<()>::builder().tools(tools![whoami]).build().unwrap();
    let mut run = registry.run(Arc::new(())).with_user(UserContext::new("u-1")).with_thread_id("t-9");
    let step = run.execute(vec![ToolCall::new("a", "whoami", "{}"), ToolCall::new("b", "whoami", "{}")]).await;
    assert_eq!(step.results[0].text, "u-1:t-9:a");
    assert_eq!(step.results[1].text, "u-1:t-9:b");
    assert_eq!(run.step(), 1);
}

/// Think for a minute; counts its starts (100 each) and how often it was
/// dropped before it finished (1 each).
#[tool(parallel_safe)]
async fn ponder(ctx: Ctx<Desk>) -> String {
    struct Dropped(Ctx<Desk>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.app().stock.fetch_add(1, Ordering::SeqCst);
        }
    }
    ctx.app().stock.fetch_add(100, Ordering::SeqCst);
    let dropped = Dropped(ctx.clone());
    tokio::time::sleep(Duration::from_secs(60)).await;
    std::mem::forget(dropped);
    "done".into()
}

/// Answer at once.
#[tool(parallel_safe)]
async fn quick() -> String {
    "quick".into()
}

fn deadline_registry() -> Registry<Desk> {
    Registry::<Desk>::builder().tools(tools![ponder, quick]).build().unwrap()
}

#[tokio::test]
async fn at_the_runs_deadline_calls_in_flight_are_cancelled_and_read_why() {
    let desk = desk(0);
    let mut run = deadline_registry().run(desk.clone()).with_deadline(Duration::from_millis(100));
    let started = Instant::now();
    let step = run.execute(vec![call("1", "quick", json!({})), call("2", "ponder", json!({}))]).await;
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    assert_eq!(step.results[0].text, "quick", "a call that finished in time keeps its result");
    let stopped = &step.results[1];
    assert_eq!(stopped.kind, ResultKind::TimedOut);
    assert_eq!(stopped.error_code.as_deref(), Some("RUN_DEADLINE"));
    assert!(stopped.text.contains("the run's time limit ran out") && stopped.text.ends_with("Do not retry this call."), "{}", stopped.text);
    // The tool was stopped: started once, dropped before it finished.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(desk.stock.load(Ordering::SeqCst), 101);

    // A later step of a run past its deadline runs nothing.
    let step = run.execute(vec![call("3", "ponder", json!({}))]).await;
    assert_eq!(step.results[0].error_code.as_deref(), Some("RUN_DEADLINE"));
    assert_eq!(desk.stock.load(Ordering::SeqCst), 101, "the call was not started");
}

#[tokio::test]
async fn a_step_timeout_stops_that_step_only() {
    let desk = desk(0);
    let mut run = deadline_registry().run(desk.clone()).with_step_timeout(Duration::from_millis(100));
    let step = run.execute(vec![call("1", "ponder", json!({}))]).await;
    assert_eq!(step.results[0].kind, ResultKind::TimedOut);
    assert_eq!(step.results[0].error_code.as_deref(), Some("STEP_DEADLINE"));
    assert!(step.results[0].text.contains("this step's time limit ran out"), "{}", step.results[0].text);
    let next = run.execute(vec![call("2", "quick", json!({}))]).await;
    assert_eq!(next.results[0].text, "quick", "the next step has a time limit of its own");
}

/// Gift wrap an order; only after `lookup` ran.
#[tool(requires("lookup"))]
async fn wrap_gift(order_id: String) -> String {
    format!("wrapped {order_id}")
}

/// Needs a tool nobody registered.
#[tool(requires("nowhere"))]
async fn orphan() -> String {
    "x".into()
}

#[tokio::test]
async fn a_run_can_be_given_tools_of_its_own_checked_like_the_registrys() {
    let desk = desk(5);
    let registry = registry(&desk);
    let mut run = registry.run(desk.clone()).with_tools(tools![wrap_gift]).unwrap();
    assert!(!run.offered_names().contains(&"wrap_gift".to_owned()), "its `requires` holds in the run");
    run.execute(vec![call("1", "lookup", json!({"order_id": "A"}))]).await;
    assert!(run.offered_names().contains(&"wrap_gift".to_owned()));
    let step = run.execute(vec![call("2", "wrap_gift", json!({"order_id": "A"}))]).await;
    assert_eq!(step.results[0].text, "wrapped A");
    // Other runs, and the registry, do not see it.
    assert!(registry.definition("wrap_gift").is_none());
    assert!(!registry.run(desk.clone()).offered_names().contains(&"wrap_gift".to_owned()));

    // The registry's checks apply.
    let twice = registry.run(desk.clone()).with_tools(tools![lookup]).unwrap_err();
    assert_eq!(twice.problems, [tool_runtime::BuildProblem::DuplicateName { tool: "lookup".into() }]);
    let unknown = registry.run(desk.clone()).with_tools(tools![orphan]).unwrap_err();
    assert_eq!(unknown.problems, [tool_runtime::BuildProblem::UnknownRequires { tool: "orphan".into(), requires: "nowhere".into() }]);
}

/// Charge a card; gives up on a declined card.
#[tool(max_retries = 2)]
async fn charge(amount: u32) -> Result<String, ToolError> {
    if amount > 100 { Err(ToolError::bad_request("DECLINED", "The card was declined.")) } else { Ok(format!("charged {amount}")) }
}

#[tokio::test]
async fn after_max_retries_failed_calls_a_tool_is_no_longer_offered_in_that_run() {
    let desk = desk(0);
    let registry = Registry::<Desk>::builder().tools(tools![charge, quick]).build().unwrap();
    assert_eq!(registry.definition("charge").unwrap().max_retries, Some(2));
    let mut run = registry.run(desk.clone());
    // A success does not count; a tool error and invalid arguments do.
    run.execute(vec![call("1", "charge", json!({"amount": 5}))]).await;
    run.execute(vec![call("2", "charge", json!({"amount": 500}))]).await;
    assert!(run.offered_names().contains(&"charge".to_owned()), "one failure of two");
    run.execute(vec![call("3", "charge", json!({"amount": "lots"}))]).await;
    assert_eq!(run.offered_names(), ["quick"]);
    let step = run.execute(vec![call("4", "charge", json!({"amount": 5})), call("5", "quick", json!({}))]).await;
    let refused = &step.results[0];
    assert_eq!(refused.error_code.as_deref(), Some("TOOL_EXHAUSTED"));
    assert!(refused.text.contains("failed 2 times in this run") && refused.text.ends_with("Do not retry this call."), "{}", refused.text);
    assert_eq!(step.results[1].text, "quick");
    // Another run starts afresh.
    assert!(registry.run(desk.clone()).offered_names().contains(&"charge".to_owned()));

    // A dynamic tool has the same option.
    let flaky = DynamicTool::new("flaky_lookup", "Look up, badly.", json!({"type": "object"}), |_args, _ctx: Ctx<Desk>| async {
        Err::<serde_json::Value, _>(ToolError::not_found("NOT_FOUND", "Nothing there."))
    })
    .max_retries(1);
    let registry = Registry::<Desk>::builder().tool(flaky).build().unwrap();
    let mut run = registry.run(desk);
    run.execute(vec![call("1", "flaky_lookup", json!({}))]).await;
    assert!(run.offered_names().is_empty());
}

/// Fetch `n` records; small fetches may run side by side.
#[tool(parallel_safe = small_fetch)]
async fn fetch(n: u32) -> String {
    tokio::time::sleep(Duration::from_millis(150)).await;
    format!("{n} records")
}

fn small_fetch(args: &serde_json::Value) -> Result<bool, String> {
    match args["n"].as_u64() {
        Some(13) => panic!("unlucky"),
        Some(20) => Err("twenty is not decided".into()),
        Some(n) => Ok(n < 10),
        None => Err("no n".into()),
    }
}

#[tokio::test]
async fn a_parallel_safe_predicate_decides_per_call_on_the_raw_arguments() {
    let desk = desk(0);
    let registry = Registry::<Desk>::builder().tools(tools![fetch]).build().unwrap();
    assert!(!registry.definition("fetch").unwrap().parallel_safe, "decided per call");
    let mut run = registry.run(desk.clone());
    let step_time = async |run: &mut Run<Desk>, a: serde_json::Value, b: serde_json::Value| {
        let started = Instant::now();
        run.execute(vec![call("1", "fetch", a), call("2", "fetch", b)]).await;
        started.elapsed()
    };
    let small = step_time(&mut run, json!({"n": 1}), json!({"n": 2})).await;
    assert!(small < Duration::from_millis(290), "two small fetches ran side by side: {small:?}");
    for (a, b) in [(json!({"n": 1}), json!({"n": 50})), (json!({"n": 1}), json!({"n": 20})), (json!({"n": 1}), json!({"n": 13}))] {
        let elapsed = step_time(&mut run, a.clone(), b.clone()).await;
        assert!(elapsed >= Duration::from_millis(300), "false, an error or a panic means in order ({a} {b}): {elapsed:?}");
    }

    // A dynamic tool has the same option.
    let slow = DynamicTool::new("slow", "Wait a little.", json!({"type": "object"}), |args: serde_json::Value, _ctx: Ctx<Desk>| async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        Ok::<_, ToolError>(args)
    })
    .parallel_safe_fn(|args| args["shared"] == json!(false));
    let registry = Registry::<Desk>::builder().tool(slow).build().unwrap();
    let mut run = registry.run(desk);
    let started = Instant::now();
    run.execute(vec![call("1", "slow", json!({"shared": false})), call("2", "slow", json!({"shared": false}))]).await;
    assert!(started.elapsed() < Duration::from_millis(290));
    let started = Instant::now();
    run.execute(vec![call("3", "slow", json!({"shared": true})), call("4", "slow", json!({"shared": false}))]).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
}

/// Transfer the chat to a person; the run halts at once.
#[tool(ends_turn)]
async fn transfer_to_agent() -> String {
    "Transferred.".into()
}

#[tokio::test]
async fn an_ends_turn_call_halts_the_run_on_the_same_step() {
    let desk = desk(0);
    let registry = Registry::<Desk>::builder().tools(tools![transfer_to_agent, quick]).build().unwrap();
    assert!(registry.definition("transfer_to_agent").unwrap().ends_turn);
    let mut run = registry.run(desk.clone());
    let step = run.execute(vec![call("1", "transfer_to_agent", json!({})), call("2", "quick", json!({}))]).await;
    assert_eq!(step.results[1].text, "quick", "the rest of the step still runs");
    assert_eq!(run.state(), &RunState::Finished { by: Some("transfer_to_agent".into()) });
    assert!(run.offered().is_empty(), "no trailing step");

    // A failed call does not halt it; a dynamic tool has the same option.
    let halt = DynamicTool::new(
        "halt",
        "Stop here.",
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
        |args: serde_json::Value, _ctx: Ctx<Desk>| async move {
            if args["ok"] == json!(true) { Ok(json!("halted")) } else { Err(ToolError::bad_request("NOT_NOW", "Not now.")) }
        },
    )
    .ends_turn(true);
    let registry = Registry::<Desk>::builder().tool(halt).build().unwrap();
    let mut run = registry.run(desk);
    run.execute(vec![call("1", "halt", json!({"ok": false}))]).await;
    assert_eq!(run.state(), &RunState::Active);
    run.execute(vec![call("2", "halt", json!({"ok": true}))]).await;
    assert_eq!(run.state(), &RunState::Finished { by: Some("halt".into()) });
}

/// Books a slot with a partner; once started it must finish.
#[tool(interruptible = false, timeout = "2s")]
async fn book(ctx: Ctx<Desk>) -> String {
    tokio::time::sleep(Duration::from_millis(60)).await;
    ctx.app().stock.fetch_add(1, Ordering::SeqCst);
    format!("booked; token cancelled: {}", ctx.cancellation().is_cancelled())
}

/// Waits on its token; not interruptible, so only its timeout stops it.
#[tool(interruptible = false, timeout = "80ms")]
async fn hold(ctx: Ctx<Desk>) -> String {
    ctx.cancellation().cancelled().await;
    "released".into()
}

fn uninterruptible() -> Registry<Desk> {
    let book_dynamic = DynamicTool::new("book_dynamic", "Book, dynamically.", json!({"type": "object"}), |_args, ctx: Ctx<Desk>| async move {
        tokio::time::sleep(Duration::from_millis(60)).await;
        Ok::<_, ToolError>(json!(format!("booked; token cancelled: {}", ctx.cancellation().is_cancelled())))
    })
    .interruptible(false);
    Registry::builder().tools(tools![book, hold, wait]).tool(book_dynamic).build().unwrap()
}

#[tokio::test]
async fn a_tool_that_is_not_interruptible_finishes_when_its_run_is_cancelled_meanwhile() {
    let desk = desk(0);
    let registry = uninterruptible();
    assert!(!registry.definition("book").unwrap().interruptible);
    assert!(registry.definition("wait").unwrap().interruptible);
    for tool in ["book", "book_dynamic"] {
        let mut run = registry.run(desk.clone());
        let token = run.cancellation().clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(15)).await;
            token.cancel();
        });
        let step = run.execute(vec![call("c1", tool, json!({}))]).await;
        assert_eq!(step.results[0].kind, ResultKind::Success, "{tool}: {}", step.results[0].text);
        assert_eq!(step.results[0].text, "booked; token cancelled: false", "{tool}");
    }
    // The same cancellation stops an interruptible tool.
    let mut run = registry.run(desk.clone());
    run.cancel();
    assert_eq!(run.execute(vec![call("c2", "wait", json!({}))]).await.results[0].kind, ResultKind::Cancelled);
}

#[tokio::test]
async fn a_tool_that_is_not_interruptible_is_still_stopped_by_its_timeout() {
    let desk = desk(0);
    let registry = uninterruptible();
    let token = tool_runtime::CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let result = registry.call(&desk, "hold", "{}").cancellation(&token).await.into_result().unwrap();
    assert_eq!(result.kind, ResultKind::TimedOut, "{}", result.text);
    assert!(started.elapsed() >= Duration::from_millis(80));
}

#[tokio::test]
async fn a_dropped_call_of_a_tool_that_is_not_interruptible_runs_on_to_its_end() {
    let desk = desk(0);
    let registry = uninterruptible();
    let call = registry.invoke(&desk, "book", "{}");
    // Dropped while the tool sleeps.
    assert!(tokio::time::timeout(Duration::from_millis(15), call).await.is_err());
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(desk.stock.load(Ordering::SeqCst), 1, "the booking went through");
}

/// Pay out; a human approves payouts over 100, and nothing to pay fails.
#[tool(max_retries = 1, policy = large_payouts_need_approval)]
async fn payout(ctx: Ctx<Desk>, amount: u32) -> Result<String, ToolError> {
    if amount == 0 {
        return Err(ToolError::bad_request("NOTHING_TO_PAY", "There is nothing to pay."));
    }
    ctx.app().stock.fetch_add(1, Ordering::SeqCst);
    Ok(format!("paid {amount}"))
}

fn large_payouts_need_approval(input: &payout, _ctx: &Ctx<Desk>) -> Verdict {
    if input.amount > 100 { Verdict::needs_approval() } else { Verdict::Allow }
}

#[tokio::test]
async fn a_parked_call_of_a_tool_that_max_retries_has_since_exhausted_is_refused_at_approval() {
    let desk = desk(0);
    let registry = Registry::<Desk>::builder().tools(tools![payout]).build().unwrap();
    let mut run = registry.run(desk.clone());
    let step = run.execute(vec![call("p1", "payout", json!({"amount": 500})), call("p2", "payout", json!({"amount": 600}))]).await;
    assert!(step.has_pending());
    // The tool fails once: `max_retries = 1` is used up, it is no longer offered.
    let step = run.execute(vec![call("p3", "payout", json!({"amount": 0}))]).await;
    assert_eq!(step.results[0].error_code.as_deref(), Some("NOTHING_TO_PAY"));
    assert!(run.offered_names().is_empty());

    let approved = run.approvals().approve("p1").await.unwrap();
    assert_eq!(approved.kind, ResultKind::Denied, "{}", approved.text);
    assert_eq!(approved.error_code.as_deref(), Some("TOOL_EXHAUSTED"));
    let edited = run.approvals().approve_with("p2", json!({"amount": 700})).await.unwrap();
    assert_eq!(edited.error_code.as_deref(), Some("TOOL_EXHAUSTED"), "{}", edited.text);
    assert_eq!(desk.stock.load(Ordering::SeqCst), 0, "neither call ran");
    assert!(run.pending().is_empty(), "both calls are settled");
    assert!(run.executed().is_empty());
}

#[tokio::test]
async fn a_call_parked_before_the_runs_deadline_and_approved_after_it_is_not_run() {
    let desk = desk(0);
    let registry = Registry::<Desk>::builder().tools(tools![payout]).build().unwrap();
    let mut run = registry.run(desk.clone()).with_deadline(Duration::from_millis(100));
    let step = run.execute(vec![call("p1", "payout", json!({"amount": 500})), call("p2", "payout", json!({"amount": 600}))]).await;
    assert!(step.has_pending());
    tokio::time::sleep(Duration::from_millis(150)).await;

    let approved = run.approvals().approve("p1").await.unwrap();
    assert_eq!(approved.kind, ResultKind::TimedOut, "{}", approved.text);
    assert_eq!(approved.error_code.as_deref(), Some("RUN_DEADLINE"));
    assert!(approved.text.contains("the run's time limit ran out") && approved.text.ends_with("Do not retry this call."), "{}", approved.text);
    let edited = run.approvals().approve_with("p2", json!({"amount": 700})).await.unwrap();
    assert_eq!(edited.error_code.as_deref(), Some("RUN_DEADLINE"), "{}", edited.text);
    assert_eq!(desk.stock.load(Ordering::SeqCst), 0, "no call ran past the deadline");
    // A rejection is still the human's to make, and reads as one.
    assert!(run.pending().is_empty());
}

/// Answer, break, or take too long, as asked.
#[tool(max_retries = 2, timeout = "50ms")]
async fn brittle(mode: String) -> String {
    match mode.as_str() {
        "panic" => panic!("a bug in the tool"),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(10)).await;
            "late".into()
        }
        _ => "fine".into(),
    }
}

#[tokio::test]
async fn max_retries_counts_internal_errors_and_timeouts_too() {
    let desk = desk(0);
    let registry = Registry::<Desk>::builder().tools(tools![brittle, quick]).build().unwrap();
    let mut run = registry.run(desk.clone());
    let step = run.execute(vec![call("1", "brittle", json!({"mode": "panic"}))]).await;
    assert_eq!(step.results[0].kind, ResultKind::Internal);
    assert!(run.offered_names().contains(&"brittle".to_owned()), "one failure of two");
    let step = run.execute(vec![call("2", "brittle", json!({"mode": "slow"}))]).await;
    assert_eq!(step.results[0].error_code.as_deref(), Some("TOOL_TIMEOUT"));
    assert_eq!(run.offered_names(), ["quick"], "a tool that keeps breaking is no longer offered");
    let step = run.execute(vec![call("3", "brittle", json!({"mode": "ok"}))]).await;
    assert_eq!(step.results[0].error_code.as_deref(), Some("TOOL_EXHAUSTED"), "{}", step.results[0].text);
}

#[tokio::test]
async fn a_step_cut_off_by_its_time_limit_does_not_count_toward_max_retries() {
    let desk = desk(0);
    let registry = Registry::<Desk>::builder().tools(tools![brittle, ponder]).build().unwrap();
    let mut run = registry.run(desk.clone()).with_step_timeout(Duration::from_millis(20));
    for id in ["1", "2", "3"] {
        let step = run.execute(vec![call(id, "ponder", json!({}))]).await;
        assert_eq!(step.results[0].error_code.as_deref(), Some("STEP_DEADLINE"));
    }
    assert_eq!(run.offered_names(), ["brittle", "ponder"], "the step's limit, not the tool, stopped those calls");
}

// ---------------------------------------------------------------- what a policy predicate sees of its run

/// What the predicate of `pay` saw, per call: the step, the tools executed
/// before the step, and the step's other calls with their amounts.
type Seen = Vec<(usize, Vec<String>, Vec<(String, Option<u64>)>)>;

static SEEN: Mutex<Seen> = Mutex::new(Vec::new());

/// Pay an amount; judged with the rest of its step in view.
#[tool(policy = judge_pay)]
async fn pay(ctx: Ctx<Desk>, amount: u64) -> String {
    assert!(ctx.run().is_some(), "the tool's own context carries the view of a call judged by a predicate");
    format!("paid {amount}")
}

fn judge_pay(input: &pay, ctx: &Ctx<Desk>) -> Verdict {
    let Some(run) = ctx.run() else { return Verdict::deny("Pay only within a run.") };
    let others: Vec<(String, Option<u64>)> =
        ctx.other_calls().map(|call| (call.name.clone(), call.input().and_then(|input| input["amount"].as_u64()))).collect();
    SEEN.lock().unwrap().push((run.step, run.executed.clone(), others.clone()));
    let step_total: u64 = input.amount + others.iter().filter(|(name, _)| name == "pay").filter_map(|(_, amount)| *amount).sum::<u64>();
    if !run.has_executed("lookup") {
        Verdict::deny("Look the order up first.")
    } else if step_total > 100 {
        Verdict::needs_approval()
    } else {
        Verdict::Allow
    }
}

#[tokio::test]
async fn a_policy_predicate_sees_the_runs_record_and_the_steps_other_calls() {
    let registry = Registry::<Desk>::builder().tools(tools![lookup, pay, check]).build().unwrap();
    let app = Arc::new(Desk::default());

    // Outside a run there is no run to see.
    let outside = registry.invoke(&app, "pay", r#"{"amount": 5}"#).await;
    assert_eq!((outside.kind, outside.text.contains("Pay only within a run.")), (ResultKind::Denied, true), "{}", outside.text);

    let mut run = registry.run(app);
    let step = run.execute(vec![ToolCall::new("c1", "pay", r#"{"amount": 5}"#)]).await;
    assert_eq!(step.results[0].kind, ResultKind::Denied, "{}", step.results[0].text);
    run.execute(vec![ToolCall::new("c2", "lookup", r#"{"order_id": "A-1"}"#)]).await;

    // Two payments and a stock check in one step: each payment sees the others (their total decides).
    let step = run
        .execute(vec![
            ToolCall::new("c3", "pay", r#"{"amount": 60}"#),
            ToolCall::new("", "check", r#"{"sku": "K-1"}"#),
            ToolCall::new("c4", "pay", r#"{"amount": 70}"#),
        ])
        .await;
    let kinds: Vec<ResultKind> = step.results.iter().map(|result| result.kind).collect();
    assert_eq!(kinds, [ResultKind::PendingApproval, ResultKind::Success, ResultKind::PendingApproval]);
    let seen = std::mem::take(&mut *SEEN.lock().unwrap());
    let lookup = || vec!["lookup".to_owned()];
    assert_eq!(
        seen,
        [
            (0, vec![], vec![]),
            (2, lookup(), vec![("check".to_owned(), None), ("pay".to_owned(), Some(70))]),
            (2, lookup(), vec![("pay".to_owned(), Some(60)), ("check".to_owned(), None)]),
        ],
        "the step's other calls in the model's order, without the call judged"
    );

    // The record as the step began; an input that is not JSON has none.
    let step = run.execute(vec![ToolCall::new("c5", "pay", r#"{"amount": 30}"#), ToolCall::new("c6", "pay", "{\"amount\": 90")]).await;
    assert_eq!((step.results[0].text.as_str(), step.results[1].kind), ("paid 30", ResultKind::InvalidArguments));
    let seen = std::mem::take(&mut *SEEN.lock().unwrap());
    assert_eq!(seen, [(3, vec!["lookup".to_owned(), "check".to_owned()], vec![("pay".to_owned(), None)])]);
}

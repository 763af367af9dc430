//! One call, rule by rule, through guard, validation, policy,
//! approval, execution, output and `ends_run`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::prelude::*;
use tool_runtime::{Arguments, CallOutcome, ErrorKind, ErrorReport, INTERNAL_ERROR_CODE, ResultKind};

#[derive(Default)]
struct App {
    policy_calls: AtomicUsize,
    executions: AtomicUsize,
    tokens: Mutex<Vec<tool_runtime::CancellationToken>>,
    reports: Mutex<Vec<ErrorReport>>,
}

fn app() -> Arc<App> {
    Arc::new(App::default())
}

/// Transfer money.
#[tool(policy = count_and_allow)]
async fn transfer(
    ctx: Ctx<App>,
    /// In cents.
    #[schemars(range(min = 1, max = 10000))]
    amount: u32,
    /// Three capital letters.
    #[schemars(regex(pattern = r"^[A-Z]{3}$"))]
    currency: String,
    /// A short note.
    #[schemars(length(max = 5))]
    #[tool(default)]
    note: String,
    kind: Kind,
) -> String {
    ctx.app().executions.fetch_add(1, Ordering::SeqCst);
    format!("{amount} {currency} {note} {kind:?}")
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Instant,
    Standard,
}

fn count_and_allow(_input: &transfer, ctx: &Ctx<App>) -> Verdict {
    ctx.app().policy_calls.fetch_add(1, Ordering::SeqCst);
    Verdict::Allow
}

/// Says pong.
#[tool]
async fn ping() -> &'static str {
    "pong"
}

/// Always refused.
#[tool(policy = deny, tags("billing"))]
async fn kill_switch(ctx: Ctx<App>) -> String {
    ctx.app().executions.fetch_add(1, Ordering::SeqCst);
    "ran".into()
}

/// Refund an order; large refunds need a human.
#[tool(policy = refund_policy, tags("billing"))]
async fn refund(ctx: Ctx<App>, order_id: String, amount: u32) -> String {
    ctx.app().executions.fetch_add(1, Ordering::SeqCst);
    format!("refunded {amount} on {order_id}")
}

async fn refund_policy(input: &refund, ctx: &Ctx<App>) -> Verdict {
    ctx.app().policy_calls.fetch_add(1, Ordering::SeqCst);
    tokio::task::yield_now().await;
    if input.order_id == "FROZEN" {
        Verdict::deny("This order is frozen; tell the customer to call support.")
    } else if input.amount > 100 && ctx.user().attribute("role").and_then(Value::as_str) != Some("manager") {
        Verdict::needs_approval().with_rejection_text("A manager declined the refund.")
    } else {
        Verdict::Allow
    }
}

/// A tool whose policy panics.
#[tool(policy = panicking_policy)]
async fn fragile(ctx: Ctx<App>) -> String {
    ctx.app().executions.fetch_add(1, Ordering::SeqCst);
    "ran".into()
}

fn panicking_policy(_input: &fragile, _ctx: &Ctx<App>) -> Verdict {
    panic!("policy secret: db-password-123")
}

/// A tool whose policy fails.
#[tool(policy = failing_policy)]
async fn shaky(ctx: Ctx<App>) -> String {
    ctx.app().executions.fetch_add(1, Ordering::SeqCst);
    "ran".into()
}

fn failing_policy(_input: &shaky, _ctx: &Ctx<App>) -> Result<Verdict, std::io::Error> {
    Err(std::io::Error::other("connection to policy-db.internal refused"))
}

/// Waits for cancellation.
#[tool(timeout = "50ms")]
async fn slow(ctx: Ctx<App>) -> String {
    ctx.app().tokens.lock().unwrap().push(ctx.cancellation().clone());
    ctx.cancellation().cancelled().await;
    "cancelled".into()
}

/// Counts its runs.
#[tool]
async fn tally(ctx: Ctx<App>) -> String {
    ctx.app().executions.fetch_add(1, Ordering::SeqCst);
    "counted".into()
}

/// Ignores cancellation.
#[tool(timeout = "50ms")]
async fn stubborn() -> String {
    loop {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
}

/// Panics.
#[tool]
async fn boom(secret: String) -> String {
    panic!("tool panicked with {secret}")
}

/// Fails with an error that is not a ToolError.
#[tool]
async fn outage(secret: String) -> Result<String, std::io::Error> {
    Err(std::io::Error::other(format!("connect to {secret} failed")))
}

/// Fails with a ToolError.
#[tool]
async fn missing(secret: String) -> Result<String, ToolError> {
    Err(ToolError::not_found("ORDER_NOT_FOUND", "No such order; ask the customer for the invoice number.")
        .no_retry()
        .with_message(format!("row missing: {secret}"))
        .with_data(json!({ "secret": secret })))
}

#[derive(Serialize, JsonSchema)]
struct Summary {
    count: u32,
}

/// Structured output.
#[tool]
async fn summary() -> Summary {
    Summary { count: 3 }
}

/// Long output.
#[tool(max_output_chars = 5)]
async fn long() -> String {
    "ééééééééé".into()
}

/// An enormous output.
#[tool]
async fn flood() -> String {
    "x".repeat(10 * 1024 * 1024)
}

/// Hands over; ends the run only when accepted.
#[tool(ends_run = accepted)]
async fn hand_over(accept: bool) -> Result<String, ToolError> {
    if accept { Ok("accepted".into()) } else { Err(ToolError::conflict("BUSY", "No agent is free; try later.")) }
}

fn accepted(input: &hand_over, output: &String) -> bool {
    input.accept && output == "accepted"
}

/// Hands over to a queue; ends the run once the queue confirms.
#[tool(ends_run = queue_confirms)]
async fn hand_over_to(queue: String) -> String {
    queue
}

async fn queue_confirms(input: &hand_over_to, output: &String) -> bool {
    tokio::task::yield_now().await;
    input.queue == "humans" && output == "humans"
}

/// Returns the call's identity.
#[tool]
async fn whoami(ctx: Ctx<App>) -> String {
    format!("{:?}/{:?}/{}", ctx.user().id, ctx.thread_id(), ctx.call_id())
}

fn registry() -> Registry<App> {
    Registry::builder()
        .tools(tools![
            transfer,
            ping,
            kill_switch,
            refund,
            fragile,
            shaky,
            slow,
            stubborn,
            boom,
            outage,
            missing,
            summary,
            long,
            hand_over,
            hand_over_to,
            whoami,
            flood
        ])
        .build()
        .unwrap()
}

fn registry_with_reports(app: &Arc<App>) -> Registry<App> {
    let sink = app.clone();
    Registry::builder()
        .tools(tools![transfer, fragile, shaky, slow, boom, outage, missing, ping])
        .on_tool_error(move |report| sink.reports.lock().unwrap().push(report.clone()))
        .build()
        .unwrap()
}

const VALID_TRANSFER: &str = r#"{"amount": 5, "currency": "EUR", "kind": "instant"}"#;

#[tokio::test]
async fn arguments_over_the_size_limit_are_refused_before_parsing() {
    let registry = Registry::<App>::builder().tools(tools![transfer]).max_argument_bytes(16).build().unwrap();
    let result = registry.invoke(&app(), "transfer", VALID_TRANSFER).await;
    assert_eq!(result.kind, ResultKind::InvalidArguments);
    assert_eq!(result.error_code.as_deref(), Some("ARGUMENTS_TOO_LARGE"));
    assert_eq!(result.status, Some(413));
}

#[tokio::test]
async fn arguments_nested_deeper_than_the_limit_are_refused() {
    let registry = registry();
    let deep = format!("{{\"amount\": {}1{}}}", "[".repeat(65), "]".repeat(65));
    let result = registry.invoke(&app(), "transfer", deep.as_str()).await;
    assert_eq!(result.error_code.as_deref(), Some("ARGUMENTS_TOO_DEEP"));

    let shallow = Registry::<App>::builder().tools(tools![transfer]).max_argument_depth(1).build().unwrap();
    let result = shallow.invoke(&app(), "transfer", json!({"amount": [1]})).await;
    assert_eq!(result.error_code.as_deref(), Some("ARGUMENTS_TOO_DEEP"));
}

#[tokio::test]
async fn empty_arguments_mean_an_empty_object_for_a_tool_without_parameters() {
    let registry = registry();
    for empty in ["", "  ", "null", "{}"] {
        let result = registry.invoke(&app(), "ping", empty).await;
        assert_eq!(result.text, "pong", "arguments {empty:?}");
    }
    let result = registry.invoke(&app(), "ping", Value::Null).await;
    assert_eq!(result.text, "pong");
}

#[tokio::test]
async fn empty_arguments_for_a_tool_with_parameters_are_invalid() {
    let result = registry().invoke(&app(), "transfer", "").await;
    assert_eq!(result.kind, ResultKind::InvalidArguments);
    assert!(result.text.contains("not valid JSON"), "{}", result.text);
}

#[tokio::test]
async fn malformed_json_is_invalid_arguments_with_the_reason() {
    let result = registry().invoke(&app(), "transfer", r#"{"amount": 5,"#).await;
    assert_eq!(result.kind, ResultKind::InvalidArguments);
    assert!(
        result.text.starts_with("code: INVALID_ARGUMENTS, status: 400, userMessage: The arguments of transfer are not valid JSON"),
        "{}",
        result.text
    );
}

#[tokio::test]
async fn schema_problems_name_the_json_pointer_and_the_reason() {
    let result = registry().invoke(&app(), "transfer", r#"{"amount": 0, "currency": "EUR", "kind": "instant"}"#).await;
    assert_eq!(result.kind, ResultKind::InvalidArguments);
    assert!(result.text.contains("/amount: 0 is less than the minimum of 1"), "{}", result.text);
}

#[tokio::test]
async fn every_advertised_constraint_is_enforced() {
    let registry = registry();
    let cases = [
        (json!({"amount": 10001, "currency": "EUR", "kind": "instant"}), "/amount"),
        (json!({"amount": 5, "currency": "euro", "kind": "instant"}), "/currency"),
        (json!({"amount": 5, "currency": "EUR", "kind": "instant", "note": "too long"}), "/note"),
        (json!({"amount": 5, "currency": "EUR", "kind": "express"}), "/kind"),
        (json!({"amount": 5, "currency": "EUR", "kind": "instant", "extra": 1}), "extra"),
        (json!({"amount": "5", "currency": "EUR", "kind": "instant"}), "/amount"),
        (json!({"currency": "EUR", "kind": "instant"}), "amount"),
        (json!([1, 2]), "(root)"),
    ];
    let app = app();
    for (args, expected) in cases {
        let result = registry.invoke(&app, "transfer", args.clone()).await;
        assert_eq!(result.kind, ResultKind::InvalidArguments, "{args}");
        assert!(result.text.contains(expected), "{args}: {}", result.text);
    }
    assert_eq!(app.executions.load(Ordering::SeqCst), 0);
    let result = registry.invoke(&app, "transfer", VALID_TRANSFER).await;
    assert_eq!(result.text, "5 EUR  Instant");
}

#[tokio::test]
async fn an_input_the_schema_rejects_never_reaches_policy() {
    let app = app();
    let registry = registry();
    let result = registry.invoke(&app, "transfer", json!({"amount": 0, "currency": "EUR", "kind": "instant"})).await;
    assert_eq!(result.kind, ResultKind::InvalidArguments);
    assert_eq!(app.policy_calls.load(Ordering::SeqCst), 0);
    // Even a tool that is always denied reports bad input first.
    let result = registry.invoke(&app, "kill_switch", json!({"x": 1})).await;
    assert_eq!(result.kind, ResultKind::InvalidArguments);
}

#[tokio::test]
async fn deny_refuses_without_running_and_tells_the_model_not_to_retry() {
    let app = app();
    let result = registry().invoke(&app, "kill_switch", "{}").await;
    assert_eq!(result.kind, ResultKind::Denied);
    assert!(result.text.starts_with("code: POLICY_DENIED, status: 403, userMessage: "), "{}", result.text);
    assert!(result.text.ends_with("Do not retry this call."));
    assert_eq!(app.executions.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_deny_reason_from_a_predicate_reaches_the_model() {
    let result = registry().invoke(&app(), "refund", json!({"order_id": "FROZEN", "amount": 5})).await;
    assert_eq!(result.kind, ResultKind::Denied);
    assert!(result.text.contains("This order is frozen; tell the customer to call support."), "{}", result.text);
}

#[tokio::test]
async fn the_floor_turns_allow_into_needs_approval_by_tool_and_by_tag() {
    let registry = registry();
    for floor in [ApprovalFloor::default().tool("ping"), ApprovalFloor::default().tag("billing")] {
        let tool = if floor.applies("ping", []) { "ping" } else { "refund" };
        let args = if tool == "ping" { json!({}) } else { json!({"order_id": "A", "amount": 1}) };
        let outcome = registry.call(&app(), tool, args).user(UserContext::new("u").with_floor(floor)).await;
        assert!(matches!(outcome, CallOutcome::NeedsApproval(_)), "{tool}: {outcome:?}");
    }
}

#[tokio::test]
async fn deny_wins_over_the_floor_and_no_human_is_asked() {
    let floor = ApprovalFloor::default().tag("billing").tool("kill_switch");
    let outcome = registry().call(&app(), "kill_switch", "{}").user(UserContext::new("u").with_floor(floor)).await;
    let result = outcome.into_result().expect("a denied call is not parked for approval");
    assert_eq!(result.kind, ResultKind::Denied);
}

#[tokio::test]
async fn async_predicates_see_the_parsed_input_and_the_user() {
    let registry = registry();
    let args = json!({"order_id": "A-1", "amount": 500});
    let outcome = registry.call(&app(), "refund", args.clone()).await;
    assert!(matches!(outcome, CallOutcome::NeedsApproval(_)));
    let manager = UserContext::new("m").with_attribute("role", "manager");
    let outcome = registry.call(&app(), "refund", args).user(manager).await;
    assert_eq!(outcome.into_result().unwrap().text, "refunded 500 on A-1");
}

#[tokio::test]
async fn a_predicate_that_panics_denies_and_is_reported() {
    let app = app();
    let result = registry_with_reports(&app).invoke(&app, "fragile", "{}").await;
    assert_eq!(result.kind, ResultKind::Denied);
    assert!(!result.text.contains("db-password-123"));
    assert_eq!(app.executions.load(Ordering::SeqCst), 0);
    let reports = app.reports.lock().unwrap();
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].kind, ErrorKind::Policy);
    assert!(reports[0].error.contains("db-password-123"));
}

#[tokio::test]
async fn a_predicate_that_fails_denies_and_is_reported() {
    let app = app();
    let result = registry_with_reports(&app).invoke(&app, "shaky", "{}").await;
    assert_eq!(result.kind, ResultKind::Denied);
    assert!(!result.text.contains("policy-db.internal"));
    assert_eq!(app.executions.load(Ordering::SeqCst), 0);
    assert!(app.reports.lock().unwrap()[0].error.contains("policy-db.internal"));
}

#[tokio::test]
async fn an_approved_call_runs_and_a_rejected_one_does_not() {
    let registry = registry();
    let app = app();
    let args = json!({"order_id": "A-1", "amount": 500});
    let CallOutcome::NeedsApproval(pending) = registry.call(&app, "refund", args.clone()).call_id("c1").await else {
        panic!("expected a pending approval");
    };
    assert_eq!(pending.id(), "c1");
    assert_eq!(pending.arguments(), args);
    assert_eq!(app.executions.load(Ordering::SeqCst), 0);
    let result = registry.approve(pending).await;
    assert_eq!(result.text, "refunded 500 on A-1");

    let CallOutcome::NeedsApproval(pending) = registry.call(&app, "refund", args.clone()).await else { panic!() };
    let result = registry.reject(pending, None);
    assert_eq!(result.kind, ResultKind::Rejected);
    assert!(result.text.contains("A manager declined the refund."), "{}", result.text);
    let CallOutcome::NeedsApproval(pending) = registry.call(&app, "refund", args).await else { panic!() };
    let result = registry.reject(pending, Some("Not today."));
    assert!(result.text.contains("userMessage: Not today."), "{}", result.text);
    assert_eq!(app.executions.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_edited_approval_is_validated_and_decided_again() {
    let registry = registry();
    let app = app();
    let args = json!({"order_id": "A-1", "amount": 500});
    let pending = || async { registry.call(&app, "refund", args.clone()).await };

    let CallOutcome::NeedsApproval(p) = pending().await else { panic!() };
    let result = registry.approve_with(p, json!({"order_id": "A-1", "amount": "lots"})).await;
    assert_eq!(result.kind, ResultKind::InvalidArguments);

    let CallOutcome::NeedsApproval(p) = pending().await else { panic!() };
    let result = registry.approve_with(p, json!({"order_id": "FROZEN", "amount": 5})).await;
    assert_eq!(result.kind, ResultKind::Denied, "a deny refuses the edited input");

    let CallOutcome::NeedsApproval(p) = pending().await else { panic!() };
    let result = registry.approve_with(p, json!({"order_id": "A-2", "amount": 900})).await;
    assert_eq!(result.text, "refunded 900 on A-2", "needs-approval runs: a human approved this input");
    // Three first decisions, then the two edited inputs that passed validation.
    assert_eq!(app.policy_calls.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn at_the_timeout_the_token_is_cancelled_and_the_model_reads_a_504() {
    let app = app();
    let started = Instant::now();
    let result = registry().invoke(&app, "slow", "{}").await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(result.kind, ResultKind::TimedOut);
    assert!(result.text.starts_with("code: TOOL_TIMEOUT, status: 504, userMessage: The tool did not finish within 50ms"), "{}", result.text);
    let tokens = app.tokens.lock().unwrap();
    assert_eq!(tokens.len(), 1);
    assert!(tokens[0].is_cancelled(), "the tool's token is cancelled at the timeout");
}

#[tokio::test]
async fn a_tool_that_ignores_cancellation_times_out_and_the_registry_keeps_serving() {
    let registry = registry();
    let started = Instant::now();
    let result = registry.invoke(&app(), "stubborn", "{}").await;
    assert_eq!(result.kind, ResultKind::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(registry.invoke(&app(), "ping", "{}").await.text, "pong");
}

#[tokio::test]
async fn cancelling_the_call_cancels_the_tools_token() {
    let registry = Registry::<App>::builder().tools(tools![slow]).default_timeout(Duration::from_secs(60)).build().unwrap();
    let token = tool_runtime::CancellationToken::new();
    let canceller = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        canceller.cancel();
    });
    let app = app();
    // `slow` sets its own 50ms timeout; cancel before it.
    let outcome = registry.call(&app, "slow", "{}").cancellation(&token).await;
    let result = outcome.into_result().unwrap();
    assert_eq!(result.kind, ResultKind::Cancelled);
    assert!(result.text.starts_with("code: CALL_CANCELLED"), "{}", result.text);
    assert!(app.tokens.lock().unwrap()[0].is_cancelled());
}

#[tokio::test]
async fn a_call_cancelled_before_it_is_awaited_never_runs_its_tool() {
    let registry = Registry::<App>::builder().tools(tools![tally]).build().unwrap();
    let app = app();
    let token = tool_runtime::CancellationToken::new();
    token.cancel();
    // As text, its input is read and its call made at once (its verdict
    // does not depend on the input); as a value, stage by stage.
    for args in [Arguments::from("{}"), Arguments::from(json!({}))] {
        let result = registry.call(&app, "tally", args).cancellation(&token).await.into_result().unwrap();
        assert_eq!(result.kind, ResultKind::Cancelled, "{}", result.text);
        assert!(result.text.starts_with("code: CALL_CANCELLED"), "{}", result.text);
    }
    assert_eq!(app.executions.load(Ordering::SeqCst), 0, "a cancelled call's tool never ran");
    let result = registry.call(&app, "tally", "{}").await.into_result().unwrap();
    assert_eq!((result.kind, result.text.as_str()), (ResultKind::Success, "counted"));
}

#[tokio::test]
async fn a_call_runs_its_tool_only_when_it_is_polled() {
    let registry = Registry::<App>::builder().tools(tools![tally]).build().unwrap();
    let app = app();
    // `tally` never waits: it runs in its call's first poll, not before.
    for args in [Arguments::from("{}"), Arguments::from(json!({}))] {
        drop(registry.invoke(&app, "tally", args));
    }
    assert_eq!(app.executions.load(Ordering::SeqCst), 0, "a call that was never polled ran its tool");
    let call = registry.invoke(&app, "tally", "{}");
    assert_eq!(app.executions.load(Ordering::SeqCst), 0);
    assert_eq!(call.await.text, "counted");
    assert_eq!(app.executions.load(Ordering::SeqCst), 1);
}

#[test]
fn the_future_of_a_call_is_small_enough_to_move_without_a_memcpy_call() {
    // Each call's future is moved twice before its first poll (returned,
    // then awaited); within 128 bytes the compiler moves it in registers
    // rather than by a call of `memcpy` (about 60 instructions a call).
    let registry = Registry::<App>::builder().tools(tools![tally]).build().unwrap();
    let app = app();
    let call = registry.invoke(&app, "tally", "{}");
    assert!(std::mem::size_of_val(&call) <= 128, "{} bytes", std::mem::size_of_val(&call));
}

#[tokio::test]
async fn a_tool_that_never_waits_panics_and_fails_as_one_that_waits_does() {
    let app = app();
    let registry = registry_with_reports(&app);
    // Text read straight into the input: `boom` and `outage` never wait,
    // so each runs in its call's first poll, with no future boxed.
    let panicked = registry.invoke(&app, "boom", r#"{"secret": "s3cr3t-token"}"#).await;
    assert_eq!(panicked.kind, ResultKind::Internal);
    assert_eq!(panicked.text, ToolError::internal().model_line());
    let failed = registry.invoke(&app, "outage", r#"{"secret": "db.internal"}"#).await;
    assert_eq!(failed.kind, ResultKind::Internal);
    assert!(!panicked.text.contains("s3cr3t") && !failed.text.contains("db.internal"));
    let reports = app.reports.lock().unwrap();
    assert_eq!(reports.iter().map(|report| report.kind).collect::<Vec<_>>(), [ErrorKind::Panic, ErrorKind::Internal]);
    assert!(reports[0].error.contains("tool panicked with s3cr3t-token"), "{}", reports[0].error);
}

#[tokio::test]
async fn text_the_reader_leaves_to_the_value_path_is_read_there_from_the_first_poll() {
    let app = app();
    let registry = registry_with_reports(&app);
    // An escaped key is read by the value path, which then runs the tool.
    let escaped = registry.invoke(&app, "outage", r#"{"secr\u0065t": "db.internal"}"#).await;
    assert_eq!(escaped.kind, ResultKind::Internal, "{}", escaped.text);
    assert!(app.reports.lock().unwrap()[0].error.contains("connect to db.internal failed"));
    // A wrong type is worded there.
    let wrong = registry.invoke(&app, "boom", r#"{"secret": 7}"#).await;
    assert_eq!(wrong.kind, ResultKind::InvalidArguments);
    assert!(wrong.text.contains("secret"), "{}", wrong.text);
}

#[tokio::test]
async fn dropping_a_waiting_call_cancels_the_tools_token() {
    let registry = Registry::<App>::builder().tools(tools![slow]).default_timeout(Duration::from_secs(60)).build().unwrap();
    let app = app();
    let call = registry.invoke(&app, "slow", "{}");
    // The caller gives up before the tool (waiting on its token) returns.
    assert!(tokio::time::timeout(Duration::from_millis(10), call).await.is_err());
    let token = app.tokens.lock().unwrap()[0].clone();
    assert!(token.is_cancelled(), "the dropped call's token is cancelled");
}

#[tokio::test]
async fn a_panicking_tool_gives_the_generic_500_and_the_registry_keeps_serving() {
    let app = app();
    let registry = registry_with_reports(&app);
    let result = registry.invoke(&app, "boom", json!({"secret": "s3cr3t-token"})).await;
    assert_eq!(result.kind, ResultKind::Internal);
    assert_eq!(result.text, ToolError::internal().model_line());
    assert_eq!(result.error_code.as_deref(), Some(INTERNAL_ERROR_CODE));
    assert_eq!(app.reports.lock().unwrap()[0].kind, ErrorKind::Panic);
    assert_eq!(registry.invoke(&app, "ping", "{}").await.text, "pong");
}

#[tokio::test]
async fn no_internal_error_text_ever_reaches_the_model() {
    let app = app();
    let registry = registry_with_reports(&app);
    let secret = "SECRET-7f3a-internal-host";
    let mut texts = Vec::new();
    for tool in ["boom", "outage", "missing"] {
        let result = registry.invoke(&app, tool, json!({ "secret": secret })).await;
        assert!(result.is_error());
        texts.push(result.text);
    }
    texts.push(registry.invoke(&app, "fragile", "{}").await.text);
    texts.push(registry.invoke(&app, "shaky", "{}").await.text);
    for text in &texts {
        assert!(!text.contains(secret), "leaked: {text}");
        assert!(!text.contains("db-password") && !text.contains("policy-db"), "leaked: {text}");
    }
    let reports = app.reports.lock().unwrap();
    let detail: String = reports.iter().map(|r| format!("{} {:?} {:?}", r.error, r.message, r.data)).collect();
    assert_eq!(detail.matches(secret).count(), 4, "panic, io error, ToolError message and data: {detail}");
}

#[tokio::test]
async fn a_tool_error_is_one_line_in_the_specified_format_with_its_code_stamped() {
    let result = registry().invoke(&app(), "missing", json!({"secret": "x"})).await;
    assert_eq!(result.kind, ResultKind::ToolError);
    assert_eq!(
        result.text,
        "code: ORDER_NOT_FOUND, status: 404, userMessage: No such order; ask the customer for the invoice number. Do not retry this call."
    );
    assert_eq!(result.error_code.as_deref(), Some("ORDER_NOT_FOUND"));
    assert_eq!(result.status, Some(404));
}

#[tokio::test]
async fn strings_are_output_as_is_and_other_values_as_json_kept_structured() {
    let registry = registry();
    let text = registry.invoke(&app(), "ping", "{}").await;
    assert_eq!(text.text, "pong");
    assert_eq!(text.structured, None, "a string read whole is the text itself");
    let summary = registry.invoke(&app(), "summary", "{}").await;
    assert_eq!(summary.text, r#"{"count":3}"#);
    assert_eq!(summary.structured(), Some(&json!({"count": 3})));
}

#[tokio::test]
async fn output_is_cut_at_max_output_chars_on_a_char_boundary_with_a_marker() {
    let result = registry().invoke(&app(), "long", "{}").await;
    assert!(result.truncated);
    assert!(result.text.starts_with("ééééé\n[output truncated: showing the first 5 of 9 characters"), "{}", result.text);
    assert_eq!(result.structured(), Some(&json!("ééééééééé")), "the structured value stays whole");
}

#[tokio::test]
async fn ends_run_is_decided_after_success_only_on_input_and_output() {
    let registry = registry();
    assert!(registry.invoke(&app(), "hand_over", json!({"accept": true})).await.ends_run);
    let failed = registry.invoke(&app(), "hand_over", json!({"accept": false})).await;
    assert!(failed.is_error());
    assert!(!failed.ends_run);
}

#[tokio::test]
async fn an_async_ends_run_predicate_is_awaited_on_input_and_output() {
    let registry = registry();
    assert!(registry.invoke(&app(), "hand_over_to", json!({"queue": "humans"})).await.ends_run);
    assert!(!registry.invoke(&app(), "hand_over_to", json!({"queue": "bots"})).await.ends_run);

    let close = DynamicTool::new("close", "Close a ticket.", json!({"type": "object"}), |args: Value, _ctx: Ctx<()>| async move {
        Ok::<_, ToolError>(args["state"].clone())
    })
    .ends_run_async(|args, output| async move {
        tokio::task::yield_now().await;
        args["final"] == json!(true) && output == json!("closed")
    });
    let registry = Registry::<()>::builder().tool(close).build().unwrap();
    let app = Arc::new(());
    assert!(registry.invoke(&app, "close", json!({"state": "closed", "final": true})).await.ends_run);
    assert!(!registry.invoke(&app, "close", json!({"state": "open", "final": true})).await.ends_run);
    assert!(!registry.invoke(&app, "close", json!({"state": "closed"})).await.ends_run);
}

#[tokio::test]
async fn an_unknown_tool_is_refused_with_the_names_the_model_can_call() {
    let result = registry().invoke(&app(), "teleport", "{}").await;
    assert_eq!(result.kind, ResultKind::UnknownTool);
    assert!(result.text.starts_with("code: UNKNOWN_TOOL, status: 404, userMessage: There is no tool named \"teleport\""), "{}", result.text);
    assert!(result.text.contains("transfer, ping,"), "{}", result.text);
}

#[tokio::test]
async fn the_call_context_carries_user_thread_and_call_id() {
    let outcome = registry().call(&app(), "whoami", "{}").user(UserContext::new("u-7")).thread_id("t-1").call_id("toolu_42").await;
    assert_eq!(outcome.into_result().unwrap().text, r#"Some("u-7")/Some("t-1")/toolu_42"#);
}

/// Answers with its call id.
#[tool(name = "a_tool_whose_name_is_longer_than_any_inline_string")]
async fn long_named(ctx: Ctx<App>) -> String {
    ctx.call_id().to_owned()
}

#[tokio::test]
async fn names_and_call_ids_of_any_length_come_back_whole() {
    let registry = Registry::builder().tools(tools![long_named, ping]).build().unwrap();
    let id = "toolu_01A09q90qw90lq917835lq9_and_then_some";
    let result = registry.call(&app(), "a_tool_whose_name_is_longer_than_any_inline_string", "{}").call_id(id).await;
    let result = result.into_result().unwrap();
    assert_eq!(result.tool, "a_tool_whose_name_is_longer_than_any_inline_string");
    assert_eq!(result.call_id, id);
    assert_eq!(result.text, id, "the tool's context has the same id");
    // Fresh ids are unique, and a tool without a context gets one too.
    let (first, second) = (registry.invoke(&app(), "ping", "{}").await, registry.invoke(&app(), "ping", "{}").await);
    assert!(first.call_id.starts_with("call_") && second.call_id.starts_with("call_"), "{} {}", first.call_id, second.call_id);
    assert_ne!(first.call_id, second.call_id);
}

#[tokio::test]
async fn dynamic_tools_go_through_the_same_pipeline() {
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string", "minLength": 2}},
        "required": ["city"],
        "additionalProperties": false
    });
    let weather = DynamicTool::new("weather", "Weather in a city.", schema, |args: Value, _ctx: Ctx<App>| async move {
        Ok::<_, ToolError>(json!({"city": args["city"], "sky": "clear"}))
    })
    .policy_fn(|args, _ctx| if args["city"] == "Atlantis" { Verdict::deny("No such city.") } else { Verdict::Allow });
    let registry = Registry::builder().tools(tools![ping]).tool(weather).build().unwrap();
    assert_eq!(registry.invoke(&app(), "weather", json!({"city": "Oslo"})).await.text, r#"{"city":"Oslo","sky":"clear"}"#);
    let invalid = registry.invoke(&app(), "weather", json!({"city": "O"})).await;
    assert!(invalid.text.contains("/city"), "{}", invalid.text);
    assert_eq!(registry.invoke(&app(), "weather", json!({"city": "Atlantis"})).await.kind, ResultKind::Denied);
}

#[tokio::test]
async fn a_duplicate_or_unknown_requires_among_dynamic_tools_fails_the_build() {
    let make = |name: &str| DynamicTool::new(name, "d", json!({"type": "object"}), |_: Value, _: Ctx<App>| async { Ok::<_, ToolError>(Value::Null) });
    let err = Registry::builder().tools(tools![ping]).tool(make("ping")).build().unwrap_err();
    assert!(err.to_string().contains("two tools are named `ping`"), "{err}");
    let err = Registry::builder().tool(make("a").requires(["ghost"])).build().unwrap_err();
    assert!(err.to_string().contains("tool `a` requires `ghost`"), "{err}");
    let err = Registry::builder().tool(make("Bad-Name")).build().unwrap_err();
    assert!(err.to_string().contains("must match"), "{err}");
    let blank = DynamicTool::new("blank", " ", json!({"type": "object"}), |_: Value, _: Ctx<App>| async { Ok::<_, ToolError>(Value::Null) });
    let err = Registry::builder().tool(blank).build().unwrap_err();
    assert!(err.to_string().contains("tool `blank` has an empty description"), "{err}");
}

#[test]
fn a_dynamic_tool_takes_every_metadata_key() {
    let make = |name: &str| DynamicTool::new(name, "d", json!({"type": "object"}), |_: Value, _: Ctx<App>| async { Ok::<_, ToolError>(Value::Null) });
    let tool = make("geocode")
        .kind("read")
        .examples([r#"geocode(place: "Amsterdam")"#])
        .example_prompts(["Where is the Louvre?"])
        .related(["ping"])
        .always_active(true)
        .classification("turns a place name into coordinates")
        .scope_prompt("scope to one country")
        .meta("owner", "maps")
        .meta("cost", 3);
    let registry = Registry::builder().tools(tools![ping]).tool(tool).build().unwrap();
    let def = registry.definition("geocode").unwrap();
    assert_eq!(def.kind.as_deref(), Some("read"));
    assert_eq!(def.examples, [r#"geocode(place: "Amsterdam")"#]);
    assert_eq!(def.example_prompts, ["Where is the Louvre?"]);
    assert_eq!(def.related, ["ping"]);
    assert!(def.always_active);
    assert_eq!(def.classification.as_deref(), Some("turns a place name into coordinates"));
    assert_eq!(def.scope_prompt.as_deref(), Some("scope to one country"));
    assert_eq!(Value::Object(def.meta.clone()), json!({"owner": "maps", "cost": 3}));
    assert_eq!(registry.definitions_of_kind("read").map(|def| def.name.as_str()).collect::<Vec<_>>(), ["geocode"]);

    let err = Registry::builder().tool(make("a").related(["ghost"])).build().unwrap_err();
    assert!(err.to_string().contains("tool `a` lists `ghost` as related, but it is not in the registry"), "{err}");
    let err = Registry::builder().tool(make("a").kind("read").meta("kind", "write")).build().unwrap_err();
    assert!(err.to_string().contains("tool `a` sets both `kind` and a `meta` entry named `kind`"), "{err}");
    // Either alone is fine.
    Registry::builder().tool(make("a").meta("kind", "write")).tool(make("b").kind("read")).build().unwrap();
}

#[tokio::test]
async fn an_enormous_output_reaches_the_model_cut_to_the_limit() {
    let registry = registry();
    let result = registry.invoke(&app(), "flood", "{}").await;
    assert!(result.truncated);
    assert!(result.text.chars().count() < 20_000 + 200, "{} chars", result.text.len());
    assert!(result.text.contains("of 10485760 characters"), "{}", &result.text[result.text.len() - 150..]);
    assert_eq!(registry.invoke(&app(), "ping", "{}").await.text, "pong");
}

#[tokio::test]
async fn a_tool_stays_an_ordinary_function_tests_can_call() {
    let app = app();
    let text = transfer(Ctx::new(app.clone()), 5, "EUR".into(), "hi".into(), Kind::Standard).await;
    assert_eq!(text, "5 EUR hi Standard");
    assert_eq!(app.executions.load(Ordering::SeqCst), 1);
    assert_eq!(ping().await, "pong");
    let identity = whoami(Ctx::new(app).with_user(UserContext::new("u-1"))).await;
    assert_eq!(identity, r#"Some("u-1")/None/"#);
}

/// A reading whose `Serialize` writes what its schema does not admit.
#[derive(JsonSchema)]
struct Reading {
    /// At most 10.
    #[schemars(range(max = 10))]
    level: u32,
}

impl Serialize for Reading {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // A bug: the level is written as text.
        json!({ "level": self.level.to_string() }).serialize(serializer)
    }
}

/// Read the level.
#[tool]
async fn read_level(level: u32) -> Reading {
    Reading { level }
}

#[tokio::test]
async fn an_output_that_does_not_match_its_schema_is_never_passed_on() {
    let reports = Arc::new(Mutex::new(Vec::<ErrorReport>::new()));
    let sink = reports.clone();
    let registry = Registry::<()>::builder()
        .tools(tools![read_level])
        .validate_outputs(true)
        .on_tool_error(move |report| sink.lock().unwrap().push(report.clone()))
        .build()
        .unwrap();
    let result = registry.invoke(&Arc::new(()), "read_level", r#"{"level": 3}"#).await;
    assert_eq!(result.kind, ResultKind::Internal);
    assert!(result.structured.is_none() && !result.text.contains('3'), "{}", result.text);
    {
        let reports = reports.lock().unwrap();
        assert_eq!(reports.len(), 1);
        assert_eq!(reports[0].kind, ErrorKind::Output);
        assert!(reports[0].error.contains("/level"), "{}", reports[0].error);
    }

    // Off: the output goes through as the tool wrote it.
    let unchecked = Registry::<()>::builder().tools(tools![read_level]).validate_outputs(false).build().unwrap();
    let result = unchecked.invoke(&Arc::new(()), "read_level", r#"{"level": 3}"#).await;
    assert_eq!(result.kind, ResultKind::Success);
    assert_eq!(result.structured(), Some(&json!({"level": "3"})));
}

#[test]
fn outputs_are_checked_by_default_in_debug_builds_only() {
    // Built in debug here, so on by default: the check above needs no option.
    let registry = Registry::<()>::builder().tools(tools![read_level]).build().unwrap();
    let result =
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(registry.invoke(&Arc::new(()), "read_level", r#"{"level": 3}"#));
    assert_eq!(result.kind == ResultKind::Internal, cfg!(debug_assertions));
}

#[tokio::test]
async fn a_dynamic_tool_has_an_output_schema_async_policies_and_an_ends_run_predicate() {
    let reports = Arc::new(Mutex::new(Vec::<ErrorReport>::new()));
    let sink = reports.clone();
    let level = DynamicTool::new("level", "Read a level.", json!({"type": "object"}), |args: Value, _ctx: Ctx<()>| async move {
        Ok::<_, ToolError>(json!({ "level": args["level"].clone() }))
    })
    .output_schema(json!({"type": "object", "properties": {"level": {"type": "integer", "maximum": 10}}, "required": ["level"]}))
    .policy_async(|args: Value, _ctx| async move {
        tokio::time::sleep(Duration::from_millis(5)).await;
        match args["level"].as_i64() {
            Some(level) if level >= 0 => Ok(Verdict::Allow),
            Some(_) => Ok(Verdict::deny("Negative levels are not read.")),
            None => Err(std::io::Error::other("the predicate could not read the level")),
        }
    })
    .ends_run_fn(|args, output| args["final"] == json!(true) && output["level"] == json!(0));
    let registry = Registry::<()>::builder()
        .tool(level)
        .validate_outputs(true)
        .on_tool_error(move |report| sink.lock().unwrap().push(report.clone()))
        .build()
        .unwrap();
    let def = registry.definition("level").unwrap();
    assert_eq!(def.output_schema.as_deref().unwrap()["required"], json!(["level"]));
    let app = Arc::new(());

    // The async predicate allows, denies, and fails closed.
    assert_eq!(registry.invoke(&app, "level", r#"{"level": 3}"#).await.structured(), Some(&json!({"level": 3})));
    let denied = registry.invoke(&app, "level", r#"{"level": -1}"#).await;
    assert_eq!(denied.kind, ResultKind::Denied);
    assert!(denied.text.contains("Negative levels are not read."));
    assert_eq!(registry.invoke(&app, "level", r#"{"level": "x"}"#).await.kind, ResultKind::Denied);
    assert!(reports.lock().unwrap().iter().any(|r| r.kind == ErrorKind::Policy && r.error.contains("could not read the level")));

    // The output is checked against the output schema.
    let wrong = registry.invoke(&app, "level", r#"{"level": 50}"#).await;
    assert_eq!(wrong.kind, ResultKind::Internal);
    assert!(reports.lock().unwrap().iter().any(|r| r.kind == ErrorKind::Output));

    // The ends_run predicate sees the arguments and the output.
    let mut run = registry.run(app.clone());
    let step = run.execute(vec![tool_runtime::ToolCall::new("1", "level", r#"{"level": 0}"#)]).await;
    assert!(!step.results[0].ends_run);
    let step = run.execute(vec![tool_runtime::ToolCall::new("2", "level", r#"{"level": 0, "final": true}"#)]).await;
    assert!(step.results[0].ends_run);
    assert_eq!(run.ended_by(), Some("level"));
}

//! The questions a call asks, on a plain run (not durable): a tool asks its
//! user for a form, the client's model for a completion, the client for
//! its roots; the call waits in the run like a call waiting for approval,
//! the host answers through the run, and the call runs again from the top,
//! each question answered from the run's memory and each effect made once
//! (`Ctx::once`) not made again.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tool_runtime::memory::Decision;
use tool_runtime::prelude::*;
use tool_runtime::question::{Ask, Reply, Root, Sampled, SamplingRequest};
use tool_runtime::{Form, ResultKind, RunError};

/// What the tools did, counted outside the run.
#[derive(Default)]
struct Shop {
    holds: AtomicUsize,
    refunds: AtomicUsize,
}

/// How the money goes back.
#[tool_data(Deserialize, JsonSchema)]
#[derive(Form, Debug)]
enum Method {
    /// To the card it came from.
    Card,
    /// As a voucher.
    Voucher,
}

#[tool_data(Deserialize, JsonSchema)]
#[derive(Form)]
struct Confirm {
    /// Go ahead with the refund.
    go_ahead: bool,
    /// Where the money goes.
    method: Method,
    /// A note for the customer.
    #[serde(default)]
    note: Option<String>,
}

/// Refund an order: hold the money once, then ask its owner.
#[tool]
async fn refund(ctx: Ctx<Shop>, order: String) -> Result<String, ToolError> {
    let shop = ctx.app();
    let hold = ctx
        .once("hold", async {
            shop.holds.fetch_add(1, Ordering::SeqCst);
            format!("hold-{order}")
        })
        .await?;
    match ctx.elicit::<Confirm>(format!("Refund {order}?")).await? {
        Reply::Answered(Confirm { go_ahead: true, method, note }) => {
            shop.refunds.fetch_add(1, Ordering::SeqCst);
            Ok(format!("refunded {order} by {method:?} from {hold}{}", note.map(|note| format!(" ({note})")).unwrap_or_default()))
        }
        Reply::Answered(_) => Ok(format!("{hold} released")),
        Reply::Declined => Ok("declined".into()),
        Reply::Cancelled => Ok("cancelled".into()),
    }
}

#[tool_data(Deserialize, JsonSchema)]
#[derive(Form)]
struct Name {
    /// The project's name.
    name: String,
}

#[tool_data(Deserialize, JsonSchema)]
#[derive(Form)]
struct Size {
    /// Its size, in files.
    #[schemars(range(min = 1))]
    files: u32,
}

/// Set up a project: its name first, then its size and the client's
/// roots together, and a summary from the client's model.
#[tool]
async fn set_up(ctx: Ctx<Shop>) -> Result<String, ToolError> {
    let Reply::Answered(Name { name }) = ctx.elicit::<Name>("What is the project called?").await? else { return Ok("no name".into()) };
    let (size, roots) = tokio::join!(ctx.elicit::<Size>(format!("How big is {name}?")), ctx.roots());
    let (Reply::Answered(Size { files }), Reply::Answered(roots)) = (size?, roots?) else { return Ok("no size or roots".into()) };
    let request = SamplingRequest::new(20).user(format!("Summarise {name} in one word."));
    let Reply::Answered(summary) = ctx.sample(request).await? else { return Ok("no summary".into()) };
    Ok(format!("{name}: {files} files under {}, {}", roots[0].uri, summary.text))
}

/// Refund a large order: a human approves, then the tool asks its owner.
#[tool(policy = needs_approval, name = "refund_large")]
async fn refund_large(ctx: Ctx<Shop>, order: String) -> Result<String, ToolError> {
    match ctx.elicit::<Confirm>(format!("Refund {order}?")).await? {
        Reply::Answered(confirm) if confirm.go_ahead => Ok(format!("refunded {order}")),
        _ => Ok("kept".into()),
    }
}

/// Look the order up (which takes a moment: the tool waits, on a task of
/// its own), then ask.
#[tool]
async fn refund_slowly(ctx: Ctx<Shop>, order: String) -> Result<String, ToolError> {
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    match ctx.elicit::<Confirm>(format!("Refund {order}?")).await? {
        Reply::Answered(confirm) if confirm.go_ahead && !ctx.cancellation().is_cancelled() => Ok(format!("refunded {order}")),
        _ => Ok("kept".into()),
    }
}

fn registry() -> Registry<Shop> {
    Registry::builder().tools(tools![refund, set_up, refund_large, refund_slowly]).build().unwrap()
}

/// The questions the only pending call of `run` waits for.
fn questions(run: &Run<Shop>) -> Vec<(String, Ask)> {
    assert_eq!(run.pending().len(), 1, "one call waits");
    run.pending()[0].questions().map(|(id, ask)| (id.to_owned(), ask.clone())).collect()
}

#[tokio::test]
async fn a_form_asked_on_a_plain_run_is_answered_through_the_run_and_the_call_goes_on_from_the_top() {
    let shop = Arc::new(Shop::default());
    let mut run = registry().run(shop.clone());
    let step = run.execute(vec![ToolCall::new("c1", "refund", json!({"order": "A-1"}))]).await;
    assert_eq!(step.results[0].kind, ResultKind::PendingApproval);
    assert_eq!(step.results[0].error_code.as_deref(), Some("ANSWER_PENDING"), "{}", step.results[0].text);
    let asked = questions(&run);
    let Ask::Form { message, schema, .. } = &asked[0].1 else { panic!("a form: {asked:?}") };
    assert_eq!((asked[0].0.as_str(), message.as_str()), ("c1#1", "Refund A-1?"));
    assert_eq!(schema["properties"]["method"]["oneOf"][0], json!({"const": "Card", "title": "To the card it came from."}));
    assert_eq!(schema["required"], json!(["go_ahead", "method"]));

    let unfit = run.approvals().answer("c1#1", json!({"go_ahead": true, "method": "Cash"})).await.unwrap_err();
    assert!(matches!(&unfit, RunError::Unanswerable { id, why } if id == "c1#1" && why.contains("/method")), "{unfit:?}");
    assert_eq!(run.pending().len(), 1, "an answer that does not fit records nothing: the call still waits");

    let done = run.approvals().answer("c1#1", json!({"go_ahead": true, "method": "Voucher", "note": "sorry"})).await.unwrap();
    assert_eq!((done.kind, done.text.as_str()), (ResultKind::Success, "refunded A-1 by Voucher from hold-A-1 (sorry)"));
    assert_eq!(shop.holds.load(Ordering::SeqCst), 1, "the effect made before the question is not made again");
    assert_eq!(shop.refunds.load(Ordering::SeqCst), 1);
    assert!(run.pending().is_empty());
    assert_eq!(run.executed(), ["refund"]);
}

/// A tool that waits before it asks runs on a task of its own: stopped at
/// its question, it leaves its call's token as it was, and the call runs
/// again with it (before: the call read as cancelled).
#[tokio::test]
async fn a_tool_that_waits_before_it_asks_is_stopped_there_and_not_cancelled() {
    let mut run = registry().run(Arc::new(Shop::default()));
    let step = run.execute(vec![ToolCall::new("c1", "refund_slowly", json!({"order": "A-1"}))]).await;
    assert_eq!(step.results[0].error_code.as_deref(), Some("ANSWER_PENDING"), "{}", step.results[0].text);
    let done = run.approvals().answer("c1#1", json!({"go_ahead": true, "method": "Card"})).await.unwrap();
    assert_eq!((done.kind, done.text.as_str()), (ResultKind::Success, "refunded A-1"));
}

#[tokio::test]
async fn a_tool_reads_a_decline_and_a_cancel() {
    let mut run = registry().run(Arc::new(Shop::default()));
    run.execute(vec![ToolCall::new("c1", "refund", json!({"order": "A-1"})), ToolCall::new("c2", "refund", json!({"order": "A-2"}))]).await;
    assert_eq!(run.approvals().reject("c1#1", None).await.unwrap().text, "declined");
    assert_eq!(run.approvals().decide("c2#1", Decision::Cancel).await.unwrap().text, "cancelled");
}

#[tokio::test]
async fn questions_asked_over_several_rounds_and_together_are_each_answered() {
    let mut run = registry().run(Arc::new(Shop::default()));
    run.execute(vec![ToolCall::new("s1", "set_up", json!({}))]).await;
    assert_eq!(questions(&run).iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["s1#1"]);
    let waiting = run.approvals().answer("s1#1", json!({"name": "atlas"})).await.unwrap();
    assert_eq!(waiting.error_code.as_deref(), Some("ANSWER_PENDING"), "it asks again");
    // Two questions asked together wait together.
    let asked = questions(&run);
    assert_eq!(asked.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["s1#2", "s1#3"]);
    assert!(matches!(&asked[1].1, Ask::Roots));
    let waiting = run.approvals().answer("s1#2", json!({"files": 12})).await.unwrap();
    assert_eq!(waiting.error_code.as_deref(), Some("ANSWER_PENDING"), "one of the two is still open");
    let roots = vec![Root { uri: "file:///work/atlas".into(), name: Some("atlas".into()) }];
    let waiting = run.approvals().answer("s1#3", serde_json::to_value(&roots).unwrap()).await.unwrap();
    assert_eq!(waiting.error_code.as_deref(), Some("ANSWER_PENDING"), "now the completion");
    let asked = questions(&run);
    let Ask::Sample(request) = &asked[0].1 else { panic!("a completion: {asked:?}") };
    assert_eq!((asked[0].0.as_str(), request.max_tokens), ("s1#4", 20));
    let unfit = run.approvals().answer("s1#4", json!({"words": "Maps"})).await.unwrap_err();
    assert!(matches!(unfit, RunError::Unanswerable { .. }), "{unfit:?}");
    let sampled = Sampled { model: "tiny".into(), text: "Maps".into(), stop_reason: Some("endTurn".into()) };
    let done = run.approvals().answer("s1#4", serde_json::to_value(&sampled).unwrap()).await.unwrap();
    assert_eq!(done.text, "atlas: 12 files under file:///work/atlas, Maps");
}

#[tokio::test]
async fn an_approval_is_approved_and_a_tool_s_question_answered_never_the_other_way() {
    let mut run = registry().run(Arc::new(Shop::default()));
    run.execute(vec![ToolCall::new("b1", "refund_large", json!({"order": "B-1"}))]).await;
    let answered = run.approvals().answer("b1", json!({"go_ahead": true, "method": "Card"})).await.unwrap_err();
    assert!(matches!(answered, RunError::Unanswerable { .. }), "{answered:?}");
    // Approved, the call runs, and its tool asks.
    let asked = run.approvals().approve("b1").await.unwrap();
    assert_eq!(asked.error_code.as_deref(), Some("ANSWER_PENDING"), "{}", asked.text);
    let approved = run.approvals().approve("b1#1").await.unwrap_err();
    assert!(matches!(approved, RunError::Unanswerable { .. }), "{approved:?}");
    let done = run.approvals().answer("b1#1", json!({"go_ahead": true, "method": "Card"})).await.unwrap();
    assert_eq!(done.text, "refunded B-1");
}

#[tokio::test]
async fn outside_a_run_no_one_is_asked_and_an_effect_is_simply_made() {
    let shop = Arc::new(Shop::default());
    let result = registry().invoke(&shop, "refund", r#"{"order": "A-1"}"#).await;
    assert_eq!(result.error_code.as_deref(), Some("QUESTION_UNAVAILABLE"), "{}", result.text);
    assert_eq!(shop.holds.load(Ordering::SeqCst), 1);
}

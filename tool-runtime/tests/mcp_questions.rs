//! A tool's own questions in an MCP session (2025-11-25): a form, a
//! completion and the roots go to the client as `elicitation/create`,
//! `sampling/createMessage` and `roots/list`, only where the client
//! declared the capability; its answer decides the question, and the call
//! runs again from the top with its effect made once.
//!
//! ```text
//! cargo test -p tool-runtime --features mcp --test suite mcp_questions::
//! ```
#![cfg(feature = "mcp")]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tool_runtime::Form;
#[cfg(feature = "sqlite")]
use tool_runtime::UserContext;
use tool_runtime::mcp::McpServer;
use tool_runtime::prelude::*;
use tool_runtime::question::{Reply, SamplingRequest};

use support::{Human, Wire, text};

/// What the tools count: how many times each ran, and made their effect.
#[derive(Default)]
struct Counts {
    runs: AtomicUsize,
    holds: AtomicUsize,
}

#[tool_data(Deserialize, JsonSchema)]
#[derive(Form)]
struct Contact {
    /// Your name.
    username: String,
    /// Your email address.
    email: String,
}

/// Places a hold once, then asks who the user is.
#[tool]
async fn sign_up(ctx: Ctx<Counts>) -> Result<String, ToolError> {
    ctx.app().runs.fetch_add(1, Ordering::SeqCst);
    let hold = ctx.once("hold", async { ctx.app().holds.fetch_add(1, Ordering::SeqCst) + 1 }).await?;
    match ctx.elicit::<Contact>("Who are you?").await? {
        Reply::Answered(Contact { username, email }) => Ok(format!("hold {hold} for {username} <{email}>")),
        Reply::Declined => Ok(format!("hold {hold} released: declined")),
        Reply::Cancelled => Ok(format!("hold {hold} released: cancelled")),
    }
}

/// Asks the client's model, then the client's roots: two rounds.
#[tool]
async fn summarise(ctx: Ctx<Counts>, prompt: String) -> Result<String, ToolError> {
    let Reply::Answered(sampled) = ctx.sample(SamplingRequest::new(100).user(prompt)).await? else { return Ok("no completion".into()) };
    let Reply::Answered(roots) = ctx.roots().await? else { return Ok("no roots".into()) };
    let uris: Vec<String> = roots.into_iter().map(|root| root.uri).collect();
    Ok(format!("{} said {:?} in {}", sampled.model, sampled.text, uris.join(", ")))
}

/// Closes an account once a human approved the call, asking then whom to
/// tell.
#[tool(policy = needs_approval)]
async fn close_account(ctx: Ctx<Counts>, account: String) -> Result<String, ToolError> {
    match ctx.elicit::<Contact>("Whom do we tell?").await? {
        Reply::Answered(Contact { username, .. }) => Ok(format!("closed {account}; {username} told")),
        _ => Ok(format!("closed {account}; no one told")),
    }
}

fn server() -> (McpServer<Counts>, Arc<Counts>) {
    let registry = Registry::<Counts>::builder().tools(tools![sign_up, summarise, close_account]).build().unwrap();
    let counts = Arc::new(Counts::default());
    (McpServer::new(registry, counts.clone()), counts)
}

async fn session(server: &McpServer<Counts>, capabilities: Value, human: Human) -> Wire {
    Wire::open(server, "2025-11-25", capabilities, human).await
}

#[tokio::test]
async fn a_form_goes_to_the_client_and_its_answer_runs_the_call_again_with_its_effect_made_once() {
    let (server, counts) = server();
    let mut wire = session(&server, json!({"elicitation": {"form": {}}}), Human::Accept).await;
    wire.replies.push(("elicitation/create".into(), json!({"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}})));
    let result = wire.call("sign_up", json!({})).await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(text(&result), "hold 1 for ada <ada@example.com>");
    assert_eq!(wire.asked.len(), 1, "{:?}", wire.asked);
    let asked = &wire.asked[0]["params"];
    assert_eq!(asked["message"], "Who are you?");
    assert_eq!(asked["requestedSchema"]["properties"]["email"], json!({"description": "Your email address.", "type": "string"}));
    assert_eq!(asked["requestedSchema"]["required"], json!(["username", "email"]));
    // Once up to its question, once again from the top with its answer.
    assert_eq!((counts.runs.load(Ordering::SeqCst), counts.holds.load(Ordering::SeqCst)), (2, 1));
}

#[tokio::test]
async fn a_declined_or_dismissed_form_is_read_by_the_tool() {
    for (human, read) in [(Human::Decline, "declined"), (Human::Dismiss, "cancelled")] {
        let (server, _) = server();
        let mut wire = session(&server, json!({"elicitation": {}}), human).await;
        let result = wire.call("sign_up", json!({})).await;
        assert_eq!(text(&result), format!("hold 1 released: {read}"), "{result}");
    }
}

#[tokio::test]
async fn an_answer_that_does_not_fit_the_form_ends_the_call_saying_why() {
    let (server, counts) = server();
    let mut wire = session(&server, json!({"elicitation": {}}), Human::Accept).await;
    wire.replies.push(("elicitation/create".into(), json!({"action": "accept", "content": {"username": "ada"}})));
    let result = wire.call("sign_up", json!({})).await;
    assert_eq!(result["isError"], true);
    assert!(text(&result).starts_with("code: QUESTION_UNANSWERED"), "{result}");
    assert!(text(&result).contains("email"), "{result}");
    assert_eq!(counts.runs.load(Ordering::SeqCst), 1, "the call did not run on");
}

#[tokio::test]
async fn a_completion_and_the_roots_are_asked_of_the_client_over_two_rounds() {
    let (server, _) = server();
    let mut wire = session(&server, json!({"sampling": {}, "roots": {"listChanged": true}}), Human::Away).await;
    let completion = json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "test-model", "stopReason": "endTurn"});
    wire.replies.push(("sampling/createMessage".into(), completion));
    wire.replies.push(("roots/list".into(), json!({"roots": [{"uri": "file:///work", "name": "work"}]})));
    let result = wire.call("summarise", json!({"prompt": "Capital of France?"})).await;
    assert_eq!(text(&result), "test-model said \"Paris\" in file:///work", "{result}");
    let methods: Vec<&str> = wire.asked.iter().map(|asked| asked["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["sampling/createMessage", "roots/list"]);
    let sampling = &wire.asked[0]["params"];
    assert_eq!(sampling["messages"], json!([{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}]));
    assert_eq!(sampling["maxTokens"], 100);
}

#[tokio::test]
async fn a_question_the_client_did_not_declare_is_a_tool_error_naming_what_is_missing() {
    let (server, _) = server();
    // Sampling, but no roots.
    let mut wire = session(&server, json!({"sampling": {}, "elicitation": {}}), Human::Accept).await;
    wire.replies.push(("sampling/createMessage".into(), json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"})));
    let result = wire.call("summarise", json!({"prompt": "Capital of France?"})).await;
    assert_eq!(result["isError"], true);
    assert!(text(&result).starts_with("code: QUESTION_UNAVAILABLE, status: 403"), "{result}");
    assert!(text(&result).contains("`roots`"), "{result}");
    // Nothing at all: not even the completion is asked.
    let mut bare = session(&server, json!({}), Human::Accept).await;
    let result = bare.call("summarise", json!({"prompt": "Capital of France?"})).await;
    assert!(text(&result).contains("`sampling`"), "{result}");
    assert!(bare.asked.is_empty(), "{:?}", bare.asked);
}

#[tokio::test]
async fn a_call_approved_by_a_human_may_then_ask_its_own_question() {
    let (server, _) = server();
    let mut wire = session(&server, json!({"elicitation": {}}), Human::Accept).await;
    wire.replies.push(("elicitation/create".into(), json!({"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}})));
    let result = wire.call("close_account", json!({"account": "A-7"})).await;
    assert_eq!(text(&result), "closed A-7; ada told", "{result}");
    let messages: Vec<&str> = wire.asked.iter().map(|asked| asked["params"]["message"].as_str().unwrap()).collect();
    assert!(messages[0].contains("needs your approval") && messages[1] == "Whom do we tell?", "{messages:?}");
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_durable_session_a_question_is_journaled_answered_by_the_client_and_settled() {
    let dir = std::env::temp_dir().join(format!("tool-runtime-mcp-questions-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let journal = tool_runtime::journal::Journal::open(&dir.join("journal.db").display().to_string()).await.unwrap();
    let (server, counts) = server();
    let server = server.with_user(UserContext::new("u-mcp")).with_journal(journal.clone());
    let mut wire = session(&server, json!({"elicitation": {}}), Human::Accept).await;
    wire.replies.push(("elicitation/create".into(), json!({"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}})));
    let result = wire.call("sign_up", json!({})).await;
    assert_eq!(text(&result), "hold 1 for ada <ada@example.com>", "{result}");
    // The hold journaled once, made once over the call's two runs.
    assert_eq!((counts.runs.load(Ordering::SeqCst), counts.holds.load(Ordering::SeqCst)), (2, 1));
    // Approved, then asked: both answered by the client.
    let closed = wire.call("close_account", json!({"account": "A-7"})).await;
    assert_eq!(text(&closed), "closed A-7; ada told", "{closed}");
    assert!(journal.approvals().pending_for_user("u-mcp").await.unwrap().is_empty(), "nothing left waiting");
}

//! Every call is one `tracing` span with the tool, the call id, the
//! verdict, the outcome and the duration; failures log their detail there.
//! Text a model, a client or a tool's input chose is escaped in every field
//! it reaches (each path below drives a forged log line through one).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tool_runtime::prelude::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Records every span's fields and every event's fields.
#[derive(Clone, Default)]
struct Recorder {
    next: Arc<AtomicU64>,
    spans: Arc<Mutex<HashMap<u64, HashMap<String, String>>>>,
    events: Arc<Mutex<Vec<HashMap<String, String>>>>,
    metadata: Arc<Mutex<HashMap<u64, &'static Metadata<'static>>>>,
}

thread_local! {
    /// The spans entered on this thread, innermost last.
    static STACK: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}").trim_matches('"').to_owned());
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let mut fields = HashMap::from([("name".to_owned(), span.metadata().name().to_owned())]);
        span.record(&mut Fields(&mut fields));
        self.spans.lock().unwrap().insert(id, fields);
        self.metadata.lock().unwrap().insert(id, span.metadata());
        Id::from_u64(id)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Some(fields) = self.spans.lock().unwrap().get_mut(&span.into_u64()) {
            values.record(&mut Fields(fields));
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = HashMap::new();
        event.record(&mut Fields(&mut fields));
        // The call id of the span the event belongs to, if it has one.
        let parent = event.parent().map(Id::into_u64).or_else(|| STACK.with(|stack| stack.borrow().last().copied()));
        let call_id = parent.and_then(|id| self.spans.lock().unwrap().get(&id).and_then(|span| span.get("call_id").cloned()));
        if let Some(call_id) = call_id {
            fields.insert("span.call_id".to_owned(), call_id);
        }
        self.events.lock().unwrap().push(fields);
    }
    fn enter(&self, span: &Id) {
        STACK.with(|stack| stack.borrow_mut().push(span.into_u64()));
    }
    fn exit(&self, _: &Id) {
        STACK.with(|stack| stack.borrow_mut().pop());
    }
    fn current_span(&self) -> tracing_core::span::Current {
        match STACK.with(|stack| stack.borrow().last().copied()) {
            Some(id) => tracing_core::span::Current::new(Id::from_u64(id), self.metadata.lock().unwrap()[&id]),
            None => tracing_core::span::Current::none(),
        }
    }
}

/// Echo.
#[tool]
async fn echo(text: String) -> String {
    text
}

/// Fails.
#[tool(policy = needs_approval)]
async fn guarded() -> Result<String, std::io::Error> {
    Err(std::io::Error::other("disk full on /var/secret"))
}

/// Waits a little, with an interim text.
#[tool(interim = "Still waiting...", interim_after = "10ms")]
async fn patient() -> String {
    tokio::time::sleep(std::time::Duration::from_millis(60)).await;
    "done".into()
}

/// Runs `calls` on a current-thread runtime with a fresh [`Recorder`] as the
/// subscriber; the recorder, with what it saw.
fn recording<F: std::future::Future<Output = ()>>(calls: impl FnOnce() -> F) -> Recorder {
    let recorder = Recorder::default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    tracing::subscriber::with_default(recorder.clone(), || runtime.block_on(calls()));
    recorder
}

#[test]
fn each_call_is_a_span_with_tool_call_id_verdict_outcome_and_duration() {
    let recorder = recording(|| async {
        let registry = Registry::<()>::builder().tools(tools![echo, guarded]).build().unwrap();
        let app = Arc::new(());
        registry.call(&app, "echo", r#"{"text": "hi"}"#).call_id("c-1").await;
        let pending = registry.call(&app, "guarded", "{}").call_id("c-2").await;
        let tool_runtime::CallOutcome::NeedsApproval(pending) = pending else { panic!("expected approval") };
        registry.approve(pending).await;
    });
    let spans = recorder.spans.lock().unwrap();
    let calls: Vec<&HashMap<String, String>> = spans.values().filter(|s| s["name"] == "tool_call").collect();
    let echo = calls.iter().find(|s| s["call_id"] == "c-1").expect("a span for c-1");
    assert_eq!(echo["tool"], "echo");
    assert_eq!(echo["verdict"], "allow");
    assert_eq!(echo["outcome"], "success");
    assert!(echo["duration_ms"].parse::<u64>().is_ok(), "{echo:?}");
    let guarded: Vec<_> = calls.iter().filter(|s| s["call_id"] == "c-2").collect();
    assert!(guarded.iter().any(|s| s.get("outcome").map(String::as_str) == Some("pending_approval")));
    assert!(
        guarded
            .iter()
            .any(|s| s.get("verdict").map(String::as_str) == Some("approved") && s.get("outcome").map(String::as_str) == Some("internal_error"))
    );
    let events = recorder.events.lock().unwrap();
    assert!(
        events.iter().any(|e| e.get("error").is_some_and(|error| error.contains("disk full on /var/secret"))),
        "the internal error's detail goes to tracing: {events:?}"
    );
}

#[test]
fn text_the_model_chose_cannot_forge_a_log_line() {
    let recorder = recording(|| async {
        let registry = Registry::<()>::builder().tools(tools![echo, guarded]).build().unwrap();
        let app = Arc::new(());
        let forged = "echo\n2026-12-01T00:00:00Z INFO admin logged in\r\u{1b}[2K";
        registry.call(&app, forged, "{}").call_id("c-1\nforged").await;
    });
    let spans = recorder.spans.lock().unwrap();
    let call = spans.values().find(|s| s["name"] == "tool_call").expect("a span for the call");
    for field in ["tool", "call_id"] {
        assert!(!call[field].chars().any(char::is_control), "{field}: {:?}", call[field]);
    }
    assert!(call["tool"].starts_with("echo\\n2026"), "escaped, not dropped: {:?}", call["tool"]);
}

#[test]
fn an_interim_text_is_an_event_on_the_calls_span() {
    let recorder = recording(|| async {
        let registry = Registry::<()>::builder().tools(tools![patient, echo]).build().unwrap();
        let app = Arc::new(());
        registry.call(&app, "patient", "{}").call_id("c-1").await;
        registry.call(&app, "echo", r#"{"text": "hi"}"#).call_id("c-2").await;
    });
    let events = recorder.events.lock().unwrap();
    let interims: Vec<_> = events.iter().filter(|e| e.contains_key("interim")).collect();
    assert_eq!(interims.len(), 1, "{events:?}");
    assert_eq!(interims[0]["interim"], "Still waiting...");
    assert_eq!(interims[0].get("span.call_id").map(String::as_str), Some("c-1"), "{:?}", interims[0]);
}

/// Sends a voice note.
#[tool]
async fn voice() -> Vec<tool_runtime::Block> {
    vec![tool_runtime::Block::text("A note."), tool_runtime::Block::audio(vec![0; 4], "audio/wav")]
}

#[test]
fn a_block_a_dialect_cannot_carry_is_a_warning() {
    let recorder = recording(|| async {
        let registry = Registry::<()>::builder().tools(tools![voice]).build().unwrap();
        let result = registry.call(&Arc::new(()), "voice", "{}").call_id("c-1\nforged").await.into_result().unwrap();
        tool_runtime::providers::openai::chat::results(std::slice::from_ref(&result));
        tool_runtime::providers::anthropic::results(&[result]);
    });
    let events = recorder.events.lock().unwrap();
    let losses: Vec<_> = events.iter().filter(|e| e.contains_key("block")).collect();
    assert_eq!(losses.len(), 2, "one per dialect that lost the clip: {events:?}");
    assert_eq!(losses[0]["what"], "an audio clip (audio/wav)");
    assert_eq!((losses[0]["block"].as_str(), losses[0]["dialect"].as_str()), ("1", "OpenAiChat"));
    assert_eq!(losses[1]["dialect"], "Anthropic");
    assert_eq!(losses[0]["call_id"], "c-1\\nforged", "the model's call id, escaped");
}

/// A forged log line: a newline, a line that looks like the logger's own, a
/// carriage return and a terminal escape that clears it.
const FORGED: &str = "x\n2026-12-01T00:00:00Z INFO admin logged in\r\u{1b}[2K";

/// The events whose message is `message`.
fn events_with<'a>(events: &'a [HashMap<String, String>], message: &str) -> Vec<&'a HashMap<String, String>> {
    events.iter().filter(|event| event.get("message").is_some_and(|text| text.contains(message))).collect()
}

/// `field` of `event` holds the forged text escaped: on one line, nothing dropped.
#[track_caller]
fn assert_escaped(event: &HashMap<String, String>, field: &str) {
    let text = event.get(field).unwrap_or_else(|| panic!("no field `{field}` in {event:?}"));
    assert!(!text.chars().any(char::is_control), "`{field}` can forge a log line: {text:?}");
    assert!(text.contains("x\\n2026-12-01T00:00:00Z INFO admin logged in\\r\\u{1b}[2K"), "`{field}` escaped, not dropped: {text:?}");
}

/// Logs the text it was given, as a warning.
#[tool]
async fn note(ctx: Ctx<()>, text: String) -> String {
    ctx.log(LogLevel::Warning, text);
    "noted".into()
}

#[test]
fn a_tools_log_message_is_an_event_of_the_call_where_no_host_takes_it_escaped() {
    let recorder = recording(|| async {
        let registry = Registry::<()>::builder().tools(tools![note]).build().unwrap();
        let arguments = serde_json::json!({ "text": FORGED }).to_string();
        registry.call(&Arc::new(()), "note", arguments.as_str()).call_id("c-1").await;
    });
    let events = recorder.events.lock().unwrap();
    let logged = events_with(&events, "a tool's log message");
    assert_eq!(logged.len(), 1, "{events:?}");
    assert_eq!(logged[0]["call_id"], "c-1");
    assert_escaped(logged[0], "text");
}

/// Refuses with the text it was given as its code and its developer message.
#[tool]
async fn refuse(text: String) -> Result<String, ToolError> {
    Err(ToolError::bad_request(text.clone(), "Refused.").with_message(text))
}

#[test]
fn a_tool_errors_code_and_developer_message_are_escaped_in_the_error_event() {
    let recorder = recording(|| async {
        let registry = Registry::<()>::builder().tools(tools![refuse]).build().unwrap();
        let arguments = serde_json::json!({ "text": FORGED }).to_string();
        registry.call(&Arc::new(()), "refuse", arguments.as_str()).call_id("c-1").await;
    });
    let events = recorder.events.lock().unwrap();
    let failed: Vec<_> = events.iter().filter(|event| event.contains_key("kind")).collect();
    assert_eq!(failed.len(), 1, "{events:?}");
    assert_escaped(failed[0], "code");
    assert_escaped(failed[0], "message");
}

#[test]
fn a_replayed_call_id_is_escaped() {
    let path = std::env::temp_dir().join(format!("tool-runtime-tracing-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let recorder = recording(|| async {
        let journal = tool_runtime::journal::Journal::open(path.to_str().unwrap()).await.unwrap();
        let registry = Registry::<()>::builder().tools(tools![echo]).build().unwrap();
        let call = || vec![ToolCall::new(FORGED, "echo", serde_json::json!({"text": "hi"}))];
        let mut run = registry.run(Arc::new(())).durable(&journal, "logs-run").await.unwrap();
        run.execute(call()).await;
        let mut resumed = registry.run(Arc::new(())).durable(&journal, "logs-run").await.unwrap();
        resumed.execute(call()).await;
    });
    let _ = std::fs::remove_file(&path);
    let events = recorder.events.lock().unwrap();
    let replayed = events_with(&events, "replayed from the journal");
    assert_eq!(replayed.len(), 1, "{events:?}");
    assert_escaped(replayed[0], "call_id");
}

#[test]
fn the_classifiers_fail_open_reason_is_escaped() {
    let recorder = recording(|| async {
        let selection = tool_runtime::Selection::fail_open(FORGED);
        assert_eq!(selection.failed_open.as_deref(), Some(FORGED), "the host reads the reason as it was given");
    });
    let events = recorder.events.lock().unwrap();
    let failed = events_with(&events, "every tool is offered this turn");
    assert_eq!(failed.len(), 1, "{events:?}");
    assert_escaped(failed[0], "why");
}

/// Which way a turn's search goes.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Direction {
    Up,
    Down,
}

/// Search one way.
#[tool(scope = one_way)]
async fn search(way: String) -> String {
    way
}

fn one_way(scope: &Direction, tool: &mut tool_runtime::ScopedTool) {
    let way = match scope {
        Direction::Up => "up",
        Direction::Down => "down",
    };
    tool.input_schema["properties"]["way"]["enum"] = serde_json::json!([way]);
}

#[test]
fn a_scope_problem_quoting_the_classifiers_value_is_escaped() {
    let mut problems = Vec::new();
    let recorder = recording(|| async {
        let registry = Registry::<()>::builder().tools(tools![search]).build().unwrap();
        let mut run = registry.run(Arc::new(()));
        let selection = tool_runtime::Selection::new(["search"]).scope("search", serde_json::json!(FORGED));
        problems = run.select(&selection);
    });
    assert_eq!(problems.len(), 1, "{problems:?}");
    // The value is refused by the scope schema's validator, which quotes it
    // as JSON; the scope type's own error would quote it raw. Either way
    // the problem names it, and its line never breaks.
    assert!(problems[0].problem.contains("admin logged in"), "the problem quotes the value: {problems:?}");
    let line = problems[0].to_string();
    assert!(!line.chars().any(char::is_control), "a ScopeProblem's line can forge a log line: {line:?}");
    assert!(line.contains("x\\n2026-12-01T00:00:00Z INFO admin logged in"), "escaped, not dropped: {line:?}");
    let events = recorder.events.lock().unwrap();
    let reported: Vec<_> = events.iter().filter(|event| event.get("kind").is_some_and(|kind| kind == "scope")).collect();
    assert_eq!(reported.len(), 1, "{events:?}");
    let text = &reported[0]["error"];
    assert!(!text.chars().any(char::is_control), "`error` can forge a log line: {text:?}");
    assert!(text.contains("admin logged in"), "`error` names the value: {text:?}");
}

/// Deletes nothing; a human approves first.
#[cfg(feature = "mcp")]
#[tool(policy = needs_approval)]
async fn delete() -> String {
    "deleted".into()
}

/// An MCP client whose answer to the approval request is an error whose
/// text forges a log line.
#[cfg(feature = "mcp")]
#[test]
fn an_mcp_clients_elicitation_error_text_is_escaped() {
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    use tool_runtime::mcp::rmcp::ServiceExt;

    let recorder = recording(|| async {
        let registry = Registry::<()>::builder().tools(tools![delete]).build().unwrap();
        let server = tool_runtime::mcp::McpServer::new(registry, Arc::new(()));
        let (client, server_side) = tokio::io::duplex(1 << 16);
        let session = server.session();
        tokio::spawn(async move {
            if let Ok(running) = session.serve(server_side).await {
                let _ = running.waiting().await;
            }
        });
        let (reader, mut writer) = tokio::io::split(client);
        let mut lines = tokio::io::BufReader::new(reader).lines();
        let mut send = async |message: Value| writer.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        let capabilities = json!({"elicitation": {"form": {}}});
        let client_info = json!({"name": "wire", "version": "0"});
        let params = json!({"protocolVersion": "2025-06-18", "capabilities": capabilities, "clientInfo": client_info});
        send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})).await;
        lines.next_line().await.unwrap().expect("the initialize response");
        send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        let call = json!({"name": "delete", "arguments": {}});
        send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})).await;
        let answered = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                let message: Value = serde_json::from_str(&line).unwrap();
                if message["method"] == "elicitation/create" {
                    let error = json!({"code": -32603, "message": FORGED});
                    send(json!({"jsonrpc": "2.0", "id": message["id"], "error": error})).await;
                } else if message["id"] == 2 {
                    return message;
                }
            }
            panic!("the server closed the pipe");
        });
        let answered = answered.await.expect("an answer within 10 s");
        assert_eq!(answered["result"]["isError"], true, "{answered}");
    });
    let events = recorder.events.lock().unwrap();
    let failed = events_with(&events, "the approval request failed");
    assert_eq!(failed.len(), 1, "{events:?}");
    assert_escaped(failed[0], "error");
}

//! Every call is one `tracing` span with the tool, the call id, the
//! verdict, the outcome and the duration; failures log their detail there.

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
    assert!(guarded.iter().any(|s| s.get("verdict").map(String::as_str) == Some("approved")
        && s.get("outcome").map(String::as_str) == Some("internal_error")));
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
        tool_runtime::providers::openai::chat::results(&[result.clone()]);
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

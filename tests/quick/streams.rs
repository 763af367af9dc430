//! Preliminary results: a tool written `-> Streamed<T>` sends every item but
//! the last to the call's progress sink and returns the last; its timeout,
//! cancellation and output limit cover the whole stream, also a stream that
//! is always ready and one that never ends.

use std::future::Future;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::json;
use tool_runtime::prelude::*;
use tool_runtime::stream::{self, StreamExt};
use tool_runtime::{ErrorKind, Progress, ProgressSink, ResultKind, Streamed};

/// Search the archive; reports what it found so far.
#[tool(read_only)]
async fn search(query: String) -> Streamed<String> {
    let found = ["1 match", "2 matches"].map(|so_far| format!("{query}: {so_far}"));
    Streamed::new(stream::iter(found.into_iter().chain([format!("{query}: done, 2 matches")])))
}

/// Count slowly, one item a second.
#[tool(timeout = "2500ms")]
async fn count_slowly(to: u32) -> Streamed<u32> {
    Streamed::new(stream::iter(1..=to).then(|n| async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        n
    }))
}

/// Stream nothing.
#[tool]
async fn nothing() -> Streamed<u32> {
    Streamed::new(stream::empty())
}

/// Fail after one item.
#[tool]
async fn flaky(ctx: Ctx<()>) -> Streamed<u32> {
    let _ = ctx.call_id();
    let items = vec![Ok(1), Err(ToolError::unavailable("FEED_DOWN", "The feed stopped; try again later."))];
    Streamed::try_new(stream::iter(items))
}

/// Long items.
#[tool(max_output_chars = 10)]
async fn chatty() -> Streamed<String> {
    Streamed::new(stream::iter(["aaaaaa", "bbbbbb", "cccccc", "the end of it all"].map(String::from)))
}

/// Thirty million items, every one ready at once.
#[tool(timeout = "200ms")]
async fn flood() -> Streamed<u64> {
    Streamed::new(stream::iter(0..30_000_000))
}

/// Items without end, every one ready at once.
#[tool]
async fn endless() -> Streamed<u64> {
    Streamed::new(stream::repeat(7))
}

/// One item far over the output limit, then the result.
#[tool(max_output_chars = 50)]
async fn bulky(structured: bool) -> Streamed<serde_json::Value> {
    let item = match structured {
        true => json!({"rows": vec!["r".repeat(100); 20_000]}),
        false => json!("x".repeat(2_000_000)),
    };
    Streamed::new(stream::iter([item, json!("done")]))
}

fn registry(reports: Arc<Mutex<Vec<(ErrorKind, String)>>>) -> Registry<()> {
    Registry::builder()
        .tools(tools![search, count_slowly, nothing, flaky, chatty, flood, endless, bulky])
        .on_tool_error(move |report| reports.lock().unwrap().push((report.kind, report.error.clone())))
        .build()
        .unwrap()
}

fn collecting() -> (ProgressSink, Arc<Mutex<Vec<Progress>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    (ProgressSink::new(move |progress| sink.lock().unwrap().push(progress)), seen)
}

#[tokio::test]
async fn every_item_but_the_last_reaches_the_host_and_the_last_is_the_result() {
    let (sink, seen) = collecting();
    let mut run = registry(Arc::default()).run(Arc::new(())).with_progress(sink);
    let step = run.execute(vec![ToolCall::new("c1", "search", r#"{"query": "kettle"}"#)]).await;
    assert_eq!(step.results[0].kind, ResultKind::Success);
    assert_eq!(step.results[0].text, "kettle: done, 2 matches");
    let seen = seen.lock().unwrap();
    let preliminary: Vec<_> = seen.iter().map(|p| (p.call_id.as_str(), p.progress, p.preliminary.clone(), p.message.clone())).collect();
    assert_eq!(
        preliminary,
        [
            ("c1", 1.0, Some(json!("kettle: 1 match")), Some("kettle: 1 match".to_owned())),
            ("c1", 2.0, Some(json!("kettle: 2 matches")), Some("kettle: 2 matches".to_owned())),
        ]
    );
    assert!(seen.iter().all(|p| !p.interim));
}

#[tokio::test]
async fn the_output_schema_is_the_items_and_a_call_without_a_sink_reads_the_last() {
    let registry = registry(Arc::default());
    assert_eq!(registry.definition("count_slowly").unwrap().output_schema.as_deref().unwrap()["type"], "integer");
    let result = registry.invoke(&Arc::new(()), "search", r#"{"query": "cups"}"#).await;
    assert_eq!(result.text, "cups: done, 2 matches");
}

#[tokio::test(start_paused = true)]
async fn the_timeout_covers_the_whole_stream() {
    let (sink, seen) = collecting();
    let registry = registry(Arc::default());
    let mut run = registry.run(Arc::new(())).with_progress(sink);
    // Two items fit in 2.5 s; the third does not.
    let step = run.execute(vec![ToolCall::new("c1", "count_slowly", r#"{"to": 3}"#)]).await;
    assert_eq!(step.results[0].kind, ResultKind::TimedOut);
    assert_eq!(seen.lock().unwrap().len(), 1, "item 1 was sent when item 2 came");
    let step = run.execute(vec![ToolCall::new("c2", "count_slowly", r#"{"to": 2}"#)]).await;
    assert_eq!(step.results[0].text, "2");
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_run_stops_the_stream() {
    let registry = registry(Arc::default());
    let mut run = registry.run(Arc::new(()));
    let cancel = run.cancellation().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        cancel.cancel();
    });
    let step = run.execute(vec![ToolCall::new("c1", "count_slowly", r#"{"to": 2}"#)]).await;
    assert_eq!(step.results[0].kind, ResultKind::Cancelled);
}

#[tokio::test]
async fn an_empty_stream_is_a_bug_and_an_err_item_ends_the_call_with_its_error() {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let registry = registry(reports.clone());
    let (sink, seen) = collecting();
    let mut run = registry.run(Arc::new(())).with_progress(sink);
    let step = run.execute(vec![ToolCall::new("c1", "nothing", ""), ToolCall::new("c2", "flaky", "")]).await;
    assert_eq!(step.results[0].kind, ResultKind::Internal);
    assert_eq!(reports.lock().unwrap()[0], (ErrorKind::Internal, "the tool's stream ended without an item; its last item is the result".to_owned()));
    assert_eq!(step.results[1].kind, ResultKind::ToolError);
    assert_eq!(step.results[1].error_code.as_deref(), Some("FEED_DOWN"));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "the item before the error was sent");
    assert_eq!(seen[0].preliminary, Some(json!(1)));
}

#[tokio::test]
async fn the_output_limit_covers_the_whole_stream() {
    let (sink, seen) = collecting();
    let mut run = registry(Arc::default()).run(Arc::new(())).with_progress(sink);
    let step = run.execute(vec![ToolCall::new("c1", "chatty", "")]).await;
    // 10 characters: "aaaaaa" takes 6, "bbbbbb" is cut at the 4 left, and "cccccc" is not sent.
    let messages: Vec<String> = seen.lock().unwrap().iter().filter_map(|p| p.message.clone()).collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0], "aaaaaa");
    assert!(messages[1].starts_with("bbbb") && messages[1] != "bbbbbb", "{messages:?}");
    assert!(step.results[0].truncated);
    assert!(step.results[0].text.starts_with("the end of"));
}

/// Runs `test` on a runtime of its own on another thread, and fails if it
/// has not returned within `within` (a stream that never yields would hold
/// the thread forever; the test must fail, not hang).
fn returns_within<T: Send + 'static>(within: Duration, test: impl Future<Output = T> + Send + 'static) -> T {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let _ = done.send(runtime.block_on(test));
    });
    finished.recv_timeout(within).unwrap_or_else(|_| panic!("still running after {within:?}"))
}

#[test]
fn an_always_ready_stream_ends_at_its_timeout() {
    let (result, elapsed) = returns_within(Duration::from_secs(20), async {
        let registry = registry(Arc::default());
        let started = Instant::now();
        let result = registry.invoke(&Arc::new(()), "flood", "").await;
        (result, started.elapsed())
    });
    println!("30,000,000 ready items under a 200 ms timeout: {:?} after {elapsed:?}", result.kind);
    assert_eq!(result.kind, ResultKind::TimedOut, "{}", result.text);
    assert!(elapsed < Duration::from_secs(2), "the timeout won only after {elapsed:?}");
}

#[test]
fn an_endless_stream_returns_under_an_outer_timeout() {
    let (outcome, elapsed) = returns_within(Duration::from_secs(20), async {
        let registry = registry(Arc::default());
        let app = Arc::new(());
        let started = Instant::now();
        let outcome = tokio::time::timeout(Duration::from_millis(200), registry.invoke(&app, "endless", "")).await;
        (outcome.is_err(), started.elapsed())
    });
    assert!(outcome, "the outer timeout elapsed");
    assert!(elapsed < Duration::from_secs(2), "the outer timeout won only after {elapsed:?}");
}

#[test]
fn an_endless_stream_returns_under_an_outer_timeout_outside_the_cooperative_budget() {
    let (outcome, elapsed) = returns_within(Duration::from_secs(20), async {
        let registry = registry(Arc::default());
        let app = Arc::new(());
        let started = Instant::now();
        let call = tokio::time::timeout(Duration::from_millis(200), registry.invoke(&app, "endless", ""));
        let outcome = tokio::task::coop::unconstrained(call).await;
        (outcome.is_err(), started.elapsed())
    });
    assert!(outcome, "the outer timeout elapsed");
    assert!(elapsed < Duration::from_secs(2), "the outer timeout won only after {elapsed:?}");
}

#[test]
fn an_endless_stream_is_cancelled_with_its_run() {
    let kind = returns_within(Duration::from_secs(20), async {
        let registry = registry(Arc::default());
        let mut run = registry.run(Arc::new(()));
        let cancel = run.cancellation().clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            cancel.cancel();
        });
        run.execute(vec![ToolCall::new("c1", "endless", "")]).await.results[0].kind
    });
    assert_eq!(kind, ResultKind::Cancelled);
}

#[tokio::test]
async fn a_preliminary_item_over_the_output_limit_is_cut_and_marked() {
    for structured in [false, true] {
        let (sink, seen) = collecting();
        let mut run = registry(Arc::default()).run(Arc::new(())).with_progress(sink);
        let step = run.execute(vec![ToolCall::new("c1", "bulky", json!({"structured": structured}).to_string())]).await;
        assert_eq!(step.results[0].text, "done");
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        let message = seen[0].message.as_deref().unwrap();
        let Some(serde_json::Value::String(item)) = &seen[0].preliminary else {
            panic!("{:?}", seen[0].preliminary.as_ref().map(|v| v.to_string().len()))
        };
        assert_eq!(item, message, "the item sent is the text cut at the limit");
        let (kept, marker) = item.split_once("\n[output truncated: showing the first 50 of ").expect(item);
        assert_eq!(kept.chars().count(), 50, "{item}");
        assert!(marker.len() < 150, "{item}");
    }
}

//! `interim = "..."` / `interim_after = "..."`: a call still running after
//! the delay sends the interim text once, to the call's or the run's
//! progress sink; a call that ended (returned, cancelled, timed out) never
//! sends it afterwards. Time is paused, so the delays are exact and cost
//! nothing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tool_runtime::prelude::*;
use tool_runtime::{BuildProblem, Interim, Progress, ProgressSink, ResultKind, ToolCall};

/// Search the archive; takes `seconds`.
#[tool(interim = "Still searching the archive...", interim_after = "2s", timeout = "10s")]
async fn archive_search(ctx: Ctx<()>, seconds: u64) -> String {
    ctx.progress(1.0, None, Some("opened the archive"));
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    "found".into()
}

/// Answers at once.
#[tool(interim = "Still thinking...")]
async fn quick() -> &'static str {
    "done"
}

/// Sleeps without an interim text.
#[tool]
async fn plain_sleep(seconds: u64) -> String {
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    "slept".into()
}

fn registry() -> Registry<()> {
    Registry::builder().tools(tools![archive_search, quick, plain_sleep]).build().unwrap()
}

/// A progress sink that keeps every report with when it came (paused time).
/// Each progress report, with when it came.
type Seen = Arc<Mutex<Vec<(Duration, Progress)>>>;

fn recorder() -> (ProgressSink, Seen) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let start = tokio::time::Instant::now();
    (ProgressSink::new(move |progress| sink.lock().unwrap().push((start.elapsed(), progress))), seen)
}

fn interims(seen: &Mutex<Vec<(Duration, Progress)>>) -> Vec<(Duration, Progress)> {
    seen.lock().unwrap().iter().filter(|(_, progress)| progress.interim).cloned().collect()
}

#[tokio::test(start_paused = true)]
async fn a_call_still_running_after_the_delay_sends_the_text_once() {
    let (sink, seen) = recorder();
    let outcome = registry().call(&Arc::new(()), "archive_search", json!({"seconds": 5})).call_id("c-1").progress(sink).await;
    assert_eq!(outcome.into_result().unwrap().text, "found");
    let interims = interims(&seen);
    assert_eq!(interims.len(), 1, "{:?}", seen.lock().unwrap());
    let (at, progress) = &interims[0];
    // The delay counts from the tool's first poll, carried over to the
    // paused clock from the system's: a few real milliseconds either way.
    assert!(*at > Duration::from_millis(1900) && *at < Duration::from_millis(2100), "sent at its delay, not {at:?}");
    assert_eq!(progress.call_id, "c-1");
    assert_eq!(progress.message.as_deref(), Some("Still searching the archive..."));
    assert_eq!((progress.progress, progress.total), (0.0, None));
    // The tool's own report is told apart from the runtime's interim text.
    let seen = seen.lock().unwrap();
    let own: Vec<_> = seen.iter().filter(|(_, progress)| !progress.interim).collect();
    assert_eq!(own.len(), 1);
    assert_eq!(own[0].1.message.as_deref(), Some("opened the archive"));
}

#[tokio::test(start_paused = true)]
async fn a_call_that_ends_before_the_delay_sends_nothing() {
    let registry = registry();
    let (sink, seen) = recorder();
    let result = registry.call(&Arc::new(()), "archive_search", json!({"seconds": 1})).progress(sink).await.into_result().unwrap();
    assert_eq!(result.text, "found");
    let (sink, quick_seen) = recorder();
    let result = registry.call(&Arc::new(()), "quick", "{}").progress(sink).await.into_result().unwrap();
    assert_eq!(result.text, "done");
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(interims(&seen).is_empty(), "{:?}", seen.lock().unwrap());
    assert!(quick_seen.lock().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_call_sends_nothing_after_it_ended() {
    let token = tool_runtime::CancellationToken::new();
    let canceller = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        canceller.cancel();
    });
    let (sink, seen) = recorder();
    let app = Arc::new(());
    let registry = registry();
    let outcome = registry.call(&app, "archive_search", json!({"seconds": 5})).cancellation(&token).progress(sink).await;
    assert_eq!(outcome.into_result().unwrap().kind, ResultKind::Cancelled);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(interims(&seen).is_empty(), "{:?}", seen.lock().unwrap());
}

#[tokio::test(start_paused = true)]
async fn a_dropped_call_sends_nothing_after_it_was_dropped() {
    let (sink, seen) = recorder();
    let app = Arc::new(());
    let registry = registry();
    let call = registry.call(&app, "archive_search", json!({"seconds": 5})).progress(sink);
    assert!(tokio::time::timeout(Duration::from_secs(1), call).await.is_err());
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(interims(&seen).is_empty(), "{:?}", seen.lock().unwrap());
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_call_sends_the_text_once_and_nothing_after_its_timeout() {
    let (sink, seen) = recorder();
    let result = registry().call(&Arc::new(()), "archive_search", json!({"seconds": 3600})).progress(sink).await.into_result().unwrap();
    assert_eq!(result.kind, ResultKind::TimedOut);
    tokio::time::sleep(Duration::from_secs(60)).await;
    let interims = interims(&seen);
    assert_eq!(interims.len(), 1, "{:?}", seen.lock().unwrap());
    assert!(interims[0].0 < Duration::from_secs(10), "before the timeout");
}

#[tokio::test(start_paused = true)]
async fn a_run_sends_the_text_to_its_progress_sink() {
    let (sink, seen) = recorder();
    let mut run = registry().run(Arc::new(())).with_progress(sink);
    let step = run
        .execute(vec![
            ToolCall::new("slow-1", "archive_search", json!({"seconds": 3})),
            ToolCall::new("plain-1", "plain_sleep", json!({"seconds": 3})),
        ])
        .await;
    assert!(step.results.iter().all(|result| result.kind == ResultKind::Success), "{:?}", step.results);
    let interims = interims(&seen);
    assert_eq!(interims.len(), 1, "only the tool with an interim text: {:?}", seen.lock().unwrap());
    assert_eq!(interims[0].1.call_id, "slow-1");
    assert_eq!(interims[0].1.message.as_deref(), Some("Still searching the archive..."));
}

#[test]
fn the_definition_carries_the_text_and_its_delay() {
    let registry = registry();
    let interim = registry.definition("archive_search").unwrap().interim.clone();
    assert_eq!(interim, Some(Interim { text: "Still searching the archive...".into(), after: Duration::from_secs(2) }));
    let quick = registry.definition("quick").unwrap().interim.clone().unwrap();
    assert_eq!(quick.after, Interim::DEFAULT_AFTER, "`interim` alone waits the default delay");
    assert_eq!(registry.definition("plain_sleep").unwrap().interim, None);
}

fn dynamic_search() -> DynamicTool<()> {
    let schema = json!({"type": "object", "properties": {"seconds": {"type": "integer"}}, "required": ["seconds"]});
    DynamicTool::new("dynamic_search", "Search, dynamically.", schema, |args: Value, _ctx: Ctx<()>| async move {
        tokio::time::sleep(Duration::from_secs(args["seconds"].as_u64().unwrap_or(0))).await;
        Ok::<_, ToolError>(Value::from("found"))
    })
}

#[tokio::test(start_paused = true)]
async fn a_dynamic_tool_sends_the_same_event() {
    let tool = dynamic_search().interim("Still searching, dynamically...", Duration::from_millis(1500));
    let registry = Registry::builder().tool(tool).build().unwrap();
    let (sink, seen) = recorder();
    let result = registry.call(&Arc::new(()), "dynamic_search", json!({"seconds": 4})).call_id("d-1").progress(sink).await;
    assert_eq!(result.into_result().unwrap().text, "found");
    let sent = interims(&seen);
    assert_eq!(sent.len(), 1, "{:?}", seen.lock().unwrap());
    assert!(sent[0].0 > Duration::from_millis(1400) && sent[0].0 < Duration::from_millis(1600), "{:?}", sent[0].0);
    assert_eq!(sent[0].1.call_id, "d-1");
    assert_eq!(sent[0].1.message.as_deref(), Some("Still searching, dynamically..."));

    let (sink, seen) = recorder();
    registry.call(&Arc::new(()), "dynamic_search", json!({"seconds": 1})).progress(sink).await;
    assert!(interims(&seen).is_empty(), "ended before the delay");
}

#[test]
fn an_interim_text_that_could_never_help_fails_the_build() {
    let problem = |tool: DynamicTool<()>, timeout: Duration| {
        let error = Registry::builder().tool(tool).default_timeout(timeout).build().unwrap_err();
        match &error.problems[..] {
            [BuildProblem::InvalidInterim { tool, reason }] => {
                assert_eq!(tool, "dynamic_search");
                reason.clone()
            }
            other => panic!("{other:?}"),
        }
    };
    let minute = Duration::from_secs(60);
    assert!(problem(dynamic_search().interim("  ", Duration::from_secs(1)), minute).contains("interim text is empty"));
    assert!(problem(dynamic_search().interim("Wait.", Duration::ZERO), minute).contains("delay is zero"));
    let reason = problem(dynamic_search().interim("Wait.", Duration::from_secs(5)), Duration::from_secs(5));
    assert!(reason.contains("not shorter than its timeout (5s)") && reason.contains("would never be sent"), "{reason}");
    // The tool's own timeout counts, not the registry's default.
    let fine = dynamic_search().interim("Wait.", Duration::from_secs(5)).timeout(minute);
    assert!(Registry::builder().tool(fine).default_timeout(Duration::from_secs(5)).build().is_ok());
}

#[tokio::test(start_paused = true)]
async fn the_delay_and_the_timeout_count_on_tokios_clock_when_it_is_paused() {
    // A paused clock runs ahead of the system's: timers made from the
    // system's clock would be in the past, and fire at once.
    tokio::time::sleep(Duration::from_secs(60)).await;
    let (sink, seen) = recorder();
    let result = registry().call(&Arc::new(()), "archive_search", json!({"seconds": 5})).progress(sink).await.into_result().unwrap();
    assert_eq!(result.kind, ResultKind::Success, "{}", result.text);
    let sent = interims(&seen);
    assert_eq!(sent.len(), 1);
    assert!(sent[0].0 > Duration::from_millis(1900), "sent at its delay, not at once: {:?}", sent[0].0);
}

//! External tools: validated and decided like any tool, then handed to the
//! host with their input instead of executed; the host's output is checked
//! against the output schema before the model reads it.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;
use tool_runtime::prelude::*;
use tool_runtime::{ExternalCall, ResultKind, RunError, RunState};

/// A slot in the user's calendar.
#[derive(Serialize, JsonSchema)]
struct Slot {
    /// `HH:MM`.
    #[schemars(regex(pattern = r"^\d\d:\d\d$"))]
    start: String,
    minutes: u32,
}

/// Let the user pick a free slot on a day, in their calendar app.
#[tool(external)]
async fn pick_slot(
    /// `YYYY-MM-DD`.
    #[schemars(regex(pattern = r"^\d{4}-\d\d-\d\d$"))]
    day: String,
) -> Slot;

/// Ask the user to confirm the booking in the app; ends the run.
#[tool(external, ends_run, policy = needs_approval)]
async fn confirm_booking(slot: String) -> String;

/// Delete the calendar, never allowed.
#[tool(external, policy = deny)]
async fn wipe_calendar() -> String;

fn registry() -> Registry<()> {
    Registry::builder().tools(tools![pick_slot, confirm_booking, wipe_calendar]).build().unwrap()
}

#[tokio::test]
async fn a_call_is_validated_then_handed_to_the_host_with_its_input() {
    let mut run = registry().run(Arc::new(()));
    let step = run
        .execute(vec![
            ToolCall::new("c1", "pick_slot", r#"{"day": "2026-12-02"}"#),
            ToolCall::new("c2", "pick_slot", r#"{"day": "tomorrow"}"#),
            ToolCall::new("c3", "wipe_calendar", ""),
        ])
        .await;
    assert_eq!(step.results[0].kind, ResultKind::External);
    assert!(!step.results[0].is_error());
    let handed = step.results[0].external_call().unwrap();
    assert_eq!((handed.id.as_str(), handed.tool.as_str()), ("c1", "pick_slot"));
    assert_eq!(handed.input, json!({"day": "2026-12-02"}));
    // Invalid input and a refusal never reach the host.
    assert_eq!(step.results[1].kind, ResultKind::InvalidArguments);
    assert_eq!(step.results[2].kind, ResultKind::Denied);
    assert_eq!(run.external(), [handed]);
    assert!(run.executed().is_empty(), "handed is not executed");
}

#[tokio::test]
async fn the_hosts_output_is_checked_against_the_output_schema_then_read_by_the_model() {
    let mut run = registry().run(Arc::new(()));
    let mut step = run.execute(vec![ToolCall::new("c1", "pick_slot", r#"{"day": "2026-12-02"}"#)]).await;
    let wrong = run.external_calls().complete("c1", json!({"start": "half past nine", "minutes": 30})).await;
    match wrong {
        Err(RunError::InvalidOutput { tool, problems }) => {
            assert_eq!(tool, "pick_slot");
            assert!(problems[0].starts_with("/start:"), "{problems:?}");
        }
        other => panic!("expected InvalidOutput, got {other:?}"),
    }
    assert_eq!(run.external().len(), 1, "a refused output leaves the call waiting");
    let result = run.external_calls().complete("c1", json!({"start": "09:30", "minutes": 30})).await.unwrap();
    assert_eq!(result.kind, ResultKind::Success);
    assert_eq!(result.text, r#"{"start":"09:30","minutes":30}"#);
    assert_eq!(result.structured(), Some(&json!({"start": "09:30", "minutes": 30})));
    step.settle(result);
    assert_eq!(step.results[0].kind, ResultKind::Success);
    assert!(run.external().is_empty());
    assert_eq!(run.executed(), ["pick_slot"]);
    assert_eq!(run.external_calls().complete("c1", json!({})).await, Err(RunError::UnknownExternal("c1".into())));
}

#[tokio::test]
async fn a_failure_where_the_host_ran_it_is_the_tools_error() {
    let mut run = registry().run(Arc::new(()));
    run.execute(vec![ToolCall::new("c1", "pick_slot", r#"{"day": "2026-12-02"}"#)]).await;
    let error = ToolError::conflict("NO_FREE_SLOT", "The day is full; ask for another day.");
    let result = run.external_calls().fail("c1", &error).await.unwrap();
    assert_eq!(result.kind, ResultKind::ToolError);
    assert_eq!(result.text, "code: NO_FREE_SLOT, status: 409, userMessage: The day is full; ask for another day.");
    assert!(run.external().is_empty());
    assert_eq!(run.external_calls().fail("c1", &error).await, Err(RunError::UnknownExternal("c1".into())));
}

#[tokio::test]
async fn an_approved_call_is_handed_and_its_output_may_end_the_run() {
    let mut run = registry().run(Arc::new(()));
    let step = run.execute(vec![ToolCall::new("c1", "confirm_booking", r#"{"slot": "09:30"}"#)]).await;
    assert_eq!(step.results[0].kind, ResultKind::PendingApproval);
    assert!(run.external().is_empty(), "not handed before a human approved it");
    let approved = run.approvals().approve("c1").await.unwrap();
    assert_eq!(approved.kind, ResultKind::External);
    assert_eq!(run.external()[0].input, json!({"slot": "09:30"}));
    let done = run.external_calls().complete("c1", json!("booked")).await.unwrap();
    assert!(done.ends_run);
    assert_eq!(run.state(), &RunState::Ending { by: "confirm_booking".into() });
}

#[tokio::test]
async fn invoke_hands_the_call_with_its_input() {
    let registry = registry();
    let handed = registry.invoke(&Arc::new(()), "pick_slot", r#"{"day": "2026-12-02"}"#).await;
    assert_eq!(handed.kind, ResultKind::External);
    let call: ExternalCall = handed.external_call().unwrap();
    assert_eq!((call.tool.as_str(), call.input), ("pick_slot", json!({"day": "2026-12-02"})));
    assert!(registry.definition("pick_slot").unwrap().external);
}

#[tokio::test]
async fn only_a_call_the_run_handed_is_completed_and_only_once() {
    let mut run = registry().run(Arc::new(()));
    // Never handed: an id the host made up, and a call of a tool that is not external.
    assert_eq!(
        run.external_calls().complete("made-up", json!({"start": "10:00", "minutes": 15})).await,
        Err(RunError::UnknownExternal("made-up".into()))
    );
    run.execute(vec![ToolCall::new("c1", "pick_slot", r#"{"day": "2026-12-02"}"#)]).await;
    run.external_calls().complete("c1", json!({"start": "10:00", "minutes": 15})).await.unwrap();
    assert_eq!(run.external_calls().complete("c1", json!({"start": "11:00", "minutes": 15})).await, Err(RunError::UnknownExternal("c1".into())));
    assert_eq!(run.external_calls().fail("c1", &ToolError::conflict("LATE", "Too late.")).await, Err(RunError::UnknownExternal("c1".into())));
}

#[tokio::test]
async fn a_dynamic_external_tool_is_handed_too() {
    let locate = DynamicTool::external(
        "locate_user",
        "Ask the user's device for its location.",
        json!({"type": "object", "properties": {"precise": {"type": "boolean"}}, "required": ["precise"], "additionalProperties": false}),
    )
    .output_schema(json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}));
    let registry = Registry::<()>::builder().tool(locate).build().unwrap();
    let mut run = registry.run(Arc::new(()));
    let step = run.execute(vec![ToolCall::new("c1", "locate_user", r#"{"precise": false}"#)]).await;
    assert_eq!(step.results[0].kind, ResultKind::External);
    assert!(matches!(run.external_calls().complete("c1", json!({"town": "Delft"})).await, Err(RunError::InvalidOutput { .. })));
    assert_eq!(run.external_calls().complete("c1", json!({"city": "Delft"})).await.unwrap().kind, ResultKind::Success);
}

#[tokio::test]
async fn a_call_id_reused_while_its_external_call_waits_is_refused() {
    let mut run = registry().run(Arc::new(()));
    run.execute(vec![ToolCall::new("c1", "pick_slot", r#"{"day": "2026-12-02"}"#)]).await;
    // A later step reuses the id, for another input and for another tool.
    let step = run
        .execute(vec![ToolCall::new("c1", "pick_slot", r#"{"day": "2026-12-03"}"#), ToolCall::new("c1", "confirm_booking", r#"{"slot": "09:30"}"#)])
        .await;
    for refused in &step.results {
        assert_eq!(refused.kind, ResultKind::InvalidArguments, "{}", refused.text);
        assert_eq!(refused.error_code.as_deref(), Some("DUPLICATE_CALL_ID"));
    }
    assert!(run.pending().is_empty(), "the reused id was not parked either");
    assert_eq!(run.external().len(), 1);
    assert_eq!(run.external()[0].input, json!({"day": "2026-12-02"}), "the waiting call is the first one");
    // Once it is completed, the id is free again.
    run.external_calls().complete("c1", json!({"start": "10:00", "minutes": 15})).await.unwrap();
    let step = run.execute(vec![ToolCall::new("c1", "pick_slot", r#"{"day": "2026-12-04"}"#)]).await;
    assert_eq!(step.results[0].kind, ResultKind::External);
}

#[tokio::test]
async fn waiting_external_calls_are_capped() {
    let mut run = registry().run(Arc::new(()));
    let calls = |from: usize, to: usize| (from..to).map(|i| ToolCall::new(format!("c{i}"), "pick_slot", r#"{"day": "2026-12-02"}"#)).collect();
    let step = run.execute(calls(0, 70)).await;
    assert!(step.results[..64].iter().all(|result| result.kind == ResultKind::External));
    for refused in &step.results[64..] {
        assert_eq!(refused.error_code.as_deref(), Some("TOO_MANY_EXTERNAL"), "{}", refused.text);
    }
    assert_eq!(run.external().len(), 64);
    let step = run.execute(calls(70, 71)).await;
    assert_eq!(step.results[0].error_code.as_deref(), Some("TOO_MANY_EXTERNAL"));
    // Completing one makes room.
    run.external_calls().complete("c0", json!({"start": "10:00", "minutes": 15})).await.unwrap();
    let step = run.execute(calls(71, 72)).await;
    assert_eq!(step.results[0].kind, ResultKind::External);

    // The cap is the registry's, and counts calls waiting for approval
    // that would be handed once approved.
    let registry = Registry::<()>::builder().tools(tools![pick_slot, confirm_booking]).max_external_calls(2).build().unwrap();
    let mut run = registry.run(Arc::new(()));
    let step = run
        .execute(vec![
            ToolCall::new("b1", "confirm_booking", r#"{"slot": "09:30"}"#),
            ToolCall::new("p1", "pick_slot", r#"{"day": "2026-12-02"}"#),
            ToolCall::new("p2", "pick_slot", r#"{"day": "2026-12-03"}"#),
        ])
        .await;
    assert_eq!(step.results[0].kind, ResultKind::PendingApproval);
    assert_eq!(step.results[1].kind, ResultKind::External);
    assert_eq!(step.results[2].error_code.as_deref(), Some("TOO_MANY_EXTERNAL"));
    assert!(step.results[2].text.contains("2 calls already wait for the application"), "{}", step.results[2].text);
}

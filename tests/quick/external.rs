//! External tools: validated and decided like any tool, then handed to the
//! host with their input instead of executed; the host's output is checked
//! against the output schema before the model reads it.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;
use tool_runtime::prelude::*;
use tool_runtime::{ExternalCall, ProposalError, ResultKind, RunError, RunState};

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

// ---------------------------------------------------------------- resolve

/// What the host's calendar app is asked to show: the host's own type,
/// neither `Serialize` nor `Deserialize`.
#[derive(Debug, PartialEq)]
struct SlotRequest {
    day: String,
    minutes: u32,
}

fn to_request(input: &book_slot) -> Result<SlotRequest, String> {
    if input.hours == 0 {
        return Err("Ask for at least one hour.".into());
    }
    Ok(SlotRequest { day: input.day.clone(), minutes: input.hours * 60 })
}

/// Let the user book a slot of some hours in their calendar app.
#[tool(external, resolve = to_request)]
async fn book_slot(day: String, hours: u32) -> String;

#[tokio::test]
async fn resolve_converts_a_calls_input_into_the_hosts_proposal_and_its_error_refuses_the_call() {
    let registry = Registry::<()>::builder().tools(tools![book_slot, pick_slot]).build().unwrap();
    assert!(registry.definition("book_slot").unwrap().resolve);
    assert!(!registry.definition("pick_slot").unwrap().resolve);
    let mut run = registry.run(Arc::new(()));
    let step = run
        .execute(vec![
            ToolCall::new("c1", "book_slot", r#"{"day": "Monday", "hours": 2}"#),
            ToolCall::new("c2", "book_slot", r#"{"day": "Tuesday", "hours": 0}"#),
            ToolCall::new("c3", "pick_slot", r#"{"day": "2026-12-02"}"#),
        ])
        .await;
    assert_eq!(step.results[0].kind, ResultKind::External);
    assert_eq!(step.results[1].kind, ResultKind::Denied, "the conversion's error refuses the call");
    assert!(step.results[1].text.contains("Ask for at least one hour."), "{}", step.results[1].text);
    assert_eq!(run.external().iter().map(|call| call.id.as_str()).collect::<Vec<_>>(), ["c1", "c3"], "a refused call is not handed over");

    let proposal: SlotRequest = run.external_calls().proposal("c1").unwrap();
    assert_eq!(proposal, SlotRequest { day: "Monday".into(), minutes: 120 });
    assert_eq!(registry.proposal::<SlotRequest>(&run.external()[0]).unwrap(), proposal);
    assert!(matches!(run.external_calls().proposal::<String>("c1"), Err(ProposalError::OtherType { .. })));
    assert!(matches!(run.external_calls().proposal::<SlotRequest>("c3"), Err(ProposalError::NoResolve(_))), "pick_slot has no resolve");
    let mut forged = run.external()[0].clone();
    forged.input = json!({"day": "Monday", "hours": 0});
    let refused = registry.proposal::<SlotRequest>(&forged).unwrap_err();
    assert!(refused.to_string().contains("Ask for at least one hour."), "{refused}");
}

#[test]
fn a_dynamic_tool_the_registry_runs_cannot_resolve() {
    let tool =
        DynamicTool::new("echo", "Echo.", json!({"type": "object"}), |args: serde_json::Value, _: Ctx<()>| async move { Ok::<_, ToolError>(args) })
            .resolve(|_| Ok::<_, String>(1));
    let error = Registry::builder().tool(tool).build().expect_err("resolve on a tool the registry runs");
    assert!(error.to_string().contains("dynamic tool `echo`: `resolve` is for an `external` tool"), "{error}");
}

//! Intent classification and scopes: the classifier's prompt and answer
//! schema written from the tools' metadata, the answer read in every
//! provider's dialect, the turn's offered tools (selected, always active,
//! what they require), failing open, and `scope = path` rebuilding a tool
//! for the turn, checked to narrow, with calls validated against it.

use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_runtime::prelude::*;
use tool_runtime::providers::{Dialect, ExportOptions, Prepared, anthropic, gemini, openai};
use tool_runtime::{Classifier, ErrorKind, ResultKind, ScopedTool, Selection};

#[derive(Default)]
struct Desk;

/// The regions orders ship from.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Region {
    Eu,
    Us,
}

/// Which orders a turn is about.
#[derive(Debug, Deserialize, JsonSchema)]
struct OrderScope {
    /// The region the customer named.
    region: Region,
}

/// Search the orders of a region. Returns at most `limit` matches.
#[tool(read_only, scope = one_region, scope_prompt = "the region the customer names", example_prompts("Any late parcels in the EU?"))]
async fn search_orders(
    /// `eu` or `us`.
    #[schemars(regex(pattern = "^(eu|us)$"))]
    region: String,
    /// What to look for.
    query: String,
) -> String {
    format!("{region}: no orders match {query}")
}

fn one_region(scope: &OrderScope, tool: &mut ScopedTool) {
    let region = match scope.region {
        Region::Eu => "eu",
        Region::Us => "us",
    };
    tool.description = format!("Search the orders of region {region}.");
    tool.input_schema["properties"]["region"]["enum"] = json!([region]);
}

/// Look up one order by its number. Slow for old orders.
#[tool(read_only, example_prompts("Where is my parcel?", "Has A-1 shipped?"))]
async fn lookup_order(order_id: String) -> String {
    format!("{order_id}: shipped")
}

/// Refund an order.
#[tool(requires("lookup_order"), classification = "Money back for an order")]
async fn refund(order_id: String) -> String {
    format!("refunded {order_id}")
}

/// Hand the conversation to a human.
#[tool(always_active)]
async fn hand_over() -> String {
    "a colleague takes over".into()
}

/// Tell a joke.
#[tool]
async fn joke() -> String {
    "...".into()
}

/// Search with a scope function that widens the schema.
#[tool(scope = widen)]
async fn search_wide(region: String) -> String {
    region
}

fn widen(_scope: &String, tool: &mut ScopedTool) {
    tool.input_schema["additionalProperties"] = json!(true);
}

/// Search with a scope function that panics.
#[tool(scope = broken)]
async fn search_broken(region: String) -> String {
    region
}

fn broken(_scope: &u32, _tool: &mut ScopedTool) {
    panic!("no scope today");
}

/// Refund every order of a region; a human approves each refund.
#[tool(policy = needs_approval, scope = one_region)]
async fn refund_region(#[schemars(regex(pattern = "^(eu|us)$"))] region: String, query: String) -> String {
    format!("refunded {region} {query}")
}

fn registry() -> Registry<Desk> {
    Registry::builder().tools(tools![search_orders, lookup_order, refund, hand_over, joke]).build().unwrap()
}

fn run() -> Run<Desk> {
    registry().run(Arc::new(Desk))
}

#[test]
fn the_prompt_lists_each_tool_by_its_classification_line_else_its_first_sentence() {
    let classifier = registry().classifier();
    let prompt = classifier.prompt();
    assert!(prompt.contains("\n- refund: Money back for an order"), "{prompt}");
    assert!(prompt.contains("\n- lookup_order: Look up one order by its number.\n"), "first sentence only: {prompt}");
    assert!(prompt.contains("  Users say: \"Where is my parcel?\" | \"Has A-1 shipped?\""), "{prompt}");
    assert!(prompt.contains("\n- search_orders: Search the orders of a region.\n"), "{prompt}");
    assert!(prompt.contains("  scope: the region the customer names"), "{prompt}");
    assert!(prompt.contains("`scopes`"), "the prompt explains scopes when a tool has one: {prompt}");
    assert!(!prompt.contains("hand_over"), "an always-active tool is not chosen: {prompt}");
}

#[test]
fn the_answer_schema_names_the_tools_as_an_enum_and_each_scope_by_its_type() {
    let classifier = registry().classifier();
    let schema = classifier.answer_schema();
    assert_eq!(schema["properties"]["tools"]["items"]["enum"], json!(["search_orders", "lookup_order", "refund", "joke"]));
    assert_eq!(schema["required"], json!(["tools"]));
    // The scope type's definitions move to the root, under the tool's name.
    assert_eq!(schema["properties"]["scopes"]["properties"]["search_orders"]["$ref"], "#/$defs/search_orders.OrderScope");
    assert_eq!(schema["$defs"]["search_orders.OrderScope"]["properties"]["region"]["$ref"], "#/$defs/search_orders.Region");
    let validator = jsonschema::draft202012::new(schema).unwrap();
    assert!(validator.is_valid(&json!({"tools": ["search_orders"], "scopes": {"search_orders": {"region": "eu"}}})));
    assert!(!validator.is_valid(&json!({"tools": ["search_orders"], "scopes": {"search_orders": {"region": "mars"}}})));
    assert!(!validator.is_valid(&json!({"tools": ["launch_rocket"]})));
    // No scoped tool, no `scopes`.
    let plain = Registry::<Desk>::builder().tools(tools![lookup_order, joke]).build().unwrap().classifier();
    assert!(plain.answer_schema()["properties"].get("scopes").is_none());
    assert!(!plain.prompt().contains("`scopes`"));
}

#[test]
fn the_classifier_tool_exports_in_every_dialect() {
    let classifier = registry().classifier();
    let tool = classifier.tool();
    assert_eq!(tool.name, Classifier::TOOL_NAME);
    let options = ExportOptions::default();
    assert_eq!(anthropic::tools([&tool], &options).unwrap().tools[0]["name"], "select_tools");
    assert_eq!(openai::chat::tools([&tool], &options).unwrap().tools[0]["function"]["name"], "select_tools");
    assert_eq!(openai::responses::tools([&tool], &options).unwrap().tools[0]["name"], "select_tools");
    let gemini = gemini::tools([&tool], &options).unwrap();
    assert_eq!(gemini.tools[0]["functionDeclarations"][0]["name"], "select_tools");
}

#[test]
fn the_answer_reads_the_same_in_every_dialect() {
    let classifier = registry().classifier();
    let answer = json!({"tools": ["search_orders", "refund"], "scopes": {"search_orders": {"region": "us"}}});
    let text = answer.to_string();
    let responses = [
        (
            Dialect::OpenAiChat,
            json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "select_tools", "arguments": text}}]}}]}),
        ),
        (
            Dialect::OpenAiResponses,
            json!({"output": [
            {"type": "function_call", "call_id": "c1", "name": "select_tools", "arguments": text}]}),
        ),
        (Dialect::Anthropic, json!({"content": [{"type": "tool_use", "id": "t1", "name": "select_tools", "input": answer}]})),
        (Dialect::Gemini, json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "select_tools", "args": answer}}]}}]})),
    ];
    for (dialect, response) in responses {
        let selection = classifier.read(dialect, &response);
        assert_eq!(selection.failed_open, None, "{dialect:?}");
        assert_eq!(selection.tools, ["search_orders", "refund"], "{dialect:?}");
        assert_eq!(selection.scopes["search_orders"], json!({"region": "us"}), "{dialect:?}");
    }
    // A structured-output answer, as text.
    assert_eq!(classifier.read_json(&text).tools, ["search_orders", "refund"]);
}

#[test]
fn unknown_names_are_dropped_and_reported() {
    let classifier = registry().classifier();
    let selection = classifier.read_value(&json!({"tools": ["lookup_order", "launch_rocket", 7, "hand_over", "lookup_order"]}));
    assert_eq!(selection.tools, ["lookup_order"]);
    assert_eq!(selection.dropped, ["launch_rocket", "7", "hand_over"]);
    assert_eq!(selection.failed_open, None);
}

#[test]
fn a_missing_or_invalid_answer_fails_open_and_every_tool_is_offered() {
    let classifier = registry().classifier();
    let unusable = [
        classifier.read(Dialect::Anthropic, &json!({"content": [{"type": "text", "text": "I think lookup_order"}]})),
        classifier.read(Dialect::OpenAiChat, &json!({"choices": "nope"})),
        classifier.read_json("lookup_order"),
        classifier.read_value(&json!({"names": ["lookup_order"]})),
        classifier.read_json(&format!("{{\"tools\": [\"{}\"]}}", "x".repeat(70_000))),
    ];
    for selection in unusable {
        let why = selection.failed_open.clone().expect("fails open");
        let mut run = run();
        run.select(&Selection::new(["joke"]));
        assert_eq!(run.offered_names(), ["hand_over", "joke"]);
        assert!(run.select(&selection).is_empty());
        assert_eq!(run.offered_names(), ["search_orders", "lookup_order", "hand_over", "joke"], "{why}");
    }
}

#[tokio::test]
async fn a_turn_offers_the_selected_the_always_active_and_what_they_require() {
    let mut run = run();
    run.select(&Selection::new(["refund"]));
    // `refund` needs `lookup_order` first: the turn offers it, and `refund` once it ran.
    assert_eq!(run.offered_names(), ["lookup_order", "hand_over"]);
    let step = run.execute(vec![ToolCall::new("c1", "joke", "")]).await;
    assert_eq!(step.results[0].kind, ResultKind::UnknownTool, "a tool the turn does not offer cannot be called");
    run.execute(vec![ToolCall::new("c2", "lookup_order", r#"{"order_id": "A-1"}"#)]).await;
    assert_eq!(run.offered_names(), ["lookup_order", "refund", "hand_over"]);
    // A new selection replaces it; clearing offers everything again.
    run.select(&Selection::new(["joke"]));
    assert_eq!(run.offered_names(), ["hand_over", "joke"]);
    run.clear_selection();
    assert_eq!(run.offered_names(), ["search_orders", "lookup_order", "refund", "hand_over", "joke"]);
}

#[tokio::test]
async fn a_scoped_tool_is_offered_rebuilt_and_its_calls_are_validated_against_the_scope() {
    let mut run = run();
    let selection = registry().classifier().read_value(&json!({"tools": ["search_orders"], "scopes": {"search_orders": {"region": "eu"}}}));
    assert!(run.select(&selection).is_empty());
    let offered = run.offered();
    assert_eq!(offered[0].description, "Search the orders of region eu.");
    assert_eq!(offered[0].input_schema["properties"]["region"]["enum"], json!(["eu"]));
    // Exports carry the rebuilt tool, prepared or not.
    let options = ExportOptions::default();
    let exported = anthropic::tools(run.offered(), &options).unwrap();
    assert_eq!(exported.tools[0]["input_schema"]["properties"]["region"]["enum"], json!(["eu"]));
    let registry = registry();
    let prepared = Prepared::new(Dialect::Anthropic, registry.definitions(), &options).unwrap();
    let payload: Value = serde_json::from_str(&prepared.payload(run.offered())).unwrap();
    assert_eq!(payload[0]["description"], "Search the orders of region eu.");
    // Valid for the tool, outside the turn's scope: the model reads which field.
    let step = run
        .execute(vec![
            ToolCall::new("c1", "search_orders", r#"{"region": "us", "query": "late"}"#),
            ToolCall::new("c2", "search_orders", json!({"region": "eu", "query": "late"})),
        ])
        .await;
    assert_eq!(step.results[0].kind, ResultKind::InvalidArguments);
    assert!(step.results[0].text.contains("/region"), "{}", step.results[0].text);
    assert_eq!(step.results[1].kind, ResultKind::Success);
    assert_eq!(step.results[1].text, "eu: no orders match late");
    // Without the selection the tool takes either region again.
    run.clear_selection();
    let step = run.execute(vec![ToolCall::new("c3", "search_orders", r#"{"region": "us", "query": "late"}"#)]).await;
    assert_eq!(step.results[0].kind, ResultKind::Success);
}

#[tokio::test]
async fn a_scope_that_widens_panics_or_does_not_fit_keeps_the_tool_as_it_is_and_is_reported() {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let seen = reports.clone();
    let registry = Registry::<Desk>::builder()
        .tools(tools![search_orders, search_wide, search_broken])
        .on_tool_error(move |report| seen.lock().unwrap().push((report.tool.clone(), report.kind, report.error.clone())))
        .build()
        .unwrap();
    let mut run = registry.run(Arc::new(Desk));
    let selection = Selection::new(["search_orders", "search_wide", "search_broken"])
        .scope("search_orders", json!({"region": "mars"}))
        .scope("search_wide", json!("eu"))
        .scope("search_broken", json!(3));
    let problems = run.select(&selection);
    let found: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].starts_with("tool `search_orders` is not scoped this turn: the scope value does not fit the scope type"), "{found:?}");
    assert!(found[1].contains("would accept more than the tool's own (/additionalProperties: the schema is replaced"), "{found:?}");
    assert!(found[2].contains("the scope function panicked: no scope today"), "{found:?}");
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 3);
    assert!(reports.iter().all(|(_, kind, _)| *kind == ErrorKind::Scope));
    // Each keeps its own definition, and is still offered.
    let offered = run.offered();
    assert_eq!(offered.len(), 3);
    for def in offered {
        assert_eq!(def, registry.definition(&def.name).unwrap());
    }
}

#[tokio::test]
async fn a_dynamic_tool_takes_a_scope_checked_against_its_schema() {
    let search = DynamicTool::new(
        "search_docs",
        "Search the documentation.",
        json!({"type": "object", "properties": {"product": {"type": "string"}}, "required": ["product"], "additionalProperties": false}),
        |args: Value, _ctx: Ctx<Desk>| async move { Ok::<_, ToolError>(args["product"].clone()) },
    )
    .scope(json!({"type": "string", "enum": ["billing", "shipping"]}), |scope, tool| {
        tool.input_schema["properties"]["product"]["const"] = scope.clone();
    });
    let registry = Registry::<Desk>::builder().tool(search).build().unwrap();
    assert_eq!(registry.classifier().answer_schema()["properties"]["scopes"]["properties"]["search_docs"]["enum"], json!(["billing", "shipping"]));
    let mut run = registry.run(Arc::new(Desk));
    let problems = run.select(&Selection::new(["search_docs"]).scope("search_docs", json!("returns")));
    assert_eq!(problems.len(), 1, "a value outside the scope schema is refused");
    assert!(run.select(&Selection::new(["search_docs"]).scope("search_docs", json!("billing"))).is_empty());
    let step = run
        .execute(vec![
            ToolCall::new("c1", "search_docs", r#"{"product": "shipping"}"#),
            ToolCall::new("c2", "search_docs", r#"{"product": "billing"}"#),
        ])
        .await;
    assert_eq!(step.results[0].kind, ResultKind::InvalidArguments);
    assert_eq!(step.results[1].kind, ResultKind::Success);
}

#[test]
fn the_scope_schema_is_in_the_definition() {
    let registry = registry();
    let scope = registry.definition("search_orders").unwrap().scope_schema.as_deref().unwrap();
    assert_eq!(scope["$ref"], "#/$defs/OrderScope");
    assert_eq!(scope["$defs"]["Region"]["enum"], json!(["eu", "us"]));
    assert!(registry.definition("lookup_order").unwrap().scope_schema.is_none());
}

#[tokio::test]
async fn an_input_a_human_edits_must_fit_the_turns_scope_too() {
    let registry = Registry::<Desk>::builder().tools(tools![refund_region]).build().unwrap();
    let mut run = registry.run(Arc::new(Desk));
    assert!(run.select(&Selection::new(["refund_region"]).scope("refund_region", json!({"region": "eu"}))).is_empty());
    let call = |id: &str| ToolCall::new(id, "refund_region", r#"{"region": "eu", "query": "late"}"#);
    run.execute(vec![call("c1"), call("c2")]).await;
    // An edit to another region fits the tool, not the turn: refused, not run.
    let refused = run.approvals().approve_with("c1", json!({"region": "us", "query": "late"})).await.unwrap();
    assert_eq!(refused.kind, ResultKind::InvalidArguments);
    assert!(refused.text.contains("/region"), "{}", refused.text);
    let approved = run.approvals().approve_with("c2", json!({"region": "eu", "query": "all"})).await.unwrap();
    assert_eq!(approved.text, "refunded eu all");
}

/// How many days back a turn looks.
#[derive(Debug, Deserialize, JsonSchema)]
struct RecentScope {
    /// At most five days.
    #[schemars(range(max = 5))]
    days: u32,
}

/// Search the recent orders.
#[tool(read_only, scope = recent_days)]
async fn recent_orders(days: u32) -> String {
    format!("{days} days")
}

fn recent_days(scope: &RecentScope, tool: &mut ScopedTool) {
    tool.description = format!("Search the orders of the last {} days.", scope.days);
    tool.input_schema["properties"]["days"]["maximum"] = json!(scope.days);
}

/// Search the notes.
#[tool(read_only, scope = echo_scope)]
async fn search_notes(topic: String) -> String {
    topic
}

/// Writes the scope value into the description, and, for `"long"`, a
/// description far longer than any scope value.
fn echo_scope(scope: &String, tool: &mut ScopedTool) {
    tool.description = if scope == "long" { "notes ".repeat(10_000) } else { format!("Search the notes about {scope}.") };
    if scope == "wide enum" {
        let topics: Vec<String> = (0..2_000).map(|i| format!("topic {i}")).collect();
        tool.input_schema["properties"]["topic"]["enum"] = json!(topics);
    }
}

#[test]
fn a_parsed_answer_over_the_cap_fails_open_in_every_dialect() {
    // Over the answer's 64 KiB, then over the response's 1 MiB as well.
    for (count, cap) in [(8_000, "65536"), (200_000, "1048576")] {
        answer_over_the_cap_fails_open(count, cap);
    }
}

fn answer_over_the_cap_fails_open(count: usize, cap: &str) {
    let classifier = registry().classifier();
    let names: Vec<String> = (0..count).map(|i| format!("tool_{i}")).collect();
    let answer = json!({"tools": names});
    let text = answer.to_string();
    let responses = [
        (
            Dialect::OpenAiChat,
            json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "select_tools", "arguments": text}}]}}]}),
        ),
        (Dialect::Anthropic, json!({"content": [{"type": "tool_use", "id": "t1", "name": "select_tools", "input": answer}]})),
        (Dialect::Gemini, json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "select_tools", "args": answer}}]}}]})),
    ];
    let mut selections: Vec<(String, Selection)> =
        responses.iter().map(|(dialect, response)| (format!("{dialect:?}"), classifier.read(*dialect, response))).collect();
    for selection in &mut selections[..] {
        selection.0 = format!("{} read", selection.0);
    }
    selections.push(("read_value".into(), classifier.read_value(&answer)));
    selections.push(("read_json".into(), classifier.read_json(&text)));
    for (path, selection) in selections {
        let why = selection.failed_open.clone().unwrap_or_else(|| panic!("{path}: read whole, {} names dropped", selection.dropped.len()));
        let expected = if path.ends_with(" read") { cap } else { "65536" };
        assert!(why.contains(expected), "{path}: {why}");
        assert!(selection.dropped.is_empty() && selection.tools.is_empty(), "{path}");
    }
}

#[test]
fn a_scope_value_or_the_text_rebuilt_from_it_over_its_cap_is_refused() {
    let registry = Registry::<Desk>::builder().tools(tools![search_notes]).build().unwrap();
    let own = registry.definition("search_notes").unwrap().clone();
    let mut run = registry.run(Arc::new(Desk));
    let cases = [
        (json!("x".repeat(5_000_000)), "the scope value is over 4096 bytes"),
        (json!("long"), "the rebuilt description is 60000 bytes, more than 4096 over the tool's own"),
        (json!("wide enum"), "the rebuilt input schema is more than 4096 bytes over the tool's own"),
    ];
    for (value, expected) in cases {
        let problems = run.select(&Selection::new(["search_notes"]).scope("search_notes", value));
        assert_eq!(problems.len(), 1, "{expected}");
        assert!(problems[0].problem.starts_with(expected), "expected {expected:?}, found {:?}", problems[0].problem);
        assert_eq!(run.offered(), [&own], "the tool keeps its own definition");
    }
    assert!(run.select(&Selection::new(["search_notes"]).scope("search_notes", json!("returns"))).is_empty());
    assert_eq!(run.offered()[0].description, "Search the notes about returns.");
}

#[tokio::test]
async fn a_scope_value_must_fit_the_scope_schema_the_classifier_was_shown() {
    let registry = Registry::<Desk>::builder().tools(tools![recent_orders]).build().unwrap();
    let shown = registry.classifier().answer_schema()["$defs"]["recent_orders.RecentScope"].clone();
    assert_eq!(shown["properties"]["days"]["maximum"], 5, "{shown}");
    let mut run = registry.run(Arc::new(Desk));
    let problems = run.select(&Selection::new(["recent_orders"]).scope("recent_orders", json!({"days": 9})));
    assert_eq!(problems.len(), 1, "9 is over the advertised maximum of 5");
    assert!(problems[0].problem.starts_with("the scope value does not fit the scope type: /days: 9 is greater than"), "{}", problems[0]);
    assert_eq!(run.offered()[0], registry.definition("recent_orders").unwrap());
    assert!(run.select(&Selection::new(["recent_orders"]).scope("recent_orders", json!({"days": 3}))).is_empty());
    assert_eq!(run.offered()[0].description, "Search the orders of the last 3 days.");
}

#[test]
fn an_added_applicator_cannot_defeat_unevaluated_properties() {
    let schema = json!({
        "type": "object",
        "properties": {"product": {"type": "string"}},
        "required": ["product"],
        "unevaluatedProperties": false
    });
    let search =
        DynamicTool::new("search_docs", "Search the documentation.", schema, |args: Value, _ctx: Ctx<Desk>| async move { Ok::<_, ToolError>(args) })
            .scope(json!({"type": "string"}), |scope, tool| {
                tool.input_schema["properties"]["product"]["const"] = scope.clone();
                tool.input_schema["allOf"] = json!([{"properties": {"admin": {"type": "boolean"}}}]);
            });
    let registry = Registry::<Desk>::builder().tool(search).build().unwrap();
    let mut run = registry.run(Arc::new(Desk));
    let problems = run.select(&Selection::new(["search_docs"]).scope("search_docs", json!("billing")));
    assert_eq!(problems.len(), 1, "the rebuilt schema would take `admin`, which the tool refuses");
    assert!(problems[0].problem.contains("/allOf: `allOf` may not be added beside `unevaluatedProperties`"), "{}", problems[0]);
    assert_eq!(run.offered()[0], registry.definition("search_docs").unwrap());
}

// ---------------------------------------------------------------- opting in

/// Handle a refund request: the entry point of refunds.
#[tool(as_intent, classification = "Refund requests", requires("lookup_order"))]
async fn refund_request(order_id: String) -> String {
    format!("refund of {order_id} opened")
}

fn track_parcel() -> DynamicTool<Desk> {
    DynamicTool::new("track_parcel", "Track a parcel.", json!({"type": "object"}), |_: Value, _: Ctx<Desk>| async {
        Ok::<_, ToolError>(json!("in transit"))
    })
}

#[tokio::test]
async fn a_registry_that_opts_in_lists_only_the_tools_written_as_intent() {
    let registry = Registry::<Desk>::builder()
        .tools(tools![search_orders, lookup_order, refund_request])
        .tool(track_parcel().as_intent(true))
        .intent_opt_in(true)
        .build()
        .unwrap();
    let mut run = registry.run(Arc::new(Desk));
    let classifier = run.classifier();
    assert!(classifier.prompt().contains("- refund_request: Refund requests"), "{}", classifier.prompt());
    assert!(classifier.prompt().contains("- track_parcel: Track a parcel."), "{}", classifier.prompt());
    for unlisted in ["search_orders", "lookup_order"] {
        assert!(!classifier.prompt().contains(unlisted), "{unlisted} did not opt in: {}", classifier.prompt());
    }
    assert_eq!(classifier.answer_schema()["properties"]["tools"]["items"]["enum"], json!(["refund_request", "track_parcel"]));
    assert_eq!(registry.classifier().prompt(), classifier.prompt(), "the registry's classifier and the run's agree");

    // A tool that is not listed cannot be chosen; what a chosen one requires is offered.
    let selection = classifier.read_json(r#"{"tools": ["refund_request", "lookup_order"]}"#);
    assert_eq!(selection.dropped, ["lookup_order"]);
    run.select(&selection);
    assert_eq!(run.offered_names(), ["lookup_order"], "refund_request waits for what it requires");
    run.execute(vec![ToolCall::new("c1", "lookup_order", r#"{"order_id": "A-1"}"#)]).await;
    assert_eq!(run.offered_names(), ["lookup_order", "refund_request"]);

    // Without opting in, every tool but the always active ones is listed, as before.
    let every = Registry::<Desk>::builder().tools(tools![search_orders, lookup_order, refund_request]).build().unwrap();
    assert!(every.classifier().prompt().contains("- lookup_order:"));
}

#[test]
fn opting_in_with_no_tool_written_as_intent_and_as_intent_on_an_always_active_tool_fail_the_build() {
    let error = Registry::<Desk>::builder().tools(tools![lookup_order]).intent_opt_in(true).build().expect_err("nothing opts in");
    assert_eq!(error.problems, [tool_runtime::BuildProblem::NoIntentTools]);
    assert!(error.to_string().contains("mark the tools it may choose `#[tool(as_intent)]`"), "{error}");

    let both = track_parcel().as_intent(true).always_active(true);
    let error = Registry::<Desk>::builder().tool(both).build().expect_err("as_intent contradicts always_active");
    assert!(error.to_string().contains("dynamic tool `track_parcel`: `as_intent` contradicts `always_active`"), "{error}");
}

//! Provider dialects end to end: golden exports per dialect (strict mode
//! decided, forced and refused; Gemini's inlining, nullables and recursion),
//! round trips from a provider payload through a registry and back, the
//! rule that a null means the default, and every exported schema checked
//! against the JSON Schema 2020-12 meta-schema.

use crate::shop;

use std::collections::HashMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_runtime::prelude::*;
use tool_runtime::providers::{DialectError, Export, ExportOptions, Loss, anthropic, gemini, mcp, openai};
use tool_runtime::{ResultKind, ToolDefinition};

struct Desk;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Status {
    Open,
    Shipped,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Address {
    street: String,
    city: String,
    /// 0 is the ground floor.
    #[serde(default)]
    floor: u8,
}

/// Find a customer's orders.
#[tool(read_only, title = "Find orders")]
async fn find_orders(
    /// The customer's id.
    customer: String,
    /// Only orders in this status.
    status: Option<Status>,
    /// At most this many.
    #[tool(default = 10)]
    limit: u8,
    ship_to: Option<Address>,
) -> String {
    let ship_to = ship_to.map(|a| format!("{}, {} (floor {})", a.street, a.city, a.floor));
    format!("{customer} status={status:?} limit={limit} ship_to={ship_to:?}")
}

/// What a ticket is about.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Subject {
    Order { order_id: String },
    Account { email: String },
}

/// Open a support ticket.
#[tool]
async fn file_ticket(
    /// Two or three sentences.
    #[schemars(length(min = 10, max = 600))]
    summary: String,
    subject: Subject,
) -> Result<String, ToolError> {
    match subject {
        Subject::Order { order_id } if order_id.starts_with("A-") => Ok(format!("ticket for {order_id}: {summary}")),
        Subject::Order { order_id } => Err(ToolError::not_found("ORDER_NOT_FOUND", format!("There is no order {order_id}."))),
        Subject::Account { email } => Ok(format!("ticket for {email}")),
    }
}

/// Write a note; strict even though the length limit is lost.
#[tool(strict = true)]
async fn write_note(#[schemars(length(max = 140))] text: String) -> String {
    text
}

/// Echo; never strict, although nothing would be lost.
#[tool(strict = false)]
async fn echo(text: String) -> String {
    text
}

/// Restock products.
#[tool]
async fn restock(quantities: HashMap<String, u32>) -> String {
    format!("{} products", quantities.len())
}

#[allow(dead_code)] // only the shape matters
#[derive(Debug, Deserialize, JsonSchema)]
struct Node {
    label: String,
    children: Vec<Node>,
}

/// Count the nodes of a tree.
#[tool]
async fn count_nodes(tree: Node) -> usize {
    fn count(node: &Node) -> usize {
        1 + node.children.iter().map(count).sum::<usize>()
    }
    count(&tree)
}

/// Wipe everything. Always refused.
#[tool(policy = deny, destructive)]
async fn wipe() -> String {
    "wiped".into()
}

fn registry(tools: Vec<BoxedTool<Desk>>) -> Registry<Desk> {
    Registry::<Desk>::builder().tools(tools).build().expect("the registry builds")
}

fn defs(registry: &Registry<Desk>) -> Vec<&ToolDefinition> {
    registry.definitions().collect()
}

/// Equal as values, for a readable diff.
#[track_caller]
fn assert_json(actual: &Value, expected: &Value) {
    assert_eq!(actual, expected, "\nactual:\n{actual:#}");
}

/// The canonical input schema without `$schema`, as the dialects that read
/// JSON Schema get it.
fn canonical(def: &ToolDefinition) -> Value {
    let mut schema = exported(&def.input_schema);
    schema.as_object_mut().unwrap().shift_remove("$schema");
    schema
}

/// A canonical schema as every dialect exports it: without the formats
/// that are not JSON Schema's (schemars' `uint8`).
fn exported(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => map
            .iter()
            .filter(|(key, value)| !(*key == "format" && value.as_str().is_some_and(|format| !STANDARD_FORMATS.contains(&format))))
            .map(|(key, value)| (key.clone(), if key == "default" { value.clone() } else { exported(value) }))
            .collect(),
        Value::Array(items) => items.iter().map(exported).collect(),
        other => other.clone(),
    }
}

fn losses(export: &Export) -> Vec<(String, String, String, bool)> {
    export.losses.iter().map(|l| (l.tool.clone(), l.pointer.clone(), l.keyword.clone(), l.constraint)).collect()
}

fn loss(tool: &str, pointer: &str, keyword: &str, constraint: bool) -> (String, String, String, bool) {
    (tool.to_owned(), pointer.to_owned(), keyword.to_owned(), constraint)
}

fn strict_find_orders_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "customer": {"type": "string", "description": "The customer's id."},
            "status": {"anyOf": [{"$ref": "#/$defs/Status"}, {"type": "null"}], "description": "Only orders in this status."},
            "limit": {
                "type": ["integer", "null"],
                "minimum": 0,
                "maximum": 255,
                "description": "At most this many. Default: 10."
            },
            "ship_to": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]}
        },
        "required": ["customer", "status", "limit", "ship_to"],
        "additionalProperties": false,
        "$defs": {
            "Status": {"type": "string", "enum": ["open", "shipped"]},
            "Address": {
                "type": "object",
                "properties": {
                    "street": {"type": "string"},
                    "city": {"type": "string"},
                    "floor": {
                        "type": ["integer", "null"],
                        "minimum": 0,
                        "maximum": 255,
                        "description": "0 is the ground floor. Default: 0."
                    }
                },
                "required": ["street", "city", "floor"],
                "additionalProperties": false
            }
        }
    })
}

// ---------------------------------------------------------------- OpenAI

#[test]
fn openai_chat_strict_is_on_where_nothing_is_lost_and_as_the_tools_say() {
    let registry = registry(tools![find_orders, file_ticket, write_note, echo]);
    let export = openai::chat::tools(defs(&registry), &ExportOptions::default()).unwrap();
    assert_json(
        &export.tools[0],
        &json!({
            "type": "function",
            "function": {
                "name": "find_orders",
                "description": "Find a customer's orders.",
                "parameters": strict_find_orders_parameters(),
                "strict": true
            }
        }),
    );
    // A length limit would be lost: not strict, the canonical schema as is.
    let file_ticket = registry.definition("file_ticket").unwrap();
    assert_json(
        &export.tools[1],
        &json!({
            "type": "function",
            "function": {
                "name": "file_ticket",
                "description": "Open a support ticket.",
                "parameters": canonical(file_ticket),
                "strict": false
            }
        }),
    );
    // `strict = true` forces it, with the limit moved into the description.
    assert_json(
        &export.tools[2]["function"],
        &json!({
            "name": "write_note",
            "description": "Write a note; strict even though the length limit is lost.",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string", "description": "Constraints: maxLength 140."}},
                "required": ["text"],
                "additionalProperties": false
            },
            "strict": true
        }),
    );
    // `strict = false` refuses it although nothing would be lost.
    assert_eq!(export.tools[3]["function"]["strict"], false);
    assert_json(&export.tools[3]["function"]["parameters"], &canonical(registry.definition("echo").unwrap()));
    assert_eq!(
        losses(&export),
        [
            loss("find_orders", "/properties/limit", "default", false),
            loss("find_orders", "/$defs/Address/properties/floor", "default", false),
            loss("write_note", "/properties/text", "maxLength", true),
        ]
    );
}

#[test]
fn openai_strict_forced_by_the_host_moves_constraints_and_keeps_unions() {
    let registry = registry(tools![file_ticket, echo]);
    let export = openai::chat::tools(defs(&registry), &ExportOptions::new().strict(true)).unwrap();
    assert_json(
        &export.tools[0]["function"]["parameters"],
        &json!({
            "type": "object",
            "properties": {
                "summary": {"type": "string", "description": "Two or three sentences. Constraints: minLength 10, maxLength 600."},
                "subject": {"$ref": "#/$defs/Subject"}
            },
            "required": ["summary", "subject"],
            "additionalProperties": false,
            "$defs": {
                "Subject": {
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {"kind": {"type": "string", "enum": ["order"]}, "order_id": {"type": "string"}},
                            "required": ["kind", "order_id"],
                            "additionalProperties": false
                        },
                        {
                            "type": "object",
                            "properties": {"kind": {"type": "string", "enum": ["account"]}, "email": {"type": "string"}},
                            "required": ["kind", "email"],
                            "additionalProperties": false
                        }
                    ],
                    "description": "What a ticket is about."
                }
            }
        }),
    );
    assert_eq!(export.tools[0]["function"]["strict"], true);
    // The tool's own `strict = false` wins over the host's choice.
    assert_eq!(export.tools[1]["function"]["strict"], false);
    let summary_losses: Vec<&Loss> = export.losses.iter().filter(|l| l.pointer == "/properties/summary").collect();
    assert_eq!(summary_losses.len(), 2);
    assert!(summary_losses.iter().all(|l| l.constraint));
    assert_eq!(
        summary_losses[0].to_string(),
        "file_ticket /properties/summary: `minLength` (constraint): moved into the description: strict mode does not support it; validation still enforces it"
    );
}

#[test]
fn openai_strict_refused_by_the_host_exports_the_canonical_schemas() {
    let registry = registry(tools![find_orders, write_note]);
    let export = openai::chat::tools(defs(&registry), &ExportOptions::new().strict(false)).unwrap();
    assert_eq!(export.tools[0]["function"]["strict"], false);
    assert_json(&export.tools[0]["function"]["parameters"], &canonical(registry.definition("find_orders").unwrap()));
    // The tool's own `strict = true` still wins.
    assert_eq!(export.tools[1]["function"]["strict"], true);
}

#[test]
fn maps_keep_strict_mode_off_and_recursion_stays_strict() {
    let registry = registry(tools![restock, count_nodes]);
    let export = openai::chat::tools(defs(&registry), &ExportOptions::default()).unwrap();
    assert_eq!(export.tools[0]["function"]["strict"], false);
    assert_eq!(export.tools[1]["function"]["strict"], true);
    assert_json(
        &export.tools[1]["function"]["parameters"]["$defs"]["Node"],
        &json!({
            "type": "object",
            "properties": {
                "label": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
            },
            "required": ["label", "children"],
            "additionalProperties": false
        }),
    );
    let forced = openai::chat::tools(defs(&registry), &ExportOptions::new().strict(true)).unwrap();
    assert_json(
        &forced.tools[0]["function"]["parameters"]["properties"]["quantities"],
        &json!({
            "type": "object",
            "description": "Constraints: additionalProperties {\"type\":\"integer\",\"minimum\":0,\"maximum\":4294967295}.",
            "properties": {},
            "required": [],
            "additionalProperties": false
        }),
    );
}

#[test]
fn openai_responses_has_the_same_functions_flattened() {
    let registry = registry(tools![find_orders, file_ticket, write_note, echo]);
    let chat = openai::chat::tools(defs(&registry), &ExportOptions::default()).unwrap();
    let responses = openai::responses::tools(defs(&registry), &ExportOptions::default()).unwrap();
    assert_eq!(chat.losses, responses.losses);
    for (chat, responses) in chat.tools.iter().zip(&responses.tools) {
        let mut flattened = json!({"type": "function"});
        flattened.as_object_mut().unwrap().extend(chat["function"].as_object().unwrap().clone());
        assert_json(responses, &flattened);
    }
}

// ---------------------------------------------------------------- Anthropic

#[test]
fn anthropic_gets_the_canonical_schema() {
    let registry = registry(tools![find_orders, wipe]);
    let export = anthropic::tools(defs(&registry), &ExportOptions::default()).unwrap();
    let find_orders = registry.definition("find_orders").unwrap();
    assert_json(
        &Value::Array(export.tools),
        &json!([
            {"name": "find_orders", "description": "Find a customer's orders.", "input_schema": canonical(find_orders)},
            {
                "name": "wipe",
                "description": "Wipe everything. Always refused.",
                "input_schema": {"type": "object", "properties": {}, "required": [], "additionalProperties": false}
            }
        ]),
    );
    assert!(export.losses.is_empty());
    assert!(canonical(find_orders)["$defs"].is_object());
}

// ---------------------------------------------------------------- Gemini

#[test]
fn gemini_inlines_definitions_and_uses_nullable() {
    let registry = registry(tools![find_orders, file_ticket, wipe]);
    let export = gemini::tools(defs(&registry), &ExportOptions::default()).unwrap();
    assert_eq!(export.tools.len(), 1);
    assert_json(
        &export.tools[0],
        &json!({"functionDeclarations": [
            {
                "name": "find_orders",
                "description": "Find a customer's orders.",
                "parameters": {
                    "type": "OBJECT",
                    "properties": {
                        "customer": {"type": "STRING", "description": "The customer's id."},
                        "status": {"type": "STRING", "enum": ["open", "shipped"], "description": "Only orders in this status.", "nullable": true},
                        "limit": {"type": "INTEGER", "minimum": 0, "maximum": 255, "description": "At most this many.", "default": 10},
                        "ship_to": {
                            "type": "OBJECT",
                            "properties": {
                                "street": {"type": "STRING"},
                                "city": {"type": "STRING"},
                                "floor": {"type": "INTEGER", "minimum": 0, "maximum": 255, "description": "0 is the ground floor.", "default": 0}
                            },
                            "propertyOrdering": ["street", "city", "floor"],
                            "required": ["street", "city"],
                            "nullable": true
                        }
                    },
                    "propertyOrdering": ["customer", "status", "limit", "ship_to"],
                    "required": ["customer"]
                }
            },
            {
                "name": "file_ticket",
                "description": "Open a support ticket.",
                "parameters": {
                    "type": "OBJECT",
                    "properties": {
                        "summary": {"type": "STRING", "description": "Two or three sentences.", "minLength": 10, "maxLength": 600},
                        "subject": {
                            "description": "What a ticket is about.",
                            "anyOf": [
                                {
                                    "type": "OBJECT",
                                    "properties": {"kind": {"type": "STRING", "enum": ["order"]}, "order_id": {"type": "STRING"}},
                                    "propertyOrdering": ["kind", "order_id"],
                                    "required": ["kind", "order_id"]
                                },
                                {
                                    "type": "OBJECT",
                                    "properties": {"kind": {"type": "STRING", "enum": ["account"]}, "email": {"type": "STRING"}},
                                    "propertyOrdering": ["kind", "email"],
                                    "required": ["kind", "email"]
                                }
                            ]
                        }
                    },
                    "propertyOrdering": ["summary", "subject"],
                    "required": ["summary", "subject"]
                }
            },
            {"name": "wipe", "description": "Wipe everything. Always refused."}
        ]}),
    );
    assert_eq!(
        losses(&export),
        [
            loss("find_orders", "", "additionalProperties", true),
            loss("file_ticket", "", "additionalProperties", true),
            loss("wipe", "", "additionalProperties", true),
        ]
    );
}

#[test]
fn gemini_refuses_recursive_types_by_name() {
    let registry = registry(tools![find_orders, count_nodes]);
    let err = gemini::tools(defs(&registry), &ExportOptions::default()).unwrap_err();
    match &err {
        DialectError::Recursive { tool, type_name, pointer, .. } => {
            assert_eq!((tool.as_str(), type_name.as_str()), ("count_nodes", "Node"));
            assert_eq!(pointer, "/$defs/Node/properties/children/items");
        }
        other => panic!("expected a recursion error, got {other:?}"),
    }
    assert_eq!(
        err.to_string(),
        "gemini: tool `count_nodes`: the type `Node` contains itself (at `/$defs/Node/properties/children/items`), and gemini function declarations cannot express recursive types; make the type finite or do not offer this tool to gemini"
    );
}

#[test]
fn gemini_refuses_maps() {
    let registry = registry(tools![restock]);
    let err = gemini::tools(defs(&registry), &ExportOptions::default()).unwrap_err();
    assert!(matches!(&err, DialectError::Unsupported { tool, pointer, .. } if tool == "restock" && pointer == "/properties/quantities"), "{err:?}");
}

#[test]
fn no_offered_tools_means_no_tools_field() {
    let none: [&ToolDefinition; 0] = [];
    assert!(gemini::tools(none, &ExportOptions::default()).unwrap().tools.is_empty());
    assert!(openai::chat::tools(none, &ExportOptions::default()).unwrap().tools.is_empty());
    assert!(anthropic::tools(none, &ExportOptions::default()).unwrap().tools.is_empty());
}

// ---------------------------------------------------------------- MCP

#[test]
fn mcp_entries_carry_titles_hints_and_object_output_schemas() {
    let registry = registry(tools![find_orders, wipe, count_nodes]);
    let list = mcp::tools_list(defs(&registry));
    let find_orders = registry.definition("find_orders").unwrap();
    assert_json(
        &list,
        &json!({"tools": [
            {
                "name": "find_orders",
                "title": "Find orders",
                "description": "Find a customer's orders.",
                "inputSchema": exported(&find_orders.input_schema),
                "annotations": {"title": "Find orders", "readOnlyHint": true}
            },
            {
                "name": "wipe",
                "description": "Wipe everything. Always refused.",
                "inputSchema": exported(&registry.definition("wipe").unwrap().input_schema),
                "annotations": {"destructiveHint": true}
            },
            {
                "name": "count_nodes",
                "description": "Count the nodes of a tree.",
                "inputSchema": exported(&registry.definition("count_nodes").unwrap().input_schema)
            }
        ]}),
    );
    // A `String` or `usize` output has a schema, but not an object one.
    assert!(find_orders.output_schema.is_some());
    assert_eq!(list["tools"][0]["inputSchema"]["$schema"], "https://json-schema.org/draft/2020-12/schema");
}

// ---------------------------------------------------------------- round trips

fn round_trip_registry() -> Registry<Desk> {
    registry(tools![find_orders, file_ticket, wipe])
}

#[tokio::test]
async fn openai_chat_round_trip() {
    let registry = round_trip_registry();
    let mut run = registry.run(Arc::new(Desk));
    let export = openai::chat::tools(run.offered(), &ExportOptions::default()).unwrap();
    assert_eq!(export.tools.len(), 3);
    let completion = json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant",
            "content": null,
            "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "find_orders", "arguments": "{\"customer\":\"c-17\",\"status\":\"open\",\"limit\":null,\"ship_to\":null}"}},
                {"id": "call_b", "type": "function", "function": {"name": "file_ticket", "arguments": "{\"summary\":\"short\",\"subject\":{\"kind\":\"order\",\"order_id\":\"A-1\"}}"}},
                {"id": "call_c", "type": "function", "function": {"name": "wipe", "arguments": "{}"}}
            ]
        }}]
    });
    let calls = openai::chat::parse_calls(&completion).unwrap();
    assert_eq!(calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["call_a", "call_b", "call_c"]);
    let step = run.execute(calls).await;
    let kinds: Vec<ResultKind> = step.results.iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [ResultKind::Success, ResultKind::InvalidArguments, ResultKind::Denied]);
    let messages = openai::chat::results(&step.results);
    assert_json(&messages[0], &json!({"role": "tool", "tool_call_id": "call_a", "content": "c-17 status=Some(Open) limit=10 ship_to=None"}));
    assert_eq!(messages[1]["tool_call_id"], "call_b");
    assert!(messages[1]["content"].as_str().unwrap().starts_with("code: INVALID_ARGUMENTS, status: 400"), "{}", messages[1]);
    assert!(messages[1]["content"].as_str().unwrap().contains("/summary"), "{}", messages[1]);
    assert!(messages[2]["content"].as_str().unwrap().starts_with("code: POLICY_DENIED, status: 403"), "{}", messages[2]);
    // The assistant message itself parses the same way; no calls is no calls.
    let message = &completion["choices"][0]["message"];
    assert_eq!(openai::chat::parse_calls(message).unwrap().len(), 3);
    assert!(openai::chat::parse_calls(&json!({"role": "assistant", "content": "Done."})).unwrap().is_empty());
}

#[tokio::test]
async fn openai_responses_round_trip() {
    let registry = round_trip_registry();
    let mut run = registry.run(Arc::new(Desk));
    let response = json!({
        "id": "resp_1",
        "object": "response",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "find_orders", "arguments": "{\"customer\":\"c-23\",\"status\":null,\"limit\":2,\"ship_to\":null}", "status": "completed"},
            {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "refund_everything", "arguments": "{}", "status": "completed"}
        ]
    });
    let calls = openai::responses::parse_calls(&response).unwrap();
    let step = run.execute(calls).await;
    let items = openai::responses::results(&step.results);
    assert_json(&items[0], &json!({"type": "function_call_output", "call_id": "call_1", "output": "c-23 status=None limit=2 ship_to=None"}));
    assert_eq!(items[1]["call_id"], "call_2");
    assert!(items[1]["output"].as_str().unwrap().starts_with("code: UNKNOWN_TOOL"), "{}", items[1]);
}

#[tokio::test]
async fn anthropic_round_trip() {
    let registry = round_trip_registry();
    let mut run = registry.run(Arc::new(Desk));
    let message = json!({
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "stop_reason": "tool_use",
        "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "find_orders", "input": {"customer": "c-17", "ship_to": {"street": "Main St 1", "city": "Berlin"}}},
            {"type": "tool_use", "id": "toolu_2", "name": "file_ticket", "input": {"summary": "The kettle arrived broken.", "subject": {"kind": "order", "order_id": "B-9"}}},
            {"type": "tool_use", "id": "toolu_3", "name": "wipe", "input": {}}
        ]
    });
    let calls = anthropic::parse_calls(&message).unwrap();
    let step = run.execute(calls).await;
    let reply = anthropic::results(&step.results);
    assert_json(
        &Value::Array(reply),
        &json!([{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "c-17 status=None limit=10 ship_to=Some(\"Main St 1, Berlin (floor 0)\")"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "code: ORDER_NOT_FOUND, status: 404, userMessage: There is no order B-9.", "is_error": true},
            {"type": "tool_result", "tool_use_id": "toolu_3", "content": step.results[2].text, "is_error": true}
        ]}]),
    );
    assert!(anthropic::results(&[]).is_empty());
}

#[tokio::test]
async fn gemini_round_trip() {
    let registry = round_trip_registry();
    let mut run = registry.run(Arc::new(Desk));
    let response = json!({
        "candidates": [{
            "content": {"role": "model", "parts": [
                {"text": "Looking it up."},
                {"functionCall": {"name": "find_orders", "args": {"customer": "c-17", "status": "shipped"}}},
                {"functionCall": {"id": "fc-2", "name": "wipe"}}
            ]},
            "finishReason": "STOP"
        }]
    });
    let calls = gemini::parse_calls(&response).unwrap();
    assert_eq!(calls.len(), 2);
    let step = run.execute(calls).await;
    let contents = gemini::results(&step.results);
    assert_json(
        &Value::Array(contents),
        &json!([{"role": "user", "parts": [
            {"functionResponse": {"name": "find_orders", "response": {"output": "c-17 status=Some(Shipped) limit=10 ship_to=None"}}},
            {"functionResponse": {"id": "fc-2", "name": "wipe", "response": {"error": step.results[1].text}}}
        ]}]),
    );
}

// ---------------------------------------------------------------- null means the default

#[tokio::test]
async fn a_null_from_a_strict_model_means_the_default() {
    let registry = round_trip_registry();
    let app = Arc::new(Desk);
    // What a strict-mode model sends for "nothing to say" in every optional
    // property, nested ones included.
    let result = registry
        .invoke(
            &app,
            "find_orders",
            r#"{"customer": "c-1", "status": null, "limit": null, "ship_to": {"street": "Main St 1", "city": "Berlin", "floor": null}}"#,
        )
        .await;
    assert_eq!(result.kind, ResultKind::Success, "{}", result.text);
    assert_eq!(result.text, "c-1 status=None limit=10 ship_to=Some(\"Main St 1, Berlin (floor 0)\")");
    // A null for a required property is still wrong.
    let result = registry.invoke(&app, "find_orders", r#"{"customer": null}"#).await;
    assert_eq!(result.kind, ResultKind::InvalidArguments);
    assert!(result.text.contains("/customer"), "{}", result.text);
    let result = registry.invoke(&app, "find_orders", r#"{"customer": "c-1", "ship_to": {"street": null, "city": "Berlin"}}"#).await;
    assert_eq!(result.kind, ResultKind::InvalidArguments);
    assert!(result.text.contains("/ship_to"), "{}", result.text);
}

#[tokio::test]
async fn every_strict_schema_accepts_what_the_pipeline_accepts_after_nulls() {
    // A value valid under the strict schema (all nulls) is valid for the
    // tool once the nulls that mean "default" are gone.
    let registry = round_trip_registry();
    let export = openai::chat::tools(defs(&registry), &ExportOptions::default()).unwrap();
    let strict = &export.tools[0]["function"]["parameters"];
    let args = json!({"customer": "c-9", "status": null, "limit": null, "ship_to": null});
    assert!(jsonschema::draft202012::is_valid(strict, &args));
    let result = registry.invoke(&Arc::new(Desk), "find_orders", args).await;
    assert_eq!(result.text, "c-9 status=None limit=10 ship_to=None");
}

// ---------------------------------------------------------------- schema validity

fn every_tool() -> Registry<Desk> {
    registry(tools![find_orders, file_ticket, write_note, echo, restock, count_nodes, wipe])
}

#[track_caller]
fn assert_valid_2020_12(schema: &Value, what: &str) {
    if let Err(error) = jsonschema::draft202012::meta::validate(schema) {
        panic!("{what}: {error}\n{schema:#}");
    }
    assert!(jsonschema::draft202012::new(schema).is_ok(), "{what}: does not compile\n{schema:#}");
}

/// OpenAI's strict rules, checked on every object of a strict schema.
fn assert_strict_rules(schema: &Value, what: &str) {
    match schema {
        Value::Object(map) => {
            if map.get("type") == Some(&json!("object")) || map.contains_key("properties") {
                let properties: Vec<&String> = map["properties"].as_object().map(|p| p.keys().collect()).unwrap_or_default();
                let required: Vec<&str> = map["required"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
                assert_eq!(properties, required, "{what}: every property is required");
                assert_eq!(map["additionalProperties"], false, "{what}: every object is closed");
            }
            for key in map.keys() {
                assert!(
                    [
                        "type",
                        "description",
                        "properties",
                        "required",
                        "additionalProperties",
                        "items",
                        "anyOf",
                        "enum",
                        "$ref",
                        "$defs",
                        "pattern",
                        "format",
                        "multipleOf",
                        "maximum",
                        "exclusiveMaximum",
                        "minimum",
                        "exclusiveMinimum",
                        "minItems",
                        "maxItems"
                    ]
                    .contains(&key.as_str()),
                    "{what}: `{key}` is not a strict-mode keyword"
                );
            }
            for (key, value) in map {
                match key.as_str() {
                    "properties" | "$defs" => value.as_object().unwrap().values().for_each(|v| assert_strict_rules(v, what)),
                    _ => assert_strict_rules(value, what),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| assert_strict_rules(item, what)),
        _ => {}
    }
}

#[test]
fn every_exported_schema_is_valid_json_schema_2020_12() {
    let registry = every_tool();
    let all = defs(&registry);
    for options in [ExportOptions::default(), ExportOptions::new().strict(true), ExportOptions::new().strict(false)] {
        let chat = openai::chat::tools(all.iter().copied(), &options).unwrap();
        for tool in &chat.tools {
            let function = &tool["function"];
            let what = format!("openai chat {} ({options:?})", function["name"]);
            assert_valid_2020_12(&function["parameters"], &what);
            if function["strict"] == true {
                assert_strict_rules(&function["parameters"], &what);
            }
        }
        let responses = openai::responses::tools(all.iter().copied(), &options).unwrap();
        for tool in &responses.tools {
            assert_valid_2020_12(&tool["parameters"], &format!("openai responses {}", tool["name"]));
        }
    }
    let anthropic = anthropic::tools(all.iter().copied(), &ExportOptions::default()).unwrap();
    for tool in &anthropic.tools {
        assert_valid_2020_12(&tool["input_schema"], &format!("anthropic {}", tool["name"]));
    }
    for tool in mcp::tools_list(all.iter().copied())["tools"].as_array().unwrap() {
        assert_valid_2020_12(&tool["inputSchema"], &format!("mcp {} input", tool["name"]));
        if let Some(output) = tool.get("outputSchema") {
            assert_valid_2020_12(output, &format!("mcp {} output", tool["name"]));
        }
    }
}

// ---------------------------------------------------------------- formats

/// The formats of JSON Schema 2020-12's format vocabulary: the only ones a
/// validator such as the MCP TypeScript client's knows.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Every `format` in `schema` that is not a standard one, with where it is.
fn custom_formats(schema: &Value, at: &str, found: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(format)) = map.get("format")
                && !STANDARD_FORMATS.contains(&format.as_str())
            {
                found.push(format!("{at}: {format}"));
            }
            for (key, value) in map {
                if !matches!(key.as_str(), "default" | "examples" | "example" | "const" | "enum") {
                    custom_formats(value, &format!("{at}/{key}"), found);
                }
            }
        }
        Value::Array(items) => items.iter().enumerate().for_each(|(i, item)| custom_formats(item, &format!("{at}/{i}"), found)),
        _ => {}
    }
}

/// Integers of every width, floats, and the standard formats schemars writes.
#[allow(clippy::too_many_arguments, reason = "a tool of many parameters, each a property of its input")]
#[tool]
async fn every_number(
    tiny: u8,
    small: i16,
    count: u32,
    signed: i32,
    big: u64,
    offset: i64,
    index: usize,
    #[schemars(range(min = 1, max = 10))] rating: u32,
    ratio: f32,
    amount: f64,
    #[schemars(email)] contact: String,
    counts: HashMap<String, u16>,
) -> u64 {
    let _ = (tiny, small, count, signed, offset, index, rating, ratio, amount, contact, counts);
    big
}

#[test]
fn no_exported_schema_carries_a_non_standard_format() {
    let examples = shop::registry();
    let here = registry(tools![every_number, find_orders, file_ticket, restock, write_note]);
    let all: Vec<&ToolDefinition> = examples.definitions().chain(here.definitions()).collect();
    let mut exported: Vec<(String, Value)> = Vec::new();
    for tool in mcp::tools_list(all.iter().copied())["tools"].as_array().unwrap() {
        exported.push((format!("mcp {}", tool["name"]), tool.clone()));
    }
    for options in [ExportOptions::default(), ExportOptions::new().strict(true), ExportOptions::new().strict(false)] {
        for tool in openai::chat::tools(all.iter().copied(), &options).unwrap().tools {
            exported.push((format!("openai chat {} ({options:?})", tool["function"]["name"]), tool));
        }
        for tool in openai::responses::tools(all.iter().copied(), &options).unwrap().tools {
            exported.push((format!("openai responses {} ({options:?})", tool["name"]), tool));
        }
    }
    for tool in anthropic::tools(all.iter().copied(), &ExportOptions::default()).unwrap().tools {
        exported.push((format!("anthropic {}", tool["name"]), tool));
    }
    // Gemini refuses maps (`restock`, `every_number`): the others.
    let gemini_defs = all.iter().copied().filter(|def| !["restock", "every_number"].contains(&def.name.as_str()));
    for tool in gemini::tools(gemini_defs, &ExportOptions::default()).unwrap().tools {
        exported.push(("gemini".to_owned(), tool));
    }
    let mut found = Vec::new();
    for (what, tool) in &exported {
        custom_formats(tool, what, &mut found);
    }
    assert!(found.is_empty(), "non-standard formats exported:\n{}", found.join("\n"));
    // The standard ones stay.
    let mcp_every = &mcp::tools_list(here.definitions())["tools"][0];
    assert_eq!(mcp_every["inputSchema"]["properties"]["contact"]["format"], "email");
}

#[tokio::test]
async fn exported_integers_keep_their_type_range_as_minimum_and_maximum() {
    let registry = registry(tools![every_number]);
    let list = mcp::tools_list(defs(&registry));
    let properties = &list["tools"][0]["inputSchema"]["properties"];
    let range = |name: &str| (properties[name]["minimum"].clone(), properties[name]["maximum"].clone());
    assert_eq!(range("tiny"), (json!(0), json!(255)));
    assert_eq!(range("small"), (json!(i16::MIN), json!(i16::MAX)));
    assert_eq!(range("count"), (json!(0), json!(4_294_967_295u32)));
    assert_eq!(range("signed"), (json!(i32::MIN), json!(i32::MAX)));
    assert_eq!(range("big"), (json!(0), json!(u64::MAX)));
    assert_eq!(range("offset"), (json!(i64::MIN), json!(i64::MAX)));
    assert_eq!(range("index"), (json!(0), json!(usize::MAX)));
    assert_eq!(range("rating"), (json!(1), json!(10)), "a narrower range the type states is kept");
    assert_eq!(properties["counts"]["additionalProperties"]["maximum"], json!(u16::MAX));
    assert_eq!(properties["amount"], json!({"type": "number"}));
    assert_eq!(list["tools"][0]["outputSchema"], Value::Null, "a u64 output is not an object schema");
    // In every dialect.
    let strict = openai::chat::tools(defs(&registry), &ExportOptions::new().strict(true)).unwrap();
    let parameters = &strict.tools[0]["function"]["parameters"]["properties"];
    assert_eq!((&parameters["count"]["minimum"], &parameters["count"]["maximum"]), (&json!(0), &json!(4_294_967_295u32)));
    assert!(!parameters["count"]["description"].as_str().unwrap_or_default().contains("uint32"), "{parameters:#}");
    // And the runtime holds calls to it: one past `u32::MAX` is refused.
    let args = |count: u64| {
        json!({"tiny": 1, "small": 1, "count": count, "signed": 1, "big": 1, "offset": 1, "index": 1, "rating": 1, "ratio": 1.0,
               "amount": 1.0, "contact": "a@b.c", "counts": {}})
        .to_string()
    };
    let app = Arc::new(Desk);
    assert_eq!(registry.invoke(&app, "every_number", args(4_294_967_295).as_str()).await.kind, ResultKind::Success);
    let beyond = registry.invoke(&app, "every_number", args(4_294_967_296).as_str()).await;
    assert_eq!(beyond.kind, ResultKind::InvalidArguments);
    assert!(beyond.text.contains("count"), "{}", beyond.text);
}

// ---------------------------------------------------------------- malformed payloads

#[test]
fn malformed_payloads_are_errors_not_panics() {
    let garbage = [
        json!(null),
        json!(3),
        json!("tool_calls"),
        json!([]),
        json!({}),
        json!([null, 1, "x"]),
        json!({"choices": null}),
        json!({"choices": [{}]}),
        json!({"choices": [{"message": {"tool_calls": [null]}}]}),
        json!({"choices": [{"message": {"tool_calls": [{"id": 1, "function": {}}]}}]}),
        json!({"tool_calls": [{"type": "custom", "id": "c", "custom": {}}]}),
        json!({"output": {}}),
        json!({"output": [{"type": "function_call", "call_id": "c", "name": "x", "arguments": 5}]}),
        json!({"content": [{"type": "tool_use"}]}),
        json!({"content": [{"no_type": true}]}),
        json!({"candidates": []}),
        json!({"candidates": [{"content": {"parts": [{"functionCall": "find"}]}}]}),
        json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "x", "args": [1]}}]}}]}),
        json!({"parts": {"functionCall": {}}}),
    ];
    type Parser = fn(&Value) -> Result<Vec<ToolCall>, tool_runtime::providers::PayloadError>;
    let parsers: [(&str, Parser); 4] = [
        ("chat", openai::chat::parse_calls),
        ("responses", openai::responses::parse_calls),
        ("anthropic", anthropic::parse_calls),
        ("gemini", gemini::parse_calls),
    ];
    for (name, parse) in parsers {
        for payload in &garbage {
            if let Err(err) = parse(payload) {
                let text = err.to_string();
                assert!(text.starts_with("malformed "), "{name}: {text}");
                assert!(!text.ends_with('.'), "{name}: {text}");
            }
        }
    }
    let err = openai::chat::parse_calls(&json!({"tool_calls": [{"type": "custom", "id": "c", "custom": {}}]})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "malformed openai chat payload at `/tool_calls/0/type`: unsupported tool call type `custom`; only functions are offered"
    );
    let err = gemini::parse_calls(&json!({"candidates": [{"content": {"parts": [{"functionCall": "find"}]}}]})).unwrap_err();
    assert_eq!(err.to_string(), "malformed gemini payload at `/candidates/0/content/parts/0/functionCall`: expected an object, found a string");
}

//! The fixtures of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`), served at both revisions by one
//! `McpServer`, written with this framework's own API: the tools are
//! `#[tool]` functions (and one dynamic tool, for a raw JSON Schema
//! 2020-12), the prompts an rmcp `#[prompt_router]`, and the resources and
//! completion rmcp `ServerHandler` methods, composed beside the tools with
//! `McpServer::with_handler`.
//!
//! ```text
//! cargo run --example conformance_server --features mcp -- --http 127.0.0.1:3001
//! cargo run --example conformance_server --features mcp -- --http 127.0.0.1:3001 --journal sqlite:conformance.db
//! cargo run --example conformance_server --features mcp -- --http 127.0.0.1:3001 --journal sqlite:conformance.db --key $(openssl rand -hex 32)
//! ```
//!
//! It serves streamable HTTP at `http://ADDR/mcp` (port 0 picks a free one;
//! the address is printed on stderr). It offers tasks, kept in its
//! process; with `--journal URL` (a SQLite file, or `postgres://...` with
//! `--features postgres`) kept in that journal, so that any instance on it
//! (or this one restarted) serves them. With `--key HEX` (at least 32 bytes
//! in hex) it seals the `requestState`s of 2026-07-28 with that key rather
//! than one drawn at start, so that a state one instance sealed opens on
//! another, or on this one restarted. `tests/slow/mcp_conformance.rs` runs the
//! suite against it.
//!
//! The fixtures that ask the client (elicitation, sampling, roots) are
//! tools that ask through `Ctx::elicit`, `Ctx::sample` and `Ctx::roots`: a
//! question goes to the client as a request in a session, as an
//! `input_required` result at 2026-07-28. The prompt that asks is rmcp's
//! own, returning rmcp's `InputRequiredResult`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::handler::server::prompt::{IntoGetPromptResult, PromptContext};
use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationSchema, ErrorCode,
    Extensions, GetPromptRequestParams, GetPromptResponse, GetPromptResult, InputRequest, InputRequiredResult, InputResponses, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams, PromptMessage, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, prompt, prompt_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::mcp::{McpServer, TaskSupport};
use tool_runtime::prelude::*;
use tool_runtime::question::{Reply, SamplingRequest};
use tool_runtime::{Block, Form, ToolDefinition};

/// A 1x1 red PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
    0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xfc, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x05, 0x02, 0x00, 0x5f, 0xc8, 0xf1, 0xd2, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// The same PNG in base64, as a resource's `blob` carries it.
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A WAV of one silent sample.
const WAV: &[u8] = &[
    0x52, 0x49, 0x46, 0x46, 0x26, 0x00, 0x00, 0x00, 0x57, 0x41, 0x56, 0x45, 0x66, 0x6d, 0x74, 0x20, 0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00,
    0x40, 0x1f, 0x00, 0x00, 0x00, 0x7d, 0x00, 0x00, 0x02, 0x00, 0x10, 0x00, 0x64, 0x61, 0x74, 0x61, 0x02, 0x00, 0x00, 0x00,
];

/// What the fixtures change: whether the extra tool and the extra prompt
/// are listed.
#[derive(Default)]
struct Fixtures {
    extra_tool: AtomicBool,
    extra_prompt: AtomicBool,
}

// ----- Tools -----

/// Tests simple text content response.
#[tool(read_only)]
async fn test_simple_text() -> String {
    "This is a simple text response for testing.".to_owned()
}

/// Tests image content response.
#[tool(read_only)]
async fn test_image_content() -> Vec<Block> {
    vec![Block::image(PNG, "image/png")]
}

/// Tests audio content response.
#[tool(read_only)]
async fn test_audio_content() -> Vec<Block> {
    vec![Block::audio(WAV, "audio/wav")]
}

/// Tests embedded resource content response.
#[tool(read_only)]
async fn test_embedded_resource() -> Vec<Block> {
    vec![Block::resource_text("test://embedded-resource", "text/plain", "This is an embedded resource content.")]
}

/// Tests response with multiple content types (text, image, resource).
#[tool(read_only)]
async fn test_multiple_content_types() -> Vec<Block> {
    vec![
        Block::text("Multiple content types test:"),
        Block::image(PNG, "image/png"),
        Block::resource_text("test://mixed-content-resource", "application/json", r#"{"test":"data","value":123}"#),
    ]
}

/// Tests tool that emits log messages during execution.
#[tool(read_only)]
async fn test_tool_with_logging(ctx: Ctx<Fixtures>) -> String {
    for (step, message) in ["Tool execution started", "Tool processing data", "Tool execution completed"].into_iter().enumerate() {
        if step > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.log(LogLevel::Info, message);
    }
    "Tool with logging executed successfully".to_owned()
}

/// Writes one log message, which reaches a client that asked for log
/// messages of this request.
#[tool(read_only)]
async fn test_logging_tool(ctx: Ctx<Fixtures>) -> String {
    ctx.log(LogLevel::Info, "Diagnostic trace logging activated");
    "Logging evaluated".to_owned()
}

/// Tests tool that reports progress notifications.
#[tool(read_only)]
async fn test_tool_with_progress(ctx: Ctx<Fixtures>) -> String {
    for step in [0.0, 50.0, 100.0] {
        if step > 0.0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.progress(step, Some(100.0), Some(&format!("Completed step {step} of 100")));
    }
    "Progress reported".to_owned()
}

/// Tests error response handling.
#[tool(read_only)]
async fn test_error_handling() -> Result<String, ToolError> {
    Err(ToolError::new(500, "TEST_ERROR", "This tool intentionally returns an error for testing.").no_retry())
}

/// Takes a moment before it answers, on a stream the client may have to
/// resume (the server keeps the stream open; its priming event carries the
/// retry delay).
#[tool(read_only)]
async fn test_reconnection() -> String {
    tokio::time::sleep(Duration::from_millis(100)).await;
    "Reconnection test completed successfully.".to_owned()
}

/// Echoes a value that travels in the `Mcp-Param-Value` header too.
#[tool(read_only)]
async fn test_custom_header(
    /// Any text; sent again in the header.
    #[schemars(extend("x-mcp-header" = "Value"))]
    value: String,
) -> String {
    format!("value: {value}")
}

/// Lists or unlists the extra tool, which changes every tool list.
#[tool]
async fn test_trigger_tool_change(ctx: Ctx<Fixtures>) -> String {
    ctx.app().extra_tool.fetch_xor(true, Ordering::SeqCst);
    "Mutation triggered".to_owned()
}

/// Lists or unlists the extra prompt, which changes every prompt list.
#[tool]
async fn test_trigger_prompt_change(ctx: Ctx<Fixtures>) -> String {
    ctx.app().extra_prompt.fetch_xor(true, Ordering::SeqCst);
    "Mutation triggered".to_owned()
}

fn extra_tool_listed(view: &StepView<'_, Fixtures>) -> bool {
    view.app.extra_tool.load(Ordering::SeqCst)
}

/// Listed only after `test_trigger_tool_change` ran (an odd number of times).
#[tool(read_only, visible_when = extra_tool_listed)]
async fn test_extra_tool(_ctx: Ctx<Fixtures>) -> String {
    "Extra tool".to_owned()
}

/// Greets someone at once (never a task).
#[tool(read_only)]
async fn greet(
    /// Whom to greet.
    name: String,
) -> String {
    format!("Hello, {name}!")
}

/// Sleeps `seconds`, then reports what it computed; a task for a client
/// that declares tasks.
// Idempotent (it has no effect; read-only alone does not say a call may
// run twice): a task whose process was killed while it ran is run again at
// once by the instance that takes the task up, rather than reported in
// doubt once the killed process's lease lapsed.
#[tool(read_only, idempotent, timeout = "2m")]
async fn slow_compute(
    /// How long to compute.
    #[tool(default)]
    seconds: f64,
    /// A label for the result.
    #[tool(default)]
    label: String,
) -> String {
    tokio::time::sleep(Duration::from_secs_f64(seconds.clamp(0.0, 110.0))).await;
    format!("slow_compute({label}) done after {seconds}s")
}

/// Fails with a tool error after a second; runs only as a task.
// Idempotent, as `slow_compute` is.
#[tool(idempotent, tags("task-required"), timeout = "30s")]
async fn failing_job() -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(ToolError::new(500, "JOB_FAILED", "failing_job: intentional tool execution error").no_retry())
}

/// Fails inside the server (an error that is not the tool's), which a task
/// reports as failed.
// Idempotent, as `failing_job` is.
#[tool(idempotent, timeout = "30s")]
async fn protocol_error_job() -> Result<String, std::io::Error> {
    tokio::time::sleep(Duration::from_millis(200)).await;
    Err(std::io::Error::other("protocol_error_job: intentional internal failure"))
}

/// Deletes a file, once a human approved it.
#[tool(destructive, policy = needs_approval, timeout = "30s")]
async fn confirm_delete(
    /// The file to delete.
    #[tool(default)]
    filename: String,
) -> String {
    format!("confirm_delete({filename}): deleted")
}

// ----- Tools that ask the client -----

/// What a tool read of its question, as the fixtures report it:
/// `action=<accept/decline/cancel>, content={...}`.
fn described<T: Serialize>(reply: &Reply<T>) -> String {
    match reply {
        Reply::Answered(content) => format!("action=accept, content={}", json!(content)),
        Reply::Declined => "action=decline, content={}".to_owned(),
        Reply::Cancelled => "action=cancel, content={}".to_owned(),
    }
}

/// Asks the client's model (MCP sampling) to answer the prompt.
#[tool(read_only)]
async fn test_sampling(
    ctx: Ctx<Fixtures>,
    /// The prompt to send to the LLM.
    prompt: String,
) -> Result<String, ToolError> {
    let reply = ctx.sample(SamplingRequest::new(100).user(prompt)).await?;
    Ok(match &reply {
        Reply::Answered(sampled) => format!("LLM response: {}", sampled.text),
        other => format!("LLM response: none ({})", described(other)),
    })
}

/// What `test_elicitation` asks.
#[tool_data(Serialize, Deserialize, JsonSchema)]
#[derive(Form)]
struct UserInfo {
    /// User's response
    username: String,
    /// User's email address
    email: String,
}

/// Asks the user (MCP elicitation) for a name and an email address.
#[tool(read_only)]
async fn test_elicitation(
    ctx: Ctx<Fixtures>,
    /// The message to show the user.
    message: String,
) -> Result<String, ToolError> {
    let reply = ctx.elicit::<UserInfo>(message).await?;
    Ok(format!("User response: <{}>", described(&reply)))
}

/// A user's status, offered as one choice.
#[tool_data(Serialize, Deserialize, JsonSchema)]
#[derive(Form)]
#[serde(rename_all = "lowercase")]
enum Status {
    Active,
    Inactive,
    Pending,
}

fn default_name() -> String {
    "John Doe".to_owned()
}
fn default_age() -> i64 {
    30
}
fn default_score() -> f64 {
    95.5
}
fn default_status() -> Status {
    Status::Active
}
fn default_verified() -> bool {
    true
}

/// What `test_elicitation_sep1034_defaults` asks: a default for every kind
/// of field.
#[tool_data(Serialize, Deserialize, JsonSchema)]
#[derive(Form)]
struct WithDefaults {
    /// User name
    #[serde(default = "default_name")]
    name: String,
    /// User age
    #[serde(default = "default_age")]
    age: i64,
    /// User score
    #[serde(default = "default_score")]
    score: f64,
    /// User status
    #[serde(default = "default_status")]
    status: Status,
    /// Verification status
    #[serde(default = "default_verified")]
    verified: bool,
}

/// Asks the user for a form whose every field has a default (SEP-1034).
#[tool(read_only)]
async fn test_elicitation_sep1034_defaults(ctx: Ctx<Fixtures>) -> Result<String, ToolError> {
    let reply = ctx.elicit::<WithDefaults>("Test client default value handling - please accept with defaults").await?;
    Ok(format!("Elicitation completed: {}", described(&reply)))
}

/// Choices without titles.
#[tool_data(Serialize, Deserialize, JsonSchema)]
#[derive(Form)]
#[serde(rename_all = "lowercase")]
enum Untitled {
    Option1,
    Option2,
    Option3,
}

/// One choice with titles.
#[tool_data(Serialize, Deserialize, JsonSchema)]
#[derive(Form)]
#[serde(rename_all = "lowercase")]
enum TitledOption {
    /// First Option
    Value1,
    /// Second Option
    Value2,
    /// Third Option
    Value3,
}

/// Choices whose titles go in `enumNames` (MCP's older way).
#[tool_data(Serialize, Deserialize, JsonSchema)]
#[derive(Form)]
#[serde(rename_all = "lowercase")]
enum Legacy {
    Opt1,
    Opt2,
    Opt3,
}

/// Several choices with titles.
#[tool_data(Serialize, Deserialize, JsonSchema)]
#[derive(Form)]
#[serde(rename_all = "lowercase")]
enum TitledChoice {
    /// First Choice
    Value1,
    /// Second Choice
    Value2,
    /// Third Choice
    Value3,
}

/// What `test_elicitation_sep1330_enums` asks: every kind of choice
/// (SEP-1330).
#[tool_data(Serialize, Deserialize, JsonSchema)]
#[derive(Form)]
#[serde(rename_all = "camelCase")]
struct Choices {
    /// Pick one
    untitled_single: Untitled,
    /// Pick one
    titled_single: TitledOption,
    /// Pick one
    #[schemars(extend("enumNames" = ["Option One", "Option Two", "Option Three"]))]
    legacy_enum: Legacy,
    /// Pick several
    untitled_multi: Vec<Untitled>,
    /// Pick several
    titled_multi: Vec<TitledChoice>,
}

/// Asks the user for a form of every kind of choice (SEP-1330).
#[tool(read_only)]
async fn test_elicitation_sep1330_enums(ctx: Ctx<Fixtures>) -> Result<String, ToolError> {
    let reply = ctx.elicit::<Choices>("Test enum schema variants - please pick").await?;
    Ok(format!("Elicitation completed: {}", described(&reply)))
}

/// Asks the client's model for a completion: a client that did not
/// declare sampling cannot answer, and the call is refused.
#[tool(read_only)]
async fn test_missing_capability(ctx: Ctx<Fixtures>) -> Result<String, ToolError> {
    let reply = ctx.sample(SamplingRequest::new(16).user("Say ok.")).await?;
    Ok(format!("Sampled: {}", described(&reply)))
}

/// What `test_streaming_elicitation` asks.
#[tool_data(Serialize, Deserialize, JsonSchema)]
#[derive(Form)]
struct Confirmation {
    /// Go ahead
    #[serde(default)]
    confirmed: bool,
}

/// Asks the user to confirm: at 2026-07-28 the question is an
/// `input_required` result, never a request of the server's own on the
/// response stream.
#[tool(read_only)]
async fn test_streaming_elicitation(ctx: Ctx<Fixtures>) -> Result<String, ToolError> {
    let reply = ctx.elicit::<Confirmation>("Confirm to go on").await?;
    Ok(format!("Elicitation completed: {}", described(&reply)))
}

// ----- Input required (2026-07-28): tools that ask, in rounds -----

/// A name.
#[tool_data(Serialize, Deserialize, JsonSchema)]
#[derive(Form)]
struct Name {
    name: String,
}

/// A yes or no.
#[tool_data(Serialize, Deserialize, JsonSchema)]
#[derive(Form)]
struct Confirm {
    ok: bool,
}

/// A colour.
#[tool_data(Serialize, Deserialize, JsonSchema)]
#[derive(Form)]
struct Colour {
    color: String,
}

/// Asks the user's name, then greets them.
#[tool(read_only)]
async fn test_input_required_result_elicitation(ctx: Ctx<Fixtures>) -> Result<String, ToolError> {
    Ok(match ctx.elicit_named::<Name>("user_name", "What is your name?").await? {
        Reply::Answered(Name { name }) => format!("Hello, {name}!"),
        other => format!("No name: {}", described(&other)),
    })
}

/// Asks the client's model for the capital of France.
#[tool(read_only)]
async fn test_input_required_result_sampling(ctx: Ctx<Fixtures>) -> Result<String, ToolError> {
    Ok(match ctx.sample(SamplingRequest::new(100).user("What is the capital of France?")).await? {
        Reply::Answered(sampled) => format!("The model says: {}", sampled.text),
        other => format!("No answer: {}", described(&other)),
    })
}

/// Asks the client for its roots, and names them.
#[tool(read_only)]
async fn test_input_required_result_list_roots(ctx: Ctx<Fixtures>) -> Result<String, ToolError> {
    Ok(match ctx.roots().await? {
        Reply::Answered(roots) => format!("Roots: {}", roots.iter().map(|root| root.uri.as_str()).collect::<Vec<_>>().join(", ")),
        other => format!("No roots: {}", described(&other)),
    })
}

/// Asks for a confirmation, which comes back with the state it was asked
/// with (checked, or the round is refused).
#[tool(read_only)]
async fn test_input_required_result_request_state(ctx: Ctx<Fixtures>) -> Result<String, ToolError> {
    let reply = ctx.elicit::<Confirm>("Please confirm").await?;
    Ok(format!("state-ok: {}", described(&reply)))
}

/// Asks three questions at once: a name, a greeting from the client's
/// model, and the client's roots.
#[tool(read_only)]
async fn test_input_required_result_multiple_inputs(ctx: Ctx<Fixtures>) -> Result<String, ToolError> {
    let (name, greeting, roots) =
        tokio::join!(ctx.elicit::<Name>("What is your name?"), ctx.sample(SamplingRequest::new(50).user("Generate a greeting")), ctx.roots());
    Ok(format!("name: {}; greeting: {}; roots: {}", described(&name?), described(&greeting?), described(&roots?)))
}

/// Asks a name, and then, in a second round, a favourite colour.
#[tool(read_only)]
async fn test_input_required_result_multi_round(ctx: Ctx<Fixtures>) -> Result<String, ToolError> {
    let name = ctx.elicit::<Name>("Step 1: What is your name?").await?;
    let colour = ctx.elicit::<Colour>("Step 2: What is your favorite color?").await?;
    Ok(format!("step 1: {}; step 2: {}", described(&name), described(&colour)))
}

/// Asks for a confirmation; a state altered on its way back is refused.
#[tool(read_only)]
async fn test_input_required_result_tampered_state(ctx: Ctx<Fixtures>) -> Result<String, ToolError> {
    let reply = ctx.elicit::<Confirm>("Please confirm").await?;
    Ok(format!("Confirmed: {}", described(&reply)))
}

/// Asks the client's model: asked only of a client that declares
/// sampling (one that does not is refused, `-32021`).
#[tool(read_only)]
async fn test_input_required_result_capabilities(ctx: Ctx<Fixtures>) -> Result<String, ToolError> {
    let reply = ctx.sample(SamplingRequest::new(50).user("Say hello")).await?;
    Ok(format!("Sampled: {}", described(&reply)))
}

/// Asks the user's name in a round of `input_required`, then goes on as a
/// task that greets them (`task-after-questions`).
// Idempotent, as `slow_compute` is: killed before it greeted, it greets again.
#[tool(read_only, idempotent, tags("task-after-questions"), timeout = "2m")]
async fn test_tool_with_task(ctx: Ctx<Fixtures>) -> Result<String, ToolError> {
    Ok(match ctx.elicit_named::<Name>("user_name", "What is your name?").await? {
        Reply::Answered(Name { name }) => format!("Hello, {name}! (from a task)"),
        other => format!("No name: {}", described(&other)),
    })
}

/// Asks two questions at once, as a task (a client may answer them one
/// at a time, `tasks/update`).
// Idempotent, as `slow_compute` is: killed before it asked, it asks again.
#[tool(read_only, idempotent, timeout = "2m")]
async fn multi_input(ctx: Ctx<Fixtures>) -> Result<String, ToolError> {
    let (name, confirmation) = tokio::join!(ctx.elicit::<Name>("What is your name?"), ctx.elicit::<Confirmation>("Confirm to go on"));
    Ok(format!("multi_input: {}; {}", described(&name?), described(&confirmation?)))
}

/// The tool whose schema is JSON Schema 2020-12 as written, with `$defs`,
/// `$anchor`, `$ref`, `allOf`/`anyOf` and `if`/`then`/`else`.
fn json_schema_tool() -> DynamicTool<Fixtures> {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
            }
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" }
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false
    });
    DynamicTool::new(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
        schema,
        |arguments: Value, _: Ctx<Fixtures>| async move {
            Ok::<_, ToolError>(Value::String(format!("JSON Schema 2020-12 tool called with: {arguments}")))
        },
    )
}

/// The tools, in the order `tools/list` gives them.
fn registry() -> Registry<Fixtures> {
    Registry::builder()
        .tools(tools![
            test_simple_text,
            test_image_content,
            test_audio_content,
            test_embedded_resource,
            test_multiple_content_types,
            test_tool_with_logging,
            test_logging_tool,
            test_tool_with_progress,
            test_error_handling,
            test_reconnection,
            test_custom_header,
            test_trigger_tool_change,
            test_trigger_prompt_change,
            test_extra_tool,
            greet,
            slow_compute,
            failing_job,
            protocol_error_job,
            confirm_delete,
            test_sampling,
            test_elicitation,
            test_elicitation_sep1034_defaults,
            test_elicitation_sep1330_enums,
            test_missing_capability,
            test_streaming_elicitation,
            test_input_required_result_elicitation,
            test_input_required_result_sampling,
            test_input_required_result_list_roots,
            test_input_required_result_request_state,
            test_input_required_result_multiple_inputs,
            test_input_required_result_multi_round,
            test_input_required_result_tampered_state,
            test_input_required_result_capabilities,
            multi_input,
            test_tool_with_task,
        ])
        .tool(json_schema_tool())
        .build()
        .expect("the fixtures are valid tools")
}

/// A tool tagged `task-required` runs only as a task, one tagged
/// `task-after-questions` as a task once its questions are answered; any
/// other as the server decides by default.
fn task_support(def: &ToolDefinition) -> TaskSupport {
    let tagged = |tag: &str| def.tags.iter().any(|given| given == tag);
    if tagged("task-required") {
        TaskSupport::Required
    } else if tagged("task-after-questions") {
        TaskSupport::AfterQuestions
    } else {
        TaskSupport::by_default(def)
    }
}

// ----- Prompts, resources and completion: rmcp's own handler -----

/// The prompts, resources and completion, served beside the tools.
#[derive(Clone)]
struct Catalog {
    fixtures: Arc<Fixtures>,
    prompts: PromptRouter<Catalog>,
}

/// The answers a `prompts/get` came with (`inputResponses`).
#[derive(Clone)]
struct PromptAnswers(InputResponses);

/// What a prompt that asks answers: its question, or its messages.
struct Asked(GetPromptResponse);

impl IntoGetPromptResult for Asked {
    fn into_get_prompt_result(self) -> Result<GetPromptResponse, ErrorData> {
        Ok(self.0)
    }
}

/// The key of the question `test_input_required_result_prompt` asks.
const PROMPT_QUESTION: &str = "user_context";

/// The arguments of `test_prompt_with_arguments`.
#[derive(Deserialize, JsonSchema)]
struct TwoArguments {
    /// First test argument.
    arg1: String,
    /// Second test argument.
    arg2: String,
}

/// The argument of `test_prompt_with_embedded_resource`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ResourceArgument {
    /// URI of the resource to embed.
    resource_uri: String,
}

#[prompt_router]
impl Catalog {
    /// A simple prompt without arguments.
    #[prompt(name = "test_simple_prompt")]
    async fn simple(&self) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(Role::User, "This is a simple prompt for testing.")]
    }

    /// A prompt with required arguments.
    #[prompt(name = "test_prompt_with_arguments")]
    async fn with_arguments(&self, Parameters(arguments): Parameters<TwoArguments>) -> Vec<PromptMessage> {
        let text = format!("Prompt with arguments: arg1='{}', arg2='{}'", arguments.arg1, arguments.arg2);
        vec![PromptMessage::new_text(Role::User, text)]
    }

    /// A prompt that includes an embedded resource.
    #[prompt(name = "test_prompt_with_embedded_resource")]
    async fn with_embedded_resource(&self, Parameters(argument): Parameters<ResourceArgument>) -> Vec<PromptMessage> {
        let text = Some("Embedded resource content for testing.".to_owned());
        vec![
            PromptMessage::new_resource(Role::User, argument.resource_uri, Some("text/plain".to_owned()), text, None, None, None),
            PromptMessage::new_text(Role::User, "Please process the embedded resource above."),
        ]
    }

    /// A prompt that includes image content.
    #[prompt(name = "test_prompt_with_image")]
    async fn with_image(&self) -> Vec<PromptMessage> {
        vec![
            PromptMessage::new_image(Role::User, PNG, "image/png", None, None),
            PromptMessage::new_text(Role::User, "Please analyze the image above."),
        ]
    }

    /// A prompt that first asks the user what context to use: at
    /// 2026-07-28 an `input_required` result, answered on a second
    /// `prompts/get`.
    #[prompt(name = "test_input_required_result_prompt")]
    async fn asking(&self, extensions: Extensions) -> Result<Asked, ErrorData> {
        let answer = extensions.get::<PromptAnswers>().and_then(|answers| answers.0.get(PROMPT_QUESTION));
        let answer = answer.and_then(|answer| serde_json::from_value::<ElicitResult>(answer.clone()).ok());
        let Some(ElicitResult { content: Some(content), .. }) = answer else {
            let schema = ElicitationSchema::builder().required_string("context").build().map_err(|why| ErrorData::internal_error(why, None))?;
            let ask = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: "What context should the prompt use?".to_owned(),
                requested_schema: schema,
            };
            let requests = BTreeMap::from([(PROMPT_QUESTION.to_owned(), InputRequest::Elicitation(ElicitRequest::new(ask)))]);
            return Ok(Asked(InputRequiredResult::new(Some(requests), None).into()));
        };
        let context = content.get("context").and_then(Value::as_str).unwrap_or_default();
        Ok(Asked(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, format!("Answer within this context: {context}"))]).into()))
    }

    /// Listed only after `test_trigger_prompt_change` ran (an odd number of times).
    #[prompt(name = "test_extra_prompt")]
    async fn extra(&self) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(Role::User, "An extra prompt.")]
    }
}

impl Catalog {
    fn new(fixtures: Arc<Fixtures>) -> Self {
        Catalog { fixtures, prompts: Self::prompt_router() }
    }

    /// The text of a static resource or of the template's, for `uri`.
    fn read(uri: &str) -> Option<ResourceContents> {
        let text = |text: &str, mime_type: &str| Some(ResourceContents::text(text, uri).with_mime_type(mime_type));
        match uri {
            "test://static-text" => text("This is the content of the static text resource.", "text/plain"),
            "test://watched-resource" => text("Watched resource content", "text/plain"),
            "test://static-binary" => Some(ResourceContents::blob(PNG_BASE64, uri).with_mime_type("image/png")),
            _ => {
                let id = uri.strip_prefix("test://template/")?.strip_suffix("/data").filter(|id| !id.is_empty() && !id.contains('/'))?;
                text(&json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string(), "application/json")
            }
        }
    }
}

impl ServerHandler for Catalog {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_completions()
                .build(),
        )
    }

    async fn list_prompts(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListPromptsResult, ErrorData> {
        let extra = self.fixtures.extra_prompt.load(Ordering::SeqCst);
        let prompts = self.prompts.list_all().into_iter().filter(|prompt| extra || prompt.name != "test_extra_prompt").collect();
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(&self, request: GetPromptRequestParams, mut context: RequestContext<RoleServer>) -> Result<GetPromptResponse, ErrorData> {
        // A prompt that asks reads the answers of its `input_required`
        // round from the request's extensions.
        if let Some(responses) = request.input_responses {
            context.extensions.insert(PromptAnswers(responses));
        }
        self.prompts.get_prompt(PromptContext::new(self, request.name, request.arguments, context)).await
    }

    async fn list_resources(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListResourcesResult, ErrorData> {
        let resource = |uri: &str, name: &str, mime_type: &str| Resource::new(uri, name).with_mime_type(mime_type);
        Ok(ListResourcesResult::with_all_items(vec![
            resource("test://static-text", "static-text", "text/plain"),
            resource("test://static-binary", "static-binary", "image/png"),
            resource("test://watched-resource", "watched-resource", "text/plain"),
        ]))
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let template = ResourceTemplate::new("test://template/{id}/data", "template")
            .with_description("A resource template with parameter substitution")
            .with_mime_type("application/json");
        Ok(ListResourceTemplatesResult::with_all_items(vec![template]))
    }

    async fn read_resource(&self, request: ReadResourceRequestParams, _: RequestContext<RoleServer>) -> Result<ReadResourceResponse, ErrorData> {
        match Catalog::read(&request.uri) {
            Some(contents) => Ok(ReadResourceResult::new(vec![contents]).into()),
            None => Err(ErrorData::new(ErrorCode::RESOURCE_NOT_FOUND, format!("no resource {}", request.uri), None)),
        }
    }

    async fn complete(&self, request: CompleteRequestParams, _: RequestContext<RoleServer>) -> Result<CompleteResult, ErrorData> {
        let typed = request.argument.value;
        let values = ["test", "testing", "tested", "paris"].into_iter().filter(|value| value.starts_with(&typed)).map(str::to_owned).collect();
        let info = CompletionInfo::new(values).map_err(|error| ErrorData::internal_error(error, None))?;
        Ok(CompleteResult::new(info))
    }

    #[allow(deprecated, reason = "resources/subscribe is the revision 2025-11-25's, which the suite runs")]
    async fn subscribe(&self, _: SubscribeRequestParams, _: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        Ok(())
    }

    #[allow(deprecated, reason = "resources/unsubscribe is the revision 2025-11-25's, which the suite runs")]
    async fn unsubscribe(&self, _: UnsubscribeRequestParams, _: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        Ok(())
    }
}

// ----- The server -----

#[tokio::main]
async fn main() {
    let Some(Args { addr, journal, key }) = parse_args(std::env::args().skip(1)) else {
        eprintln!("usage: conformance_server --http ADDR [--journal URL] [--key HEX]");
        std::process::exit(2);
    };
    let fixtures = Arc::new(Fixtures::default());
    let server = McpServer::new(registry(), fixtures.clone())
        .with_name("tool-runtime-conformance", env!("CARGO_PKG_VERSION"))
        .with_handler(Catalog::new(fixtures))
        .with_task_support(task_support);
    let server = match key.as_deref().map(hex::decode) {
        None => server,
        Some(Err(error)) => {
            eprintln!("conformance_server: --key is read as hex, as `openssl rand -hex 32` prints it: {error}");
            std::process::exit(2);
        }
        Some(Ok(key)) => server.with_request_state_key(key).unwrap_or_else(|error| {
            eprintln!("conformance_server: --key (decoded from hex): {error}");
            std::process::exit(2);
        }),
    };
    let server = match journal {
        None => server,
        Some(url) => match tool_runtime::journal::Journal::open(&url).await {
            Ok(journal) => server.with_journal(journal),
            Err(error) => {
                eprintln!("conformance_server: {error}");
                std::process::exit(1);
            }
        },
    };
    let listener = match tokio::net::TcpListener::bind(addr.as_str()).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("conformance_server: {addr}: {error}");
            std::process::exit(1);
        }
    };
    eprintln!("conformance_server: listening on http://{}/mcp", listener.local_addr().expect("a bound listener has an address"));
    if let Err(error) = server.serve_http(listener).await {
        eprintln!("conformance_server: {error}");
        std::process::exit(1);
    }
}

/// The command line: `--http ADDR [--journal URL] [--key HEX]`.
struct Args {
    addr: String,
    journal: Option<String>,
    key: Option<String>,
}

/// `--http ADDR [--journal URL] [--key HEX]`.
fn parse_args(mut args: impl Iterator<Item = String>) -> Option<Args> {
    let (mut addr, mut journal, mut key) = (None, None, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => addr = Some(args.next()?),
            "--journal" => journal = Some(args.next()?),
            "--key" => key = Some(args.next()?),
            _ => return None,
        }
    }
    Some(Args { addr: addr?, journal, key })
}

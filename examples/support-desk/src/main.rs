//! A customer-support agent over an in-memory shop, driven through a whole
//! run by a scripted model so that it runs anywhere:
//!
//! ```text
//! cargo run -p support-desk
//! ```
//!
//! First a cheap intent-classifier call picks the turn's tools and scopes
//! `lookup_order` to the orders the customer named. Then each step prints
//! what was offered, each call with its verdict and result, the approvals a
//! human gave, a slow call's interim text (`hand_over` takes a moment to
//! find a colleague), and how the run ended. Before handing over, the model
//! writes case notes with Anthropic's text editor, a provider's built-in
//! that runs here (given to this run with `Run::with_tools`).
//!
//! With `--openai`, a real OpenAI-compatible chat-completions endpoint plays
//! the model instead (`OPENAI_BASE_URL`, default `https://api.openai.com/v1`;
//! `OPENAI_API_KEY`; `OPENAI_MODEL`, default `gpt-4o-mini`):
//!
//! ```text
//! OPENAI_API_KEY=... cargo run -p support-desk --features openai -- --openai
//! ```

#[path = "../../common/shop.rs"]
mod shop;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tool_runtime::prelude::*;
use tool_runtime::providers::builtin::{ProviderTool, TextEditorCommand};
use tool_runtime::{Classifier, ProgressSink, ResultKind, Run, Selection, SmolStr, StepResults, ToolCall, ToolDefinition, UserContext};

use shop::Shop;

/// What the model does on one step: call tools, or answer.
enum Turn {
    Calls(Vec<ToolCall>),
    Answer(String),
}

/// Plays the model: picks the turn's tools as the intent classifier, then
/// sees the offered tools and the last step's results.
trait Model {
    fn classify(&mut self, classifier: &Classifier) -> Selection;
    fn turn(&mut self, offered: &[&ToolDefinition], last: Option<&StepResults>) -> Turn;
}

/// A model that follows a script: the calls a real model could make for
/// this conversation, including the mistakes the runtime must catch.
struct ScriptedModel {
    turns: std::vec::IntoIter<Turn>,
}

impl ScriptedModel {
    fn new() -> Self {
        let call = |id: &str, name: &str, args: serde_json::Value| ToolCall::new(id, name, args);
        let turns = vec![
            Turn::Calls(vec![
                call("call_1", "classify_request", json!({ "text": MESSAGE })),
                // Too eager: `refund` is offered only after `lookup_order` ran.
                call("call_2", "refund", json!({ "order_id": "A-1002", "amount_cents": 18990, "reason": "broken" })),
            ]),
            Turn::Calls(vec![
                call("call_3", "lookup_order", json!({ "order_id": "A-1002", "with_items": true })),
                // An order the customer did not name: outside this turn's scope.
                call("call_4", "lookup_order", json!({ "order_id": "A-1003" })),
            ]),
            Turn::Calls(vec![
                call("call_5", "lookup_order", json!({ "order_id": "A-1001" })),
                // Not delivered yet: the refund policy denies it.
                call("call_6", "refund", json!({ "order_id": "A-1001", "amount_cents": 4990, "reason": "late" })),
                // Over 50.00: waits for a supervisor.
                call("call_7", "refund", json!({ "order_id": "A-1002", "amount_cents": 18990, "reason": "arrived broken" })),
                // An image: here the chat-completions text that stands for it.
                call("call_10", "damage_photo", json!({ "order_id": "A-1002" })),
            ]),
            Turn::Calls(vec![call("call_8", "issue_voucher", json!({ "customer": "c-17", "amount_cents": 1000 }))]),
            Turn::Calls(vec![
                // Anthropic's text editor, a provider's built-in run here,
                // called by the provider's own name for it.
                call(
                    "call_11",
                    "str_replace_based_edit_tool",
                    json!({ "command": "create", "path": "/cases/c-17.md", "file_text": "A-1002 refunded (broken). A-1001 processing." }),
                ),
                call(
                    "call_9",
                    "hand_over",
                    json!({ "summary": "Espresso machine in A-1002 arrived broken: refunded 189.90 after approval. \
                                        Kettle A-1001 is still processing; customer wants an update." }),
                ),
            ]),
            Turn::Answer(
                "I'm sorry about the espresso machine: the 189.90 refund for order A-1002 is on its way. \
                 Your kettle (A-1001) is still being prepared; a colleague now has your case and will update you within the hour."
                    .into(),
            ),
        ];
        ScriptedModel { turns: turns.into_iter() }
    }
}

impl Model for ScriptedModel {
    fn classify(&mut self, classifier: &Classifier) -> Selection {
        // What a cheap model answers to the classifier's prompt: a broken
        // item asks for the customer's photo of it too.
        classifier.read_json(
            r#"{"tools": ["classify_request", "lookup_order", "damage_photo", "refund", "issue_voucher"],
                "scopes": {"lookup_order": {"orders": ["A-1002", "A-1001"]}}}"#,
        )
    }

    fn turn(&mut self, _offered: &[&ToolDefinition], _last: Option<&StepResults>) -> Turn {
        self.turns.next().unwrap_or(Turn::Answer("(the script is over)".into()))
    }
}

/// A real model behind an OpenAI-compatible chat-completions endpoint.
#[cfg(feature = "openai")]
struct OpenAiModel {
    url: String,
    key: String,
    model: String,
    messages: Vec<serde_json::Value>,
}

#[cfg(feature = "openai")]
impl OpenAiModel {
    fn from_env() -> Self {
        let base = std::env::var("OPENAI_BASE_URL").unwrap_or_else(|_| "https://api.openai.com/v1".into());
        let key = std::env::var("OPENAI_API_KEY").unwrap_or_else(|_| {
            eprintln!("set OPENAI_API_KEY (and OPENAI_BASE_URL / OPENAI_MODEL for another endpoint)");
            std::process::exit(2)
        });
        OpenAiModel {
            url: format!("{}/chat/completions", base.trim_end_matches('/')),
            key,
            model: std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into()),
            messages: vec![
                json!({ "role": "system", "content": "You are the support desk of a small shop. Use the tools; amounts are in cents." }),
                json!({ "role": "user", "content": MESSAGE }),
            ],
        }
    }
}

#[cfg(feature = "openai")]
impl OpenAiModel {
    fn post(&self, body: &serde_json::Value) -> Result<serde_json::Value, ureq::Error> {
        tokio::task::block_in_place(|| {
            ureq::post(&self.url)
                .header("Authorization", &format!("Bearer {}", self.key))
                .send_json(body)
                .and_then(|mut response| response.body_mut().read_json())
        })
    }
}

#[cfg(feature = "openai")]
impl Model for OpenAiModel {
    fn classify(&mut self, classifier: &Classifier) -> Selection {
        use tool_runtime::providers::{Dialect, ExportOptions, openai::chat};
        let tool = chat::tools([&classifier.tool()], &ExportOptions::new()).expect("the classifier's tool exports to OpenAI");
        let body = json!({
            "model": self.model,
            "messages": [{ "role": "system", "content": classifier.prompt() }, { "role": "user", "content": MESSAGE }],
            "tools": tool.tools,
            "tool_choice": { "type": "function", "function": { "name": Classifier::TOOL_NAME } },
        });
        match self.post(&body) {
            Ok(response) => classifier.read(Dialect::OpenAiChat, &response),
            Err(err) => Selection::fail_open(format!("the classifier's call failed: {err}")),
        }
    }

    fn turn(&mut self, offered: &[&ToolDefinition], last: Option<&StepResults>) -> Turn {
        use tool_runtime::providers::{ExportOptions, openai::chat};
        if let Some(last) = last {
            self.messages.extend(chat::results(&last.results));
        }
        let export = chat::tools(offered.iter().copied(), &ExportOptions::new()).expect("the tools export to OpenAI");
        let mut body = json!({ "model": self.model, "messages": self.messages });
        if !export.tools.is_empty() {
            body["tools"] = export.tools.into();
        }
        let response = self.post(&body).unwrap_or_else(|err| {
            eprintln!("the model endpoint failed: {err}");
            std::process::exit(1)
        });
        let message = response["choices"][0]["message"].clone();
        self.messages.push(message.clone());
        match chat::parse_calls(&response) {
            Ok(calls) if !calls.is_empty() => Turn::Calls(calls),
            Ok(_) => Turn::Answer(message["content"].as_str().unwrap_or_default().to_owned()),
            Err(err) => Turn::Answer(format!("(the model's reply could not be read: {err})")),
        }
    }
}

fn model_from_args() -> Box<dyn Model> {
    match std::env::args().nth(1).as_deref() {
        None => Box::new(ScriptedModel::new()),
        #[cfg(feature = "openai")]
        Some("--openai") => Box::new(OpenAiModel::from_env()),
        #[cfg(not(feature = "openai"))]
        Some("--openai") => {
            eprintln!("--openai needs the `openai` feature: cargo run -p support-desk --features openai -- --openai");
            std::process::exit(2)
        }
        Some(other) => {
            eprintln!("unknown argument {other}; usage: support-desk [--openai]");
            std::process::exit(2)
        }
    }
}

const MESSAGE: &str = "Hi, my espresso machine from order A-1002 arrived broken and I want my money back. \
                       Also, where is my kettle (A-1001)?";

/// The human in the loop: approves refunds, declines vouchers this week.
fn supervisor(tool: &str) -> Option<&'static str> {
    match tool {
        "refund" => None,
        _ => Some("Vouchers are paused this week; do not offer one again."),
    }
}

#[tokio::main]
async fn main() {
    let registry = shop::registry();
    let mut shop = Shop::demo();
    shop.hand_over_wait = Duration::from_millis(700);
    let app = Arc::new(shop);
    // What the customer sees while a slow call runs: its interim text.
    let interim = ProgressSink::new(|progress| {
        if let (true, Some(text)) = (progress.interim, &progress.message) {
            println!("    {} [still running] -> customer sees: {text}", progress.call_id);
        }
    });
    let mut run: Run<Shop> = registry
        .run(app)
        .with_user(UserContext::new("c-17"))
        .with_thread_id("thread-1")
        .with_progress(interim)
        .with_tools([case_notes().into()])
        .expect("the case-notes tool fits the registry");
    let mut model = model_from_args();
    let mut last: Option<StepResults> = None;

    println!("customer c-17: {MESSAGE}\n");
    // The turn's tools, picked by a cheap first call.
    let classifier = run.classifier();
    let selection = model.classify(&classifier);
    match &selection.failed_open {
        Some(why) => println!("classifier | no usable answer ({why}): every tool is offered"),
        None => println!("classifier | selects {} (scopes: {})", selection.tools.join(", "), json!(selection.scopes)),
    }
    for problem in run.select(&selection) {
        println!("  {problem}");
    }
    for def in run.offered().iter().filter(|def| def.scope_schema.is_some()) {
        println!("  scoped for this turn: {}: {}", def.name, def.description);
    }
    println!();
    loop {
        let offered = run.offered_names();
        let listed = if offered.is_empty() { "none, the model phrases its answer".to_owned() } else { offered.join(", ") };
        println!("step {} | offered: {listed}", run.step());
        let calls = match model.turn(&run.offered(), last.as_ref()) {
            Turn::Answer(text) => {
                println!("  model answers: {text}\n");
                break;
            }
            Turn::Calls(calls) => calls,
        };
        for call in &calls {
            println!("  model calls {}({})", call.name, args_text(&call.arguments));
        }
        let mut step = run.execute(calls).await;
        let mut approved = Vec::new();
        let waiting: Vec<(SmolStr, SmolStr)> = run.pending().iter().map(|p| (p.id().clone(), p.tool().clone())).collect();
        for (id, tool) in waiting {
            let settled = match supervisor(&tool) {
                None => {
                    println!("  human approves {id} ({tool})");
                    approved.push(id.clone());
                    run.approvals().approve(&id).await
                }
                Some(text) => {
                    println!("  human rejects {id} ({tool}): {text}");
                    run.approvals().reject(&id, Some(text)).await
                }
            };
            step.settle(settled.expect("the id came from the run's pending list"));
        }
        for result in &step.results {
            let verdict = match result.kind {
                ResultKind::Success if approved.contains(&result.call_id) => "[needs approval, approved, ok]",
                kind => verdict(kind),
            };
            println!("    {} {verdict} -> {}", result.call_id, result.text);
        }
        println!();
        last = Some(step);
    }
    run.finish().await;
    println!(
        "run ended by {} after {} steps; executed: {}",
        run.ended_by().unwrap_or("the model's answer"),
        run.step() + 1,
        run.executed().join(", ")
    );
}

/// The case notes a colleague reads, written with Anthropic's text editor:
/// a provider's built-in that runs here, through the whole pipeline. Only
/// new notes may be written.
fn case_notes() -> DynamicTool<Shop> {
    ProviderTool::anthropic_text_editor("case_notes")
        .description("Write the case notes a colleague reads when the case is handed over.")
        .handler(|command: TextEditorCommand, _ctx: Ctx<Shop>| async move {
            match command {
                TextEditorCommand::Create { path, file_text } => Ok(format!("wrote {path} ({} characters)", file_text.chars().count())),
                _ => Err(ToolError::bad_request("NOTES_CREATE_ONLY", "Case notes can only be created; write a new file.")),
            }
        })
        .always_active(true)
}

/// The verdict and outcome, as the transcript shows them.
fn verdict(kind: ResultKind) -> &'static str {
    match kind {
        ResultKind::Success => "[allowed, ok]",
        ResultKind::ToolError => "[allowed, tool error]",
        ResultKind::InvalidArguments => "[invalid input]",
        ResultKind::UnknownTool => "[not offered]",
        ResultKind::Denied => "[denied]",
        ResultKind::Rejected => "[needs approval, rejected]",
        ResultKind::PendingApproval => "[needs approval, pending]",
        ResultKind::TimedOut => "[allowed, timed out]",
        ResultKind::Cancelled => "[cancelled]",
        ResultKind::Internal => "[allowed, internal error]",
        ResultKind::External => "[allowed, handed to the host]",
        ResultKind::HostError => "[allowed, failed for the host]",
    }
}

fn args_text(args: &tool_runtime::Arguments<'_>) -> String {
    match args {
        tool_runtime::Arguments::Text(text) => text.to_string(),
        tool_runtime::Arguments::Value(value) => value.to_string(),
    }
}

//! A customer-support agent over an in-memory shop, driven through a whole
//! run by a scripted model so that it runs anywhere:
//!
//! ```text
//! cargo run --example support_desk
//! ```
//!
//! Each step prints what was offered, each call with its verdict and result,
//! the approvals a human gave, and how the run ended.

#[path = "common/shop.rs"]
mod shop;

use std::sync::Arc;

use serde_json::json;
use tool_runtime::{ResultKind, Run, ToolCall, UserContext};

use shop::Shop;

/// What the model does on one step: call tools, or answer.
enum Turn {
    Calls(Vec<ToolCall>),
    Answer(&'static str),
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
                // A malformed order number: the schema's pattern rejects it.
                call("call_4", "lookup_order", json!({ "order_id": "1001" })),
            ]),
            Turn::Calls(vec![
                call("call_5", "lookup_order", json!({ "order_id": "A-1001" })),
                // Not delivered yet: the refund policy denies it.
                call("call_6", "refund", json!({ "order_id": "A-1001", "amount_cents": 4990, "reason": "late" })),
                // Over 50.00: waits for a supervisor.
                call("call_7", "refund", json!({ "order_id": "A-1002", "amount_cents": 18990, "reason": "arrived broken" })),
            ]),
            Turn::Calls(vec![call("call_8", "issue_voucher", json!({ "customer": "c-17", "amount_cents": 1000 }))]),
            Turn::Calls(vec![call(
                "call_9",
                "hand_over",
                json!({ "summary": "Espresso machine in A-1002 arrived broken: refunded 189.90 after approval. \
                                    Kettle A-1001 is still processing; customer wants an update." }),
            )]),
            Turn::Answer(
                "I'm sorry about the espresso machine: the 189.90 refund for order A-1002 is on its way. \
                 Your kettle (A-1001) is still being prepared; a colleague now has your case and will update you within the hour.",
            ),
        ];
        ScriptedModel { turns: turns.into_iter() }
    }

    fn turn(&mut self) -> Turn {
        self.turns.next().unwrap_or(Turn::Answer("(the script is over)"))
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
    let app = Arc::new(Shop::demo());
    let mut run: Run<Shop> = registry.run(app).with_user(UserContext::new("c-17")).with_thread_id("thread-1");
    let mut model = ScriptedModel::new();

    println!("customer c-17: {MESSAGE}\n");
    loop {
        let offered = run.offered_names();
        let listed = if offered.is_empty() { "none, the model phrases its answer".to_owned() } else { offered.join(", ") };
        println!("step {} | offered: {listed}", run.step());
        let calls = match model.turn() {
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
        let waiting: Vec<(String, String)> = run.pending().iter().map(|p| (p.id.clone(), p.tool.clone())).collect();
        for (id, tool) in waiting {
            let settled = match supervisor(&tool) {
                None => {
                    println!("  human approves {id} ({tool})");
                    approved.push(id.clone());
                    run.approve(&id).await
                }
                Some(text) => {
                    println!("  human rejects {id} ({tool}): {text}");
                    run.reject(&id, Some(text))
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
    }
    run.finish();
    println!(
        "run ended by {} after {} steps; executed: {}",
        run.ended_by().unwrap_or("the model's answer"),
        run.step() + 1,
        run.executed().join(", ")
    );
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
    }
}

fn args_text(args: &tool_runtime::Arguments) -> String {
    match args {
        tool_runtime::Arguments::Text(text) => text.clone(),
        tool_runtime::Arguments::Value(value) => value.to_string(),
    }
}

//! The support desk as a durable run: three processes share one run
//! through its journal, as a web backend, an admin page and a later request
//! would.
//!
//! ```text
//! cargo run --example durable_desk                          # runs until a refund waits for approval, then exits
//! cargo run --example durable_desk -- --approve <run id> <call id>   # a supervisor approves it, from another process
//! cargo run --example durable_desk -- --resume <run id>     # a third process resumes the run and finishes it
//! ```
//!
//! The journal is a SQLite file in the system's temp directory; with
//! `DATABASE_URL=postgres://...` (and `--features postgres`) it is that
//! Postgres database. Each start makes a new run; a pending call is decided
//! by its run's id and its own.

#[path = "common/desk_journal.rs"]
mod desk_journal;
#[path = "common/shop.rs"]
mod shop;

use desk_journal::journal;

use std::process::ExitCode;
use std::sync::Arc;

use serde_json::json;
use tool_runtime::journal::{Decision, Journal};
use tool_runtime::{CallResult, Run, RunState, ToolCall, UserContext};

use shop::Shop;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] => start().await,
        ["--approve", run_id, call_id] => approve(run_id, call_id).await,
        ["--resume", run_id] => resume(run_id).await,
        _ => Err("usage: durable_desk [--approve <run id> <call id> | --resume <run id>]".into()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

type Outcome = Result<(), Box<dyn std::error::Error>>;

/// The run as each process makes it: the same registry, the same user.
async fn run(journal: &Journal, run_id: &str) -> Result<Run<Shop>, Box<dyn std::error::Error>> {
    let run = shop::registry().run(Arc::new(Shop::demo())).with_user(UserContext::new("c-17")).durable(journal, run_id).await?;
    Ok(run)
}

/// The first request: the model looks the order up and asks for a refund
/// over 50.00, which waits for a supervisor.
async fn start() -> Outcome {
    let journal = journal().await?;
    let run_id = format!("desk-{}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis());
    let mut run = run(&journal, &run_id).await?;
    println!("run {run_id}: the customer asks for a refund of their broken espresso machine (A-1002)");
    let id = |n: u32| format!("{run_id}-call_{n}");
    let step = run.execute(vec![ToolCall::new(id(1), "lookup_order", json!({"order_id": "A-1002"}))]).await;
    print_results(&step.results);
    let step =
        run.execute(vec![ToolCall::new(id(2), "refund", json!({"order_id": "A-1002", "amount_cents": 18990, "reason": "arrived broken"}))]).await;
    print_results(&step.results);
    for pending in run.pending() {
        println!("\n{} waits for a supervisor. This process exits now; approve it from another one:", pending.id());
        println!("  cargo run --example durable_desk -- --approve {run_id} {}", pending.id());
        println!("then resume the run:");
        println!("  cargo run --example durable_desk -- --resume {run_id}");
    }
    journal.close().await;
    Ok(())
}

/// The admin page: shows the call and approves it.
async fn approve(run_id: &str, call_id: &str) -> Outcome {
    let journal = journal().await?;
    let approval = journal.approvals().get(run_id, call_id).await?.ok_or_else(|| format!("run {run_id} parked no call {call_id} in this journal"))?;
    println!(
        "run {}: {} wants to call {} with {}",
        approval.call.run_id,
        approval.call.user_id.as_deref().unwrap_or("?"),
        approval.call.tool,
        approval.call.input
    );
    let decided = tool_runtime::question::decide(&journal, run_id, call_id, Decision::Approve, "supervisor-1").await?;
    println!("approved by {}; resume the run:", decided.decided.map(|d| d.by).unwrap_or_default());
    println!("  cargo run --example durable_desk -- --resume {}", approval.call.run_id);
    journal.close().await;
    Ok(())
}

/// A later request: the run is resumed from the journal, the approved
/// refund runs, and the model hands over to a human, which ends the run.
async fn resume(run_id: &str) -> Outcome {
    let journal = journal().await?;
    let mut run = run(&journal, run_id).await?;
    println!("run {run_id} resumed at step {}, tools executed: {:?}", run.step(), run.executed());
    if run.state() != &RunState::Active {
        println!("the run has ended already: {:?}", run.state());
        return Ok(());
    }
    let settled = run.settle_decided().await?;
    if settled.is_empty() && !run.pending().is_empty() {
        println!("{} call(s) still wait for a supervisor; approve them first", run.pending().len());
        return Ok(());
    }
    print_results(&settled);
    let step = run
        .execute(vec![ToolCall::new(
            format!("{run_id}-call_3"),
            "hand_over",
            json!({"summary": "Refunded 189.90 for the broken espresso machine of order A-1002; the customer wants a replacement."}),
        )])
        .await;
    print_results(&step.results);
    println!("run {run_id}: {:?}", run.state());
    journal.close().await;
    Ok(())
}

fn print_results(results: &[CallResult]) {
    for result in results {
        println!("  {} {} [{:?}] -> {}", result.call_id, result.tool, result.kind, result.text);
    }
}

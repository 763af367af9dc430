//! What a tool's question costs a durable run against an approval, on
//! both backends (as in `journal.rs`): the rows and text bytes it leaves in
//! the journal, and the memory operations (each one statement, or one
//! transaction: `Journal`'s `RunMemory`) it takes to park, to decide and to
//! carry out, counted at the memory seam. The figures are printed; run
//!
//! ```text
//! cargo test -p tool-runtime --features postgres --test suite question_costs:: -- --nocapture
//! ```
#![cfg(any(feature = "sqlite", feature = "postgres"))]

use crate::db;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use serde_json::json;
use tool_runtime::journal::Decision;
use tool_runtime::memory::{Answer, Approval, JournaledCall, JournaledResult, Keyed, ParkedCall, RunMemory, RunState, Starting, StepDelta, Stepped};
use tool_runtime::prelude::*;
use tool_runtime::question::Reply;
use tool_runtime::{Form, ToolCall};

use db::Db;

on_both_backends!(
    "costs_":
    a_question_costs_one_row_like_an_approval_and_its_effect_made_once_one_more,
);

/// Refund an order; a human approves it.
#[tool(policy = needs_approval)]
async fn refund(order: String) -> String {
    format!("refunded {order}")
}

#[tool_data(Deserialize, JsonSchema)]
#[derive(Form)]
struct Confirm {
    /// Go ahead with the refund.
    go_ahead: bool,
}

/// Refund an order: hold the money once, then ask its owner.
#[tool]
async fn refund_asking(ctx: Ctx<()>, order: String) -> Result<String, ToolError> {
    let hold = ctx.once("hold", async { 7 }).await?;
    match ctx.elicit::<Confirm>(format!("Refund {order}?")).await? {
        Reply::Answered(Confirm { go_ahead: true }) => Ok(format!("refunded {order} from hold {hold}")),
        _ => Ok("kept".into()),
    }
}

/// A memory that counts the operations asked of it, by name.
#[derive(Clone, Debug)]
struct Counting {
    inner: Arc<dyn RunMemory>,
    counts: Arc<Mutex<BTreeMap<&'static str, usize>>>,
}

impl Counting {
    fn count(&self, operation: &'static str) {
        *self.counts.lock().unwrap().entry(operation).or_default() += 1;
    }

    /// The operations counted since the last take, and their total.
    fn take(&self) -> (usize, BTreeMap<&'static str, usize>) {
        let counts = std::mem::take(&mut *self.counts.lock().unwrap());
        (counts.values().sum(), counts)
    }
}

/// Each operation counted, then handed to the journal.
macro_rules! counted {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        $(
            fn $name<'a>(&'a self, $($arg: $ty),*) -> Answer<'a, $out> {
                self.count(stringify!($name));
                self.inner.$name($($arg),*)
            }
        )*
    };
}

impl RunMemory for Counting {
    fn until(&self, until: Instant) -> Arc<dyn RunMemory> {
        Arc::new(Counting { inner: self.inner.until(until), counts: self.counts.clone() })
    }

    counted! {
        find_call(effect_key: &'a str) -> Option<JournaledCall>;
        starter_gone(effect_key: &'a str) -> bool;
        find_keyed(keyed: Keyed<'a>) -> Option<(Option<String>, JournaledCall)>;
        start_or_find(call: Starting<'a>) -> Option<JournaledCall>;
        restart_call(call: Starting<'a>) -> Option<JournaledCall>;
        finish_call(effect_key: &'a str, result: &'a JournaledResult) -> ();
        withdraw_call(effect_key: &'a str, call_id: &'a str) -> bool;
        withdraw_stale(effect_key: &'a str, call_id: &'a str, started_at: SystemTime) -> bool;
        resolve_call(effect_key: &'a str, result: &'a JournaledResult) -> ();
        note_replay(run_id: &'a str, effect_key: &'a str) -> ();
        calls_of_run(run_id: &'a str) -> Vec<JournaledCall>;
        add_step(run_id: &'a str, delta: &'a StepDelta, state: &'a RunState, known: usize) -> Stepped;
        park(call: &'a ParkedCall) -> ();
        park_asked(call: &'a ParkedCall, effect: Option<(&'a str, &'a str)>) -> ();
        park_held(call: &'a ParkedCall) -> ();
        unsettled_for_run(run_id: &'a str) -> Vec<Approval>;
        approval(run_id: &'a str, call_id: &'a str) -> Option<Approval>;
        decide(run_id: &'a str, call_id: &'a str, decision: Decision, by: &'a str) -> Approval;
        claim_run(run_id: &'a str, user: Option<&'a str>) -> Option<String>;
        settle(run_id: &'a str, call_id: &'a str) -> ();
        end_run(run_id: &'a str, text: &'a str) -> ();
        expire(run_id: &'a str, text: &'a str) -> Vec<Approval>;
    }
}

/// The rows and text bytes the journal holds of run `run_id`: of its
/// questions, and of its calls' effects.
async fn at_rest(db: &Db, run_id: &str) -> [u64; 4] {
    let approvals = "COALESCE(SUM(LENGTH(call_id) + LENGTH(run_id) + LENGTH(tool) + LENGTH(input) + COALESCE(LENGTH(user_id), 0) \
                     + LENGTH(kind) + COALESCE(LENGTH(question), 0) + COALESCE(LENGTH(decision), 0) + COALESCE(LENGTH(edited_input), 0) \
                     + COALESCE(LENGTH(reject_text), 0) + COALESCE(LENGTH(decided_by), 0)), 0)";
    let calls = "COALESCE(SUM(LENGTH(effect_key) + LENGTH(run_id) + LENGTH(call_id) + LENGTH(tool) + LENGTH(input) \
                 + COALESCE(LENGTH(kind), 0) + COALESCE(LENGTH(text), 0) + COALESCE(LENGTH(structured), 0)), 0)";
    let mut out = [0; 4];
    for (slot, (table, measure)) in
        [("journal_approvals", "COUNT(*)"), ("journal_approvals", approvals), ("journal_calls", "COUNT(*)"), ("journal_calls", calls)]
            .into_iter()
            .enumerate()
    {
        let text = db.text(format!("SELECT CAST({measure} AS TEXT) FROM {table} WHERE run_id = '{run_id}'")).await;
        out[slot] = text.parse().unwrap();
    }
    out
}

/// Parks `call` in run `run_id`, decides `id` with `decision` from another
/// process, and carries it out in a third: the operations each took, and
/// what the journal then holds.
async fn costs(db: &Db, registry: &Registry<()>, run_id: &str, call: ToolCall, id: &str, decision: Decision) -> Vec<(&'static str, usize)> {
    let counting = Counting { inner: Arc::new(db.open().await), counts: Arc::default() };
    let mut run = registry.run(Arc::new(())).with_user(UserContext::new("u-1")).durable(&counting, run_id).await.unwrap();
    counting.take();
    run.execute(vec![call]).await;
    let (park, park_ops) = counting.take();
    let decider = Counting { inner: Arc::new(db.open().await), counts: Arc::default() };
    tool_runtime::question::decide(&decider, run_id, id, decision, "alice").await.unwrap();
    let (decide, decide_ops) = decider.take();
    let carrier = Counting { inner: Arc::new(db.open().await), counts: Arc::default() };
    let mut resumed = registry.run(Arc::new(())).with_user(UserContext::new("u-1")).durable(&carrier, run_id).await.unwrap();
    carrier.take();
    let settled = resumed.settle_decided().await.unwrap();
    assert!(settled[0].text.starts_with("refunded A-1"), "{settled:?}");
    let (carry, carry_ops) = carrier.take();
    println!("  park    {park} operations: {park_ops:?}\n  decide  {decide} operations: {decide_ops:?}\n  carry   {carry} operations: {carry_ops:?}");
    let [question_rows, question_bytes, call_rows, call_bytes] = at_rest(db, run_id).await;
    println!("  at rest: {question_rows} question rows of {question_bytes} text bytes, {call_rows} call rows of {call_bytes} text bytes");
    vec![
        ("park", park),
        ("decide", decide),
        ("carry", carry),
        ("question rows", question_rows as usize),
        ("call rows", call_rows as usize),
        ("question bytes", question_bytes as usize),
        ("call bytes", call_bytes as usize),
    ]
}

/// A tool's question parks one row, as an approval does, and its effect
/// made once one more row; it is decided by as many operations; carrying
/// it out runs the call again from the top: the effect made once is read
/// back instead of made, and so is the question's answer.
async fn a_question_costs_one_row_like_an_approval_and_its_effect_made_once_one_more(db: Db) {
    let registry = Registry::<()>::builder().tools(tools![refund, refund_asking]).build().unwrap();
    println!("{}: an approval", db.url());
    let approval = costs(&db, &registry, "t-approval", ToolCall::new("c1", "refund", json!({"order": "A-1"})), "c1", Decision::Approve).await;
    println!("{}: a question (after an effect made once)", db.url());
    let asked = ToolCall::new("c1", "refund_asking", json!({"order": "A-1"}));
    let question = costs(&db, &registry, "t-question", asked, "c1#1", Decision::Answer(json!({"go_ahead": true}))).await;
    let of = |costs: &[(&'static str, usize)], what: &str| costs.iter().find(|(name, _)| *name == what).unwrap().1;
    assert_eq!((of(&approval, "question rows"), of(&question, "question rows")), (1, 1), "one row each, in one table");
    assert_eq!((of(&approval, "call rows"), of(&question, "call rows")), (1, 2), "the call's effect, and the one made once");
    assert_eq!(of(&question, "decide"), of(&approval, "decide"), "decided alike: the row read, then the decision");
}

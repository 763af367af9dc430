//! What a policy predicate sees of the run its call belongs to
//! ([`Ctx::run`](crate::Ctx::run)): the run's record as the step began
//! ([`RunView`]) and the other calls of the step ([`StepCall`]).

use std::sync::OnceLock;

use serde_json::Value;
use smol_str::SmolStr;

use crate::guard::{ArgumentLimits, check_text, check_value};
use crate::memory::RunState;

/// A read-only view of the run a call belongs to, for its policy
/// predicate: the run's record as the call's step began (how many steps
/// came before, the tools executed, the failures per tool, where the run
/// stands) and the calls of that step, in the order the model emitted
/// them. In a [`Run`](crate::Run) and in an MCP session (where a session
/// is a run, and each call a step of its own), for the calls whose policy
/// is a predicate; `None` elsewhere ([`Ctx::run`](crate::Ctx::run)).
///
/// ```
/// use std::sync::Arc;
/// use tool_runtime::prelude::*;
/// use tool_runtime::{ResultKind, ToolCall};
///
/// /// Refund an order.
/// #[tool(policy = one_refund_a_step)]
/// async fn refund(order_id: String) -> String { format!("refunded {order_id}") }
///
/// /// Look up an order.
/// #[tool(read_only)]
/// async fn lookup_order(order_id: String) -> String { order_id }
///
/// // Refused when the same step refunds another order, or nothing was looked up before.
/// fn one_refund_a_step<App>(_input: &refund, ctx: &Ctx<App>) -> Verdict {
///     let Some(run) = ctx.run() else { return Verdict::Allow };
///     if ctx.other_calls().any(|call| call.name == "refund") {
///         return Verdict::deny("Refund one order at a time.");
///     }
///     if !run.has_executed("lookup_order") {
///         return Verdict::deny("Look the order up first.");
///     }
///     Verdict::Allow
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let registry = Registry::<()>::builder().tools(tools![refund, lookup_order]).build().unwrap();
/// let mut run = registry.run(Arc::new(()));
/// run.execute(vec![ToolCall::new("c1", "lookup_order", r#"{"order_id": "A-1"}"#)]).await;
/// let step = run.execute(vec![
///     ToolCall::new("c2", "refund", r#"{"order_id": "A-1"}"#),
///     ToolCall::new("c3", "refund", r#"{"order_id": "A-2"}"#),
/// ]).await;
/// assert_eq!(step.results[0].kind, ResultKind::Denied);
/// let step = run.execute(vec![ToolCall::new("c4", "refund", r#"{"order_id": "A-1"}"#)]).await;
/// assert_eq!(step.results[0].text, "refunded A-1");
/// # }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct RunView {
    /// The index of the call's step: how many steps came before it.
    pub step: usize,
    /// The tools executed successfully in the run before this step, each
    /// once, in the order of its first success.
    pub executed: Vec<String>,
    /// Where the run stood when the step began.
    pub state: RunState,
    /// The calls of the step, this one included, in the model's order
    /// (none in an MCP session, whose steps are one call each).
    pub calls: Vec<StepCall>,
    failures: Vec<(String, u32)>,
}

impl RunView {
    pub(crate) fn new(step: usize, executed: Vec<String>, state: RunState, failures: Vec<(String, u32)>, calls: Vec<StepCall>) -> Self {
        RunView { step, executed, state, calls, failures }
    }

    /// Whether `tool` ran successfully in the run before this step.
    pub fn has_executed(&self, tool: &str) -> bool {
        self.executed.iter().any(|name| name == tool)
    }

    /// How many calls of `tool` failed in the run before this step (what
    /// `max_retries` counts).
    pub fn failures(&self, tool: &str) -> u32 {
        self.failures.iter().find(|(name, _)| name == tool).map_or(0, |(_, failed)| *failed)
    }
}

/// One call of a step, as the model emitted it: its id, the tool it names
/// and its input. A predicate reads it before the call runs (or is
/// refused), so the input is only as the model wrote it: parsed, not yet
/// validated against the tool's schema.
#[derive(Debug)]
#[non_exhaustive]
pub struct StepCall {
    /// The call's id.
    pub id: SmolStr,
    /// The tool the model called.
    pub name: String,
    arguments: StepArguments,
    limits: ArgumentLimits,
    parsed: OnceLock<Option<Value>>,
}

/// A call's arguments as they came: text, or a parsed value (MCP).
#[derive(Debug)]
pub(crate) enum StepArguments {
    Text(Box<str>),
    Value(Value),
}

impl StepCall {
    pub(crate) fn new(id: SmolStr, name: String, arguments: StepArguments, limits: ArgumentLimits) -> Self {
        StepCall { id, name, arguments, limits, parsed: OnceLock::new() }
    }

    /// The call's input as JSON, parsed when first asked for, once it
    /// passed the guard every call's arguments pass (size, depth, number
    /// of values); `None` when it does not, or is not JSON.
    pub fn input(&self) -> Option<&Value> {
        let parsed = self.parsed.get_or_init(|| match &self.arguments {
            StepArguments::Text(text) => check_text(text, &self.limits).ok().and_then(|()| serde_json::from_str(text).ok()),
            StepArguments::Value(value) => check_value(value, &self.limits).ok().map(|()| value.clone()),
        });
        parsed.as_ref()
    }
}

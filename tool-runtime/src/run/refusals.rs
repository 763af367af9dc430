//! Which calls of a step are refused before they run, each with the line
//! the model reads: an id already taken (by an earlier call of the step, a
//! call waiting for approval, or an external call waiting for the host's
//! result, whose result would otherwise answer the wrong call), a tool that
//! failed `max_retries` times in this run, and a call of an external tool
//! beyond `max_external_calls`.

use crate::call::ToolCall;
use crate::call::{ExternalCall, PendingCall};
use crate::error::ToolError;
use crate::ids::fresh_call_id;
use crate::pipeline::guarded_value;
use crate::result::{CallResult, ResultKind, lines};
use crate::steps::Steps;
use crate::table::ToolTable;

/// What refuses a step's calls in their run: its tools, its steps, the
/// calls still waiting (for a human, for the host), and whether it is
/// durable.
pub(super) struct Refusals<'a, App> {
    pub(super) tools: &'a ToolTable<App>,
    pub(super) steps: &'a Steps,
    pub(super) pending: &'a [PendingCall<App>],
    pub(super) external: &'a [ExternalCall],
    pub(super) durable: bool,
}

impl<App: Send + Sync + 'static> Refusals<'_, App> {
    /// For each call, its refusal, or `None` when it goes on to the
    /// pipeline. An empty id gets a fresh one, which is never taken.
    pub(super) fn of(&self, calls: &[ToolCall]) -> Vec<Option<CallResult>> {
        let waiting: Vec<&str> =
            self.pending.iter().map(|pending| pending.id().as_str()).chain(self.external.iter().map(|waiting| waiting.id.as_str())).collect();
        let mut step_ids: Vec<&str> = Vec::with_capacity(calls.len());
        let max_external = self.tools.config.max_external;
        // Calls of external tools handed over, or to be once approved.
        let mut handing = self.external.len() + self.pending.iter().filter(|pending| self.is_external(pending.tool())).count();
        calls
            .iter()
            .map(|call| {
                let refuse = |kind: ResultKind, error: ToolError| {
                    let id = if call.id.is_empty() { fresh_call_id() } else { call.id.as_str().into() };
                    Some(CallResult::failure(call.name.as_str().into(), id, kind, &error))
                };
                let id = call.id.as_str();
                if !id.is_empty() {
                    if step_ids.contains(&id) || (waiting.contains(&id) && !self.re_sent_external(call)) {
                        return refuse(ResultKind::InvalidArguments, lines::duplicate_call_id(id));
                    }
                    step_ids.push(id);
                    if waiting.contains(&id) {
                        // Re-sent: handed again (the journal knows it), counted once.
                        return None;
                    }
                }
                let def = self.tools.definition(&call.name)?;
                if let Some(error) = self.steps.exhausted(def) {
                    return refuse(ResultKind::Denied, error);
                }
                if def.external {
                    if handing >= max_external {
                        tracing::warn!(max = max_external, "too many external calls wait for the host in this run; refused");
                        return refuse(ResultKind::Denied, lines::too_many_external(max_external));
                    }
                    handing += 1;
                }
                None
            })
            .collect()
    }

    fn is_external(&self, tool: &str) -> bool {
        self.tools.definition(tool).is_some_and(|def| def.external)
    }

    /// Whether `call` is, in a durable run, a re-sent step's call of an
    /// external call still with the host: the same id, tool and arguments.
    /// Anywhere else, a waiting external call's id is taken.
    fn re_sent_external(&self, call: &ToolCall) -> bool {
        if self.durable
            && let Some(waiting) = self.external.iter().find(|waiting| waiting.id == call.id)
        {
            return waiting.tool == call.name.as_str() && guarded_value(self.tools, &call.arguments).is_some_and(|args| *args == waiting.input);
        }
        let _ = call;
        false
    }
}

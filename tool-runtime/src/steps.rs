//! What a run remembers of its steps, shared by a [`Run`](crate::Run) and
//! each MCP session: the step index, the tools executed, failures per tool,
//! how the run ends, and what is offered; and, for a durable run, what
//! changed since the journal last took it ([`Unsaved`]), which a save adds
//! to the journal's record rather than writing over it, since other
//! processes may step the same run at once.

use std::panic::AssertUnwindSafe;

use crate::context::{StepView, UserContext};
use crate::error::ToolError;
use crate::error_report::{ErrorKind, ErrorReport, panic_message};
use crate::registry::Registry;
use crate::result::{CallResult, ResultKind, lines};
use crate::run::RunState;
use crate::tool::ToolDefinition;

/// What a run remembers of its steps: the step index, the tools executed
/// and where it stands. Kept by a [`Run`](crate::Run), and by each MCP session (where
/// every `tools/call` is a step).
#[derive(Debug)]
pub(crate) struct Steps {
    pub(crate) step: usize,
    /// The tools that succeeded, a set: each once, in the order of its
    /// first success. `requires` and `visible_when` ask only whether a tool
    /// ran, and a list of every success would make each call of a long
    /// session (tens of thousands of calls) slower than the one before.
    pub(crate) executed: Vec<String>,
    pub(crate) state: RunState,
    /// Failed calls per tool, for `max_retries` (see [`counts_as_failure`]).
    pub(crate) failures: Vec<(String, u32)>,
    /// What changed since the journal last took it.
    pub(crate) unsaved: Unsaved,
    /// The version of the run's record this process last read from the
    /// journal (an older answer arriving late is not taken), and how many
    /// of the run's tools the journal held then.
    #[cfg_attr(not(feature = "journal"), allow(dead_code))]
    pub(crate) journaled: (i64, usize),
    /// Set by a save that found the last step re-sent: the index that step
    /// had when it was first journaled.
    #[cfg_attr(not(feature = "journal"), allow(dead_code))]
    pub(crate) resent: Option<usize>,
}

/// What the steps of a run changed since the journal last took it: a save
/// adds it to the journal's record, so that of several processes stepping
/// one run at once none loses another's steps, tools or failures. Kept by
/// every run (a few counters and names; at most one entry per tool).
#[derive(Debug, Default)]
#[cfg_attr(not(feature = "journal"), allow(dead_code))]
pub(crate) struct Unsaved {
    /// Steps taken.
    pub(crate) steps: usize,
    /// The digest of the call ids of the last of those steps, when the
    /// host gave each call an id: a step re-sending exactly the calls of
    /// the run's last journaled step is that step again.
    pub(crate) last_calls: Option<String>,
    /// Tools executed for the first time.
    pub(crate) tools: Vec<String>,
    /// Failed calls per tool.
    pub(crate) failures: Vec<(String, u32)>,
}

impl Default for Steps {
    fn default() -> Self {
        Steps {
            step: 0,
            executed: Vec::new(),
            state: RunState::Active,
            failures: Vec::new(),
            unsaved: Unsaved::default(),
            journaled: (0, 0),
            resent: None,
        }
    }
}

impl Steps {
    /// Moves to the next step; `calls` is the digest of the call ids of
    /// the step that ended, in a durable run.
    pub(crate) fn advance(&mut self, calls: Option<String>) {
        self.step += 1;
        self.unsaved.steps += 1;
        self.unsaved.last_calls = calls;
    }

    /// Records a settled call: a failure counts toward `max_retries`; a
    /// success marks its tool executed, and may end the run (`ends_run`) or halt
    /// it at once (`ends_turn`, the tool's key).
    pub(crate) fn record(&mut self, result: &CallResult, ends_turn: bool) {
        if counts_as_failure(result) {
            add_failures(&mut self.failures, &result.tool, 1);
            add_failures(&mut self.unsaved.failures, &result.tool, 1);
        }
        if result.kind != ResultKind::Success {
            return;
        }
        if !self.executed.iter().any(|tool| *tool == result.tool) {
            self.executed.push(result.tool.to_string());
            self.unsaved.tools.push(result.tool.to_string());
        }
        if ends_turn && self.state == RunState::Active {
            self.state = RunState::Finished { by: Some(result.tool.to_string()) };
        } else if result.ends_run && self.state == RunState::Active {
            self.state = RunState::Ending { by: result.tool.to_string() };
        }
    }

    /// What a call of `def` reads once the tool failed `max_retries` times
    /// in this run, which no longer offers it; `None` while it may be called.
    pub(crate) fn exhausted(&self, def: &ToolDefinition) -> Option<ToolError> {
        let max = def.max_retries?;
        let failed = self.failures.iter().find(|(tool, _)| *tool == def.name).map_or(0, |(_, failed)| *failed);
        (failed >= max).then(|| lines::exhausted(&def.name, failed))
    }

    /// The tools of `registry` offered now to `user`: none once the run
    /// ended, else those whose `requires` ran and whose `visible_when`
    /// passes, in declaration order. A visibility predicate that panics
    /// hides its tool and is reported.
    pub(crate) fn offered<'r, App: Send + Sync + 'static>(
        &self,
        registry: &'r Registry<App>,
        app: &App,
        user: &UserContext,
    ) -> Vec<&'r ToolDefinition> {
        if self.state != RunState::Active {
            return Vec::new();
        }
        let view = StepView::new(self.step, &self.executed, app, user);
        registry
            .inner
            .entries
            .iter()
            .filter(|entry| self.exhausted(&entry.def).is_none())
            .filter(|entry| entry.def.requires.iter().all(|name| view.has_executed(name)))
            .filter(|entry| {
                if !entry.def.has_visibility_predicate {
                    return true;
                }
                match std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.visible(&view))) {
                    Ok(visible) => visible,
                    Err(payload) => {
                        let error = format!("panic: {}", panic_message(payload.as_ref()));
                        registry.report(ErrorReport::new(&entry.def.name, "", ErrorKind::Visibility, "TOOL_HIDDEN", error));
                        false
                    }
                }
            })
            .map(|entry| &entry.def)
            .collect()
    }
}

/// Adds `failed` failures of `tool` to `failures`.
pub(crate) fn add_failures(failures: &mut Vec<(String, u32)>, tool: &str, failed: u32) {
    match failures.iter_mut().find(|(name, _)| name == tool) {
        Some((_, count)) => *count = count.saturating_add(failed),
        None => failures.push((tool.to_owned(), failed)),
    }
}

/// Whether a call's result counts toward its tool's `max_retries`: invalid
/// arguments, the tool's own error, an internal error (a bug or an outage:
/// the generic 500) and the tool's own timeout. A call stopped by the run's
/// or the step's time limit, cancelled, or refused (by policy or a human)
/// does not: the tool did not fail.
fn counts_as_failure(result: &CallResult) -> bool {
    match result.kind {
        ResultKind::InvalidArguments | ResultKind::ToolError | ResultKind::Internal => true,
        ResultKind::TimedOut => result.error_code.as_deref() == Some(lines::TOOL_TIMEOUT),
        _ => false,
    }
}

//! What a run remembers of its steps, shared by a [`Run`](crate::Run) and
//! each MCP session: the step index, the tools executed, failures per tool,
//! how the run ends, and what is offered; and, for a durable run, what
//! changed since the journal last took it ([`StepDelta`]), which a save adds
//! to the journal's record rather than writing over it, since other
//! processes may step the same run at once.

use std::panic::AssertUnwindSafe;

use crate::context::{RunView, StepCall, StepView, UserContext};
use crate::error::ToolError;
use crate::error_report::{ErrorKind, ErrorReport, Escaped, panic_message};
use crate::memory::Remembered;
use crate::memory::{JournalError, Opened, RunState, StepDelta, Stepped};
use crate::result::{CallResult, ResultKind, lines};
use crate::table::{Entry, ToolTable};
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
    pub(crate) unsaved: StepDelta,
    /// The version of the run's record this process last read from the
    /// journal (an older answer arriving late is not taken), and how many
    /// of the run's tools the journal held then.
    pub(crate) journaled: (i64, usize),
    /// Set by a save that found the last step re-sent: the index that step
    /// had when it was first journaled.
    pub(crate) resent: Option<usize>,
}

/// What a save of a run's steps sends ([`Steps::take_save`]).
#[derive(Debug)]
pub(crate) struct Save {
    unsaved: StepDelta,
    state: RunState,
    known: usize,
}

impl Save {
    /// Adds what this save took from a run's steps to its record in
    /// `remembered` ([`RunMemory::add_step`](crate::memory::RunMemory::add_step)); the answer is for
    /// [`Steps::saved`].
    pub(crate) async fn send(&self, remembered: &Remembered) -> Result<Stepped, JournalError> {
        remembered.memory.add_step(&remembered.run_id, &self.unsaved, &self.state, self.known).await
    }

    /// Opens the run in `remembered` for `user`, adding what this save took
    /// ([`RunMemory::open_run`](crate::memory::RunMemory::open_run)).
    async fn open(&self, remembered: &Remembered, user: Option<&str>) -> Result<(Stepped, Opened), JournalError> {
        remembered.memory.open_run(&remembered.run_id, user, &self.unsaved, &self.state, self.known).await
    }
}

impl Default for Steps {
    fn default() -> Self {
        Steps {
            step: 0,
            executed: Vec::new(),
            state: RunState::Active,
            failures: Vec::new(),
            unsaved: StepDelta::default(),
            journaled: (0, 0),
            resent: None,
        }
    }
}

impl Steps {
    /// The run's record as it stands, with `calls` (those of the step about
    /// to run), for a policy predicate.
    pub(crate) fn view(&self, calls: Vec<StepCall>) -> RunView {
        RunView::new(self.step, self.executed.clone(), self.state.clone(), self.failures.clone(), calls)
    }

    /// Takes what changed since the last save, to remember it: an MCP
    /// session does this under its lock, and saves of one session may run
    /// at once.
    pub(crate) fn take_save(&mut self) -> Save {
        Save { unsaved: std::mem::take(&mut self.unsaved), state: self.state.clone(), known: self.journaled.1 }
    }

    /// Opens the run in `remembered` for a process making it durable, with
    /// what changed here: a save whose step also claims the run for `user`
    /// and says what the run holds ([`Opened`]), its answer taken as
    /// [`saved`](Self::saved) takes one.
    pub(crate) async fn open(&mut self, remembered: &Remembered, user: Option<&str>) -> Result<Opened, JournalError> {
        let save = self.take_save();
        let answer = save.open(remembered, user).await;
        self.settle(save, answer)
    }

    /// Takes the journal's answer to `save`: on success the run as the
    /// journal holds it, with the other processes' steps, tools and
    /// failures; on failure the change is kept for the next save.
    pub(crate) fn saved(&mut self, save: Save, answer: Result<Stepped, JournalError>) -> Result<(), JournalError> {
        self.settle(save, answer.map(|stepped| (stepped, ())))
    }

    /// [`saved`](Self::saved), for an answer that says more beside the run
    /// (`T`), which it returns.
    fn settle<T>(&mut self, save: Save, answer: Result<(Stepped, T), JournalError>) -> Result<T, JournalError> {
        match answer {
            Ok((stepped, more)) => {
                self.journaled(stepped);
                Ok(more)
            }
            Err(error) => {
                self.restore(save.unsaved);
                Err(error)
            }
        }
    }

    /// Records how the run stands in `remembered` (after a step or an
    /// approval), and takes the other processes' steps from it: a save
    /// ([`take_save`](Self::take_save)) sent and its answer taken
    /// ([`saved`](Self::saved)).
    pub(crate) async fn save(&mut self, remembered: &Remembered) -> Result<(), JournalError> {
        let save = self.take_save();
        let answer = save.send(remembered).await;
        self.saved(save, answer)
    }

    /// [`save`](Self::save), a failure logged (the change is kept for the
    /// next save).
    pub(crate) async fn save_or_report(&mut self, remembered: &Remembered) {
        self.save_or_report_until(remembered, None).await;
    }

    /// [`save_or_report`](Self::save_or_report), given up at `until` when
    /// set (a step's deadline): a run's record another process holds
    /// locked keeps the step no longer, and the change is kept for the next
    /// save. (A save given up after the journal took it is sent again as
    /// the same step, which the journal does not count twice.)
    pub(crate) async fn save_or_report_until(&mut self, remembered: &Remembered, until: Option<tokio::time::Instant>) {
        let answer = match until {
            None => self.save(remembered).await,
            Some(until) => {
                let bounded = Remembered { memory: remembered.memory.until(until.into_std()), ..remembered.clone() };
                let save = self.take_save();
                let answer = tokio::time::timeout_at(until, save.send(&bounded)).await.unwrap_or_else(|_| {
                    Err(JournalError::Database { operation: "add_step", source: "it did not answer within the step's time limit".into() })
                });
                self.saved(save, answer)
            }
        };
        if let Err(error) = answer {
            let run_id = if remembered.durable { &*remembered.run_id } else { "" };
            tracing::error!(run_id = %Escaped(run_id), error = %Escaped(&error), "the run's state could not be journaled");
        }
    }

    /// Puts back what a save that failed took, before what changed since:
    /// the next save sends both.
    fn restore(&mut self, taken: StepDelta) {
        let newer = std::mem::replace(&mut self.unsaved, taken);
        self.unsaved.steps += newer.steps;
        if newer.steps > 0 {
            self.unsaved.last_calls = newer.last_calls;
        }
        for tool in newer.tools {
            if !self.unsaved.tools.contains(&tool) {
                self.unsaved.tools.push(tool);
            }
        }
        for (tool, failed) in &newer.failures {
            add_failures(&mut self.unsaved.failures, tool, *failed);
        }
    }

    /// Takes the run as the journal holds it after a save, plus what
    /// changed here since the save was sent. Tools only grow, so the
    /// journal's new ones are always added; the rest is taken only from an
    /// answer newer than the last one taken (two saves of one MCP session
    /// may answer out of order), and a state only when it is as far along
    /// as this one (a finished run stays finished).
    fn journaled(&mut self, stepped: Stepped) {
        for tool in stepped.tools {
            if !self.executed.contains(&tool) {
                self.executed.push(tool);
            }
        }
        self.journaled.1 = self.journaled.1.max(stepped.tool_count);
        self.resent = stepped.resent.then(|| stepped.step.saturating_sub(1));
        if stepped.version <= self.journaled.0 {
            return;
        }
        self.journaled.0 = stepped.version;
        self.step = stepped.step + self.unsaved.steps;
        self.failures = stepped.failures;
        for (tool, failed) in &self.unsaved.failures {
            add_failures(&mut self.failures, tool, *failed);
        }
        if stepped.state.rank() >= self.state.rank() {
            self.state = stepped.state;
        }
    }

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

    /// The tools of `tools` offered now to `user`: none once the run
    /// ended, else those whose `requires` ran and whose `visible_when`
    /// passes, in declaration order. A visibility predicate that panics
    /// hides its tool and is reported.
    pub(crate) fn offered<'r, App: Send + Sync + 'static>(
        &self,
        tools: &'r ToolTable<App>,
        app: &App,
        user: &UserContext,
    ) -> Vec<&'r ToolDefinition> {
        if self.state != RunState::Active {
            return Vec::new();
        }
        let view = StepView::new(self.step, &self.executed, app, user);
        let entries = tools.entries.iter().filter(|entry| self.offers(tools, entry, &view, Panicked::Report));
        entries.map(|entry| &entry.def).collect()
    }

    /// Whether the tool `name` is among [`offered`](Self::offered)'s, found
    /// without listing the others: a call of it needs no list. A
    /// visibility predicate that panics hides it here unreported, and is
    /// reported by the list that the call is refused with.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn offers_tool<App: Send + Sync + 'static>(&self, tools: &ToolTable<App>, app: &App, user: &UserContext, name: &str) -> bool {
        let Some(entry) = tools.entry(name) else { return false };
        let view = StepView::new(self.step, &self.executed, app, user);
        self.state == RunState::Active && self.offers(tools, entry, &view, Panicked::Hide)
    }

    /// Whether `entry` is offered in `view`'s step: not exhausted, its
    /// `requires` ran, and its `visible_when` passes.
    fn offers<App: Send + Sync + 'static>(&self, tools: &ToolTable<App>, entry: &Entry<App>, view: &StepView<'_, App>, panicked: Panicked) -> bool {
        if self.exhausted(&entry.def).is_some() || !entry.def.requires.iter().all(|name| view.has_executed(name)) {
            return false;
        }
        if !entry.def.has_visibility_predicate {
            return true;
        }
        match std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.visible(view))) {
            Ok(visible) => visible,
            Err(payload) if panicked == Panicked::Report => {
                let error = format!("panic: {}", panic_message(payload.as_ref()));
                tools.report(ErrorReport::new(&entry.def.name, "", ErrorKind::Visibility, "TOOL_HIDDEN", error));
                false
            }
            Err(_) => false,
        }
    }
}

/// What a visibility predicate that panics does besides hiding its tool.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Panicked {
    /// Its panic is reported.
    Report,
    /// Nothing: a list that reports it follows.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    Hide,
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
        ResultKind::InvalidArguments | ResultKind::ToolError | ResultKind::HostError | ResultKind::Internal => true,
        ResultKind::TimedOut => result.error_code.as_deref() == Some(lines::TOOL_TIMEOUT),
        _ => false,
    }
}

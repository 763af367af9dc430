//! Durable runs: a [`Run`] whose state, pending approvals and the effect of
//! each call live in a [`Journal`], so that the run can be resumed by its id
//! in any process that has the same registry, and no effect happens twice.
//!
//! Around each call (stages 4 to 6 of the pipeline):
//!
//! - Before its policy is decided, the journal is asked about the call's
//!   effect key: a finished effect is replayed (its result, checked
//!   against the output schema, without running the tool or asking a
//!   human again); a started one that never finished is waited for, since
//!   another process may still be running it (several processes settling
//!   one approved call, a step re-sent while it runs): until it finishes,
//!   and the call reads its result, or until its tool's timeout and a
//!   grace have passed since it started, or this call is cancelled. One
//!   still unfinished then is settled by the tool's reconcile hook
//!   (`#[tool(reconcile = path)]`, [`DynamicTool::reconcile`](crate::DynamicTool::reconcile)),
//!   whose output is journaled as the call's result; without one, it is
//!   refused with `OUTCOME_UNKNOWN`, and stays in doubt until the host
//!   resolves it ([`Journal::calls_in_doubt`], [`Journal::resolve_call`]).
//!   A call of an `idempotent` tool runs again at once instead.
//! - Right before the tool runs, the call is recorded as started
//!   ([`Journal::start_call`], atomic: of two processes, one runs it); after
//!   it, as finished with its result. A call that timed out or was
//!   cancelled stays started: whether it took effect is unknown.
//! - The journal is outside no call's limits: each read and write of a
//!   call is raced against the tool's timeout and the call's cancellation
//!   (and SQLite's busy retries end there too). A call whose start was not
//!   recorded in time did not run, and reads so (`TOOL_TIMEOUT`, or
//!   cancelled); should its start be recorded late, it is withdrawn, so
//!   the call is not left started. A call whose result was not recorded in
//!   time returns it, and the write goes on without it.
//!
//! After each step (and each approval settled), what the run changed since
//! its last save is added to its record in the journal, in one transaction:
//! the steps taken, the tools executed for the first time, the failures per
//! tool (`max_retries` counts, so they survive a resume), and the state,
//! which only moves forward. The run then takes its record as the journal
//! holds it, so that processes stepping one run at once each see the
//! others' steps, and one that steps a run another finished learns that it
//! is finished. A step that re-sends exactly the call ids of the run's last
//! journaled step (a host retrying after a crash) replays its calls and is
//! not counted again.
//!
//! The effect key is the run id and the call id, or, for a tool with
//! `idempotency_key = path`, the tool's name, the caller's user id and the
//! key it derives from the input (an order id), in every run of that user:
//! keys are scoped by user, so two tenants whose inputs give the same key
//! never share a result. A journaled effect answers only
//! the call it was made for: one keyed by run and call id that the
//! journal holds with another tool or input (a call id re-used) is refused
//! with `CALL_ID_REUSED`, neither run nor served, and the host is told what
//! differed ([`ErrorKind::CallMismatch`]); but the input a human edited at
//! approval is the call's, and a tool with `replay = false`, whose result
//! is never served, runs a re-used id's new input as a new call. One keyed
//! by an idempotency key is shared by design across calls and runs, but
//! only by its own tool.
//!
//! A tool with `replay = false` runs every time: a finished effect is never
//! replayed. One that is `read_only` or `idempotent` (or `external`) is not
//! journaled at all. Any other (a tool that writes a file or runs a
//! command) is journaled as started and finished all the same, so that a
//! call of it found started and never finished is refused with
//! `OUTCOME_UNKNOWN`, as for any tool: running it over an effect that may
//! have happened, or may still be happening in another process, could do
//! it twice at once. A finished one is started again
//! (`Journal::restart_call`, atomic) and runs.

use std::any::Any;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::Value;
use smol_str::SmolStr;
use tokio_util::sync::CancellationToken;

use crate::call::{Arguments, PendingCall};
use crate::context::{CallInfo, CallState};
use crate::error::ToolError;
use crate::error_report::{ErrorKind, ErrorReport, Escaped};
use crate::journal::runs::{Stepped, rank};
use crate::journal::{CallStart, Decided, Decision, EXPIRED_BY, GONE_BY, Journal, JournalError, JournaledCall, JournaledResult, ParkedCall};
use crate::pipeline::{Ended, Input};
use crate::registry::{Entry, Registry};
use crate::result::{CallResult, ResultKind, lines};
use crate::run::{Run, RunState, ToolCall};
use crate::steps::{Steps, Unsaved, add_failures};

/// How long past its tool's timeout a call found started elsewhere is
/// waited for: time for its process to journal the result.
const FINISH_GRACE: Duration = Duration::from_secs(2);
/// The first pause between looks at the journal while waiting; it doubles
/// up to [`MAX_LOOK`].
const FIRST_LOOK: Duration = Duration::from_millis(20);
const MAX_LOOK: Duration = Duration::from_millis(250);

/// What a call whose effect the journal knows does ([`Registry::known`]).
enum Known {
    /// It is answered without running.
    Answer(CallResult),
    /// It runs.
    Run,
    /// The start it found is gone (withdrawn by a call that never ran):
    /// it starts the effect itself.
    Gone,
}

/// Why a call stopped waiting for the journal.
enum Stopped {
    Cancelled,
    TimedOut,
}

/// `work`, unless `cancel` fires or `until` passes first.
async fn within<T>(cancel: &CancellationToken, until: tokio::time::Instant, work: impl Future<Output = T>) -> Result<T, Stopped> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(Stopped::Cancelled),
        done = work => Ok(done),
        () = tokio::time::sleep_until(until) => Err(Stopped::TimedOut),
    }
}

/// Withdraws the start of a call that never ran ([`Journal::withdraw_call`]),
/// its failure logged.
async fn withdraw(journal: Journal, key: String, call_id: SmolStr) {
    if let Err(error) = journal.withdraw_call(&key, &call_id).await {
        tracing::error!(call_id = %Escaped(&call_id), error = %Escaped(&error), "the start of a call that never ran could not be withdrawn: it reads as of unknown outcome");
    }
}

/// What a call of a durable run carries: the journal and the run's id.
#[derive(Debug)]
pub(crate) struct Durable {
    pub(crate) journal: Journal,
    pub(crate) run_id: Arc<str>,
}

impl Durable {
    pub(crate) fn new(journal: Journal, run_id: Arc<str>) -> Self {
        Durable { journal, run_id }
    }

    /// Adds what `save` took from a run's steps to its record
    /// ([`Journal::add_step`]); the answer is for [`Steps::saved`].
    pub(crate) async fn save(&self, save: &Save) -> Result<Stepped, JournalError> {
        self.journal.add_step(&self.run_id, &save.unsaved, &save.state, save.known).await
    }
}

/// What a save of a run's steps sends ([`Steps::take_save`]).
#[derive(Debug)]
pub(crate) struct Save {
    unsaved: Unsaved,
    state: RunState,
    known: usize,
}

impl Steps {
    /// Takes what changed since the last save, to journal it: an MCP
    /// session does this under its lock, and saves of one session may run
    /// at once.
    pub(crate) fn take_save(&mut self) -> Save {
        Save { unsaved: std::mem::take(&mut self.unsaved), state: self.state.clone(), known: self.journaled.1 }
    }

    /// Takes the journal's answer to `save`: on success the run as the
    /// journal holds it, with the other processes' steps, tools and
    /// failures; on failure the change is kept for the next save.
    pub(crate) fn saved(&mut self, save: Save, answer: Result<Stepped, JournalError>) -> Result<(), JournalError> {
        match answer {
            Ok(stepped) => {
                self.journaled(stepped);
                Ok(())
            }
            Err(error) => {
                self.restore(save.unsaved);
                Err(error)
            }
        }
    }

    /// Puts back what a save that failed took, before what changed since:
    /// the next save sends both.
    fn restore(&mut self, taken: Unsaved) {
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
        if rank(&stepped.state) >= rank(&self.state) {
            self.state = stepped.state;
        }
    }
}

/// Why a durable run could not be started, resumed or kept.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DurableError {
    /// The journal could not be read or written.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The run's journal holds a call this registry cannot take any more:
    /// its tool is gone or renamed, or its input schema no longer accepts
    /// the journaled input. Resume it with a registry compatible with the
    /// one that started it.
    #[error("the journaled call `{call_id}` of run `{run_id}` cannot be resumed with this registry: tool `{tool}` {reason}")]
    Incompatible {
        /// The run.
        run_id: String,
        /// The journaled call.
        call_id: String,
        /// Its tool.
        tool: String,
        /// What changed.
        reason: String,
    },
}

/// The journal's key for the effect of a call (JSON arrays: no run id,
/// call id or key can make two of them equal). A tool's `idempotency_key`
/// is scoped by the caller's user id: two users (tenants) whose inputs give
/// the same key never share an effect; callers without a user id share
/// theirs. A tool's `idempotency_key` function that panics or gives an
/// empty key is an error: the call is not run.
pub(crate) fn effect_key<App>(
    durable: &Durable,
    entry: &Entry<App>,
    input: &(dyn std::any::Any + Send + Sync),
    info: &CallInfo,
) -> Result<String, String> {
    let by_call = || external_key(durable, &info.call_id);
    let user = info.user.as_ref().and_then(|user| user.id.as_deref());
    // An external call is completed by its id, so it is keyed by it.
    if !entry.def.idempotency_key || entry.def.external {
        return Ok(by_call());
    }
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| entry.tool.effect_key(input))) {
        Ok(Some(key)) if key.is_empty() => Err("the idempotency_key function gave an empty key".to_owned()),
        Ok(Some(key)) => Ok(serde_json::json!(["tool", entry.def.name, user, key]).to_string()),
        Ok(None) => Ok(by_call()),
        Err(payload) => Err(format!("the idempotency_key function panicked: {}", crate::error_report::panic_message(payload.as_ref()))),
    }
}

/// The effect key of a call keyed by its run and id (every external call).
pub(crate) fn external_key(durable: &Durable, call_id: &str) -> String {
    serde_json::json!(["call", &*durable.run_id, call_id]).to_string()
}

/// The durable run of a call, where its tool is journaled: a tool that
/// replays, and one that does not (`replay = false`) but whose unfinished
/// call must not run again (neither `read_only` nor `idempotent`).
pub(crate) fn durable_of<'c, App>(entry: &Entry<App>, info: &'c CallInfo) -> Option<&'c Arc<Durable>> {
    let def = &entry.def;
    let runs_over_unfinished = def.annotations.read_only == Some(true) || def.annotations.idempotent == Some(true);
    info.durable.as_ref().filter(|_| def.replay || !(def.external || runs_over_unfinished))
}

impl<App: Send + Sync + 'static> Registry<App> {
    /// Before a call is decided: the result of its effect where the journal
    /// holds one (replayed, or refused as of unknown outcome), else `None`.
    /// The journal is read within the tool's timeout and the call's
    /// cancellation: a call that could not read it did not run.
    pub(crate) async fn journaled(&self, durable: &Durable, entry: &Entry<App>, input: &Input<'_>, info: &CallInfo) -> Option<CallResult> {
        let call_id = &info.call_id;
        let key = match effect_key(durable, entry, input.value.as_ref(), info) {
            Ok(key) => key,
            Err(error) => return Some(self.not_run(entry, call_id, error)),
        };
        let arguments = input.from.to_value();
        let until = tokio::time::Instant::now() + self.timeout_of(entry);
        let found = match within(info.cancellation(), until, durable.journal.until(until.into_std()).find_call(&key)).await {
            Ok(found) => found,
            Err(stopped) => return Some(self.not_started(entry, call_id, stopped)),
        };
        let found = match found {
            Ok(None) => return None,
            Ok(Some(found)) => found,
            Err(error) => return Some(self.journal_failed(entry, call_id, &error)),
        };
        if let Some(refused) = self.other_call(durable, entry, &info.call_id, &key, &arguments, &found).await {
            return Some(refused);
        }
        match found {
            // Handed to the host before, and not completed yet: still with it.
            JournaledCall { outcome: CallStart::UnknownOutcome { .. }, .. } if entry.def.external => {
                Some(CallResult::handed(entry.name.clone(), call_id.clone(), arguments))
            }
            found => match self.known(durable, entry, info, &key, (input.value.as_ref(), &arguments), found).await {
                Known::Answer(result) => Some(result),
                // Stage 6 starts it.
                Known::Run | Known::Gone => None,
            },
        }
    }

    /// Stage 6 in a durable run: the call is recorded as started, run, and
    /// recorded as finished; an effect the journal already holds is not
    /// run again. Each write is raced against the tool's timeout and the
    /// call's cancellation: a call whose start was not recorded in time
    /// did not run (and its start, should it be recorded late, is
    /// withdrawn); a call whose finish was not recorded in time returns
    /// its result while the finish goes on without it.
    pub(crate) async fn execute_journaled(
        &self,
        durable: &Durable,
        entry: &Entry<App>,
        input: Input<'_>,
        call: &mut CallState<'_, App>,
        span: &tracing::Span,
    ) -> CallResult {
        let call_id = call.call_id().clone();
        let key = match effect_key(durable, entry, input.value.as_ref(), call.info()) {
            Ok(key) => key,
            Err(error) => return self.not_run(entry, &call_id, error),
        };
        let arguments = input.from.to_value();
        // A start found gone after waiting (its call withdrew it) is tried
        // again, with the time to record it anew; a few times at most.
        let mut tries = 0;
        loop {
            tries += 1;
            let until = tokio::time::Instant::now() + self.timeout_of(entry);
            let bounded = durable.journal.until(until.into_std());
            let start = {
                let (journal, run_id, id, tool, args, effect) =
                    (bounded.clone(), durable.run_id.clone(), call_id.clone(), entry.def.name.clone(), arguments.clone(), key.clone());
                async move { journal.start_or_find(&run_id, &id, &tool, &args, &effect).await }
            };
            let mut started = match self.begin(durable, entry, call.info(), &key, until, start).await {
                Ok(started) => started,
                Err(stopped) => return stopped,
            };
            if let Ok(Some(found)) = &started
                && let Some(refused) = self.other_call(durable, entry, &call_id, &key, &arguments, found).await
            {
                return refused;
            }
            if !entry.def.replay
                && let Ok(Some(JournaledCall { outcome: CallStart::Finished(_), .. })) = started
            {
                // Runs on every call: the finished effect is started again.
                let (journal, id, args, effect) = (bounded, call_id.clone(), arguments.clone(), key.clone());
                let restart = async move { journal.restart_call(&effect, &id, &args).await };
                started = match self.begin(durable, entry, call.info(), &key, until, restart).await {
                    Ok(started) => started,
                    Err(stopped) => return stopped,
                };
            }
            match started {
                Err(error) => return self.journal_failed(entry, &call_id, &error),
                Ok(None) => break,
                Ok(Some(found)) => match self.known(durable, entry, call.info(), &key, (input.value.as_ref(), &arguments), found).await {
                    Known::Answer(result) => return result,
                    Known::Run => break,
                    Known::Gone if tries < 3 => {}
                    Known::Gone => return self.outcome_unknown(entry, &call_id, &key, "its start kept being withdrawn"),
                },
            }
        }
        let result = self.execute(entry, input, call, span).await;
        // A call stopped midway may or may not have had its effect.
        if !matches!(result.kind, ResultKind::Cancelled | ResultKind::TimedOut) {
            self.finish(durable, entry, call.info(), key, &result).await;
        }
        result
    }

    /// Runs `begin` (the start or restart of a call's effect, which says
    /// `None` when this call now holds the effect) in a task of its own,
    /// and waits for it until `until` or the call's cancellation. A call
    /// that stops waiting did not run, and reads so; should its start be
    /// recorded after that, it is withdrawn (`Journal::withdraw_call`), so
    /// that the call is not left started.
    async fn begin<F>(
        &self,
        durable: &Durable,
        entry: &Entry<App>,
        info: &CallInfo,
        key: &str,
        until: tokio::time::Instant,
        begin: F,
    ) -> Result<Result<Option<JournaledCall>, JournalError>, CallResult>
    where
        F: Future<Output = Result<Option<JournaledCall>, JournalError>> + Send + 'static,
    {
        let (sender, mut receiver) = tokio::sync::oneshot::channel();
        let withdraw = {
            let (journal, key, call_id) = (durable.journal.clone(), key.to_owned(), info.call_id.clone());
            move || withdraw(journal, key, call_id)
        };
        let withdraw_late = withdraw.clone();
        tokio::spawn(async move {
            // Not received: the call stopped waiting, and never ran.
            if let Err(Ok(None)) = sender.send(begin.await) {
                withdraw_late().await;
            }
        });
        match within(info.cancellation(), until, &mut receiver).await {
            Ok(Ok(begun)) => Ok(begun),
            Ok(Err(_)) => Err(self.not_run(entry, &info.call_id, "the task recording the call's start ended without an answer".to_owned())),
            Err(stopped) => {
                // Sent in the same instant: this call holds the start it will not use.
                receiver.close();
                if let Ok(Ok(None)) = receiver.try_recv() {
                    tokio::spawn(withdraw());
                }
                Err(self.not_started(entry, &info.call_id, stopped))
            }
        }
    }

    /// Journals a call's result, within the tool's timeout and the call's
    /// cancellation; past them, the write goes on in a task of its own
    /// (its failure logged), and the call returns its result at once.
    async fn finish(&self, durable: &Durable, entry: &Entry<App>, info: &CallInfo, key: String, result: &CallResult) {
        let journal = durable.journal.clone();
        let journaled = JournaledResult::from(result);
        let mut finishing = tokio::spawn(async move { journal.finish_call(&key, &journaled).await });
        let until = tokio::time::Instant::now() + self.timeout_of(entry);
        let failed = match within(info.cancellation(), until, &mut finishing).await {
            Ok(Ok(Ok(()))) => return,
            Ok(Ok(Err(error))) => error.to_string(),
            Ok(Err(join)) => join.to_string(),
            Err(_) => {
                let call_id = info.call_id.clone();
                tokio::spawn(async move {
                    if let Ok(Err(error)) = finishing.await {
                        tracing::error!(call_id = %Escaped(&call_id), error = %Escaped(&error), "a call's result could not be journaled: a replay reads its outcome as unknown");
                    }
                });
                return;
            }
        };
        // The effect happened and the model reads its result; only its
        // record is missing: a replay will read the outcome as unknown.
        self.report(ErrorReport::new(&entry.def.name, info.call_id.as_str(), ErrorKind::Journal, "JOURNAL", failed));
    }

    /// Stage 6 of an external tool in a durable run: the call is recorded as
    /// started, then handed to the host; [`Run::complete`] records it as
    /// finished. One the journal holds already is replayed.
    pub(crate) async fn hand_journaled(&self, durable: &Durable, entry: &Entry<App>, input: Input<'_>, call_id: &SmolStr) -> CallResult {
        let key = external_key(durable, call_id);
        let arguments = input.from.to_value();
        let found = match durable.journal.start_or_find(&durable.run_id, call_id, &entry.def.name, &arguments, &key).await {
            Err(error) => return self.journal_failed(entry, call_id, &error),
            Ok(found) => found,
        };
        if let Some(found) = &found
            && let Some(refused) = self.other_call(durable, entry, call_id, &key, &arguments, found).await
        {
            return refused;
        }
        match found {
            Some(JournaledCall { outcome: CallStart::Finished(journaled), .. }) => self.replayed(entry, call_id, journaled),
            _ => CallResult::handed(entry.name.clone(), call_id.clone(), arguments),
        }
    }

    /// What a call whose effect key the journal holds (`found`) does: it
    /// is answered (a replay, `OUTCOME_UNKNOWN`), runs anyway (an
    /// idempotent tool whose call never finished, a tool with
    /// `replay = false` whose call finished), or finds the start gone. A
    /// call found started and not finished may still be running in another
    /// process: it is waited for, until its tool's timeout (and
    /// [`FINISH_GRACE`]) from its start has passed, or this call is
    /// cancelled; then the tool's reconcile hook is asked what became of
    /// it, and without an answer its outcome is unknown. `input` is this
    /// call's, read and as JSON.
    async fn known(
        &self,
        durable: &Durable,
        entry: &Entry<App>,
        info: &CallInfo,
        key: &str,
        input: (&(dyn Any + Send + Sync), &Value),
        found: JournaledCall,
    ) -> Known {
        let (input, arguments) = input;
        let call_id = &info.call_id;
        let (started_by, started_at) = match found.outcome {
            CallStart::Started => return Known::Run,
            CallStart::Finished(_) if !entry.def.replay => return Known::Run,
            CallStart::Finished(journaled) => return Known::Answer(self.replayed(entry, call_id, journaled)),
            CallStart::UnknownOutcome { .. } if entry.def.annotations.idempotent == Some(true) => return Known::Run,
            CallStart::UnknownOutcome { ref call_id, started_at } => (call_id.clone(), started_at),
        };
        let found = match self.wait_for_finish(durable, entry, info, key, found).await {
            Err(stopped) => return Known::Answer(stopped),
            Ok(None) => return Known::Gone,
            Ok(Some(found)) => found,
        };
        // Started again meanwhile, by another call.
        if let Some(refused) = self.other_call(durable, entry, call_id, key, arguments, &found).await {
            return Known::Answer(refused);
        }
        match &found.outcome {
            CallStart::Finished(_) if !entry.def.replay => Known::Gone,
            CallStart::Finished(journaled) => Known::Answer(self.replayed(entry, call_id, journaled.clone())),
            _ => {
                let since = started_at.elapsed().unwrap_or_default();
                let why = format!("was started by call `{started_by}` {since:?} ago and never finished");
                // The hook answers for this call's input: only when it is
                // the unfinished call's (or the effect is keyed by it).
                if key == external_key(durable, call_id) && found.input != *arguments {
                    return Known::Answer(self.outcome_unknown(entry, call_id, key, &format!("{why} (with another input)")));
                }
                Known::Answer(self.reconciled(durable, entry, info, key, input, &why).await)
            }
        }
    }

    /// Waits for the unfinished call `found` of the effect `key` to
    /// finish: polls the journal until it holds the result, or no start at
    /// all, or the tool's timeout and [`FINISH_GRACE`] have passed since
    /// the call started (then the last thing known is returned). A
    /// cancelled call stops waiting and reads as cancelled; a journal that
    /// fails, as the generic 500.
    async fn wait_for_finish(
        &self,
        durable: &Durable,
        entry: &Entry<App>,
        info: &CallInfo,
        key: &str,
        found: JournaledCall,
    ) -> Result<Option<JournaledCall>, CallResult> {
        let CallStart::UnknownOutcome { started_at, .. } = found.outcome else { return Ok(Some(found)) };
        let bound = (self.timeout_of(entry) + FINISH_GRACE).saturating_sub(started_at.elapsed().unwrap_or_default());
        let until = tokio::time::Instant::now() + bound;
        let journal = durable.journal.until(until.into_std());
        let cancel = info.cancellation();
        let mut pause = FIRST_LOOK;
        let mut last = found;
        while tokio::time::Instant::now() < until {
            let look = async {
                tokio::time::sleep_until(until.min(tokio::time::Instant::now() + pause)).await;
                journal.find_call(key).await
            };
            match within(cancel, until, look).await {
                Err(Stopped::Cancelled) => return Err(self.not_started(entry, &info.call_id, Stopped::Cancelled)),
                Err(Stopped::TimedOut) => break,
                Ok(Ok(Some(found))) if matches!(found.outcome, CallStart::UnknownOutcome { .. }) => last = found,
                Ok(Ok(other)) => return Ok(other),
                Ok(Err(error)) => return Err(self.journal_failed(entry, &info.call_id, &error)),
            }
            pause = (pause * 2).min(MAX_LOOK);
        }
        Ok(Some(last))
    }

    /// A call of the effect `key` found unfinished (`why`), past waiting
    /// for it: the tool's reconcile hook says what became of it. An output
    /// it gives is the call's result, journaled as the effect's (a call
    /// that finished it meanwhile is replayed instead); without one (no
    /// hook, `None`, a panic, an output that does not fit the tool), the
    /// call reads `OUTCOME_UNKNOWN`.
    async fn reconciled(
        &self,
        durable: &Durable,
        entry: &Entry<App>,
        info: &CallInfo,
        key: &str,
        input: &(dyn Any + Send + Sync),
        why: &str,
    ) -> CallResult {
        let call_id = &info.call_id;
        let output = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| entry.tool.reconcile(input))) {
            Ok(None) => return self.outcome_unknown(entry, call_id, key, why),
            Ok(Some(output)) => output,
            Err(payload) => {
                let detail = format!("the reconcile hook panicked: {}", crate::error_report::panic_message(payload.as_ref()));
                self.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::Panic, crate::error::INTERNAL_ERROR_CODE, detail));
                return self.outcome_unknown(entry, call_id, key, why);
            }
        };
        let result = self.concluded(entry, call_id, Ended::Returned(output));
        if result.kind != ResultKind::Success {
            // Concluding reported why.
            return self.outcome_unknown(entry, call_id, key, &format!("{why}, and its reconcile hook gave an output that does not fit the tool"));
        }
        let until = tokio::time::Instant::now() + self.timeout_of(entry);
        let journal = durable.journal.until(until.into_std());
        match within(info.cancellation(), until, journal.resolve_call(key, &JournaledResult::from(&result))).await {
            Ok(Ok(())) => {
                tracing::info!(tool = %Escaped(&entry.def.name), call_id = %Escaped(call_id), "an unfinished call was settled by its reconcile hook");
                result
            }
            Ok(Err(JournalError::CallAlreadyFinished { .. })) => match journal.find_call(key).await {
                Ok(Some(JournaledCall { outcome: CallStart::Finished(journaled), .. })) => self.replayed(entry, call_id, journaled),
                _ => result,
            },
            failed => {
                // The hook says the effect happened: its result stands; only
                // its record is missing.
                let error = match failed {
                    Ok(Err(error)) => error.to_string(),
                    _ => "the journal did not answer in time".to_owned(),
                };
                let detail = format!("the reconciled result of effect {key} could not be journaled: {error}");
                self.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::Journal, "JOURNAL", detail));
                result
            }
        }
    }

    /// `CALL_ID_REUSED` when the journal holds the effect `key` for another
    /// call than this one (whose arguments are `arguments`): another tool,
    /// or, for an effect keyed by its run and call id, another input. Its
    /// result is not served, and this call is not run. An effect keyed by
    /// an `idempotency_key` is shared by calls of its tool with any input
    /// giving that key. A call a human approved with an edited input ran
    /// with that input: the call re-sent with the input it was parked with
    /// is the same call. A tool with `replay = false` never has its result
    /// served: a call id re-sent with another input runs as a new call
    /// would (never over an unfinished one).
    async fn other_call(
        &self,
        durable: &Durable,
        entry: &Entry<App>,
        call_id: &SmolStr,
        key: &str,
        arguments: &Value,
        found: &JournaledCall,
    ) -> Option<CallResult> {
        let by_call = key == external_key(durable, call_id);
        let differs = if found.tool != entry.def.name {
            format!("the tool differs: `{}` journaled, `{}` now", found.tool, entry.def.name)
        } else if by_call && entry.def.replay && found.input != *arguments && !self.edited_by_approval(durable, call_id, arguments).await {
            let shown = |input: &Value| lines::shorten(&input.to_string(), 300);
            format!("the input differs: {} journaled, {} now", shown(&found.input), shown(arguments))
        } else {
            return None;
        };
        let error = lines::call_id_reused(call_id);
        let detail = format!("effect {key} was journaled for another call (call `{}`): {differs}; not run, and its result not served", found.call_id);
        self.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::CallMismatch, error.code(), detail));
        Some(CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::InvalidArguments, &error))
    }

    /// Whether `call_id` of this run was parked with `arguments` and
    /// approved with an edited input (a journal that fails says no).
    async fn edited_by_approval(&self, durable: &Durable, call_id: &str, arguments: &Value) -> bool {
        let Ok(Some(approval)) = durable.journal.approval(&durable.run_id, call_id).await else { return false };
        let edited = approval.decided.is_some_and(|decided| matches!(decided.decision, Decision::ApproveEdited(_)));
        edited && approval.call.input == *arguments
    }

    /// `OUTCOME_UNKNOWN` for a call of effect `key`, which `why` explains
    /// to the host.
    fn outcome_unknown(&self, entry: &Entry<App>, call_id: &SmolStr, key: &str, why: &str) -> CallResult {
        let error = lines::outcome_unknown();
        let detail = format!("effect {key} {why}; not run again");
        self.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::OutcomeUnknown, error.code(), detail));
        CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::ToolError, &error)
    }

    /// A call the journal held up past its timeout, or that was cancelled
    /// while it waited for the journal: it did not run.
    fn not_started(&self, entry: &Entry<App>, call_id: &SmolStr, stopped: Stopped) -> CallResult {
        match stopped {
            Stopped::Cancelled => CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::Cancelled, &lines::cancelled()),
            Stopped::TimedOut => {
                let timeout = self.timeout_of(entry);
                let error = lines::not_started(timeout);
                let detail = format!("the journal did not answer within the tool's timeout ({timeout:?}); the call was not run");
                self.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::Timeout, error.code(), detail));
                CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::TimedOut, &error)
            }
        }
    }

    /// The tool's timeout.
    fn timeout_of(&self, entry: &Entry<App>) -> Duration {
        entry.def.timeout.unwrap_or(self.inner.config.default_timeout)
    }

    /// A journaled result, returned under this call's id once its output
    /// is checked against the tool's output schema.
    fn replayed(&self, entry: &Entry<App>, call_id: &SmolStr, journaled: JournaledResult) -> CallResult {
        if journaled.kind == ResultKind::Success
            && let Some(schema) = &entry.def.output_schema
        {
            let output = journaled.structured.clone().unwrap_or_else(|| Value::String(journaled.text.clone()));
            let problems = match jsonschema::draft202012::new(schema) {
                Ok(validator) => crate::validation::problems(&validator, &output),
                Err(error) => vec![error.to_string()],
            };
            if !problems.is_empty() {
                let public = ToolError::internal();
                let detail = format!("the journaled result does not match the output schema: {}", problems.join("; "));
                self.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::Output, public.code(), detail));
                return CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::Internal, &public);
            }
        }
        tracing::info!(tool = %Escaped(&entry.def.name), call_id = %Escaped(call_id), "replayed from the journal");
        journaled.to_call_result(&entry.def.name, call_id)
    }

    /// A call whose effect key could not be made, or whose start could not
    /// be recorded (`error` says why): not run (the generic 500).
    fn not_run(&self, entry: &Entry<App>, call_id: &SmolStr, error: String) -> CallResult {
        let public = ToolError::internal();
        self.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::Internal, public.code(), error));
        CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::Internal, &public)
    }

    /// A call the journal could not record: not run (the generic 500).
    fn journal_failed(&self, entry: &Entry<App>, call_id: &SmolStr, error: &JournalError) -> CallResult {
        let public = ToolError::internal();
        self.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::Journal, public.code(), error.to_string()));
        CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::Internal, &public)
    }
}

impl<App: Send + Sync + 'static> Run<App> {
    /// Makes this run durable under `run_id` in `journal`: a run the
    /// journal knows is resumed (its step, tools executed, failures per
    /// tool, how it ended and its pending approvals), a new one is
    /// recorded. From then on each step, each call's effect and each
    /// approval are journaled (see the [module docs](crate::journal)).
    /// Several processes may resume and step one run at once: each step is
    /// added to the journal's record, and after it the run holds the steps
    /// and tools of all of them. Set the run's user and thread first:
    /// resumed pending calls run as that user.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use tool_runtime::prelude::*;
    /// # use tool_runtime::{journal::Journal, ToolCall};
    /// /// Refund an order.
    /// #[tool(policy = needs_approval)]
    /// async fn refund(order_id: String) -> String { format!("refunded {order_id}") }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = std::env::temp_dir().join(format!("durable-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let journal = Journal::open(dir.join("runs.db").to_str().unwrap()).await?;
    /// let registry = Registry::<()>::builder().tools(tools![refund]).build()?;
    ///
    /// // One process parks the refund...
    /// let mut run = registry.run(Arc::new(())).durable(&journal, "thread-7").await?;
    /// run.execute(vec![ToolCall::new("c1", "refund", r#"{"order_id": "A-1"}"#)]).await;
    ///
    /// // ...a human approves it from another (an admin page)...
    /// journal.decide("thread-7", "c1", tool_runtime::journal::Decision::Approve, "alice").await?;
    ///
    /// // ...and the run, resumed anywhere, runs it.
    /// let mut run = registry.run(Arc::new(())).durable(&journal, "thread-7").await?;
    /// let settled = run.settle_decided().await?;
    /// assert_eq!(settled[0].text, "refunded A-1");
    /// # journal.close().await; std::fs::remove_dir_all(&dir)?; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`DurableError::Journal`] when the journal cannot be read or
    /// written; [`DurableError::Incompatible`] when a pending call's tool is
    /// gone or no longer accepts its journaled input.
    pub async fn durable(mut self, journal: &Journal, run_id: &str) -> Result<Self, DurableError> {
        let durable = Arc::new(Durable::new(journal.clone(), run_id.into()));
        self.durable = Some(durable.clone());
        // A run the journal knows is taken as it holds it; a new one is
        // recorded (with whatever this run did before).
        self.steps.journaled = (0, 0);
        self.save().await?;
        // The journaled calls must still fit this registry: a re-sent step
        // replays them.
        for call in journal.calls_of_run(run_id).await? {
            let (entry, _) = self.check_fits(run_id, &call.call_id, &call.tool, &call.input)?;
            // An external call not completed is still with the host.
            if entry.def.external && matches!(call.outcome, CallStart::UnknownOutcome { .. }) {
                self.external.push(crate::ExternalCall { id: call.call_id.into(), tool: call.tool.into(), input: call.input });
            }
        }
        // Decided or not: a decision made elsewhere is settled by
        // `settle_decided`.
        for approval in journal.unsettled_for_run(run_id).await? {
            let pending = self.unpark(&approval.call)?;
            self.pending.push(pending);
        }
        Ok(self)
    }

    /// The run's id in its journal, for a durable run.
    pub fn run_id(&self) -> Option<&str> {
        self.durable.as_deref().map(|durable| &*durable.run_id)
    }

    /// Settles the pending calls that were decided out of band (by any
    /// process, with [`Journal::decide`]) or that expired: an approved call
    /// runs (with its edited input, validated and decided again) unless the
    /// run may no longer run it (past its deadline, or its tool exhausted
    /// by `max_retries`, as [`approve`](Self::approve) says), a rejected one
    /// reads its rejection, an expired one `APPROVAL_EXPIRED`. Returns their results,
    /// in the order they were parked, then those of the external calls
    /// another process completed ([`Run::complete`] on the resumed run);
    /// calls still waiting stay pending.
    /// A run that is not durable has nothing to settle.
    ///
    /// # Errors
    ///
    /// [`DurableError::Journal`] when the journal cannot be read or written.
    pub async fn settle_decided(&mut self) -> Result<Vec<CallResult>, DurableError> {
        let Some(durable) = self.durable.clone() else { return Ok(Vec::new()) };
        let expired = lines::approval_expired(self.registry.approval_ttl());
        durable.journal.expire(SystemTime::now(), expired.model_line().as_str()).await?;
        let mut results = Vec::new();
        let mut index = 0;
        while index < self.pending.len() {
            let id = self.pending[index].id().clone();
            let Some(decided) = durable.journal.approval(&durable.run_id, &id).await?.and_then(|approval| approval.decided) else {
                index += 1;
                continue;
            };
            let pending = self.pending.remove(index);
            let result = self.carry_out(pending, decided).await;
            self.steps.record(&result, self.ends_turn(&result));
            durable.journal.settle(&durable.run_id, &id).await?;
            results.push(result);
        }
        // External calls another process completed.
        let mut index = 0;
        while index < self.external.len() {
            let call = &self.external[index];
            let Some(CallStart::Finished(journaled)) = durable.journal.known_call(&external_key(&durable, &call.id)).await? else {
                index += 1;
                continue;
            };
            let call = self.external.remove(index);
            let result = journaled.to_call_result(&call.tool, &call.id);
            self.steps.record(&result, self.ends_turn(&result));
            results.push(result);
        }
        self.save().await?;
        Ok(results)
    }

    /// Carries out a decision the journal holds on `pending`.
    async fn carry_out(&self, pending: PendingCall<App>, decided: Decided) -> CallResult {
        // The journal's own expiry: its line, not a rejection quoting it.
        if decided.by == EXPIRED_BY {
            return self.registry.expire(pending);
        }
        if let Decision::Reject(text) = &decided.decision {
            return self.registry.reject(pending, Some(text.as_str()).filter(|text| !text.is_empty()));
        }
        if let Some(refused) = self.refused_at_approval(&pending) {
            return refused;
        }
        // The journal accepted the decision: its clock decided it came in
        // time, not this process's.
        match decided.decision {
            Decision::ApproveEdited(input) => self.registry.approve_decided(pending, Some(Arguments::Value(input))).await,
            _ => self.registry.approve_decided(pending, None).await,
        }
    }

    /// [`sweep_expired`](Self::sweep_expired) in a durable run: the journal
    /// expires what is due by its clock, and this run's calls it expired
    /// are settled. A journal that fails sweeps nothing (reported).
    pub(crate) async fn sweep_journaled(&mut self) -> Vec<CallResult> {
        let Some(durable) = self.durable.clone() else { return Vec::new() };
        let text = lines::approval_expired(self.registry.approval_ttl()).model_line();
        if let Err(error) = durable.journal.expire(SystemTime::now(), &text).await {
            tracing::error!(run_id = %Escaped(&durable.run_id), error = %Escaped(&error), "expired approvals could not be swept");
            return Vec::new();
        }
        let mut expired = Vec::new();
        let mut index = 0;
        while index < self.pending.len() {
            let id = self.pending[index].id().clone();
            match durable.journal.approval(&durable.run_id, &id).await {
                Ok(Some(approval)) if approval.decided.as_ref().is_some_and(|decided| decided.by == EXPIRED_BY) => {
                    expired.push(self.registry.expire(self.pending.remove(index)));
                    self.settle_or_report(&id).await;
                }
                Ok(_) => index += 1,
                Err(error) => {
                    tracing::error!(call_id = %Escaped(&id), error = %Escaped(&error), "an expired approval could not be read back");
                    index += 1;
                }
            }
        }
        expired
    }

    /// A call that needs approval, parked in the journal of a durable run
    /// before it is shown as waiting: `Err` with the result the model reads
    /// when the journal could not record it (the call is not run, and no
    /// one is asked to decide what could never be carried out).
    pub(crate) async fn park_durably(&self, pending: PendingCall<App>) -> Result<PendingCall<App>, CallResult> {
        match self.park(&pending).await {
            Ok(()) => Ok(pending),
            Err(error) => {
                let detail = format!("the pending call could not be journaled, so it was not run: {error}");
                self.registry.report(ErrorReport::new(pending.tool().as_str(), pending.id().as_str(), ErrorKind::Journal, "JOURNAL", detail));
                Err(unrecorded(pending.tool().clone(), pending.id().clone()))
            }
        }
    }

    /// Journals a finished run: its dropped pending calls rejected and
    /// settled, its state saved (failures logged).
    pub(crate) async fn journal_finish(&mut self, dropped: &[PendingCall<App>]) {
        let Some(durable) = self.durable.clone() else { return };
        for pending in dropped {
            let rejected =
                durable.journal.decide(&durable.run_id, pending.id(), Decision::Reject("The run finished before a decision.".into()), GONE_BY).await;
            if let Err(error) = rejected.map(drop).or_else(|error| match error {
                JournalError::AlreadyDecided { .. } => Ok(()),
                other => Err(other),
            }) {
                tracing::error!(call_id = %Escaped(pending.id()), error = %Escaped(&error), "a dropped pending call could not be journaled as rejected");
            }
            self.settle_or_report(pending.id()).await;
        }
        self.save_or_report().await;
    }

    /// [`save`](Self::save), a failure logged.
    pub(crate) async fn save_or_report(&mut self) {
        if let Err(error) = self.save().await {
            tracing::error!(run_id = %Escaped(self.run_id().unwrap_or_default()), error = %Escaped(&error), "the run's state could not be journaled");
        }
    }

    /// Journals that a call decided in this process was settled.
    pub(crate) async fn settle_or_report(&self, call_id: &str) {
        if let Some(durable) = &self.durable
            && let Err(error) = durable.journal.settle(&durable.run_id, call_id).await
        {
            tracing::error!(run_id = %Escaped(&durable.run_id), call_id = %Escaped(call_id), error = %Escaped(&error), "a settled call could not be journaled as settled");
        }
    }

    /// Records how the run stands, after a step or an approval, and takes
    /// the other processes' steps from the journal ([`Durable::save`]).
    pub(crate) async fn save(&mut self) -> Result<(), JournalError> {
        let Some(durable) = self.durable.clone() else { return Ok(()) };
        let save = self.steps.take_save();
        let answer = durable.save(&save).await;
        self.steps.saved(save, answer)
    }

    /// The digest of a step's call ids in a durable run, by which a step
    /// re-sent after a crash is told from a new one; `None` when the run
    /// is not durable, or a call has no id of the host's.
    pub(crate) fn step_digest(&self, calls: &[ToolCall]) -> Option<String> {
        use sha2::{Digest, Sha256};

        if self.durable.is_none() || calls.is_empty() || calls.iter().any(|call| call.id.is_empty()) {
            return None;
        }
        let ids: Vec<&str> = calls.iter().map(|call| call.id.as_str()).collect();
        let digest = Sha256::digest(serde_json::to_string(&ids).unwrap_or_default().as_bytes());
        Some(digest.iter().map(|byte| format!("{byte:02x}")).collect())
    }

    /// Journals a call that now waits for approval.
    pub(crate) async fn park(&self, pending: &PendingCall<App>) -> Result<(), JournalError> {
        let Some(durable) = &self.durable else { return Ok(()) };
        let now = SystemTime::now();
        let ttl: Duration = self.registry.approval_ttl();
        durable
            .journal
            .park(&ParkedCall {
                run_id: durable.run_id.to_string(),
                call_id: pending.id().to_string(),
                tool: pending.tool().to_string(),
                input: pending.arguments(),
                user_id: self.user.id.clone(),
                parked_at: now,
                expires_at: now.checked_add(ttl),
            })
            .await
    }

    /// Journals the host's decision on a pending call, made in this
    /// process; `AlreadyDecided` when another process decided it first.
    pub(crate) async fn record_decision(&self, id: &str, decision: Decision) -> Result<(), JournalError> {
        let Some(durable) = &self.durable else { return Ok(()) };
        let by = self.user.id.as_deref().unwrap_or("host");
        durable.journal.decide(&durable.run_id, id, decision, by).await.map(drop)
    }

    /// A journaled pending call, read back into this registry's tool.
    fn unpark(&self, parked: &ParkedCall) -> Result<PendingCall<App>, DurableError> {
        let (entry, input) = self.check_fits(&parked.run_id, &parked.call_id, &parked.tool, &parked.input)?;
        let info = self.call_info(&parked.call_id, &self.cancel);
        Ok(crate::pipeline::park(entry, input, CallState::new(&self.app, info), None))
    }

    /// The tool of a journaled call, and the call's input read by it; an
    /// error naming the tool when it is gone or refuses the input.
    fn check_fits(&self, run_id: &str, call_id: &str, tool: &str, input: &Value) -> Result<(&Entry<App>, Input<'static>), DurableError> {
        let incompatible =
            |reason: String| DurableError::Incompatible { run_id: run_id.to_owned(), call_id: call_id.to_owned(), tool: tool.to_owned(), reason };
        let Some(entry) = self.registry.entry(tool) else {
            return Err(incompatible("is not in this registry (removed or renamed)".to_owned()));
        };
        let input = self
            .registry
            .read_input(entry, &SmolStr::new(call_id), Arguments::Value(input.clone()))
            .map_err(|refused| incompatible(format!("no longer accepts the journaled input: {}", refused.text)))?;
        Ok((entry, input))
    }
}

/// What a call that needs approval reads when the journal could not record
/// that it waits: it was not run, and no one can approve it.
pub(crate) fn unrecorded(tool: SmolStr, id: SmolStr) -> CallResult {
    CallResult::failure(tool, id, ResultKind::Rejected, &lines::rejected(Some("The approval could not be recorded, so the call was not run.")))
}

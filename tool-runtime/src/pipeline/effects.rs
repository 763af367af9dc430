//! The effect of a call of a run, around stages 4 to 6: what the run's
//! memory ([`RunMemory`]) holds of it before it is decided, and its start
//! and finish around its execution. A durable run takes this path for every
//! call, in its journal, so that no effect happens twice across processes;
//! a run that is not durable only for the calls another call can meet
//! (keyed by an `idempotency_key`), in its own memory
//! ([`LocalMemory`](crate::memory::LocalMemory), which keeps an effect
//! while it is under way); see `memory_of`.
//!
//! Around each call:
//!
//! - Before its policy is decided, the memory is asked about the call's
//!   effect key: a finished effect is replayed (its result, checked
//!   against the output schema, without running the tool or asking a
//!   human again); a started one that never finished is waited for, since
//!   another process may still be running it (several processes settling
//!   one approved call, a step re-sent while it runs): until it finishes,
//!   and the call reads its result, or until its tool's timeout and a
//!   grace have passed since it started, or the process that started it
//!   is known to be gone (its journal's lease lapsed), or this call is
//!   cancelled. One still unfinished then is settled by the tool's
//!   reconcile hook (`#[tool(reconcile = path)]`, [`DynamicTool::reconcile`](crate::DynamicTool::reconcile)),
//!   given the call's context: an output it says the effect had is
//!   journaled as the call's result; when it says the effect did not
//!   happen, that start is withdrawn and the call starts the effect (one
//!   of several calls does); without an answer, it is refused with
//!   `OUTCOME_UNKNOWN`, and stays in doubt until the host resolves it
//!   (`journal.calls().in_doubt`, `journal.calls().resolve`).
//!   A call of an `idempotent` tool runs again at once instead.
//! - Right before the tool runs, the call is recorded as started
//!   ([`RunMemory::start_or_find`], atomic: of two processes, one runs it); after
//!   it, as finished with its result. In a durable run, a call that timed
//!   out or was cancelled stays started: whether it took effect is
//!   unknown. A run that is not durable forgets it once its tool can no
//!   longer be running (`Forget`), as it forgets a finished one.
//! - The memory is outside no call's limits: each read and write of a
//!   call is raced against the tool's timeout and the call's cancellation
//!   (and SQLite's busy retries end there too). A call whose start was not
//!   recorded in time did not run, and reads so (`TOOL_TIMEOUT`, or
//!   cancelled); should its start be recorded late, it is withdrawn, so
//!   the call is not left started. A call whose result was not recorded in
//!   time returns it, and the write goes on without it.
//!
//! The effect key is the run id and the call id, or, for a tool with
//! `idempotency_key = path`, the tool's name, the run's user (as its
//! journal holds it, whichever process sends the call) and the key it
//! derives from the input (an order id), in every run of that user: keys
//! are scoped by user, so two tenants whose inputs give the same key never
//! share a result. Such a call is looked for under its key, as the same
//! call of its run (its run and call id) under any key, and under the key
//! schema versions 1 and 2 made (no user), so that an effect journaled
//! before an upgrade, or by another user's process, is not run again. A
//! journaled effect answers only the call it was made for, neither run nor
//! served to any other, and the host is told what differed
//! ([`ErrorKind::CallMismatch`]): a call id the run journaled with another
//! tool or input (under any key: a keyed tool's new input may give another)
//! is refused with `CALL_ID_REUSED`; another call whose input gives a keyed
//! effect's key with other arguments, with `IDEMPOTENCY_KEY_REUSED`. A
//! keyed effect answers every call of its own tool with that input, across
//! calls and runs of its user. The input a human edited at approval is the
//! call's, and a tool with `replay = false`, whose result is never served,
//! runs a re-used id's new input as a new call.
//!
//! A tool with `replay = false` runs every time: a finished effect is never
//! replayed. One that is `read_only` or `idempotent` (or `external`) is not
//! journaled at all. Any other (a tool that writes a file or runs a
//! command) is journaled as started and finished all the same, so that a
//! call of it found started and never finished is refused with
//! `OUTCOME_UNKNOWN`, as for any tool: running it over an effect that may
//! have happened, or may still be happening in another process, could do
//! it twice at once. A finished one is started again
//! ([`RunMemory::restart_call`], atomic) and runs.

use std::any::Any;
use std::future::Future;
use std::time::Duration;

use serde_json::Value;
use smol_str::SmolStr;
use tokio_util::sync::CancellationToken;

use super::{Ended, Input, concluded, execute};
use crate::context::{CallInfo, CallState};
use crate::error::ToolError;
use crate::error_report::{ErrorKind, ErrorReport, Escaped};
use crate::memory::{CallStart, Decision, JournalError, JournaledCall, JournaledResult, Keyed, Remembered, RunMemory, Starting};
use crate::result::{CallResult, ResultKind, lines};
use crate::table::{Entry, ToolTable};
use crate::tool::Reconciled;

/// How long past its tool's timeout a call found started elsewhere is
/// waited for: time for its process to journal the result.
const FINISH_GRACE: Duration = Duration::from_secs(2);
/// The first pause between looks at the journal while waiting; it doubles
/// up to [`MAX_LOOK`].
const FIRST_LOOK: Duration = Duration::from_millis(20);
const MAX_LOOK: Duration = Duration::from_millis(250);

/// What a call whose effect the journal knows does (`known`).
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

/// Withdraws the start of a call that never ran ([`RunMemory::withdraw_call`]),
/// its failure logged.
async fn withdraw(memory: std::sync::Arc<dyn RunMemory>, key: String, call_id: SmolStr) {
    if let Err(error) = memory.withdraw_call(&key, &call_id).await {
        tracing::error!(call_id = %Escaped(&call_id), error = %Escaped(&error), "the start of a call that never ran could not be withdrawn: it reads as of unknown outcome");
    }
}

/// The key of a call's effect in its run's memory ([`effect_key`]).
pub(crate) struct EffectKey {
    /// The key the effect is started under.
    key: String,
    /// For a key from the tool's `idempotency_key`, the one the journal's
    /// schema versions 1 and 2 held the effect under (the tool and the key,
    /// no user: every user's calls shared it then), so that an effect
    /// journaled before an upgrade is found after it.
    earlier: Option<String>,
}

/// The memory's key for the effect of a call (JSON arrays: no run id,
/// call id or key can make two of them equal). A tool's `idempotency_key`
/// is scoped by the run's user (as the memory holds it, else the
/// caller's): two users (tenants) whose inputs give the same key never
/// share an effect, and a call of a run is keyed alike whichever process
/// sends it; callers without a user id share theirs. A tool's
/// `idempotency_key` function that panics or gives an empty key is an
/// error: the call is not run.
pub(crate) fn effect_key<App>(
    remembered: &Remembered,
    entry: &Entry<App>,
    input: &(dyn std::any::Any + Send + Sync),
    info: &CallInfo,
) -> Result<EffectKey, String> {
    let by_call = || EffectKey { key: remembered.call_key(&info.call_id), earlier: None };
    let user = remembered.user.as_deref().or_else(|| info.user.as_ref().and_then(|user| user.id.as_deref()));
    // An external call is completed by its id, so it is keyed by it.
    if !entry.def.idempotency_key || entry.def.external {
        return Ok(by_call());
    }
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| entry.tool.effect_key(input))) {
        Ok(Some(key)) if key.is_empty() => Err("the idempotency_key function gave an empty key".to_owned()),
        Ok(Some(key)) => Ok(EffectKey {
            key: serde_json::json!(["tool", entry.def.name, user, key]).to_string(),
            earlier: Some(serde_json::json!(["tool", entry.def.name, key]).to_string()),
        }),
        Ok(None) => Ok(by_call()),
        Err(payload) => Err(format!("the idempotency_key function panicked: {}", crate::error_report::panic_message(payload.as_ref()))),
    }
}

/// The call that asks the run's memory about its effect: its id, and its
/// cancellation, which ends every wait.
#[derive(Clone, Copy)]
struct Asker<'c> {
    call_id: &'c SmolStr,
    cancel: &'c CancellationToken,
}

/// The effect a call found in its run's memory: its key, and whether it
/// answers only its own call, with its own input (an effect keyed by its
/// run and call id, or a keyed call's found by its run and call id).
#[derive(Clone, Copy)]
struct Effect<'k> {
    key: &'k str,
    by_call: bool,
}

/// The memory of a call's run, where its effect is remembered: a tool that
/// replays, and one that does not (`replay = false`) but whose unfinished
/// call must not run again (neither `read_only` nor `idempotent`). `None`
/// for a call outside a run, and a tool whose effects need no memory.
///
/// A run that is not durable remembers only the effects that another call
/// can meet: those keyed by an `idempotency_key`. One keyed by its own call
/// id cannot meet another there (a run refuses an id it has taken, and its
/// memory forgets a finished effect), so recording it would only cost the
/// call (7.7 against 1.9 microseconds a call of a run that is not durable:
/// `cargo bench --bench journal`, its `in memory` column).
pub(crate) fn memory_of<'c, App>(entry: &Entry<App>, info: &'c CallInfo) -> Option<&'c Remembered> {
    let def = &entry.def;
    let runs_over_unfinished = def.annotations.read_only == Some(true) || def.annotations.idempotent == Some(true);
    let shared_key = def.idempotency_key && !def.external;
    let memory = info.memory().filter(|memory| memory.durable || shared_key)?;
    Some(memory).filter(|_| def.replay || !(def.external || runs_over_unfinished))
}

/// Before a call is decided: the result of its effect where the journal
/// holds one (replayed, or refused as of unknown outcome), else `None`.
/// The journal is read within the tool's timeout and the call's
/// cancellation: a call that could not read it did not run.
pub(crate) async fn journaled<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    remembered: &Remembered,
    entry: &Entry<App>,
    input: &Input<'_>,
    call: &mut CallState<'_, App>,
) -> Option<CallResult> {
    let (call_id, cancel) = (call.call_id().clone(), call.info().cancellation().clone());
    let call_id = &call_id;
    let EffectKey { key, earlier } = match effect_key(remembered, entry, input.value.as_ref(), call.info()) {
        Ok(key) => key,
        Err(error) => return Some(not_run(tools, entry, call_id, error)),
    };
    let arguments = input.from.to_value();
    let until = tokio::time::Instant::now() + timeout_of(tools, entry);
    let memory = remembered.memory.until(until.into_std());
    let lookup = async {
        match &earlier {
            None => memory.find_call(&key).await.map(|found| found.map(|found| (Some(key.clone()), found))),
            Some(earlier) => {
                let keyed = Keyed { run_id: &remembered.run_id, call_id, tool: &entry.def.name, key: &key, earlier: Some(earlier) };
                memory.find_keyed(keyed).await
            }
        }
    };
    let found = match within(&cancel, until, lookup).await {
        Ok(found) => found,
        Err(stopped) => return Some(not_started(tools, entry, call_id, stopped)),
    };
    let (found_key, found) = match found {
        Ok(None) => return None,
        Ok(Some(found)) => found,
        Err(error) => return Some(journal_failed(tools, entry, call_id, &error)),
    };
    // A keyed call found by its run and call id, under a key of its own
    // (another user's process sent it before the run's user was journaled):
    // the same call, which answers only its own input.
    let by_call = key == remembered.call_key(call_id) || (found_key.as_deref() != Some(&key) && found_key != earlier);
    let effect = Effect { key: found_key.as_deref().unwrap_or(&key), by_call };
    if let Some(refused) = other_call(tools, remembered, entry, call_id, effect, &arguments, &found).await {
        return Some(refused);
    }
    if found_key.is_none() && !matches!(found.outcome, CallStart::Finished(_)) {
        let why = "was journaled by an earlier version under a key stored as its digest, and never finished; \
                   settle it with journal.calls().in_doubt and journal.calls().resolve";
        return Some(outcome_unknown(tools, entry, call_id, &key, why));
    }
    match found {
        // Handed to the host before, and not completed yet: still with it.
        JournaledCall { outcome: CallStart::UnknownOutcome { .. }, .. } if entry.def.external => {
            Some(CallResult::handed(entry.name.clone(), call_id.clone(), arguments))
        }
        found => match known(tools, remembered, entry, call, effect, (input.value.as_ref(), &arguments), found).await {
            Known::Answer(result) => Some(result),
            // Stage 6 starts it.
            Known::Run | Known::Gone => None,
        },
    }
}

/// Stage 6 in a remembered run: the call is recorded as started, run, and
/// recorded as finished; an effect the journal already holds is not
/// run again. Each write is raced against the tool's timeout and the
/// call's cancellation: a call whose start was not recorded in time
/// did not run (and its start, should it be recorded late, is
/// withdrawn); a call whose finish was not recorded in time returns
/// its result while the finish goes on without it.
pub(crate) async fn execute_journaled<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    remembered: &Remembered,
    entry: &Entry<App>,
    input: Input<'_>,
    call: &mut CallState<'_, App>,
    span: &tracing::Span,
) -> CallResult {
    let call_id = call.call_id().clone();
    let key = match effect_key(remembered, entry, input.value.as_ref(), call.info()) {
        Ok(key) => key.key,
        Err(error) => return not_run(tools, entry, &call_id, error),
    };
    let effect = Effect { key: &key, by_call: key == remembered.call_key(&call_id) };
    let arguments = input.from.to_value();
    // A start found gone after waiting (its call withdrew it) is tried
    // again, with the time to record it anew; a few times at most.
    let mut tries = 0;
    loop {
        tries += 1;
        let until = tokio::time::Instant::now() + timeout_of(tools, entry);
        let bounded = remembered.memory.until(until.into_std());
        let start = {
            let (memory, run_id, id, tool, args, effect) =
                (bounded.clone(), remembered.run_id.clone(), call_id.clone(), entry.def.name.clone(), arguments.clone(), key.clone());
            async move {
                let starting = Starting { run_id: &run_id, call_id: &id, tool: &tool, input: &args, effect_key: &effect };
                memory.start_or_find(starting).await
            }
        };
        let mut started = match begin(tools, remembered, entry, call.info(), &key, until, start).await {
            Ok(started) => started,
            Err(stopped) => return stopped,
        };
        if let Ok(Some(found)) = &started
            && let Some(refused) = other_call(tools, remembered, entry, &call_id, effect, &arguments, found).await
        {
            return refused;
        }
        if !entry.def.replay
            && let Ok(Some(JournaledCall { outcome: CallStart::Finished(_), .. })) = started
        {
            // Runs on every call: the finished effect is started again.
            let (memory, run_id, id, tool, args, effect) =
                (bounded, remembered.run_id.clone(), call_id.clone(), entry.def.name.clone(), arguments.clone(), key.clone());
            let restart = async move {
                let starting = Starting { run_id: &run_id, call_id: &id, tool: &tool, input: &args, effect_key: &effect };
                memory.restart_call(starting).await
            };
            started = match begin(tools, remembered, entry, call.info(), &key, until, restart).await {
                Ok(started) => started,
                Err(stopped) => return stopped,
            };
        }
        match started {
            Err(error) => return journal_failed(tools, entry, &call_id, &error),
            Ok(None) => break,
            Ok(Some(found)) => match known(tools, remembered, entry, call, effect, (input.value.as_ref(), &arguments), found).await {
                Known::Answer(result) => return result,
                Known::Run => break,
                Known::Gone if tries < 3 => {}
                Known::Gone => return outcome_unknown(tools, entry, &call_id, &key, "its start kept being withdrawn"),
            },
        }
    }
    let mut forgotten = Forget::after_the_call(tools, remembered, entry, &key, &call_id);
    // A question the tool parks withdraws this start with it.
    if let Some(asking) = call.info().asking() {
        asking.keep_effect(&key);
    }
    let result = execute(tools, entry, input, call, span).await;
    // The call ended: its tool's task ended with it, or was dropped.
    forgotten.runs_until = None;
    if super::stopped_at_question(call.info()) {
        // Its start went with the question: it runs again once answered.
        forgotten.memory = None;
        return result;
    }
    // A call stopped midway may or may not have had its effect: a durable
    // run keeps it started; one that is not durable forgets it.
    if !matches!(result.kind, ResultKind::Cancelled | ResultKind::TimedOut) {
        forgotten.memory = None;
        finish(tools, remembered, entry, call.info(), key, &result).await;
    }
    result
}

/// In a run that is not durable, the start of a call that ends without a
/// result (timed out, cancelled, or dropped by its caller) is withdrawn
/// once its tool can no longer be running: at once, or, for a tool that is
/// not interruptible and whose caller dropped the call, at its timeout.
/// Such a memory keeps an effect only while it is under way (as a finished
/// one, whose result it never replays), so a long run does not grow with
/// such calls, and a later call of the effect runs. A durable run keeps
/// the start: whether it took effect is unknown, and stays so.
struct Forget {
    /// `None` in a durable run, and once the call's result is journaled.
    memory: Option<(std::sync::Arc<dyn RunMemory>, String, SmolStr)>,
    /// Until when the tool may still be running once the call is dropped.
    runs_until: Option<tokio::time::Instant>,
}

impl Forget {
    fn after_the_call<App: Send + Sync + 'static>(
        tools: &ToolTable<App>,
        remembered: &Remembered,
        entry: &Entry<App>,
        key: &str,
        call_id: &SmolStr,
    ) -> Self {
        let memory = (!remembered.durable).then(|| (remembered.memory.clone(), key.to_owned(), call_id.clone()));
        let runs_until = (!entry.def.interruptible).then(|| tokio::time::Instant::now() + timeout_of(tools, entry));
        Forget { memory, runs_until }
    }
}

impl Drop for Forget {
    fn drop(&mut self) {
        let Some((memory, key, call_id)) = self.memory.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let runs_until = self.runs_until;
        runtime.spawn(async move {
            if let Some(until) = runs_until {
                tokio::time::sleep_until(until).await;
            }
            withdraw(memory, key, call_id).await;
        });
    }
}

/// Runs `begin` (the start or restart of a call's effect, which says
/// `None` when this call now holds the effect) in a task of its own,
/// and waits for it until `until` or the call's cancellation. A call
/// that stops waiting did not run, and reads so; should its start be
/// recorded after that, it is withdrawn ([`RunMemory::withdraw_call`]), so
/// that the call is not left started.
async fn begin<App: Send + Sync + 'static, F>(
    tools: &ToolTable<App>,
    remembered: &Remembered,
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
        let (memory, key, call_id) = (remembered.memory.clone(), key.to_owned(), info.call_id.clone());
        move || withdraw(memory, key, call_id)
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
        Ok(Err(_)) => Err(not_run(tools, entry, &info.call_id, "the task recording the call's start ended without an answer".to_owned())),
        Err(stopped) => {
            // Sent in the same instant: this call holds the start it will not use.
            receiver.close();
            if let Ok(Ok(None)) = receiver.try_recv() {
                tokio::spawn(withdraw());
            }
            Err(not_started(tools, entry, &info.call_id, stopped))
        }
    }
}

/// Journals a call's result, within the tool's timeout and the call's
/// cancellation; past them, the write goes on in a task of its own
/// (its failure logged), and the call returns its result at once.
async fn finish<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    remembered: &Remembered,
    entry: &Entry<App>,
    info: &CallInfo,
    key: String,
    result: &CallResult,
) {
    let memory = remembered.memory.clone();
    let journaled = JournaledResult::from(result);
    let mut finishing = tokio::spawn(async move { memory.finish_call(&key, &journaled).await });
    let until = tokio::time::Instant::now() + timeout_of(tools, entry);
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
    tools.report(ErrorReport::new(&entry.def.name, info.call_id.as_str(), ErrorKind::Journal, "JOURNAL", failed));
}

/// Stage 6 of an external tool in a remembered run: the call is recorded as
/// started, then handed to the host; [`ExternalCalls::complete`](crate::ExternalCalls::complete) records it as
/// finished. One the journal holds already is replayed.
pub(crate) async fn hand_journaled<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    remembered: &Remembered,
    entry: &Entry<App>,
    input: Input<'_>,
    call_id: &SmolStr,
) -> CallResult {
    let key = remembered.call_key(call_id);
    let arguments = input.from.to_value();
    let starting = Starting { run_id: &remembered.run_id, call_id, tool: &entry.def.name, input: &arguments, effect_key: &key };
    let found = match remembered.memory.start_or_find(starting).await {
        Err(error) => return journal_failed(tools, entry, call_id, &error),
        Ok(found) => found,
    };
    if let Some(found) = &found
        && let Some(refused) = other_call(tools, remembered, entry, call_id, Effect { key: &key, by_call: true }, &arguments, found).await
    {
        return refused;
    }
    match found {
        Some(JournaledCall { outcome: CallStart::Finished(journaled), .. }) => replayed(tools, entry, call_id, journaled),
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
async fn known<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    remembered: &Remembered,
    entry: &Entry<App>,
    call: &mut CallState<'_, App>,
    effect: Effect<'_>,
    input: (&(dyn Any + Send + Sync), &Value),
    found: JournaledCall,
) -> Known {
    let (input, arguments) = input;
    let key = effect.key;
    let (call_id, cancel) = (call.call_id().clone(), call.info().cancellation().clone());
    let asker = Asker { call_id: &call_id, cancel: &cancel };
    let (started_by, started_at) = match found.outcome {
        CallStart::Started => return Known::Run,
        CallStart::Finished(_) if !entry.def.replay => return Known::Run,
        CallStart::Finished(journaled) => return Known::Answer(replayed_in_run(tools, remembered, entry, asker, effect, journaled).await),
        CallStart::UnknownOutcome { .. } if entry.def.annotations.idempotent == Some(true) => return Known::Run,
        CallStart::UnknownOutcome { ref call_id, started_at } => (call_id.clone(), started_at),
    };
    let found = match wait_for_finish(tools, remembered, entry, asker, key, found).await {
        Err(stopped) => return Known::Answer(stopped),
        Ok(None) => return Known::Gone,
        Ok(Some(found)) => found,
    };
    // Started again meanwhile, by another call.
    if let Some(refused) = other_call(tools, remembered, entry, &call_id, effect, arguments, &found).await {
        return Known::Answer(refused);
    }
    match &found.outcome {
        CallStart::Finished(_) if !entry.def.replay => Known::Gone,
        CallStart::Finished(journaled) => Known::Answer(replayed_in_run(tools, remembered, entry, asker, effect, journaled.clone()).await),
        _ => {
            let since = started_at.elapsed().unwrap_or_default();
            let why = format!("was started by call `{started_by}` {since:?} ago and never finished");
            // The hook answers for this call's input: only when it is
            // the unfinished call's (or the effect is keyed by it).
            if effect.by_call && found.input != *arguments {
                return Known::Answer(outcome_unknown(tools, entry, &call_id, key, &format!("{why} (with another input)")));
            }
            let unfinished = (key, started_by.as_str(), started_at);
            reconciled(tools, remembered, entry, call, unfinished, input, &why).await
        }
    }
}

/// Waits for the unfinished call `found` of the effect `key` to
/// finish: polls the journal until it holds the result, or no start at
/// all, or the tool's timeout and [`FINISH_GRACE`] have passed since
/// the call started, or the process that started it is gone (its lease on
/// the journal lapsed: it will never finish); then the last thing known
/// is returned. A cancelled call stops waiting and reads as cancelled; a
/// journal that fails, as the generic 500.
async fn wait_for_finish<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    remembered: &Remembered,
    entry: &Entry<App>,
    asker: Asker<'_>,
    key: &str,
    found: JournaledCall,
) -> Result<Option<JournaledCall>, CallResult> {
    let CallStart::UnknownOutcome { started_at, .. } = found.outcome else { return Ok(Some(found)) };
    let bound = (timeout_of(tools, entry) + FINISH_GRACE).saturating_sub(started_at.elapsed().unwrap_or_default());
    let until = tokio::time::Instant::now() + bound;
    let journal = remembered.memory.until(until.into_std());
    let mut pause = FIRST_LOOK;
    let mut last = found;
    while tokio::time::Instant::now() < until {
        let look = async {
            tokio::time::sleep_until(until.min(tokio::time::Instant::now() + pause)).await;
            journal.find_call(key).await
        };
        match within(asker.cancel, until, look).await {
            Err(Stopped::Cancelled) => return Err(not_started(tools, entry, asker.call_id, Stopped::Cancelled)),
            Err(Stopped::TimedOut) => break,
            Ok(Ok(Some(found))) if matches!(found.outcome, CallStart::UnknownOutcome { .. }) => last = found,
            Ok(Ok(other)) => return Ok(other),
            Ok(Err(error)) => return Err(journal_failed(tools, entry, asker.call_id, &error)),
        }
        // A journal that cannot say keeps the wait going.
        if journal.starter_gone(key).await.unwrap_or(false) {
            break;
        }
        pause = (pause * 2).min(MAX_LOOK);
    }
    Ok(Some(last))
}

/// A call of the effect `key` found unfinished (`why`; started by the
/// call `unfinished.1` at `unfinished.2`), past waiting for it: the tool's reconcile hook,
/// given the call's context, says what became of it. An output it gives
/// is the call's result, journaled as the effect's (a call that finished
/// it meanwhile is replayed instead). When it says the effect did not
/// happen, the unfinished start is withdrawn and the call starts the
/// effect itself ([`Known::Gone`]: of several calls, one starts it).
/// Without an answer (no hook, `Unknown`, a panic, an output that does
/// not fit the tool), the call reads `OUTCOME_UNKNOWN`.
async fn reconciled<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    remembered: &Remembered,
    entry: &Entry<App>,
    call: &mut CallState<'_, App>,
    unfinished: (&str, &str, std::time::SystemTime),
    input: &(dyn Any + Send + Sync),
    why: &str,
) -> Known {
    let ((key, started_by, started_at), call_id) = (unfinished, call.call_id().clone());
    let call_id = &call_id;
    let cancel = call.info().cancellation().clone();
    let ctx = call.ctx();
    let output = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| entry.tool.reconcile(input, ctx))) {
        Ok(Reconciled::Unknown) => return Known::Answer(outcome_unknown(tools, entry, call_id, key, why)),
        Ok(Reconciled::DidNotHappen) => {
            tracing::info!(tool = %Escaped(&entry.def.name), call_id = %Escaped(call_id), "the reconcile hook says an unfinished call did not happen; it runs");
            // Only the start the hook was asked about: another call may
            // have taken the effect over since, and runs it.
            if let Err(error) = remembered.memory.withdraw_stale(key, started_by, started_at).await {
                tracing::error!(call_id = %Escaped(call_id), error = %Escaped(&error), "an unfinished start could not be withdrawn: the call reads as of unknown outcome");
            }
            return Known::Gone;
        }
        Ok(Reconciled::Happened(output)) => output,
        Err(payload) => {
            let detail = format!("the reconcile hook panicked: {}", crate::error_report::panic_message(payload.as_ref()));
            tools.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::Panic, crate::error::INTERNAL_ERROR_CODE, detail));
            return Known::Answer(outcome_unknown(tools, entry, call_id, key, why));
        }
    };
    Known::Answer(journal_reconciled(tools, remembered, entry, (call_id, &cancel), key, output, why).await)
}

/// The output a reconcile hook says the unfinished call of `key` had,
/// concluded as the tool's, and journaled as the effect's result.
async fn journal_reconciled<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    remembered: &Remembered,
    entry: &Entry<App>,
    (call_id, cancel): (&SmolStr, &CancellationToken),
    key: &str,
    output: Result<crate::tool::ToolOutput, crate::tool::Failure>,
    why: &str,
) -> CallResult {
    let result = concluded(tools, entry, call_id, Ended::Returned(output));
    if result.kind != ResultKind::Success {
        // Concluding reported why.
        return outcome_unknown(tools, entry, call_id, key, &format!("{why}, and its reconcile hook gave an output that does not fit the tool"));
    }
    let until = tokio::time::Instant::now() + timeout_of(tools, entry);
    let journal = remembered.memory.until(until.into_std());
    match within(cancel, until, journal.resolve_call(key, &JournaledResult::from(&result))).await {
        Ok(Ok(())) => {
            tracing::info!(tool = %Escaped(&entry.def.name), call_id = %Escaped(call_id), "an unfinished call was settled by its reconcile hook");
            result
        }
        Ok(Err(JournalError::CallAlreadyFinished { .. })) => match journal.find_call(key).await {
            Ok(Some(JournaledCall { outcome: CallStart::Finished(journaled), .. })) => replayed(tools, entry, call_id, journaled),
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
            tools.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::Journal, "JOURNAL", detail));
            result
        }
    }
}

/// A journaled result answers only the call it was made for. `found`
/// holds the effect `key` for another call than this one (whose arguments
/// are `arguments`) when its tool differs, or its input differs (unless a
/// human approved this call with an edited input, with which it ran):
/// under this call's id, `CALL_ID_REUSED`; under another's (an
/// `idempotency_key` whose other input gives the same key),
/// `IDEMPOTENCY_KEY_REUSED`. Its result is not served, and this call is
/// not run. An effect keyed by an idempotency key answers any call of its
/// tool, in any run of the user, with that input. A tool with
/// `replay = false` never has its result served: a call id re-sent with
/// another input runs as a new call would (never over an unfinished one).
async fn other_call<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    remembered: &Remembered,
    entry: &Entry<App>,
    call_id: &SmolStr,
    effect: Effect<'_>,
    arguments: &Value,
    found: &JournaledCall,
) -> Option<CallResult> {
    let (key, by_call) = (effect.key, effect.by_call);
    let differs = if found.tool != entry.def.name {
        format!("the tool differs: `{}` journaled, `{}` now", found.tool, entry.def.name)
    } else if entry.def.replay && found.input != *arguments && !edited_by_approval(remembered, call_id, arguments).await {
        let shown = |input: &Value| lines::shorten(&input.to_string(), 300);
        format!("the input differs: {} journaled, {} now", shown(&found.input), shown(arguments))
    } else {
        return None;
    };
    let error = match by_call || found.call_id == call_id.as_str() {
        true => lines::call_id_reused(call_id),
        false => lines::key_reused(),
    };
    let detail = format!("effect {key} was journaled for another call (call `{}`): {differs}; not run, and its result not served", found.call_id);
    tools.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::CallMismatch, error.code(), detail));
    Some(CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::InvalidArguments, &error))
}

/// Whether `call_id` of this run was parked with `arguments` and
/// approved with an edited input (a journal that fails says no).
async fn edited_by_approval(remembered: &Remembered, call_id: &str, arguments: &Value) -> bool {
    let Ok(Some(approval)) = remembered.memory.approval(&remembered.run_id, call_id).await else { return false };
    let edited = approval.decided.is_some_and(|decided| matches!(decided.decision, Decision::ApproveEdited(_)));
    edited && approval.call.input == *arguments
}

/// `OUTCOME_UNKNOWN` for a call of effect `key`, which `why` explains
/// to the host.
fn outcome_unknown<App: Send + Sync + 'static>(tools: &ToolTable<App>, entry: &Entry<App>, call_id: &SmolStr, key: &str, why: &str) -> CallResult {
    let error = lines::outcome_unknown();
    let detail = format!("effect {key} {why}; not run again");
    tools.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::OutcomeUnknown, error.code(), detail));
    CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::ToolError, &error)
}

/// A call the journal held up past its timeout, or that was cancelled
/// while it waited for the journal: it did not run.
fn not_started<App: Send + Sync + 'static>(tools: &ToolTable<App>, entry: &Entry<App>, call_id: &SmolStr, stopped: Stopped) -> CallResult {
    match stopped {
        Stopped::Cancelled => CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::Cancelled, &lines::cancelled()),
        Stopped::TimedOut => {
            let timeout = timeout_of(tools, entry);
            let error = lines::not_started(timeout);
            let detail = format!("the journal did not answer within the tool's timeout ({timeout:?}); the call was not run");
            tools.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::Timeout, error.code(), detail));
            CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::TimedOut, &error)
        }
    }
}

/// The tool's timeout.
fn timeout_of<App: Send + Sync + 'static>(tools: &ToolTable<App>, entry: &Entry<App>) -> Duration {
    entry.def.timeout.unwrap_or(tools.config.default_timeout)
}

/// [`replayed`], in a run that stands on the effect from now on: a keyed
/// effect (which another run may have journaled) is recorded as replayed
/// by this run, so that it is kept while the run is. A record that fails
/// is logged: the result stands.
async fn replayed_in_run<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    remembered: &Remembered,
    entry: &Entry<App>,
    asker: Asker<'_>,
    effect: Effect<'_>,
    journaled: JournaledResult,
) -> CallResult {
    if !effect.by_call {
        let until = tokio::time::Instant::now() + timeout_of(tools, entry);
        let noted = within(asker.cancel, until, remembered.memory.until(until.into_std()).note_replay(&remembered.run_id, effect.key)).await;
        if !matches!(noted, Ok(Ok(()))) {
            tracing::warn!(tool = %Escaped(&entry.def.name), call_id = %Escaped(asker.call_id), "a replayed effect could not be recorded as this run's: a prune may forget it before the run ends");
        }
    }
    replayed(tools, entry, asker.call_id, journaled)
}

/// A journaled result, returned under this call's id once its output
/// is checked against the tool's output schema.
fn replayed<App: Send + Sync + 'static>(tools: &ToolTable<App>, entry: &Entry<App>, call_id: &SmolStr, journaled: JournaledResult) -> CallResult {
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
            tools.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::Output, public.code(), detail));
            return CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::Internal, &public);
        }
    }
    tracing::info!(tool = %Escaped(&entry.def.name), call_id = %Escaped(call_id), "replayed from the journal");
    journaled.to_call_result(&entry.def.name, call_id)
}

/// A call whose effect key could not be made, or whose start could not
/// be recorded (`error` says why): not run (the generic 500).
fn not_run<App: Send + Sync + 'static>(tools: &ToolTable<App>, entry: &Entry<App>, call_id: &SmolStr, error: String) -> CallResult {
    let public = ToolError::internal();
    tools.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::Internal, public.code(), error));
    CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::Internal, &public)
}

/// A call the journal could not record: not run (the generic 500); or a
/// call of a run that finished (`RUN_FINISHED`), which starts nothing.
fn journal_failed<App: Send + Sync + 'static>(tools: &ToolTable<App>, entry: &Entry<App>, call_id: &SmolStr, error: &JournalError) -> CallResult {
    if let JournalError::RunFinished { .. } = error {
        tracing::info!(tool = %Escaped(&entry.def.name), call_id = %Escaped(call_id), "not run: its run is finished");
        return CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::Denied, &lines::run_finished());
    }
    let public = ToolError::internal();
    tools.report(ErrorReport::new(&entry.def.name, call_id.as_str(), ErrorKind::Journal, public.code(), error.to_string()));
    CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::Internal, &public)
}

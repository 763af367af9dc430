//! A tool's questions while its call runs: the call's asking state
//! ([`Asking`], which a run attaches to each of its calls), a question
//! asked ([`ask`]: answered from the run's memory, or parked there and the
//! call stopped at it), its decision as the tool reads it ([`reply`]), and
//! an effect made once across the call's runs ([`once`]).
//!
//! A question is known by its position among the questions one run of the
//! call asks: the `n`th question asked is `<call id>#<n>` every time the
//! call runs, so a call that runs again from the top once its questions
//! are answered finds each answer where it asks for it. A question found
//! in the memory must be the one asked again (the same message and form,
//! completion or roots): a tool that asks another at that position (its
//! code changed meanwhile) is refused, and the answer is not used.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use smol_str::SmolStr;

use super::Reply;
use crate::error::ToolError;
use crate::error_report::Escaped;
use crate::memory::{
    Ask, CallStart, Decided, Decision, EXPIRED_BY, GONE_BY, JournalError, JournaledCall, JournaledResult, ParkedCall, Question, Remembered, Starting,
};
use crate::readers::ParsedFrom;
use crate::result::{ResultKind, lines};

/// The asking state of one call: who it is for, how long its questions
/// wait, and what one run of its tool asked. Shared by the call's context
/// (the tool asks through it) and the pipeline (which stops the call at a
/// parked question and reads the call's input again from what it kept).
#[derive(Debug)]
pub(crate) struct Asking {
    tool: SmolStr,
    /// The user the call is for: its questions are parked for them.
    user: Option<String>,
    /// How long a question waits before its memory expires it (`None`: a
    /// run that is not durable, which expires it by its own clock).
    ttl: Option<Duration>,
    state: Mutex<State>,
    /// Woken when a question is parked.
    parked: tokio::sync::Notify,
    /// Where the questions of a call attached to no memory of a run are
    /// parked (the first round of a stateless MCP call, whose questions
    /// are read back from this state): a memory of the call's own, made
    /// when its tool first asks, as most calls never do.
    own: OnceLock<Remembered>,
}

#[derive(Debug, Default)]
struct State {
    /// The questions this run of the tool asked so far.
    asked: u32,
    /// The questions being asked now, neither answered nor parked yet.
    in_flight: u32,
    /// The questions this run of the tool stopped at.
    parked: Vec<(String, Ask)>,
    /// What the call's input was read from, for this run of the tool.
    arguments: Option<ParsedFrom<'static>>,
    /// In a durable run, the call's effect key: a question parked withdraws
    /// the call's start under it.
    effect: Option<String>,
    /// The effects made once ([`once`]) in a run that is not durable, by key.
    once: HashMap<String, Value>,
}

/// What a call that stopped at its questions leaves: the questions, and
/// what its input was read from.
pub(crate) struct Stopped {
    pub(crate) questions: Vec<(String, Ask)>,
    pub(crate) arguments: Option<ParsedFrom<'static>>,
}

impl Asking {
    /// The asking state of a call of `tool` for `user`, whose questions
    /// its memory expires after `ttl`.
    pub(crate) fn new(tool: SmolStr, user: Option<String>, ttl: Option<Duration>) -> Self {
        Asking { tool, user, ttl, state: Mutex::default(), parked: tokio::sync::Notify::new(), own: OnceLock::new() }
    }

    /// The memory the call's questions are parked in: its run's,
    /// `remembered`, or where it has none, the call's own.
    pub(crate) fn memory<'a>(&'a self, remembered: Option<&'a Remembered>) -> &'a Remembered {
        remembered.unwrap_or_else(|| self.own.get_or_init(Remembered::local))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every change is one assignment or push: a panic leaves it whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new run of the tool begins: it has asked nothing yet. (The effects
    /// it made once are kept, and so is its call's effect key, which a
    /// durable run keeps before each run of the tool.)
    pub(crate) fn begin(&self) {
        let mut state = self.state();
        state.asked = 0;
        state.in_flight = 0;
        state.parked.clear();
    }

    /// Keeps what the call's input was read from, for this run of the tool.
    pub(crate) fn keep_arguments(&self, arguments: ParsedFrom<'static>) {
        self.state().arguments = Some(arguments);
    }

    /// Keeps the call's effect key, in a durable run.
    pub(crate) fn keep_effect(&self, key: &str) {
        self.state().effect = Some(key.to_owned());
    }

    /// Whether this run of the tool parked a question.
    pub(crate) fn has_parked(&self) -> bool {
        !self.state().parked.is_empty()
    }

    /// Once this run of the tool parked a question, and every other
    /// question it asks at the same time is answered or parked too (a
    /// memory that answers later, a journal, parks them one by one): the
    /// call stops at all of them at once.
    pub(crate) async fn parked(&self) {
        loop {
            let notified = self.parked.notified();
            let settled = {
                let state = self.state();
                !state.parked.is_empty() && state.in_flight == 0
            };
            if settled {
                return;
            }
            notified.await;
        }
    }

    /// The questions this run of the tool stopped at, taken; `None` when it
    /// parked none.
    pub(crate) fn take_stopped(&self) -> Option<Stopped> {
        let mut state = self.state();
        if state.parked.is_empty() {
            return None;
        }
        Some(Stopped { questions: std::mem::take(&mut state.parked), arguments: state.arguments.take() })
    }

    /// The effects made once ([`once`]) so far, in a run that is not
    /// durable, by key.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code, reason = "carried by a 2026-07-28 round's state"))]
    pub(crate) fn made_once(&self) -> BTreeMap<String, Value> {
        self.state().once.iter().map(|(key, value)| (key.clone(), value.clone())).collect()
    }

    /// Keeps `made`, effects an earlier run of the call made once, whose
    /// values were carried apart from this state (a 2026-07-28 round's
    /// sealed `requestState` carries them): asked again, [`once`] returns
    /// them without making them again.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code, reason = "carried by a 2026-07-28 round's state"))]
    pub(crate) fn made_before(&self, made: BTreeMap<String, Value>) {
        self.state().once.extend(made);
    }

    /// How many questions this run of the tool asked.
    pub(crate) fn asked(&self) -> u32 {
        self.state().asked
    }

    /// The call's arguments as JSON, as kept.
    fn arguments(&self) -> Value {
        self.state().arguments.as_ref().map_or(Value::Null, ParsedFrom::to_value)
    }

    /// Stops the tool at the question `id`: the pipeline ends the call.
    fn stop_at(&self, id: String, ask: Ask) {
        self.state().parked.push((id, ask));
        self.parked.notify_waiters();
    }
}

/// Asks `ask` as the next question of the call `call_id` of the run
/// `remembered`: its decision, where the run's memory holds one; else the
/// question parked there (once), and the tool stopped at it: the returned
/// future then never ends, and the pipeline ends the call, which runs
/// again from the top once its questions are decided.
///
/// # Errors
///
/// A [`ToolError`] the tool returns: the question changed at its position
/// (`QUESTION_CHANGED`), the memory failed (`QUESTION_NOT_RECORDED`), the
/// run finished (`RUN_FINISHED`).
pub(crate) async fn ask(asking: &Asking, remembered: &Remembered, call_id: &str, ask: Ask) -> Result<Decided, ToolError> {
    let n = {
        let mut state = asking.state();
        state.asked += 1;
        state.in_flight += 1;
        state.asked
    };
    let flight = Flight { asking, landed: false };
    let id = Question::id_of(call_id, n);
    let not_recorded = |error: &JournalError| lines::question_not_recorded().with_message(format!("question {id}: {error}"));
    match remembered.memory.approval(&remembered.run_id, &id).await {
        Err(error) => return Err(not_recorded(&error)),
        Ok(Some(found)) => {
            let same = matches!(&found.call.question, Question::Tool { ask: asked, .. } if *asked == ask);
            if !same {
                let detail = format!("question {id} was parked as {:?}, and the tool now asks {ask:?}", found.call.question);
                return Err(lines::question_changed().with_message(detail));
            }
            if let Some(decided) = found.decided {
                return Ok(decided);
            }
        }
        Ok(None) => {
            let question = Question::Tool { call_id: call_id.to_owned(), n, ask: ask.clone() };
            let now = SystemTime::now();
            let parked = ParkedCall {
                run_id: remembered.run_id.to_string(),
                call_id: id.clone(),
                tool: asking.tool.to_string(),
                input: asking.arguments(),
                user_id: asking.user.clone(),
                parked_at: now,
                expires_at: asking.ttl.and_then(|ttl| now.checked_add(ttl)),
                question,
            };
            let effect = asking.state().effect.clone();
            match super::park_asked(&*remembered.memory, &parked, effect.as_deref().map(|key| (key, call_id))).await {
                // Parked by another run of the same call (two processes
                // settling it at once): it waits all the same.
                Ok(()) | Err(JournalError::AlreadyParked { .. }) => {}
                Err(JournalError::RunFinished { .. }) => return Err(lines::run_finished()),
                Err(error) => return Err(not_recorded(&error)),
            }
        }
    }
    flight.land();
    asking.stop_at(id, ask);
    std::future::pending().await
}

/// A question being asked: counted in flight until it is answered or
/// parked ([`Flight::land`]), or its asking is dropped.
struct Flight<'a> {
    asking: &'a Asking,
    landed: bool,
}

impl Flight<'_> {
    /// The question is parked: no longer in flight.
    fn land(mut self) {
        self.landed = true;
        self.asking.state().in_flight -= 1;
    }
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        if !self.landed {
            let mut state = self.asking.state();
            state.in_flight = state.in_flight.saturating_sub(1);
            drop(state);
            self.asking.parked.notify_waiters();
        }
    }
}

/// A question's decision as its tool reads it.
///
/// # Errors
///
/// An answer that does not read as `T` (a type stricter than its schema),
/// or a decision that is not one of a tool's question.
pub(crate) fn reply<T: DeserializeOwned>(decided: Decided) -> Result<Reply<T>, ToolError> {
    match decided.decision {
        Decision::Answer(answer) => serde_json::from_value(answer)
            .map(Reply::Answered)
            .map_err(|error| ToolError::internal().with_message(format!("the answer to the tool's question does not read as its type: {error}"))),
        // Decided by the runtime, not by whoever was asked.
        Decision::Reject(_) if decided.by == EXPIRED_BY || decided.by == GONE_BY => Ok(Reply::Cancelled),
        Decision::Reject(_) => Ok(Reply::Declined),
        Decision::Cancel => Ok(Reply::Cancelled),
        Decision::Approve | Decision::ApproveEdited(_) => Err(ToolError::internal().with_message("a tool's question was decided as an approval")),
    }
}

/// Makes `effect` once for the call `call_id` of the run `remembered`
/// under `key`: its value, made now, or as it was made by an earlier run of
/// the call. A durable run keeps it in its journal (an effect the journal
/// holds as started and never finished was cut off, and is not made
/// again: `OUTCOME_UNKNOWN`); a run that is not durable, or a call with
/// no memory of its run, in the call's asking state; a call without an
/// asking state (outside a run) simply makes `effect`.
///
/// # Errors
///
/// `OUTCOME_UNKNOWN` for an effect cut off before it finished; the
/// generic 500 when the journal fails or the value does not read back.
pub(crate) async fn once<T, F>(asking: Option<&Asking>, remembered: Option<&Remembered>, call_id: &str, key: &str, effect: F) -> Result<T, ToolError>
where
    T: Serialize + DeserializeOwned,
    F: Future<Output = T>,
{
    let Some(asking) = asking else { return Ok(effect.await) };
    let unreadable = |error: serde_json::Error| ToolError::internal().with_message(format!("the effect `{key}` of call {call_id}: {error}"));
    let Some(remembered) = remembered.filter(|remembered| remembered.durable) else {
        if let Some(made) = asking.state().once.get(key).cloned() {
            return serde_json::from_value(made).map_err(unreadable);
        }
        let made = effect.await;
        asking.state().once.insert(key.to_owned(), serde_json::to_value(&made).map_err(unreadable)?);
        return Ok(made);
    };
    let failed =
        |error: JournalError| ToolError::internal().with_message(format!("the effect `{key}` of call {call_id} could not be journaled: {error}"));
    let (effect_key, row_id) = once_ids(&remembered.run_id, call_id, key);
    let arguments = asking.arguments();
    let starting = Starting { run_id: &remembered.run_id, call_id: &row_id, tool: &asking.tool, input: &arguments, effect_key: &effect_key };
    match remembered.memory.start_or_find(starting).await.map_err(failed)? {
        None => {}
        Some(JournaledCall { outcome: CallStart::Finished(made), .. }) => {
            return serde_json::from_value(made.structured.unwrap_or_default()).map_err(unreadable);
        }
        Some(_) => {
            let detail =
                format!("the effect `{key}` of call {call_id} was started and never finished; settle it with journal.calls().in_doubt and resolve");
            return Err(lines::outcome_unknown().with_message(detail));
        }
    }
    let made = effect.await;
    let value = serde_json::to_value(&made).map_err(unreadable)?;
    // The effect happened: its value stands; only its record is missing,
    // and a later run of the call reads its outcome as unknown.
    if let Err(error) = remembered.memory.finish_call(&effect_key, &made_value(value)).await {
        tracing::error!(call_id = %Escaped(call_id), key = %Escaped(key), error = %Escaped(&error), "an effect made once could not be journaled as finished");
    }
    Ok(made)
}

/// The effect key and the row id an effect made once under `key` by the
/// call `call_id` of the run `run_id` is journaled under: apart from the
/// call's own row, since a call is found by its run and id.
fn once_ids(run_id: &str, call_id: &str, key: &str) -> (String, String) {
    (serde_json::json!(["once", run_id, call_id, key]).to_string(), format!("{call_id}@{key}"))
}

/// The journaled result of an effect made once: its value.
fn made_value(value: Value) -> JournaledResult {
    JournaledResult {
        kind: ResultKind::Success,
        text: String::new(),
        structured: Some(value),
        error_code: None,
        status: None,
        truncated: false,
        ends_run: false,
    }
}

/// Keeps in `remembered` (a durable run's memory) the effects `made` once
/// by earlier runs of the call `call_id` of `tool` with `input` that ran
/// elsewhere (a 2026-07-28 call's rounds, before it went on as a task), as
/// [`once`] keeps one it makes: asked again, it returns them. An effect the
/// memory holds already is left as it is.
///
/// # Errors
///
/// As the memory fails.
#[cfg_attr(not(feature = "mcp"), allow(dead_code, reason = "a 2026-07-28 call gone on as a task"))]
pub(crate) async fn made_elsewhere(
    remembered: &Remembered,
    (call_id, tool, input): (&str, &str, &Value),
    made: BTreeMap<String, Value>,
) -> Result<(), JournalError> {
    for (key, value) in made {
        let (effect_key, row_id) = once_ids(&remembered.run_id, call_id, &key);
        let starting = Starting { run_id: &remembered.run_id, call_id: &row_id, tool, input, effect_key: &effect_key };
        if remembered.memory.start_or_find(starting).await?.is_none() {
            remembered.memory.finish_call(&effect_key, &made_value(value)).await?;
        }
    }
    Ok(())
}

//! What a run's memory holds, as typed records: a run's state and steps,
//! the effect of a call, a parked call and its decision. Every
//! [`RunMemory`](super::RunMemory) speaks in these.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use smol_str::SmolStr;

use super::asked::{Decision, Question};
use crate::definition::ToolDefinition;
use crate::result::{CallResult, ResultKind};

/// A run as the journal keeps it, by the host's id.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRecord {
    /// The host's id for the run (its thread or conversation id).
    pub run_id: String,
    /// The index of the step the run is at.
    pub step: usize,
    /// The tools executed so far, a set: each once, in the order the run
    /// first executed them.
    pub executed: Vec<String>,
    /// Failed calls per tool, each tool once, counted toward its
    /// `max_retries`.
    pub failures: Vec<(String, u32)>,
    /// Where the run stands, and which tool ended it.
    pub state: RunState,
    /// When the record was last saved. [`RunRecords::save`](crate::journal::RunRecords::save)
    /// writes the current time and ignores this field.
    pub updated_at: SystemTime,
}

impl RunRecord {
    /// A new, active run at step 0 with nothing executed or failed.
    pub fn new(run_id: impl Into<String>) -> Self {
        RunRecord {
            run_id: run_id.into(),
            step: 0,
            executed: Vec::new(),
            failures: Vec::new(),
            state: RunState::Active,
            updated_at: SystemTime::now(),
        }
    }
}

/// The stored result of a finished call: what is needed to rebuild its
/// [`CallResult`] without running the tool again.
#[derive(Clone, Debug, PartialEq)]
pub struct JournaledResult {
    /// How the call ended.
    pub kind: ResultKind,
    /// Exactly what the model read.
    pub text: String,
    /// The structured output, when there was one.
    pub structured: Option<Value>,
    /// The error code of a failed call.
    pub error_code: Option<String>,
    /// The HTTP-like status of a failed call.
    pub status: Option<u16>,
    /// Whether the text was cut at `max_output_chars`.
    pub truncated: bool,
    /// Whether the call ended the run.
    pub ends_run: bool,
}

/// A result as the journal keeps it. Its text and error code are kept with
/// each NUL character replaced by U+FFFD, which both backends store
/// (Postgres refuses NUL in text): the effect is journaled, and a replay
/// reads the text so. Structured values keep NUL (JSON writes `\u0000`).
impl From<&CallResult> for JournaledResult {
    fn from(result: &CallResult) -> Self {
        JournaledResult {
            kind: result.kind,
            text: without_nul(&result.text),
            structured: result.structured.as_deref().cloned(),
            error_code: result.error_code.as_deref().map(without_nul),
            status: result.status,
            truncated: result.truncated,
            ends_run: result.ends_run,
        }
    }
}

/// `text` with each NUL replaced by U+FFFD.
fn without_nul(text: &str) -> String {
    text.replace('\0', "\u{fffd}")
}

impl JournaledResult {
    /// The result as the call that replays it returns it, under that
    /// call's tool name and id (a replay by effect key may come with a new
    /// call id).
    pub fn to_call_result(&self, tool: &str, call_id: &str) -> CallResult {
        CallResult {
            tool: SmolStr::new(tool),
            call_id: SmolStr::new(call_id),
            kind: self.kind,
            text: self.text.clone(),
            structured: self.structured.clone().map(Box::new),
            error_code: self.error_code.clone(),
            status: self.status,
            // Blocks are not journaled: a replayed result gives the text
            // that describes them.
            content: Box::default(),
            truncated: self.truncated,
            ends_run: self.ends_run,
        }
    }
}

/// A call a run journaled ([`CallRecords::of_run`](crate::journal::CallRecords::of_run)).
#[derive(Clone, Debug, PartialEq)]
pub struct JournaledCall {
    /// The call's id.
    pub call_id: String,
    /// Its tool.
    pub tool: String,
    /// Its validated arguments.
    pub input: Value,
    /// Its result ([`CallStart::Finished`]), or that it never finished
    /// ([`CallStart::UnknownOutcome`]).
    pub outcome: CallStart,
}

/// A call started and never finished, whose effect may or may not have
/// happened ([`CallRecords::in_doubt`](crate::journal::CallRecords::in_doubt)).
#[derive(Clone, Debug, PartialEq)]
pub struct CallInDoubt {
    /// Its effect key, as the journal stores it (a long key as its digest):
    /// give it to [`CallRecords::resolve`](crate::journal::CallRecords::resolve) as it is.
    pub effect_key: String,
    /// The run that started it.
    pub run_id: String,
    /// The call id that started it.
    pub call_id: String,
    /// Its tool.
    pub tool: String,
    /// Its validated arguments.
    pub input: Value,
    /// When it was started.
    pub started_at: SystemTime,
}

/// What [`CallRecords::start`](crate::journal::CallRecords::start) found for an effect key.
#[derive(Clone, Debug, PartialEq)]
pub enum CallStart {
    /// The key was new: the call is now recorded as started, and the tool
    /// may run.
    Started,
    /// The effect already happened: here is its result; do not run the
    /// tool again.
    Finished(JournaledResult),
    /// The call was started (by this or another process) but never
    /// finished: it may or may not have had its effect.
    UnknownOutcome {
        /// The call id that started it.
        call_id: String,
        /// When it was started.
        started_at: SystemTime,
    },
}

/// A call waiting for a decision on its question, as parked: an approval
/// of the call, or a question its tool asked.
#[derive(Clone, Debug, PartialEq)]
pub struct ParkedCall {
    /// The run it belongs to.
    pub run_id: String,
    /// The question's id in its run: an approval's is its call's id, a
    /// tool's question's [`Question::id_of`] its call's id and position.
    pub call_id: String,
    /// The tool called.
    pub tool: String,
    /// The call's input; `null` when a run that is not durable parked an
    /// approval (its pending call holds the input, once).
    pub input: Value,
    /// The user the call was made for, when known.
    pub user_id: Option<String>,
    /// When it was parked. A journal stamps a call it parks by its own
    /// clock (the database's), and keeps of `parked_at` and `expires_at`
    /// only how long apart they are: the call's time to live.
    pub parked_at: SystemTime,
    /// When it expires undecided; `None`: never.
    pub expires_at: Option<SystemTime>,
    /// What it asks.
    pub question: Question,
}

impl ParkedCall {
    /// A call of `definition` with `input` of the run `run_id`, parked now
    /// under `id` for `question`, for no user and never expiring
    /// ([`for_user`](Self::for_user), [`expiring`](Self::expiring)).
    pub fn new(run_id: &str, id: &str, definition: &ToolDefinition, input: Value, question: Question) -> Self {
        ParkedCall {
            run_id: run_id.to_owned(),
            call_id: id.to_owned(),
            tool: definition.name.clone(),
            input,
            user_id: None,
            parked_at: SystemTime::now(),
            expires_at: None,
            question,
        }
    }

    /// The same call, made for `user_id`.
    pub fn for_user(mut self, user_id: Option<String>) -> Self {
        self.user_id = user_id;
        self
    }

    /// The same call, expiring `ttl` after it was parked (`None`: never).
    pub fn expiring(mut self, ttl: Option<Duration>) -> Self {
        self.expires_at = ttl.and_then(|ttl| self.parked_at.checked_add(ttl));
        self
    }
}

/// A decision, who made it and when.
#[derive(Clone, Debug, PartialEq)]
pub struct Decided {
    /// The decision.
    pub decision: Decision,
    /// Who decided ([`EXPIRED_BY`] for an expiry).
    pub by: String,
    /// When.
    pub at: SystemTime,
}

/// A parked call and its decision, once there is one.
#[derive(Clone, Debug, PartialEq)]
pub struct Approval {
    /// The call as parked.
    pub call: ParkedCall,
    /// The decision; `None` while it waits.
    pub decided: Option<Decided>,
}

/// Milliseconds since the Unix epoch, the journal's time column (clamped:
/// a time before 1970 is 0).
pub(crate) fn millis(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Where a run stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunState {
    /// Tools are offered on every step.
    Active,
    /// A call ended the run: the model gets one last step, with no tools,
    /// to phrase its answer.
    Ending {
        /// The tool whose call ended the run.
        by: String,
    },
    /// The run is over: the host finished it, or an `ends_turn` call
    /// halted it (with no last step).
    Finished {
        /// The tool whose call ended the run, if one did.
        by: Option<String>,
    },
}

impl RunState {
    /// How far along a run is: active, ending, finished. A run's state
    /// only moves forward.
    pub(crate) fn rank(&self) -> u8 {
        match self {
            RunState::Active => 0,
            RunState::Ending { .. } => 1,
            RunState::Finished { .. } => 2,
        }
    }
}

/// What the steps of a run changed since its memory last took them: a save
/// adds it to the memory's record ([`RunMemory::add_step`](super::RunMemory::add_step)), so that of
/// several processes stepping one run at once none loses another's steps,
/// tools or failures. A few counters and names; at most one entry per tool.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepDelta {
    /// Steps taken.
    pub steps: usize,
    /// The digest of the call ids of the last of those steps, when the
    /// host gave each call an id: a step re-sending exactly the calls of
    /// the run's last step is that step again.
    pub last_calls: Option<String>,
    /// Tools executed for the first time.
    pub tools: Vec<String>,
    /// Failed calls per tool.
    pub failures: Vec<(String, u32)>,
}

/// A run as its memory holds it once a step was added
/// ([`RunMemory::add_step`](super::RunMemory::add_step)).
#[derive(Clone, Debug, PartialEq)]
pub struct Stepped {
    /// Raised by every write of the run: of two answers, the higher
    /// version is the newer.
    pub version: i64,
    /// The run's step index.
    pub step: usize,
    /// Whether the step added re-sent the run's last step (and so was not
    /// counted).
    pub resent: bool,
    /// Where the run stands.
    pub state: RunState,
    /// The run's tools from the `known`th on (the caller holds the
    /// others), in the order the run first executed them.
    pub tools: Vec<String>,
    /// How many tools the memory holds for the run.
    pub tool_count: usize,
    /// Failed calls per tool, all the run's.
    pub failures: Vec<(String, u32)>,
}

/// What a process learns when it opens a durable run
/// ([`RunMemory::open_run`](super::RunMemory::open_run)), beside the run as
/// the memory holds it once its first step was added.
#[derive(Clone, Debug, PartialEq)]
pub struct Opened {
    /// The run's user as the memory holds it (as
    /// [`RunMemory::claim_run`](super::RunMemory::claim_run) returns it).
    pub user: Option<String>,
    /// Whether the run may hold calls started and not finished: `false`
    /// only when the memory saw none, so that the process need not read
    /// the run's calls ([`RunMemory::calls_of_run`](super::RunMemory::calls_of_run)).
    pub unfinished_calls: bool,
    /// Whether the run may hold parked calls not settled: `false` only
    /// when the memory saw none, so that the process need not read them
    /// ([`RunMemory::unsettled_for_run`](super::RunMemory::unsettled_for_run)).
    pub unsettled: bool,
}

/// The `by` of a decision made by an expiry
/// ([`RunMemory::expire`](super::RunMemory::expire)) rather than a person.
pub const EXPIRED_BY: &str = "tool-runtime:expiry";

/// The `by` of a rejection the runtime records when the run can no longer
/// carry a decision out: the run finished before anyone decided, or the
/// MCP client that waited for the call went away. A person deciding such a
/// call later is told so ([`JournalError::AlreadyDecided`](super::JournalError::AlreadyDecided) names this),
/// never handed a success that runs nothing.
pub const GONE_BY: &str = "tool-runtime:gone";

//! What the journal stores, as typed records, and the reading of one row
//! into them: a value that does not decode is a [`JournalError::Corrupt`]
//! naming the table, the key and the problem.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use smol_str::SmolStr;
use sqlx::{ColumnIndex, Decode, Row, Type};

use super::JournalError;
use crate::result::{CallResult, ResultKind};
use crate::run::RunState;

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
    /// When the record was last saved. [`save_run`](super::Journal::save_run)
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

/// A call a run journaled ([`calls_of_run`](super::Journal::calls_of_run)).
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
/// happened ([`calls_in_doubt`](super::Journal::calls_in_doubt)).
#[derive(Clone, Debug, PartialEq)]
pub struct CallInDoubt {
    /// Its effect key, as the journal stores it (a long key as its digest):
    /// give it to [`resolve_call`](super::Journal::resolve_call) as it is.
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

/// What [`start_call`](super::Journal::start_call) found for an effect key.
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

/// A call waiting for a human, as parked.
#[derive(Clone, Debug, PartialEq)]
pub struct ParkedCall {
    /// The run it belongs to.
    pub run_id: String,
    /// The call id; unique across runs, since decisions name only it.
    pub call_id: String,
    /// The tool called.
    pub tool: String,
    /// The input the model sent.
    pub input: Value,
    /// The user the call was made for, when known.
    pub user_id: Option<String>,
    /// When it was parked.
    pub parked_at: SystemTime,
    /// When it expires undecided; `None`: never.
    pub expires_at: Option<SystemTime>,
}

/// A human's decision on a parked call.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Run the call as it is.
    Approve,
    /// Run the call with this input instead (validated and decided again
    /// when it runs).
    ApproveEdited(Value),
    /// Do not run it; the model reads this text.
    Reject(String),
}

/// A decision, who made it and when.
#[derive(Clone, Debug, PartialEq)]
pub struct Decided {
    /// The decision.
    pub decision: Decision,
    /// Who decided ([`EXPIRED_BY`](super::EXPIRED_BY) for an expiry).
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

pub(crate) fn encode_state(state: &RunState) -> (&'static str, Option<&str>) {
    match state {
        RunState::Active => ("active", None),
        RunState::Ending { by } => ("ending", Some(by)),
        RunState::Finished { by } => ("finished", by.as_deref()),
    }
}

pub(crate) fn encode_decision(decision: &Decision) -> (&'static str, Option<String>, Option<&str>) {
    match decision {
        Decision::Approve => ("approve", None, None),
        Decision::ApproveEdited(input) => ("approve_edited", Some(input.to_string()), None),
        Decision::Reject(text) => ("reject", None, Some(text)),
    }
}

/// Reads one row of `table`, naming its key in every error.
pub(crate) struct RowReader<'r, R> {
    row: &'r R,
    table: &'static str,
    pub(crate) key: String,
}

impl<'r, R: Row> RowReader<'r, R>
where
    &'static str: ColumnIndex<R>,
{
    /// Reads the key column first, so that later errors can name it.
    pub(crate) fn new(row: &'r R, table: &'static str, key_column: &'static str) -> Result<Self, JournalError>
    where
        String: Decode<'r, R::Database> + Type<R::Database>,
    {
        let key =
            row.try_get::<String, _>(key_column).map_err(|e| JournalError::corrupt(table, "(unreadable)", format!("column {key_column}: {e}")))?;
        Ok(RowReader { row, table, key })
    }

    pub(crate) fn get<T: Decode<'r, R::Database> + Type<R::Database>>(&self, column: &'static str) -> Result<T, JournalError> {
        self.row.try_get::<T, _>(column).map_err(|e| self.corrupt(format!("column {column}: {e}")))
    }

    pub(crate) fn corrupt(&self, problem: impl Into<String>) -> JournalError {
        JournalError::corrupt(self.table, &self.key, problem)
    }

    pub(crate) fn json(&self, column: &'static str) -> Result<Value, JournalError>
    where
        String: Decode<'r, R::Database> + Type<R::Database>,
    {
        let text: String = self.get(column)?;
        serde_json::from_str(&text).map_err(|e| self.corrupt(format!("column {column} is not valid JSON ({e})")))
    }

    pub(crate) fn optional_json(&self, column: &'static str) -> Result<Option<Value>, JournalError>
    where
        Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    {
        let text: Option<String> = self.get(column)?;
        text.map(|text| serde_json::from_str(&text).map_err(|e| self.corrupt(format!("column {column} is not valid JSON ({e})")))).transpose()
    }

    pub(crate) fn time(&self, column: &'static str) -> Result<SystemTime, JournalError>
    where
        i64: Decode<'r, R::Database> + Type<R::Database>,
    {
        let ms: i64 = self.get(column)?;
        self.to_time(column, ms)
    }

    pub(crate) fn optional_time(&self, column: &'static str) -> Result<Option<SystemTime>, JournalError>
    where
        Option<i64>: Decode<'r, R::Database> + Type<R::Database>,
    {
        let ms: Option<i64> = self.get(column)?;
        ms.map(|ms| self.to_time(column, ms)).transpose()
    }

    fn to_time(&self, column: &'static str, ms: i64) -> Result<SystemTime, JournalError> {
        u64::try_from(ms)
            .map(|ms| UNIX_EPOCH + Duration::from_millis(ms))
            .map_err(|_| self.corrupt(format!("column {column} holds {ms}, not a time (milliseconds since the Unix epoch)")))
    }

    pub(crate) fn state(&self, state: &str, by: Option<String>) -> Result<RunState, JournalError> {
        match (state, by) {
            ("active", None) => Ok(RunState::Active),
            ("ending", Some(by)) => Ok(RunState::Ending { by }),
            ("finished", by) => Ok(RunState::Finished { by }),
            ("active", Some(_)) => Err(self.corrupt("state \"active\" with an ended_by tool")),
            ("ending", None) => Err(self.corrupt("state \"ending\" without the ended_by tool")),
            (other, _) => Err(self.corrupt(format!("unknown state {other:?} (expected active, ending or finished)"))),
        }
    }

    pub(crate) fn kind(&self, kind: &str) -> Result<ResultKind, JournalError> {
        ResultKind::parse(kind).ok_or_else(|| self.corrupt(format!("unknown result kind {kind:?}")))
    }

    pub(crate) fn decision(&self, decision: &str, edited: Option<Value>, text: Option<String>) -> Result<Decision, JournalError> {
        match (decision, edited, text) {
            ("approve", None, None) => Ok(Decision::Approve),
            ("approve_edited", Some(input), None) => Ok(Decision::ApproveEdited(input)),
            ("reject", None, Some(text)) => Ok(Decision::Reject(text)),
            ("approve" | "approve_edited" | "reject", ..) => {
                Err(self.corrupt(format!("decision {decision:?} with the wrong columns set (edited_input, reject_text)")))
            }
            (other, ..) => Err(self.corrupt(format!("unknown decision {other:?} (expected approve, approve_edited or reject)"))),
        }
    }
}

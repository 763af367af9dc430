//! The reading of one journal row into the records of
//! [`memory`](crate::memory): a value that does not decode is a
//! [`JournalError::Corrupt`] naming the table, the key and the problem;
//! and the encoding of a state and a decision into their columns.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use sqlx::{ColumnIndex, Decode, Row, Type};

use super::JournalError;
use crate::memory::{Decision, RunState};
use crate::result::ResultKind;

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
        Decision::Answer(answer) => ("answer", Some(answer.to_string()), None),
        Decision::Cancel => ("cancel", None, None),
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
            ("answer", Some(answer), None) => Ok(Decision::Answer(answer)),
            ("cancel", None, None) => Ok(Decision::Cancel),
            ("approve" | "approve_edited" | "reject" | "answer" | "cancel", ..) => {
                Err(self.corrupt(format!("decision {decision:?} with the wrong columns set (edited_input, reject_text)")))
            }
            (other, ..) => Err(self.corrupt(format!("unknown decision {other:?} (expected approve, approve_edited, reject, answer or cancel)"))),
        }
    }
}

//! What can go wrong with a run's memory (the journal, or the memory of a
//! run that is not durable), each case worded for the developer or
//! operator who reads it.

use std::time::SystemTime;

use super::records::millis;

/// An error of a [`RunMemory`](super::RunMemory): the [`Journal`](crate::journal) or a run's own memory.
///
/// None of these are for the model: they name tables, keys and versions
/// for whoever runs the host.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// The URL names no backend this build supports.
    #[error("cannot open journal {url:?}: {why}")]
    Url {
        /// The URL as given, without its password.
        url: String,
        /// What to do instead.
        why: String,
    },
    /// The database could not be reached or opened.
    #[error("cannot open journal {url:?}: {source}; check that the database exists and is reachable")]
    Open {
        /// The URL as given, without its password.
        url: String,
        /// The driver's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The database holds a newer schema than this code knows.
    #[error(
        "the journal's schema is at version {found}, newer than version {known} that this tool-runtime knows; \
         upgrade tool-runtime (a newer release wrote this database)"
    )]
    SchemaTooNew {
        /// The version found in the database.
        found: i64,
        /// The newest version this code knows.
        known: i64,
    },
    /// A row that does not decode: never skipped, never guessed.
    #[error("corrupt journal row in table {table}, key {key:?}: {problem}; repair or delete that row")]
    Corrupt {
        /// The table.
        table: &'static str,
        /// The row's key (run id, effect key or call id).
        key: String,
        /// What was wrong with it.
        problem: String,
    },
    /// A value the journal cannot keep on every backend, refused before
    /// anything was written (see [`limits`](crate::journal::limits)).
    #[error("cannot journal {field}: {why}")]
    Refused {
        /// The field (`run_id`, `call_id`, `text`, ...).
        field: &'static str,
        /// What is wrong with it and what to do.
        why: String,
    },
    /// A query failed.
    #[error("journal {operation} failed: {source}")]
    Database {
        /// What the journal was doing (`"save_run"`, `"start_call"`, ...).
        operation: &'static str,
        /// The driver's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// `finish_call` of an effect key that was never started.
    #[error("cannot finish call with effect key {effect_key:?}: it was never started; start it first (`journal.calls().start`)")]
    CallNotStarted {
        /// The effect key.
        effect_key: String,
    },
    /// `finish_call` of an effect key whose result is already stored.
    #[error("cannot finish call with effect key {effect_key:?}: its result is already stored; a finished effect is never rewritten")]
    CallAlreadyFinished {
        /// The effect key.
        effect_key: String,
    },
    /// `park` of a call that its run parked already.
    #[error("call {call_id:?} of run {run_id:?} is already parked for approval; a run's call ids must be unique")]
    AlreadyParked {
        /// The run.
        run_id: String,
        /// The call id.
        call_id: String,
    },
    /// `decide` of a call that its run never parked.
    #[error("no call {call_id:?} of run {run_id:?} waits for approval; list the pending calls to find its run and id")]
    UnknownApproval {
        /// The run.
        run_id: String,
        /// The call id.
        call_id: String,
    },
    /// `decide` of a call that another decider (or expiry, or the end of
    /// its run) decided first.
    #[error("call {call_id:?} of run {run_id:?} was already decided by {by:?} at {} ms after the Unix epoch; its decision stands", millis(*at))]
    AlreadyDecided {
        /// The run.
        run_id: String,
        /// The call id.
        call_id: String,
        /// Who decided it ([`EXPIRED_BY`](super::EXPIRED_BY) when it
        /// expired, [`GONE_BY`](super::GONE_BY) when its run could no
        /// longer carry it out).
        by: String,
        /// When.
        at: SystemTime,
    },
    /// A decision that does not answer the question it was given for (an
    /// approval answered, a tool's question approved, a form's answer that
    /// does not fit its schema): nothing was recorded.
    #[error("call {call_id:?} of run {run_id:?} cannot be decided so: {why}; decide it as its question asks")]
    Unanswerable {
        /// The run.
        run_id: String,
        /// The question's id.
        call_id: String,
        /// Why the decision does not answer it.
        why: String,
    },
    /// A call started, parked or decided in a run that is finished: a
    /// finished run carries nothing out any more.
    #[error("run {run_id:?} is finished, so nothing of it is carried out any more; start a new run to do it")]
    RunFinished {
        /// The run.
        run_id: String,
    },
    /// `decide` of a call whose approval expired, by the journal's clock,
    /// before anyone decided it.
    #[error("the approval of call {call_id:?} of run {run_id:?} expired at {} ms after the Unix epoch; it can no longer be decided", millis(*expires_at))]
    ApprovalExpired {
        /// The run.
        run_id: String,
        /// The call id.
        call_id: String,
        /// When it expired.
        expires_at: SystemTime,
    },
}

impl JournalError {
    #[cfg_attr(not(feature = "journal"), allow(dead_code))]
    pub(crate) fn database<E: std::error::Error + Send + Sync + 'static>(operation: &'static str) -> impl FnOnce(E) -> JournalError {
        move |source| JournalError::Database { operation, source: Box::new(source) }
    }

    #[cfg_attr(not(feature = "journal"), allow(dead_code))]
    pub(crate) fn corrupt(table: &'static str, key: &str, problem: impl Into<String>) -> JournalError {
        JournalError::Corrupt { table, key: key.to_owned(), problem: problem.into() }
    }
}

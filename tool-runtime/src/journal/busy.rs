//! A SQLite database that another process holds is waited for, never
//! reported as an error.
//!
//! Each SQLite connection has a busy timeout ([`BUSY_TIMEOUT`]), during
//! which SQLite itself retries a lock that another connection holds. That
//! does not cover every case: SQLite answers `SQLITE_BUSY` at once, without
//! waiting, when waiting could deadlock (a read transaction that wants to
//! write after another connection wrote, a journal mode being switched),
//! and under heavy contention the timeout itself can run out. So every
//! operation of the journal is run again, whole, while SQLite answers
//! busy or locked, until [`BUSY_BUDGET`] has passed since its first try,
//! or the deadline of the call it journals has (a journal made with
//! `Journal::until`); only then does the caller get the error. Running an
//! operation again is safe: a statement SQLite refused as busy changed
//! nothing, and each operation is one statement, or one transaction
//! rolled back whole.
//!
//! Postgres waits for its locks itself, so nothing here applies to it.

use std::time::{Duration, Instant};

use super::JournalError;

/// How long one SQLite statement waits for another connection's lock.
#[cfg(feature = "sqlite")]
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How long an operation is tried again while SQLite answers busy.
pub(crate) const BUSY_BUDGET: Duration = Duration::from_secs(20);

/// The pause before the first retry; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(2);
const MAX_PAUSE: Duration = Duration::from_millis(100);

/// The retries of one operation.
pub(crate) struct Retries {
    /// When to stop trying.
    until: Instant,
    pause: Duration,
}

impl Retries {
    pub(crate) fn new() -> Self {
        Retries::until(None)
    }

    /// Tries until [`BUSY_BUDGET`] has passed, or `deadline` if that is
    /// sooner.
    pub(crate) fn until(deadline: Option<Instant>) -> Self {
        let budget = Instant::now() + BUSY_BUDGET;
        Retries { until: deadline.map_or(budget, |deadline| deadline.min(budget)), pause: FIRST_PAUSE }
    }

    /// Whether to run the operation again after `result`: when SQLite said
    /// busy and the budget is not spent, after a pause (jittered, so that
    /// processes that collided do not collide again).
    pub(crate) async fn again<T>(&mut self, result: &Result<T, JournalError>) -> bool {
        self.again_after(result.as_ref().err()).await
    }

    /// [`again`](Self::again), after an operation that ended with `error`
    /// (or none).
    pub(crate) async fn again_after(&mut self, error: Option<&JournalError>) -> bool {
        let Some(error) = error else { return false };
        let left = self.until.saturating_duration_since(Instant::now());
        if !journal_busy(error) || left.is_zero() {
            return false;
        }
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let jitter = Duration::from_micros(u64::from(now.subsec_nanos() ^ std::process::id()) % 1_000);
        tokio::time::sleep((self.pause + jitter).min(left)).await;
        self.pause = (self.pause * 2).min(MAX_PAUSE);
        true
    }
}

/// Whether SQLite refused `error` because another connection held a lock.
pub(crate) fn journal_busy(error: &JournalError) -> bool {
    let (JournalError::Database { source, .. } | JournalError::Open { source, .. }) = error else { return false };
    source.downcast_ref::<sqlx::Error>().is_some_and(is_busy)
}

/// SQLite's `SQLITE_BUSY` (5) or `SQLITE_LOCKED` (6), extended codes
/// included (`SQLITE_BUSY_SNAPSHOT` is 517): another connection holds the
/// lock.
pub(crate) fn is_busy(error: &sqlx::Error) -> bool {
    let Some(error) = error.as_database_error() else { return false };
    // Only SQLite's codes are plain numbers; Postgres's are SQLSTATEs.
    #[cfg(feature = "postgres")]
    if error.try_downcast_ref::<sqlx::postgres::PgDatabaseError>().is_some() {
        return false;
    }
    let code = error.code().and_then(|code| code.parse::<i64>().ok());
    matches!(code.map(|code| code & 0xff), Some(5 | 6))
}

//! Retention: what the journal may forget, so that it does not grow
//! forever ([`Journal::prune`]; the rules are on [`Retention`]).

use std::time::{Duration, SystemTime};

use super::{Journal, JournalError, on_pool};
use crate::memory::records::millis;

/// How long the journal keeps what is finished: [`Journal::prune`]
/// deletes the rows of finished runs (and of calls journaled without a run)
/// older than this; nothing else.
///
/// Never pruned, whatever their age:
///
/// - any row of a run that is not finished (active or ending), or that
///   finished within the retention;
/// - a call in doubt (started, never finished): only a person or the tool
///   can say whether it took effect;
/// - an approval still waiting, or decided and not yet settled by its run;
/// - the run record of a run that still has either of the two above.
///
/// Once a finished run is pruned, resuming its id starts a new run, and a
/// call whose effect was pruned runs again: keep finished runs at least as
/// long as a step of theirs could be sent again (a crashed host retrying,
/// an idempotency key reused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    keep: Duration,
}

impl Retention {
    /// Keeps a finished run's rows for `age` after its last change; calls
    /// journaled without a run record are kept `age` after they finished.
    pub const fn finished_older_than(age: Duration) -> Self {
        Retention { keep: age }
    }

    /// Forgets every finished run at once (the same as
    /// `finished_older_than(Duration::ZERO)`).
    pub const fn finished_runs() -> Self {
        Retention { keep: Duration::ZERO }
    }
}

/// What one [`Journal::prune`] deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Run records.
    pub runs: u64,
    /// Finished calls (effects).
    pub calls: u64,
    /// Decided and settled approvals.
    pub approvals: u64,
}

// A call's or an approval's rows are kept while its run is kept: not
// finished, or finished within the retention.
const CALLS: &str = "DELETE FROM journal_calls WHERE finished_at IS NOT NULL AND finished_at < $1 AND NOT EXISTS \
     (SELECT 1 FROM journal_runs r WHERE r.run_id = journal_calls.run_id AND (r.state <> 'finished' OR r.updated_at >= $1))";
const APPROVALS: &str = "DELETE FROM journal_approvals WHERE decision IS NOT NULL AND settled_at IS NOT NULL AND settled_at < $1 \
     AND NOT EXISTS (SELECT 1 FROM journal_runs r WHERE r.run_id = journal_approvals.run_id \
     AND (r.state <> 'finished' OR r.updated_at >= $1))";
const RUNS: &str = "DELETE FROM journal_runs WHERE state = 'finished' AND updated_at < $1 \
     AND NOT EXISTS (SELECT 1 FROM journal_calls c WHERE c.run_id = journal_runs.run_id AND c.finished_at IS NULL) \
     AND NOT EXISTS (SELECT 1 FROM journal_approvals a WHERE a.run_id = journal_runs.run_id \
     AND (a.decision IS NULL OR a.settled_at IS NULL))";
/// A pruned run's tools and failures: the rows of runs the journal no
/// longer has.
const RUN_ROWS: [&str; 2] = [
    "DELETE FROM journal_run_tools WHERE NOT EXISTS (SELECT 1 FROM journal_runs r WHERE r.run_id = journal_run_tools.run_id)",
    "DELETE FROM journal_run_failures WHERE NOT EXISTS (SELECT 1 FROM journal_runs r WHERE r.run_id = journal_run_failures.run_id)",
];

/// Deletes what `retention` lets go, for [`Journal::prune`].
pub(super) async fn prune(journal: &Journal, retention: Retention) -> Result<Pruned, JournalError> {
    let cutoff = millis(SystemTime::now().checked_sub(retention.keep).unwrap_or(SystemTime::UNIX_EPOCH));
    let mut pruned = Pruned::default();
    // Calls and approvals first: a run record goes only once its rows
    // have, so a failure midway leaves nothing without its run.
    for (sql, count) in [(CALLS, &mut pruned.calls), (APPROVALS, &mut pruned.approvals), (RUNS, &mut pruned.runs)] {
        *count = on_pool!(journal, pool => sqlx::query(sql)
            .bind(cutoff)
            .execute(pool)
            .await
            .map(|done| done.rows_affected())
            .map_err(JournalError::database("prune")))?;
    }
    // A run's id may be used again: its new run starts with no tools
    // executed and no failures.
    for sql in RUN_ROWS {
        on_pool!(journal, pool => sqlx::query(sql).execute(pool).await.map(drop).map_err(JournalError::database("prune")))?;
    }
    Ok(pruned)
}

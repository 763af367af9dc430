//! Retention: what the journal may forget, so that it does not grow
//! forever ([`Journal::prune`]; the rules are on [`Retention`]). Ages are
//! read by the journal's clock, the same for every process that prunes.

use std::time::Duration;

use super::{Journal, JournalError, on_pool};

/// How long the journal keeps what is finished: [`Journal::prune`]
/// deletes the rows of finished runs (and of calls journaled without a run)
/// older than this, the MCP tasks that ended or expired as long ago, and
/// the approvals of revision 2026-07-28 that expired as long ago; nothing
/// else.
///
/// Never pruned, whatever their age:
///
/// - any row of a run that is not finished (active or ending), or that
///   finished within the retention;
/// - an effect that such a run replayed (a keyed effect another run
///   journaled): it is kept while any run that stands on it is;
/// - a task that has not ended and has not expired, and its call;
/// - a call in doubt (started, never finished), unless its run finished
///   longer ago than the longer retention for calls in doubt
///   ([`in_doubt_older_than`](Self::in_doubt_older_than), 30 days by
///   default): only a person or the tool can say whether it took effect,
///   and no one resumes a finished run (an ended MCP session's) to ask;
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
    keep_in_doubt: Duration,
}

/// The retention of a finished run's calls in doubt, unless set.
const IN_DOUBT: Duration = Duration::from_secs(30 * 24 * 3_600);

impl Retention {
    /// Keeps a finished run's rows for `age` after its last change; calls
    /// journaled without a run record are kept `age` after they finished.
    pub const fn finished_older_than(age: Duration) -> Self {
        Retention { keep: age, keep_in_doubt: IN_DOUBT }
    }

    /// Forgets every finished run at once (the same as
    /// `finished_older_than(Duration::ZERO)`).
    pub const fn finished_runs() -> Self {
        Retention::finished_older_than(Duration::ZERO)
    }

    /// Keeps a call in doubt of a finished run for `age` after the run's
    /// last change (30 days unless set), and forgets it, and then the run,
    /// after that.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tool_runtime::journal::Retention;
    ///
    /// let week = Duration::from_secs(7 * 24 * 3_600);
    /// let retention = Retention::finished_older_than(week).in_doubt_older_than(8 * week);
    /// # let _ = retention;
    /// ```
    pub const fn in_doubt_older_than(mut self, age: Duration) -> Self {
        self.keep_in_doubt = age;
        self
    }
}

/// What one [`Journal::prune`] deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Run records.
    pub runs: u64,
    /// Calls: finished ones (effects), and calls in doubt past the longer
    /// retention.
    pub calls: u64,
    /// Settled approvals, and approvals of 2026-07-28 that expired.
    pub approvals: u64,
    /// MCP tasks that ended or expired.
    pub tasks: u64,
}

/// The time before which a row is old: `$1` milliseconds ago.
macro_rules! cutoff {
    () => {
        concat!("(", super::now!(), " - $1)")
    };
}

/// The MCP server's task runs are named `mcp-task:<task id>`.
macro_rules! task_run {
    ($run:expr) => {
        concat!("(", $run, " LIKE 'mcp-task:%' AND EXISTS (SELECT 1 FROM journal_tasks AS task WHERE task.task_id = substr(", $run, ", 10)))")
    };
}

/// The run `$run` is kept: its record says it goes on, or finished
/// within the retention; or it is a task's run, and the task is kept.
macro_rules! kept_run {
    ($run:expr) => {
        concat!(
            "(EXISTS (SELECT 1 FROM journal_runs AS kept WHERE kept.run_id = ",
            $run,
            " AND (kept.state <> 'finished' OR kept.updated_at >= ",
            cutoff!(),
            ")) OR ",
            task_run!($run),
            ")"
        )
    };
}

/// Tasks that ended, or expired, before the cutoff.
const TASKS: &str = concat!(
    "DELETE FROM journal_tasks WHERE (status IN ('completed', 'failed', 'cancelled') AND updated_at < ",
    cutoff!(),
    ") OR expires_at < ",
    cutoff!()
);
/// Finished calls of runs not kept, which no kept run replayed.
const CALLS: &str = concat!(
    "DELETE FROM journal_calls WHERE finished_at IS NOT NULL AND finished_at < ",
    cutoff!(),
    " AND NOT ",
    kept_run!("journal_calls.run_id"),
    " AND NOT EXISTS (SELECT 1 FROM journal_replays AS replay WHERE replay.effect_key = journal_calls.effect_key AND ",
    kept_run!("replay.run_id"),
    ")"
);
/// Calls in doubt of runs that finished before the longer cutoff (`$1`
/// here: the retention of calls in doubt), or of task runs whose task is
/// gone.
const CALLS_IN_DOUBT: &str = concat!(
    "DELETE FROM journal_calls WHERE finished_at IS NULL AND started_at < ",
    cutoff!(),
    " AND (EXISTS (SELECT 1 FROM journal_runs AS ended WHERE ended.run_id = journal_calls.run_id \
     AND ended.state = 'finished' AND ended.updated_at < ",
    cutoff!(),
    ") OR (run_id LIKE 'mcp-task:%' AND NOT ",
    task_run!("journal_calls.run_id"),
    "))"
);
/// Settled approvals of runs not kept; and, of runs without a record
/// (revision 2026-07-28's, which no run settles, and those of tasks gone),
/// approvals that expired before the cutoff.
const APPROVALS: &str = concat!(
    "DELETE FROM journal_approvals WHERE NOT ",
    kept_run!("journal_approvals.run_id"),
    " AND ((decision IS NOT NULL AND settled_at IS NOT NULL AND settled_at < ",
    cutoff!(),
    ") OR (expires_at < ",
    cutoff!(),
    " AND NOT EXISTS (SELECT 1 FROM journal_runs AS run WHERE run.run_id = journal_approvals.run_id)))"
);
const RUNS: &str = concat!(
    "DELETE FROM journal_runs WHERE state = 'finished' AND updated_at < ",
    cutoff!(),
    " AND NOT EXISTS (SELECT 1 FROM journal_calls c WHERE c.run_id = journal_runs.run_id AND c.finished_at IS NULL) \
     AND NOT EXISTS (SELECT 1 FROM journal_approvals a WHERE a.run_id = journal_runs.run_id \
     AND (a.decision IS NULL OR a.settled_at IS NULL))"
);
/// What pruned runs leave: their tools and failures.
const LEFT_OVER: [&str; 2] = [
    "DELETE FROM journal_run_tools WHERE NOT EXISTS (SELECT 1 FROM journal_runs r WHERE r.run_id = journal_run_tools.run_id)",
    "DELETE FROM journal_run_failures WHERE NOT EXISTS (SELECT 1 FROM journal_runs r WHERE r.run_id = journal_run_failures.run_id)",
];
/// The replays of runs no longer kept, and the leases of processes gone
/// before the cutoff.
const REPLAYS: &str = concat!("DELETE FROM journal_replays WHERE NOT ", kept_run!("journal_replays.run_id"));
const OWNERS: &str = concat!("DELETE FROM journal_owners WHERE lease_until < ", cutoff!());

/// Deletes what `retention` lets go, for [`Journal::prune`].
pub(super) async fn prune(journal: &Journal, retention: Retention) -> Result<Pruned, JournalError> {
    let millis = |age: Duration| i64::try_from(age.as_millis()).unwrap_or(i64::MAX);
    let (keep, keep_in_doubt) = (millis(retention.keep), millis(retention.keep_in_doubt));
    let mut pruned = Pruned::default();
    let (mut in_doubt, mut replays, mut owners) = (0, 0, 0);
    // Tasks first, then what the runs and tasks gone leave; a run record
    // goes only once its rows have, so a failure midway leaves nothing
    // without its run. Each statement's `$1` is the age it keeps.
    for (sql, age, count) in [
        (TASKS, keep, &mut pruned.tasks),
        (CALLS, keep, &mut pruned.calls),
        (CALLS_IN_DOUBT, keep_in_doubt, &mut in_doubt),
        (APPROVALS, keep, &mut pruned.approvals),
        (RUNS, keep, &mut pruned.runs),
        (REPLAYS, keep, &mut replays),
        (OWNERS, keep, &mut owners),
    ] {
        *count = on_pool!(journal, pool => sqlx::query(sql)
            .bind(age)
            .execute(pool)
            .await
            .map(|done| done.rows_affected())
            .map_err(JournalError::database("prune")))?;
    }
    pruned.calls += in_doubt;
    for sql in LEFT_OVER {
        on_pool!(journal, pool => sqlx::query(sql).execute(pool).await.map(drop).map_err(JournalError::database("prune")))?;
    }
    Ok(pruned)
}

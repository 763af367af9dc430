//! Runs by the host's id: a row of `journal_runs` (step, state), the tools
//! the run executed, a set, one row each in `journal_run_tools` in the order
//! the run first executed them, and its failed calls per tool (for
//! `max_retries`) in `journal_run_failures`.
//!
//! Several processes may step one run at once, so a durable run's step is
//! added to the record rather than written over it ([`RunRecords::add_step`]):
//! in one transaction, which first takes the run's row (its lock on Postgres,
//! the write lock on SQLite), the step count grows by the steps taken, the
//! new tools are appended after whatever the journal holds, the failures are
//! added to the journal's counts, and the state only moves forward (active,
//! ending, finished): a finished run stays finished. The transaction returns
//! the run as the journal now holds it, which the process takes as its own,
//! so that each process sees the others' steps. A step that re-sends exactly
//! the call ids of the run's last step (a host retrying after a crash) is
//! that step again: the count does not grow, and its failures, replayed from
//! the journal, are not counted twice. What a step writes does not grow with
//! the run.
//!
//! A process making the run durable opens it with its first step
//! ([`RunRecords::open`]): the same transaction, whose first statement also
//! claims the run for its user and says whether the run holds calls started
//! and not finished or parked calls not settled, so that the process reads
//! them only when it does. A step that takes no step and moves the state
//! nowhere writes no step: the row is only taken.
//!
//! [`RunRecords::save`] replaces the whole record, and
//! [`RunRecords::update`] writes a record's step over the stored one; both
//! keep the state moving forward only.

use futures_util::future::BoxFuture;
use sqlx::{ColumnIndex, Decode, Row, Type};

use super::group::{Conn, Write, on_conn};
use super::rows::{RowReader, encode_state};
use super::{Journal, JournalError, RunRecord, limits, now, on_pool};
use crate::memory::{Opened, RunState, StepDelta, Stepped};

/// Whether the stored state (`journal_runs.state`) gives way to the one
/// written (`excluded.state`): only for one as far along or further.
macro_rules! forward {
    () => {
        "CASE excluded.state WHEN 'active' THEN 0 WHEN 'ending' THEN 1 ELSE 2 END \
         >= CASE journal_runs.state WHEN 'active' THEN 0 WHEN 'ending' THEN 1 ELSE 2 END"
    };
}

const SAVE: &str = concat!(
    "INSERT INTO journal_runs (run_id, step, state, ended_by, updated_at, version) VALUES ($1, $2, $3, $4, ",
    now!(),
    ", 1) ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, \
     state = CASE WHEN ",
    forward!(),
    " THEN excluded.state ELSE journal_runs.state END, ended_by = CASE WHEN ",
    forward!(),
    " THEN excluded.ended_by ELSE journal_runs.ended_by END, \
     updated_at = excluded.updated_at, version = journal_runs.version + 1"
);
const LOAD: &str = "SELECT run_id, step, state, ended_by, updated_at FROM journal_runs WHERE run_id = $1";
/// Takes the run's row for the rest of the transaction (creating it when
/// missing) and reads it as stored: only its version and time change.
const TAKE: &str = concat!(
    "INSERT INTO journal_runs (run_id, step, state, ended_by, updated_at, version) VALUES ($1, 0, 'active', NULL, ",
    now!(),
    ", 1) ON CONFLICT (run_id) DO UPDATE SET version = journal_runs.version + 1, updated_at = excluded.updated_at \
     RETURNING run_id, step, state, ended_by, last_calls, version"
);
/// [`TAKE`], for a process opening the run ([`RunRecords::open`]): the run
/// is recorded as `$2`'s too when it has no user yet, and the row read
/// back says its user and whether the run holds calls started and not
/// finished and parked calls not settled, as this statement sees them.
///
/// Those two are read here rather than from the run's row: calls and
/// approvals are keyed by run id and call id, and nothing needs the run's
/// row to hold them (an MCP server's stateless calls start and park under
/// run ids it never steps; `Journal::calls` and `Journal::approvals` write
/// for any run id), so a row this statement creates does not prove the run
/// holds none. A call another process starts after this statement is one
/// that process runs itself, as when the run's calls were read after the
/// step committed: those reads raced it too.
const OPEN: &str = concat!(
    "INSERT INTO journal_runs (run_id, step, state, ended_by, updated_at, version, user_id) VALUES ($1, 0, 'active', NULL, ",
    now!(),
    ", 1, $2) ON CONFLICT (run_id) DO UPDATE SET version = journal_runs.version + 1, updated_at = excluded.updated_at, \
     user_id = COALESCE(journal_runs.user_id, excluded.user_id) \
     RETURNING run_id, step, state, ended_by, last_calls, version, user_id, \
     EXISTS (SELECT 1 FROM journal_calls WHERE run_id = $1 AND finished_at IS NULL) AS unfinished_calls, \
     EXISTS (SELECT 1 FROM journal_approvals WHERE run_id = $1 AND settled_at IS NULL) AS unsettled"
);
/// Records the run `$1` as `$2`'s when it is new or has no user yet, and
/// reads its user back.
const CLAIM: &str = concat!(
    "INSERT INTO journal_runs (run_id, step, state, ended_by, updated_at, version, user_id) VALUES ($1, 0, 'active', NULL, ",
    now!(),
    ", 0, $2) ON CONFLICT (run_id) DO UPDATE SET user_id = COALESCE(journal_runs.user_id, excluded.user_id) RETURNING user_id"
);
const RUN_USER: &str = "SELECT user_id FROM journal_runs WHERE run_id = $1";
const STEP: &str = "UPDATE journal_runs SET step = $2, state = $3, ended_by = $4, last_calls = $5 WHERE run_id = $1";
/// A tool the run executed, after those the journal holds; one it holds
/// already is skipped. The run's row is taken first, so no other
/// transaction appends at once.
const APPEND_TOOL: &str = "INSERT INTO journal_run_tools (run_id, ordinal, tool) \
     SELECT $1, (SELECT COALESCE(MAX(ordinal) + 1, 0) FROM journal_run_tools WHERE run_id = $1), $2 \
     WHERE NOT EXISTS (SELECT 1 FROM journal_run_tools WHERE run_id = $1 AND tool = $2)";
/// A tool at its place in the run's list, for [`RunRecords::update`]; a
/// place taken already is skipped.
const PLACE_TOOL: &str = "INSERT INTO journal_run_tools (run_id, ordinal, tool) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";
const CLEAR_TOOLS: &str = "DELETE FROM journal_run_tools WHERE run_id = $1";
const LOAD_TOOLS: &str = "SELECT ordinal, tool FROM journal_run_tools WHERE run_id = $1 AND ordinal >= $2 ORDER BY ordinal";
/// Failures of a step, added to the journal's count.
const ADD_FAILURES: &str = "INSERT INTO journal_run_failures (run_id, tool, failures) VALUES ($1, $2, $3) \
     ON CONFLICT (run_id, tool) DO UPDATE SET failures = journal_run_failures.failures + excluded.failures";
/// A record's count of failures, kept when the journal counts more.
const SAVE_FAILURES: &str = "INSERT INTO journal_run_failures (run_id, tool, failures) VALUES ($1, $2, $3) \
     ON CONFLICT (run_id, tool) DO UPDATE SET failures = CASE WHEN excluded.failures > journal_run_failures.failures \
     THEN excluded.failures ELSE journal_run_failures.failures END";
const CLEAR_FAILURES: &str = "DELETE FROM journal_run_failures WHERE run_id = $1";
const LOAD_FAILURES: &str = "SELECT tool, failures FROM journal_run_failures WHERE run_id = $1 ORDER BY tool";
/// What a step reads back, in one statement: the run's tools from the
/// `$2`th on (`is_tool` 1, `n` its ordinal), then its failures (`n` the
/// count).
const READ_BACK: &str = "SELECT * FROM (SELECT CAST(1 AS BIGINT) AS is_tool, ordinal AS n, tool FROM journal_run_tools \
     WHERE run_id = $1 AND ordinal >= $2 UNION ALL SELECT CAST(0 AS BIGINT), failures, tool FROM journal_run_failures \
     WHERE run_id = $1) AS back ORDER BY is_tool DESC, n, tool";

/// Binds `run`'s step and state to [`SAVE`], on either backend's pool or
/// transaction.
macro_rules! save_query {
    ($run:expr) => {{
        let (state, ended_by) = encode_state(&$run.state);
        sqlx::query(SAVE).bind(&$run.run_id).bind(i64::try_from($run.step).unwrap_or(i64::MAX)).bind(state).bind(ended_by)
    }};
}

/// Appends `tools` to `run_id`'s executed tools, each after those the
/// journal holds, in the transaction `tx`.
macro_rules! append_tools {
    ($tx:ident, $run_id:expr, $tools:expr, $operation:literal) => {
        for tool in $tools {
            sqlx::query(APPEND_TOOL).bind($run_id).bind(tool).execute(&mut *$tx).await.map_err(JournalError::database($operation))?;
        }
    };
}

/// Writes `failures` of `run_id` with `sql` in the transaction `tx`.
macro_rules! write_failures {
    ($tx:ident, $sql:expr, $run_id:expr, $failures:expr, $operation:literal) => {
        for (tool, failed) in $failures {
            sqlx::query($sql)
                .bind($run_id)
                .bind(tool)
                .bind(i64::from(*failed))
                .execute(&mut *$tx)
                .await
                .map_err(JournalError::database($operation))?;
        }
    };
}

/// The runs of a [`Journal`] ([`Journal::runs`]): each run's record by the
/// host's id, its step, state, executed tools and failed calls per tool
/// ([`RunRecord`]).
///
/// [`save`](Self::save) replaces a record and [`update`](Self::update)
/// writes a record's step over the stored one; either way the state only
/// moves forward (a finished run stays finished). A durable run adds each
/// of its steps to the record instead, in one transaction, so that of
/// several processes stepping one run at once none loses another's steps,
/// tools or failures.
///
/// A borrowed handle, as cheap to make as a reference: take one where it
/// is used, `journal.runs().load(...)`.
#[derive(Clone, Copy, Debug)]
pub struct RunRecords<'j> {
    pub(super) journal: &'j Journal,
}

impl RunRecords<'_> {
    /// Saves a run under its id, replacing what was stored, its executed
    /// tools and failures included; its `updated_at` is set to now. The
    /// state only moves forward: a run the journal holds as finished stays
    /// finished (a record saying it is active or ending does not reopen it),
    /// one it holds as ending stays ending or finishes.
    pub async fn save(self, run: &RunRecord) -> Result<(), JournalError> {
        check_run(run, &run.executed)?;
        on_pool!(self.journal, pool => {
            let mut tx = pool.begin().await.map_err(JournalError::database("save_run"))?;
            save_query!(run).execute(&mut *tx).await.map_err(JournalError::database("save_run"))?;
            sqlx::query(CLEAR_TOOLS).bind(&run.run_id).execute(&mut *tx).await.map_err(JournalError::database("save_run"))?;
            append_tools!(tx, &run.run_id, &run.executed, "save_run");
            sqlx::query(CLEAR_FAILURES).bind(&run.run_id).execute(&mut *tx).await.map_err(JournalError::database("save_run"))?;
            write_failures!(tx, SAVE_FAILURES, &run.run_id, &run.failures, "save_run");
            tx.commit().await.map_err(JournalError::database("save_run"))
        })
    }

    /// Saves a run whose first `stored` executed tools the journal holds
    /// already: its step replaces the stored one, its state too unless the
    /// stored one is further along (see [`save`](Self::save)), its
    /// executed tools after the first `stored` are written at their places
    /// (a place the journal holds already is skipped), and each of its failure counts
    /// replaces a smaller stored one. A step that executed no tool for the
    /// first time is one statement (two with failures), whatever the run's
    /// length. Its `updated_at` is set to now; a run the journal does not
    /// know is created.
    ///
    /// The step is written over the stored one, and tools at their places:
    /// of two processes stepping one run at once through this call, the
    /// last step written wins and a tool the other placed first is lost. Durable
    /// runs ([`Run::durable`](crate::Run::durable)) add each step to the
    /// journal's count instead, and lose none.
    pub async fn update(self, run: &RunRecord, stored: usize) -> Result<(), JournalError> {
        let new = run.executed.get(stored..).unwrap_or_default();
        check_run(run, new)?;
        on_pool!(self.journal, pool => {
            if new.is_empty() && run.failures.is_empty() {
                return save_query!(run).execute(pool).await.map(drop).map_err(JournalError::database("update_run"));
            }
            let mut tx = pool.begin().await.map_err(JournalError::database("update_run"))?;
            save_query!(run).execute(&mut *tx).await.map_err(JournalError::database("update_run"))?;
            for (ordinal, tool) in (stored..).zip(new) {
                sqlx::query(PLACE_TOOL)
                    .bind(&run.run_id)
                    .bind(i64::try_from(ordinal).unwrap_or(i64::MAX))
                    .bind(tool)
                    .execute(&mut *tx)
                    .await
                    .map_err(JournalError::database("update_run"))?;
            }
            write_failures!(tx, SAVE_FAILURES, &run.run_id, &run.failures, "update_run");
            tx.commit().await.map_err(JournalError::database("update_run"))
        })
    }

    /// Adds what a process's steps changed to the run `run_id` (created
    /// when the journal does not know it), in one transaction (see the
    /// [module docs](self)): the steps taken, less the last one when it
    /// re-sends exactly the call ids of the run's last journaled step (then
    /// its failures are not added either: they were replayed); the new
    /// tools; the failures; the state `state` unless the stored one is as
    /// far along (the first process to end the run names the tool that
    /// ended it). Returns the run as the journal then holds it, with its
    /// tools from the `known`th on.
    pub(crate) async fn add_step(self, run_id: &str, delta: &StepDelta, state: &RunState, known: usize) -> Result<Stepped, JournalError> {
        self.journal.write(AddStep::new(run_id, delta, state, known)?).await
    }

    /// Opens the run `run_id` for a process that makes it durable, in one
    /// transaction: [`claim`](Self::claim) for `user` and
    /// [`add_step`](Self::add_step) at once, and whether the run holds
    /// calls started and not finished and parked calls not settled (see
    /// [`OPEN`]), so that the process reads them only when it does.
    pub(crate) async fn open(
        self,
        run_id: &str,
        user: Option<&str>,
        delta: &StepDelta,
        state: &RunState,
        known: usize,
    ) -> Result<(Stepped, Opened), JournalError> {
        limits::optional_id("user_id", user)?;
        self.journal.write(OpenRun { step: AddStep::new(run_id, delta, state, known)?, user: user.map(str::to_owned) }).await
    }

    /// Records `run_id` as the run of `user` unless the journal holds a
    /// user for it already, and returns the run's user as the journal then
    /// holds it (the first process to record the run names it; a run
    /// journaled before runs had users takes the user of the first process
    /// that resumes it).
    pub(crate) async fn claim(self, run_id: &str, user: Option<&str>) -> Result<Option<String>, JournalError> {
        limits::id("run_id", run_id)?;
        limits::optional_id("user_id", user)?;
        on_pool!(self.journal, pool => {
            // A read when the run has its user already (a resume), or when
            // there is none to give; a write only to give one.
            let held: Option<(Option<String>,)> =
                sqlx::query_as(RUN_USER).bind(run_id).fetch_optional(pool).await.map_err(JournalError::database("claim_run"))?;
            match (held, user) {
                (Some((Some(held),)), _) => return Ok(Some(held)),
                (_, None) => return Ok(None),
                _ => {}
            }
            let (user,): (Option<String>,) =
                sqlx::query_as(CLAIM).bind(run_id).bind(user).fetch_one(pool).await.map_err(JournalError::database("claim_run"))?;
            Ok(user)
        })
    }

    /// Loads a run by id; `None` when the journal has no run of that id.
    ///
    /// # Errors
    ///
    /// [`JournalError::Corrupt`] when the stored row does not decode.
    pub async fn load(self, run_id: &str) -> Result<Option<RunRecord>, JournalError> {
        limits::id("run_id", run_id)?;
        on_pool!(self.journal, pool => {
            let failed = || JournalError::database("load_run");
            let Some(row) = sqlx::query(LOAD).bind(run_id).fetch_optional(pool).await.map_err(failed())? else {
                return Ok(None);
            };
            let mut run = decode_run(&row)?;
            let tools: Vec<(i64, String)> = sqlx::query_as(LOAD_TOOLS).bind(run_id).bind(0_i64).fetch_all(pool).await.map_err(failed())?;
            run.executed = tools.into_iter().map(|(_, tool)| tool).collect();
            let failures: Vec<(String, i64)> = sqlx::query_as(LOAD_FAILURES).bind(run_id).fetch_all(pool).await.map_err(failed())?;
            run.failures = decode_failures(run_id, failures)?;
            Ok(Some(run))
        })
    }
}

/// What both backends keep of `run` and the executed `tools` to write
/// (see [`limits`]).
fn check_run(run: &RunRecord, tools: &[String]) -> Result<(), JournalError> {
    limits::id("run_id", &run.run_id)?;
    let (_, ended_by) = encode_state(&run.state);
    limits::text("ended_by", ended_by.unwrap_or_default())?;
    tools.iter().chain(run.failures.iter().map(|(tool, _)| tool)).try_for_each(|tool| limits::text("tool", tool))
}

/// The run of a `journal_runs` row, its executed tools not read yet.
fn decode_run<'r, R: Row>(row: &'r R) -> Result<RunRecord, JournalError>
where
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    let row = RowReader::new(row, "journal_runs", "run_id")?;
    let (step, state) = step_and_state(&row)?;
    Ok(RunRecord { step, executed: Vec::new(), failures: Vec::new(), state, updated_at: row.time("updated_at")?, run_id: row.key })
}

/// A run's row as [`TAKE`] read it.
struct Taken {
    step: usize,
    state: RunState,
    last_calls: Option<String>,
    version: i64,
}

fn decode_taken<'r, R: Row>(row: &'r R) -> Result<Taken, JournalError>
where
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    let row = RowReader::new(row, "journal_runs", "run_id")?;
    let (step, state) = step_and_state(&row)?;
    Ok(Taken { step, state, last_calls: row.get("last_calls")?, version: row.get("version")? })
}

fn step_and_state<'r, R: Row>(row: &RowReader<'r, R>) -> Result<(usize, RunState), JournalError>
where
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    let step: i64 = row.get("step")?;
    let step = usize::try_from(step).map_err(|_| row.corrupt(format!("column step holds {step}, not a step index")))?;
    let state: String = row.get("state")?;
    Ok((step, row.state(&state, row.get("ended_by")?)?))
}

/// A run's rows of `journal_run_failures`, read as counts.
fn decode_failures(run_id: &str, rows: Vec<(String, i64)>) -> Result<Vec<(String, u32)>, JournalError> {
    rows.into_iter()
        .map(|(tool, failed)| match u32::try_from(failed) {
            Ok(failed) => Ok((tool, failed)),
            Err(_) => Err(JournalError::corrupt("journal_run_failures", run_id, format!("tool {tool} failed {failed} times"))),
        })
        .collect()
}

/// A step added to a run ([`RunRecords::add_step`]), in one transaction
/// that takes the run's row first.
struct AddStep {
    run_id: String,
    delta: StepDelta,
    state: RunState,
    known: usize,
}

impl AddStep {
    /// The step, once what both backends keep of it was checked (see
    /// [`limits`]).
    fn new(run_id: &str, delta: &StepDelta, state: &RunState, known: usize) -> Result<AddStep, JournalError> {
        limits::id("run_id", run_id)?;
        let (_, ended_by) = encode_state(state);
        limits::text("ended_by", ended_by.unwrap_or_default())?;
        delta.tools.iter().chain(delta.failures.iter().map(|(tool, _)| tool)).try_for_each(|tool| limits::text("tool", tool))?;
        Ok(AddStep { run_id: run_id.to_owned(), delta: delta.clone(), state: state.clone(), known })
    }
}

/// Writes the step `$step` (an [`AddStep`]) on the run's row taken and read
/// as `$stored` (a [`Taken`]), in the transaction `$tx`, and reads back
/// what the run then holds: a [`Stepped`] (the enclosing block returns
/// its errors).
macro_rules! add_to_taken {
    ($tx:ident, $step:expr, $stored:expr) => {{
        let (step, stored): (&AddStep, Taken) = ($step, $stored);
        let (run_id, delta, known) = (step.run_id.as_str(), &step.delta, step.known);
        let failed = || JournalError::database("add_step");
        let resent = delta.steps > 0 && delta.last_calls.is_some() && delta.last_calls == stored.last_calls;
        let moves = step.state.rank() > stored.state.rank();
        let index = stored.step.saturating_add(delta.steps) - usize::from(resent);
        let state = if moves { step.state.clone() } else { stored.state };
        // A step that takes no step and moves the state nowhere (a run
        // opened, a decision settled) would write the row as it is.
        if delta.steps > 0 || moves {
            let last_calls = if delta.steps > 0 { delta.last_calls.as_deref() } else { stored.last_calls.as_deref() };
            let (state_text, ended_by) = encode_state(&state);
            sqlx::query(STEP)
                .bind(run_id)
                .bind(i64::try_from(index).unwrap_or(i64::MAX))
                .bind(state_text)
                .bind(ended_by)
                .bind(last_calls)
                .execute(&mut *$tx)
                .await
                .map_err(failed())?;
        }
        append_tools!($tx, run_id, &delta.tools, "add_step");
        if !resent {
            write_failures!($tx, ADD_FAILURES, run_id, &delta.failures, "add_step");
        }
        let known_from = i64::try_from(known).unwrap_or(i64::MAX);
        let back: Vec<(i64, i64, String)> = sqlx::query_as(READ_BACK).bind(run_id).bind(known_from).fetch_all(&mut *$tx).await.map_err(failed())?;
        let (tools, failures): (Vec<_>, Vec<_>) = back.into_iter().partition(|(is_tool, _, _)| *is_tool == 1);
        let tool_count = tools.last().map_or(known, |(_, ordinal, _)| usize::try_from(*ordinal).map_or(known, |last| last + 1));
        Stepped {
            version: stored.version,
            step: index,
            resent,
            state,
            tools: tools.into_iter().map(|(_, _, tool)| tool).collect(),
            tool_count,
            failures: decode_failures(run_id, failures.into_iter().map(|(_, failed, tool)| (tool, failed)).collect())?,
        }
    }};
}

impl Write for AddStep {
    type Output = Stepped;

    fn order(&self) -> (u8, &str) {
        (0, &self.run_id)
    }

    fn atomic(&self) -> bool {
        true
    }

    fn send<'c>(&'c self, conn: Conn<'c>) -> BoxFuture<'c, Result<Stepped, JournalError>> {
        Box::pin(async move {
            on_conn!(conn, tx => {
                let row = sqlx::query(TAKE).bind(&self.run_id).fetch_one(&mut *tx).await.map_err(JournalError::database("add_step"))?;
                Ok(add_to_taken!(tx, self, decode_taken(&row)?))
            })
        })
    }
}

/// A run opened by a process ([`RunRecords::open`]): its first step, whose
/// row is taken by [`OPEN`], which claims the run for `user` and says what
/// the run holds.
struct OpenRun {
    step: AddStep,
    user: Option<String>,
}

impl Write for OpenRun {
    type Output = (Stepped, Opened);

    fn order(&self) -> (u8, &str) {
        self.step.order()
    }

    fn atomic(&self) -> bool {
        true
    }

    fn send<'c>(&'c self, conn: Conn<'c>) -> BoxFuture<'c, Result<(Stepped, Opened), JournalError>> {
        Box::pin(async move {
            on_conn!(conn, tx => {
                let row = sqlx::query(OPEN).bind(&self.step.run_id).bind(&self.user).fetch_one(&mut *tx).await.map_err(JournalError::database("open_run"))?;
                let reader = RowReader::new(&row, "journal_runs", "run_id")?;
                let opened = Opened { user: reader.get("user_id")?, unfinished_calls: reader.get("unfinished_calls")?, unsettled: reader.get("unsettled")? };
                Ok((add_to_taken!(tx, &self.step, decode_taken(&row)?), opened))
            })
        })
    }
}

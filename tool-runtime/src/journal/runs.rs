//! Runs by the host's id: a row of `journal_runs` (step, state) and the
//! tools the run executed, a set, one row each in `journal_run_tools` in the
//! order the run first executed them. A durable run's step appends the
//! tools it executed for the first time ([`Journal::update_run`]), so what a
//! step writes does not grow with the run; [`Journal::save_run`] replaces
//! the whole record.

use std::time::SystemTime;

use sqlx::{ColumnIndex, Decode, Row, Type};

use super::records::{encode_state, millis, RowReader};
use super::{limits, on_pool, Journal, JournalError, RunRecord};

const SAVE: &str = "INSERT INTO journal_runs (run_id, step, state, ended_by, updated_at) VALUES ($1, $2, $3, $4, $5) \
     ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, state = excluded.state, ended_by = excluded.ended_by, \
     updated_at = excluded.updated_at";
const LOAD: &str = "SELECT run_id, step, state, ended_by, updated_at FROM journal_runs WHERE run_id = $1";
/// A tool the run executed, at its place; one it holds already is skipped.
const APPEND_TOOL: &str = "INSERT INTO journal_run_tools (run_id, ordinal, tool) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";
const CLEAR_TOOLS: &str = "DELETE FROM journal_run_tools WHERE run_id = $1";
const LOAD_TOOLS: &str = "SELECT tool FROM journal_run_tools WHERE run_id = $1 ORDER BY ordinal";

/// Binds `run`'s step and state to [`SAVE`], on either backend's pool or
/// transaction.
macro_rules! save_query {
    ($run:expr) => {{
        let (state, ended_by) = encode_state(&$run.state);
        sqlx::query(SAVE)
            .bind(&$run.run_id)
            .bind(i64::try_from($run.step).unwrap_or(i64::MAX))
            .bind(state)
            .bind(ended_by)
            .bind(millis(SystemTime::now()))
    }};
}

/// Appends `tools` to `run_id`'s executed tools, the first at `from`, in
/// the transaction `tx`.
macro_rules! append_tools {
    ($tx:ident, $run_id:expr, $from:expr, $tools:expr, $operation:literal) => {
        for (ordinal, tool) in ($from..).zip($tools) {
            sqlx::query(APPEND_TOOL)
                .bind($run_id)
                .bind(i64::try_from(ordinal).unwrap_or(i64::MAX))
                .bind(tool)
                .execute(&mut *$tx)
                .await
                .map_err(JournalError::database($operation))?;
        }
    };
}

impl Journal {
    /// Saves a run under its id, replacing what was stored, its executed
    /// tools included; its `updated_at` is set to now.
    pub async fn save_run(&self, run: &RunRecord) -> Result<(), JournalError> {
        check_run(run, &run.executed)?;
        on_pool!(self, pool => {
            let mut tx = pool.begin().await.map_err(JournalError::database("save_run"))?;
            save_query!(run).execute(&mut *tx).await.map_err(JournalError::database("save_run"))?;
            sqlx::query(CLEAR_TOOLS).bind(&run.run_id).execute(&mut *tx).await.map_err(JournalError::database("save_run"))?;
            append_tools!(tx, &run.run_id, 0usize, &run.executed, "save_run");
            tx.commit().await.map_err(JournalError::database("save_run"))
        })
    }

    /// Saves a run whose first `stored` executed tools the journal holds
    /// already: its step and state replace the stored ones, and its
    /// executed tools after the first `stored` are appended (one the
    /// journal holds already is skipped). A step that executed no tool for
    /// the first time is one statement, whatever the run's length. Its
    /// `updated_at` is set to now; a run the journal does not know is
    /// created.
    pub async fn update_run(&self, run: &RunRecord, stored: usize) -> Result<(), JournalError> {
        let new = run.executed.get(stored..).unwrap_or_default();
        check_run(run, new)?;
        on_pool!(self, pool => {
            if new.is_empty() {
                return save_query!(run).execute(pool).await.map(drop).map_err(JournalError::database("update_run"));
            }
            let mut tx = pool.begin().await.map_err(JournalError::database("update_run"))?;
            save_query!(run).execute(&mut *tx).await.map_err(JournalError::database("update_run"))?;
            append_tools!(tx, &run.run_id, stored, new, "update_run");
            tx.commit().await.map_err(JournalError::database("update_run"))
        })
    }

    /// Loads a run by id; `None` when the journal has no run of that id.
    ///
    /// # Errors
    ///
    /// [`JournalError::Corrupt`] when the stored row does not decode.
    pub async fn load_run(&self, run_id: &str) -> Result<Option<RunRecord>, JournalError> {
        limits::id("run_id", run_id)?;
        on_pool!(self, pool => {
            let failed = || JournalError::database("load_run");
            let Some(row) = sqlx::query(LOAD).bind(run_id).fetch_optional(pool).await.map_err(failed())? else {
                return Ok(None);
            };
            let mut run = decode_run(&row)?;
            let tools: Vec<(String,)> = sqlx::query_as(LOAD_TOOLS).bind(run_id).fetch_all(pool).await.map_err(failed())?;
            run.executed = tools.into_iter().map(|(tool,)| tool).collect();
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
    tools.iter().try_for_each(|tool| limits::text("tool", tool))
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
    let step: i64 = row.get("step")?;
    let step = usize::try_from(step).map_err(|_| row.corrupt(format!("column step holds {step}, not a step index")))?;
    let state: String = row.get("state")?;
    let state = row.state(&state, row.get("ended_by")?)?;
    Ok(RunRecord { step, executed: Vec::new(), state, updated_at: row.time("updated_at")?, run_id: row.key })
}

//! Runs by the host's id: saved whole (an upsert), loaded whole.

use std::time::SystemTime;

use sqlx::{ColumnIndex, Decode, Row, Type};

use super::records::{encode_state, millis, RowReader};
use super::{limits, on_pool, Journal, JournalError, RunRecord};

const SAVE: &str = "INSERT INTO journal_runs (run_id, step, executed, state, ended_by, updated_at) VALUES ($1, $2, $3, $4, $5, $6) \
     ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, executed = excluded.executed, state = excluded.state, \
     ended_by = excluded.ended_by, updated_at = excluded.updated_at";
const LOAD: &str = "SELECT run_id, step, executed, state, ended_by, updated_at FROM journal_runs WHERE run_id = $1";

impl Journal {
    /// Saves a run under its id, replacing what was stored; its
    /// `updated_at` is set to now.
    pub async fn save_run(&self, run: &RunRecord) -> Result<(), JournalError> {
        limits::id("run_id", &run.run_id)?;
        let executed = serde_json::to_string(&run.executed).expect("a list of strings serialises");
        let step = i64::try_from(run.step).unwrap_or(i64::MAX);
        let (state, ended_by) = encode_state(&run.state);
        limits::text("ended_by", ended_by.unwrap_or_default())?;
        on_pool!(self, pool => sqlx::query(SAVE)
            .bind(&run.run_id)
            .bind(step)
            .bind(&executed)
            .bind(state)
            .bind(ended_by)
            .bind(millis(SystemTime::now()))
            .execute(pool)
            .await
            .map(drop)
            .map_err(JournalError::database("save_run")))
    }

    /// Loads a run by id; `None` when the journal has no run of that id.
    ///
    /// # Errors
    ///
    /// [`JournalError::Corrupt`] when the stored row does not decode.
    pub async fn load_run(&self, run_id: &str) -> Result<Option<RunRecord>, JournalError> {
        limits::id("run_id", run_id)?;
        on_pool!(self, pool => {
            let row = sqlx::query(LOAD).bind(run_id).fetch_optional(pool).await.map_err(JournalError::database("load_run"))?;
            row.as_ref().map(decode_run).transpose()
        })
    }
}

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
    let executed = serde_json::from_value::<Vec<String>>(row.json("executed")?)
        .map_err(|e| row.corrupt(format!("column executed is not a list of tool names ({e})")))?;
    let state: String = row.get("state")?;
    let state = row.state(&state, row.get("ended_by")?)?;
    Ok(RunRecord { step, executed, state, updated_at: row.time("updated_at")?, run_id: row.key })
}

//! The effect journal: a call recorded as started before its tool runs
//! and as finished, with its result, after. The effect key is the primary
//! key, so "started" is decided by the database: of two processes
//! inserting one key, exactly one inserts it.

use std::borrow::Cow;

use serde_json::Value;
use sqlx::{ColumnIndex, Decode, Row, Type};

use futures_util::future::BoxFuture;

use super::group::{Conn, Write, on_conn};
use super::rows::RowReader;
use super::{
    CallInDoubt, CallStart, Journal, JournalError, JournaledCall, JournaledResult, limits, now, on_pool, owners, owners::owner_lives,
    run_not_finished,
};
use crate::memory::{Keyed, Starting};

const START: &str = concat!(
    "INSERT INTO journal_calls (effect_key, run_id, call_id, tool, input, owner, started_at) SELECT $1, $2, $3, $4, $5, $6, clock.ms \
     FROM journal_clock AS clock WHERE ",
    run_not_finished!("$2"),
    " ON CONFLICT (effect_key) DO NOTHING"
);
/// The unfinished call of `$1`, if the owner that started it is gone.
const STARTER_GONE: &str =
    concat!("SELECT call_id FROM journal_calls AS started WHERE effect_key = $1 AND finished_at IS NULL AND NOT ", owner_lives!("started"));
const REPLAYED: &str = "INSERT INTO journal_replays (effect_key, run_id) VALUES ($1, $2) ON CONFLICT (effect_key, run_id) DO NOTHING";
const FINISHED_RUN: &str = "SELECT run_id FROM journal_runs WHERE run_id = $1 AND state = 'finished'";
const KNOWN: &str = "SELECT effect_key, call_id, tool, input, started_at, finished_at, kind, text, structured, error_code, status, truncated, ends_run \
     FROM journal_calls WHERE effect_key = $1";
/// A keyed call's effect: under its key (`$1`, or `$2` as a long key was
/// stored before keys were hashed), as the same call of the same run (run
/// `$5`, call `$6`, tool `$7`) under any key, or under the key an earlier
/// version made (`$3`, `$4`); in that order.
const KEYED: &str = "SELECT effect_key, call_id, tool, input, started_at, finished_at, kind, text, structured, error_code, status, truncated, \
     ends_run, CASE WHEN effect_key IN ($1, $2) THEN 0 WHEN run_id = $5 AND call_id = $6 AND tool = $7 THEN 1 ELSE 2 END AS preference \
     FROM journal_calls WHERE effect_key IN ($1, $2, $3, $4) OR (run_id = $5 AND call_id = $6 AND tool = $7) ORDER BY preference LIMIT 1";
const OF_RUN: &str = "SELECT effect_key, call_id, tool, input, started_at, finished_at, kind, text, structured, error_code, status, truncated, ends_run \
     FROM journal_calls WHERE run_id = $1 ORDER BY started_at, call_id";
const EXISTS: &str = "SELECT call_id FROM journal_calls WHERE effect_key = $1";
const RESTART: &str = concat!(
    "UPDATE journal_calls SET call_id = $2, input = $3, owner = $5, started_at = ",
    now!(),
    ", finished_at = NULL, kind = NULL, text = NULL, structured = NULL, error_code = NULL, status = NULL, truncated = NULL, ends_run = NULL \
     WHERE effect_key = $1 AND finished_at IS NOT NULL AND ",
    run_not_finished!("$4")
);
const IN_DOUBT: &str = "SELECT effect_key, run_id, call_id, tool, input, started_at FROM journal_calls \
     WHERE finished_at IS NULL ORDER BY started_at, effect_key";
const IN_DOUBT_OF_RUN: &str = "SELECT effect_key, run_id, call_id, tool, input, started_at FROM journal_calls \
     WHERE finished_at IS NULL AND run_id = $1 ORDER BY started_at, effect_key";
/// The start call `$2` made of `$1`, unfinished (and made at `$3`, when given).
/// An unfinished start withdrawn: `$1` the stored key, `$2` the call that
/// made it, `$3` when (`NULL`: whenever).
pub(super) const WITHDRAW: &str =
    "DELETE FROM journal_calls WHERE effect_key = $1 AND call_id = $2 AND finished_at IS NULL AND ($3 IS NULL OR started_at = $3)";
const FINISH: &str = concat!(
    "UPDATE journal_calls SET finished_at = ",
    now!(),
    ", kind = $2, text = $3, structured = $4, error_code = $5, status = $6, truncated = $7, ends_run = $8 \
     WHERE effect_key = $1 AND finished_at IS NULL"
);

/// The effect journal of a [`Journal`] ([`Journal::calls`]): each call's
/// effect by its key, recorded as started before its tool runs and as
/// finished, with its result, after.
///
/// A borrowed handle, as cheap to make as a reference: take one where it
/// is used, `journal.calls().start(...)`.
#[derive(Clone, Copy, Debug)]
pub struct CallRecords<'j> {
    pub(super) journal: &'j Journal,
}

impl CallRecords<'_> {
    /// Records a call as started, before its tool runs, unless its effect
    /// key is already known; says which.
    ///
    /// - [`CallStart::Started`]: the key was new; run the tool, then
    ///   [`finish`](Self::finish).
    /// - [`CallStart::Finished`]: the effect already happened; return its
    ///   result without running the tool.
    /// - [`CallStart::UnknownOutcome`]: a call was started with this key and
    ///   never finished (its process died, or it is still running
    ///   elsewhere): whether the effect happened is unknown.
    ///
    /// Atomic: of several processes starting one key at once, exactly one
    /// gets `Started`.
    ///
    /// An effect key of any length is taken (a long one is stored as its
    /// digest); the ids are held to the [`limits`].
    ///
    /// # Errors
    ///
    /// [`JournalError::Corrupt`] when the stored row of the key does not
    /// decode, [`JournalError::Refused`] for an id over the limits,
    /// [`JournalError::RunFinished`] for a new key of a run the journal
    /// holds as finished (a finished run starts nothing).
    pub async fn start(self, run_id: &str, call_id: &str, tool: &str, input: &Value, effect_key: &str) -> Result<CallStart, JournalError> {
        Ok(self.start_or_find(run_id, call_id, tool, input, effect_key).await?.map_or(CallStart::Started, |found| found.outcome))
    }

    /// [`start`](Self::start), saying which call holds a key
    /// that was known already: `None` when this call started it.
    pub(crate) async fn start_or_find(
        self,
        run_id: &str,
        call_id: &str,
        tool: &str,
        input: &Value,
        effect_key: &str,
    ) -> Result<Option<JournaledCall>, JournalError> {
        limits::id("run_id", run_id)?;
        limits::id("call_id", call_id)?;
        limits::text("tool", tool)?;
        let effect_key = self.stored_key(effect_key).await?.into_owned();
        let input = input.to_string();
        owners::hold(self.journal).await?;
        let (run_id, call_id, tool, owner) = (run_id.to_owned(), call_id.to_owned(), tool.to_owned(), self.journal.owner.id.clone());
        self.journal.write(Start { effect_key, run_id, call_id, tool, input, owner }).await
    }

    /// Records a finished call as started again, before its tool runs once
    /// more: for a tool that runs on every call (`replay = false`), whose
    /// stored result is then replaced when it finishes. Says which, as
    /// [`start_or_find`](Self::start_or_find) does: `None` when this call
    /// restarted it; else the call another process left (one it restarted
    /// first is [`CallStart::UnknownOutcome`]). Atomic, as [`start`](Self::start) is:
    /// of several processes, exactly one restarts a key.
    pub(crate) async fn restart(self, call: Starting<'_>) -> Result<Option<JournaledCall>, JournalError> {
        limits::id("call_id", call.call_id)?;
        limits::id("run_id", call.run_id)?;
        let effect_key = &*self.stored_key(call.effect_key).await?;
        let input = call.input.to_string();
        owners::hold(self.journal).await?;
        on_pool!(self.journal, pool => {
            let updated = sqlx::query(RESTART)
                .bind(effect_key)
                .bind(call.call_id)
                .bind(&input)
                .bind(call.run_id)
                .bind(&self.journal.owner.id)
                .execute(pool)
                .await
                .map_err(JournalError::database("restart_call"))?;
            if updated.rows_affected() == 1 {
                return Ok(None);
            }
            let finished = sqlx::query(FINISHED_RUN).bind(call.run_id).fetch_optional(pool).await.map_err(JournalError::database("restart_call"))?;
            if finished.is_some() {
                return Err(JournalError::RunFinished { run_id: call.run_id.to_owned() });
            }
            let known = sqlx::query(KNOWN).bind(effect_key).fetch_optional(pool).await.map_err(JournalError::database("restart_call"))?;
            match known {
                Some(row) => decode_call(&row).map(Some),
                None => Err(JournalError::CallNotStarted { effect_key: effect_key.to_owned() }),
            }
        })
    }

    /// What the journal knows of an effect key, without recording anything:
    /// `None` for a key never started, else [`CallStart::Finished`] or
    /// [`CallStart::UnknownOutcome`].
    ///
    /// # Errors
    ///
    /// [`JournalError::Corrupt`] when the stored row of the key does not decode.
    pub async fn known(self, effect_key: &str) -> Result<Option<CallStart>, JournalError> {
        Ok(self.find(effect_key).await?.map(|found| found.outcome))
    }

    /// [`known`](Self::known), with the call that holds the key.
    pub(crate) async fn find(self, effect_key: &str) -> Result<Option<JournaledCall>, JournalError> {
        let effect_key = &*self.stored_key(effect_key).await?;
        on_pool!(self.journal, pool => {
            let row = sqlx::query(KNOWN).bind(effect_key).fetch_optional(pool).await.map_err(JournalError::database("known_call"))?;
            row.as_ref().map(decode_call).transpose()
        })
    }

    /// [`RunMemory::find_keyed`](crate::memory::RunMemory::find_keyed), in one statement.
    pub(crate) async fn find_keyed(self, keyed: Keyed<'_>) -> Result<Option<(Option<String>, JournaledCall)>, JournalError> {
        limits::id("run_id", keyed.run_id)?;
        limits::id("call_id", keyed.call_id)?;
        // Each key as stored, and as a long key was stored before keys were hashed.
        let forms = |key: &str| (limits::stored_key(key).into_owned(), key.to_owned());
        let (key, key_unhashed) = forms(keyed.key);
        let (earlier, earlier_unhashed) = keyed.earlier.map_or_else(|| (key.clone(), key.clone()), forms);
        let row_key: Option<(String, JournaledCall)> = on_pool!(self.journal, pool => {
            let row = sqlx::query(KEYED)
                .bind(&key)
                .bind(&key_unhashed)
                .bind(&earlier)
                .bind(&earlier_unhashed)
                .bind(keyed.run_id)
                .bind(keyed.call_id)
                .bind(keyed.tool)
                .fetch_optional(pool)
                .await
                .map_err(JournalError::database("find_keyed"))?;
            row.as_ref().map(|row| Ok::<_, JournalError>((RowReader::new(row, "journal_calls", "effect_key")?.key, decode_call(row)?))).transpose()
        })?;
        let Some((stored, call)) = row_key else { return Ok(None) };
        let named = if stored == key || stored == key_unhashed {
            Some(keyed.key.to_owned())
        } else if keyed.earlier.is_some() && (stored == earlier || stored == earlier_unhashed) {
            keyed.earlier.map(str::to_owned)
        } else {
            // The same call under a key of its own: stored as it is, unless hashed.
            Some(stored).filter(|stored| !limits::is_digest(stored))
        };
        Ok(Some((named, call)))
    }

    /// Whether the call of `effect_key` is unfinished and the journal that
    /// started it is gone ([`owners`](super::owners)): it will never finish.
    pub(crate) async fn starter_gone(self, effect_key: &str) -> Result<bool, JournalError> {
        let effect_key = &*self.stored_key(effect_key).await?;
        on_pool!(self.journal, pool => sqlx::query(STARTER_GONE)
            .bind(effect_key)
            .fetch_optional(pool)
            .await
            .map(|gone| gone.is_some())
            .map_err(JournalError::database("starter_gone")))
    }

    /// Records that `run_id` replayed the effect `effect_key`: it is kept
    /// while the run is ([`Retention`](super::Retention)).
    pub(crate) async fn note_replay(self, run_id: &str, effect_key: &str) -> Result<(), JournalError> {
        limits::id("run_id", run_id)?;
        let effect_key = &*self.stored_key(effect_key).await?;
        on_pool!(self.journal, pool => sqlx::query(REPLAYED)
            .bind(effect_key)
            .bind(run_id)
            .execute(pool)
            .await
            .map(drop)
            .map_err(JournalError::database("note_replay")))
    }

    /// Every call a run journaled, in the order they started: the calls
    /// whose effect it started (a call replayed from another run's effect,
    /// by an idempotency key, is that run's).
    ///
    /// # Errors
    ///
    /// [`JournalError::Corrupt`] when a row does not decode.
    pub async fn of_run(self, run_id: &str) -> Result<Vec<JournaledCall>, JournalError> {
        limits::id("run_id", run_id)?;
        on_pool!(self.journal, pool => {
            let rows = sqlx::query(OF_RUN).bind(run_id).fetch_all(pool).await.map_err(JournalError::database("calls_of_run"))?;
            rows.iter().map(decode_call).collect()
        })
    }

    /// Forgets the start of a call that never ran (it gave up before its
    /// start was recorded, which happened late): its key is new again.
    /// Only a start still unfinished and made by `call_id` goes. Says
    /// whether there was one.
    pub(crate) async fn withdraw(self, effect_key: &str, call_id: &str) -> Result<bool, JournalError> {
        self.withdraw_made(effect_key, call_id, None).await
    }

    /// [`withdraw`](Self::withdraw) the start `call_id` made at
    /// `started_at`, only: a start made since is kept.
    pub(crate) async fn withdraw_stale(self, effect_key: &str, call_id: &str, started_at: std::time::SystemTime) -> Result<bool, JournalError> {
        self.withdraw_made(effect_key, call_id, Some(started_at)).await
    }

    async fn withdraw_made(self, effect_key: &str, call_id: &str, started_at: Option<std::time::SystemTime>) -> Result<bool, JournalError> {
        let effect_key = &*self.stored_key(effect_key).await?;
        on_pool!(self.journal, pool => {
            let deleted = sqlx::query(WITHDRAW)
                .bind(effect_key)
                .bind(call_id)
                .bind(started_at.map(crate::memory::records::millis))
                .execute(pool)
                .await
                .map_err(JournalError::database("withdraw_call"))?;
            Ok(deleted.rows_affected() == 1)
        })
    }

    /// Stores the result of a started call.
    ///
    /// # Errors
    ///
    /// [`JournalError::CallNotStarted`] for a key never started,
    /// [`JournalError::CallAlreadyFinished`] for one whose result is
    /// already stored (a stored effect is never rewritten; only a tool that
    /// runs on every call starts its key again, `restart`),
    /// [`JournalError::Refused`] for a text holding a NUL.
    pub async fn finish(self, effect_key: &str, result: &JournaledResult) -> Result<(), JournalError> {
        let stored = self.stored_key(effect_key).await?;
        self.finish_stored(&stored, effect_key, result).await
    }

    /// The calls in doubt: started and never finished (their process died
    /// mid-call, or they are still running), whose effect may or may not
    /// have happened; oldest first, of every run or of `run_id`'s. The
    /// host checks each effect (is the order refunded?) and settles the
    /// call with [`resolve`](Self::resolve); a call of a tool
    /// with a reconcile hook is settled by the hook when it is sent again.
    /// An external call still with the host is listed too: it is completed
    /// by [`ExternalCalls::complete`](crate::ExternalCalls::complete).
    ///
    /// # Errors
    ///
    /// [`JournalError::Corrupt`] when a row does not decode,
    /// [`JournalError::Refused`] for a run id over the limits.
    pub async fn in_doubt(self, run_id: Option<&str>) -> Result<Vec<CallInDoubt>, JournalError> {
        if let Some(run_id) = run_id {
            limits::id("run_id", run_id)?;
        }
        on_pool!(self.journal, pool => {
            let rows = match run_id {
                Some(run_id) => sqlx::query(IN_DOUBT_OF_RUN).bind(run_id).fetch_all(pool).await,
                None => sqlx::query(IN_DOUBT).fetch_all(pool).await,
            }
            .map_err(JournalError::database("calls_in_doubt"))?;
            rows.iter()
                .map(|row| {
                    let reader = RowReader::new(row, "journal_calls", "effect_key")?;
                    Ok(CallInDoubt {
                        effect_key: reader.key.clone(),
                        run_id: reader.get("run_id")?,
                        call_id: reader.get("call_id")?,
                        tool: reader.get("tool")?,
                        input: reader.json("input")?,
                        started_at: reader.time("started_at")?,
                    })
                })
                .collect()
        })
    }

    /// Settles a call in doubt ([`in_doubt`](Self::in_doubt))
    /// with the result the host found it had: from then on, the call (and
    /// any call of the same effect) replays `result`. `effect_key` is the
    /// key as [`CallInDoubt::effect_key`] gives it, or as the runtime made
    /// it.
    ///
    /// # Errors
    ///
    /// [`JournalError::CallAlreadyFinished`] for a call that finished (or
    /// was settled) already: its result is never rewritten;
    /// [`JournalError::CallNotStarted`] for a key the journal does not
    /// hold; [`JournalError::Refused`] for a text holding a NUL.
    pub async fn resolve(self, effect_key: &str, result: &JournaledResult) -> Result<(), JournalError> {
        // A digest listed by `in_doubt` is the stored key itself: no
        // key the runtime makes is stored under that prefix unhashed.
        let stored = match limits::is_digest(effect_key) {
            true => Cow::Borrowed(effect_key),
            false => self.stored_key(effect_key).await?,
        };
        self.finish_stored(&stored, effect_key, result).await
    }

    /// Stores the result of the started call of the stored key `effect_key`
    /// (`given`, as the caller named it, for errors).
    async fn finish_stored(self, effect_key: &str, given: &str, result: &JournaledResult) -> Result<(), JournalError> {
        limits::text("text", &result.text)?;
        limits::text("error_code", result.error_code.as_deref().unwrap_or_default())?;
        let structured = result.structured.as_ref().map(Value::to_string);
        self.journal.write(Finish { effect_key: effect_key.to_owned(), given: given.to_owned(), result: result.clone(), structured }).await
    }

    /// The effect key as this journal stores it: its digest when it is
    /// long ([`limits`]), unless a row journaled before keys were hashed
    /// holds the key itself; that row is the effect, and is kept under it.
    pub(super) async fn stored_key<'k>(self, effect_key: &'k str) -> Result<Cow<'k, str>, JournalError> {
        let stored = limits::stored_key(effect_key);
        // No version stored a NUL on Postgres, and none will be looked up there.
        if matches!(stored, Cow::Borrowed(_)) || effect_key.contains('\0') {
            return Ok(stored);
        }
        let legacy = on_pool!(self.journal, pool => sqlx::query(EXISTS)
            .bind(effect_key)
            .fetch_optional(pool)
            .await
            .map(|row| row.is_some())
            .map_err(JournalError::database("effect key")))?;
        Ok(if legacy { Cow::Borrowed(effect_key) } else { stored })
    }
}

/// A row of `journal_calls`, read with its call and tool.
fn decode_call<'r, R: Row>(row: &'r R) -> Result<JournaledCall, JournalError>
where
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    Option<i64>: Decode<'r, R::Database> + Type<R::Database>,
    Option<bool>: Decode<'r, R::Database> + Type<R::Database>,
{
    let reader = RowReader::new(row, "journal_calls", "effect_key")?;
    Ok(JournaledCall { call_id: reader.get("call_id")?, tool: reader.get("tool")?, input: reader.json("input")?, outcome: decode_known(row)? })
}

fn decode_known<'r, R: Row>(row: &'r R) -> Result<CallStart, JournalError>
where
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    Option<i64>: Decode<'r, R::Database> + Type<R::Database>,
    Option<bool>: Decode<'r, R::Database> + Type<R::Database>,
{
    let row = RowReader::new(row, "journal_calls", "effect_key")?;
    if row.optional_time("finished_at")?.is_none() {
        return Ok(CallStart::UnknownOutcome { call_id: row.get("call_id")?, started_at: row.time("started_at")? });
    }
    let required = |column: &'static str| row.corrupt(format!("column {column} is NULL in a finished call"));
    let kind: Option<String> = row.get("kind")?;
    let kind = row.kind(&kind.ok_or_else(|| required("kind"))?)?;
    let status = match row.get::<Option<i64>>("status")? {
        None => None,
        Some(status) => Some(u16::try_from(status).map_err(|_| row.corrupt(format!("column status holds {status}, not a status")))?),
    };
    Ok(CallStart::Finished(JournaledResult {
        kind,
        text: row.get::<Option<String>>("text")?.ok_or_else(|| required("text"))?,
        structured: row.optional_json("structured")?,
        error_code: row.get("error_code")?,
        status,
        truncated: row.get::<Option<bool>>("truncated")?.ok_or_else(|| required("truncated"))?,
        ends_run: row.get::<Option<bool>>("ends_run")?.ok_or_else(|| required("ends_run"))?,
    }))
}

/// A call recorded as started ([`CallRecords::start_or_find`]): `None` when
/// this call started it, else the call that holds its key.
struct Start {
    effect_key: String,
    run_id: String,
    call_id: String,
    tool: String,
    input: String,
    owner: String,
}

impl Write for Start {
    type Output = Option<JournaledCall>;

    fn order(&self) -> (u8, &str) {
        (1, &self.effect_key)
    }

    // Each statement stands alone: the insert decides, and a read after
    // one that inserted nothing says what it found.
    fn atomic(&self) -> bool {
        false
    }

    fn send<'c>(&'c self, conn: Conn<'c>) -> BoxFuture<'c, Result<Self::Output, JournalError>> {
        let failed = JournalError::database::<sqlx::Error>;
        Box::pin(async move {
            on_conn!(conn, c => loop {
                let inserted = sqlx::query(START)
                    .bind(&self.effect_key)
                    .bind(&self.run_id)
                    .bind(&self.call_id)
                    .bind(&self.tool)
                    .bind(&self.input)
                    .bind(&self.owner)
                    .execute(&mut *c)
                    .await
                    .map_err(failed("start_call"))?;
                if inserted.rows_affected() == 1 {
                    return Ok(None);
                }
                let row = sqlx::query(KNOWN).bind(&self.effect_key).fetch_optional(&mut *c).await.map_err(failed("start_call"))?;
                if let Some(row) = row {
                    return decode_call(&row).map(Some);
                }
                // Not inserted and not there: the run is finished, or the key was
                // pruned (Journal::prune) between the two statements and is new again.
                let finished = sqlx::query(FINISHED_RUN).bind(&self.run_id).fetch_optional(&mut *c).await.map_err(failed("start_call"))?;
                if finished.is_some() {
                    return Err(JournalError::RunFinished { run_id: self.run_id.clone() });
                }
            })
        })
    }
}

/// The result of a started call stored ([`CallRecords::finish`]); `given`
/// is the key as the caller named it, for errors.
struct Finish {
    effect_key: String,
    given: String,
    result: JournaledResult,
    structured: Option<String>,
}

impl Write for Finish {
    type Output = ();

    fn order(&self) -> (u8, &str) {
        (1, &self.effect_key)
    }

    // The update decides; a read after one that changed nothing says why.
    fn atomic(&self) -> bool {
        false
    }

    fn send<'c>(&'c self, conn: Conn<'c>) -> BoxFuture<'c, Result<(), JournalError>> {
        let failed = JournalError::database::<sqlx::Error>;
        let result = &self.result;
        Box::pin(async move {
            on_conn!(conn, c => {
                let updated = sqlx::query(FINISH)
                    .bind(&self.effect_key)
                    .bind(result.kind.as_str())
                    .bind(&result.text)
                    .bind(self.structured.as_deref())
                    .bind(result.error_code.as_deref())
                    .bind(result.status.map(i64::from))
                    .bind(result.truncated)
                    .bind(result.ends_run)
                    .execute(&mut *c)
                    .await
                    .map_err(failed("finish_call"))?;
                if updated.rows_affected() == 1 {
                    return Ok(());
                }
                let known = sqlx::query(KNOWN).bind(&self.effect_key).fetch_optional(&mut *c).await.map_err(failed("finish_call"))?;
                Err(match known {
                    None => JournalError::CallNotStarted { effect_key: self.given.clone() },
                    Some(_) => JournalError::CallAlreadyFinished { effect_key: self.given.clone() },
                })
            })
        })
    }
}

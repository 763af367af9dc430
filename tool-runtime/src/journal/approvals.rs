//! Pending approvals, each one run's one call (keyed by run id and call
//! id: two runs may hold the same call id, and a decision on one never
//! touches the other): parked, listed, decided once, expired. A decision is
//! a conditional update (`WHERE decision IS NULL`), so of two deciders
//! exactly one changes the row; the other reads who did.

use sqlx::{ColumnIndex, Decode, Row, Type};

use super::rows::{RowReader, encode_decision};
use super::{
    Approval, Decided, Decision, EXPIRED_BY, GONE_BY, Journal, JournalError, ParkedCall, limits, now, on_pool, owners::owner_lives, run_not_finished,
};
use crate::memory::{Binding, Question};

/// The columns an [`Approval`] is read from.
macro_rules! columns {
    () => {
        "call_id, run_id, tool, input, user_id, parked_at, expires_at, decision, edited_input, reject_text, decided_by, decided_at, question"
    };
}

/// Parked at the journal's time, to expire its time to live (`$6`
/// milliseconds, or never) later by the same clock.
const PARK: &str = concat!(
    "INSERT INTO journal_approvals (call_id, run_id, tool, input, user_id, owner, parked_at, expires_at, kind, question) \
     SELECT $1, $2, $3, $4, $5, $7, clock.ms, clock.ms + $6, $8, $9 FROM journal_clock AS clock WHERE ",
    run_not_finished!("$2"),
    " ON CONFLICT (run_id, call_id) DO NOTHING"
);
/// Still waiting: undecided, not past its expiry by the journal's clock,
/// and, for a call a process waits for, that process still there.
macro_rules! waiting {
    () => {
        concat!("decision IS NULL AND (expires_at IS NULL OR expires_at > ", now!(), ") AND ", owner_lives!("journal_approvals"))
    };
}
const BY_RUN: &str = concat!("SELECT ", columns!(), " FROM journal_approvals WHERE run_id = $1 AND ", waiting!(), " ORDER BY parked_at, call_id");
const BY_USER: &str = concat!("SELECT ", columns!(), " FROM journal_approvals WHERE user_id = $1 AND ", waiting!(), " ORDER BY parked_at, call_id");
const UNSETTLED: &str =
    concat!("SELECT ", columns!(), " FROM journal_approvals WHERE run_id = $1 AND settled_at IS NULL ORDER BY parked_at, call_id");
const SETTLE: &str = concat!("UPDATE journal_approvals SET settled_at = ", now!(), " WHERE run_id = $1 AND call_id = $2 AND settled_at IS NULL");
const ONE: &str = concat!("SELECT ", columns!(), " FROM journal_approvals WHERE run_id = $1 AND call_id = $2");
const DECIDE: &str = concat!(
    "UPDATE journal_approvals SET decision = $3, edited_input = $4, reject_text = $5, decided_by = $6, decided_at = ",
    now!(),
    " WHERE run_id = $1 AND call_id = $2 AND ",
    waiting!(),
    " AND ",
    run_not_finished!("$1"),
    " RETURNING ",
    columns!()
);
/// How many calls wait in the runs whose ids are like `$2` or `$3`: in
/// all, and of the user `$1`.
const WAITING_IN: &str = concat!(
    "SELECT COUNT(*) AS waiting, COALESCE(SUM(CASE WHEN user_id = $1 THEN 1 ELSE 0 END), 0) AS of_user FROM journal_approvals WHERE ",
    waiting!(),
    " AND (run_id LIKE $2 OR run_id LIKE $3)"
);
/// The calls of the finished run `$1` that nobody decided, rejected with
/// `$2` by `$3`.
const REJECT_UNDECIDED: &str = concat!(
    "UPDATE journal_approvals SET decision = 'reject', reject_text = $2, decided_by = $3, decided_at = ",
    now!(),
    " WHERE run_id = $1 AND decision IS NULL"
);
/// The undecided call `$2` of run `$1`, whose waiting process is gone,
/// rejected with `$3` by `$4`.
const GONE: &str = concat!(
    "UPDATE journal_approvals SET decision = 'reject', reject_text = $3, decided_by = $4, decided_at = ",
    now!(),
    " WHERE run_id = $1 AND call_id = $2 AND decision IS NULL AND NOT ",
    owner_lives!("journal_approvals"),
    " RETURNING ",
    columns!()
);
/// What a call whose waiting process is gone reads when someone decides it.
const GONE_TEXT: &str = "The process that waited for this call's decision is gone, so it was not run.";
/// Every call of the run `$1` settled: it carries nothing out any more.
const SETTLE_ALL: &str = concat!("UPDATE journal_approvals SET settled_at = ", now!(), " WHERE run_id = $1 AND settled_at IS NULL");
const FINISHED_RUN: &str = "SELECT run_id FROM journal_runs WHERE run_id = $1 AND state = 'finished'";
/// The calls of run `$1` still undecided past their expiry, rejected with
/// `$2` by `$3`.
const EXPIRE_RUN: &str = concat!(
    "UPDATE journal_approvals SET decision = 'reject', reject_text = $2, decided_by = $3, decided_at = ",
    now!(),
    " WHERE run_id = $1 AND decision IS NULL AND expires_at <= ",
    now!(),
    " RETURNING ",
    columns!()
);
/// [`EXPIRE_RUN`] over every run: rejected with `$1` by `$2`.
const EXPIRE_ALL: &str = concat!(
    "UPDATE journal_approvals SET decision = 'reject', reject_text = $1, decided_by = $2, decided_at = ",
    now!(),
    " WHERE decision IS NULL AND expires_at <= ",
    now!(),
    " RETURNING ",
    columns!()
);

/// The pending approvals of a [`Journal`] ([`Journal::approvals`]): calls
/// parked until a human decides them, each one run's one call.
///
/// A borrowed handle, as cheap to make as a reference: take one where it
/// is used, `journal.approvals().decide(...)`.
#[derive(Clone, Copy, Debug)]
pub struct ApprovalRecords<'j> {
    pub(super) journal: &'j Journal,
}

impl ApprovalRecords<'_> {
    /// Parks a call until a human decides it. The journal's clock stamps
    /// it: it is parked now, by that clock, and expires its time to live
    /// later (`call.expires_at` less `call.parked_at`, which only say how
    /// long it may wait; `None`: it never expires).
    ///
    /// # Errors
    ///
    /// [`JournalError::AlreadyParked`] when the run parked a call of that
    /// id already (decided or not);
    /// [`JournalError::RunFinished`] when the run is finished;
    /// [`JournalError::Refused`] for an id over the [`limits`].
    pub(crate) async fn park(self, call: &ParkedCall) -> Result<(), JournalError> {
        self.park_for(call, None).await
    }

    /// [`park`](Self::park) a call that this journal's process waits for
    /// (an MCP session, for its client): once the process is gone (its
    /// lease on the journal lapsed, [`owners`](super::owners)), the call is
    /// no longer listed as waiting, and a decision on it is refused and
    /// recorded as a rejection by [`GONE_BY`].
    pub(crate) async fn park_held(self, call: &ParkedCall) -> Result<(), JournalError> {
        super::owners::hold(self.journal).await?;
        self.park_for(call, Some(&self.journal.owner.id)).await
    }

    /// [`park`](Self::park) a tool's question, and withdraw in the same
    /// transaction the start of its call's effect, `effect` (its key and
    /// the call id that started it): the call stopped at the question, and
    /// runs again from the top once it is answered, so no crash leaves the
    /// question parked and the call started.
    pub(crate) async fn park_asked(self, call: &ParkedCall, effect: Option<(&str, &str)>) -> Result<(), JournalError> {
        let effect = match effect {
            Some((key, call_id)) => Some((self.journal.calls().stored_key(key).await?.into_owned(), call_id)),
            None => None,
        };
        self.park_in(call, None, effect.as_ref().map(|(key, call_id)| (key.as_str(), *call_id))).await
    }

    async fn park_for(self, call: &ParkedCall, owner: Option<&str>) -> Result<(), JournalError> {
        self.park_in(call, owner, None).await
    }

    /// Parks `call` for `owner`, withdrawing the unfinished start `effect`
    /// (its key as stored, the call id) in the same transaction.
    async fn park_in(self, call: &ParkedCall, owner: Option<&str>, effect: Option<(&str, &str)>) -> Result<(), JournalError> {
        limits::id("call_id", &call.call_id)?;
        limits::id("run_id", &call.run_id)?;
        limits::text("tool", &call.tool)?;
        limits::optional_id("user_id", call.user_id.as_deref())?;
        let input = call.input.to_string();
        let question = serde_json::to_string(&call.question).map_err(|error| JournalError::Refused { field: "question", why: error.to_string() })?;
        let ttl = call
            .expires_at
            .map(|expires_at| expires_at.duration_since(call.parked_at).map_or(0, |ttl| i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)));
        on_pool!(self.journal, pool => {
            let failed = || JournalError::database("park");
            let park = || {
                sqlx::query(PARK)
                    .bind(&call.call_id)
                    .bind(&call.run_id)
                    .bind(&call.tool)
                    .bind(&input)
                    .bind(call.user_id.as_deref())
                    .bind(ttl)
                    .bind(owner)
                    .bind(call.question.kind())
                    .bind(&question)
            };
            let inserted = match effect {
                None => park().execute(pool).await.map_err(failed())?,
                Some((key, call_id)) => {
                    let mut tx = pool.begin().await.map_err(failed())?;
                    let inserted = park().execute(&mut *tx).await.map_err(failed())?;
                    if inserted.rows_affected() == 1 {
                        let withdraw = sqlx::query(super::calls::WITHDRAW).bind(key).bind(call_id).bind(None::<i64>);
                        withdraw.execute(&mut *tx).await.map_err(failed())?;
                        tx.commit().await.map_err(failed())?;
                    }
                    inserted
                }
            };
            if inserted.rows_affected() == 1 {
                return Ok(());
            }
            let finished = sqlx::query(FINISHED_RUN).bind(&call.run_id).fetch_optional(pool).await.map_err(failed())?;
            let parked = sqlx::query(ONE).bind(&call.run_id).bind(&call.call_id).fetch_optional(pool).await.map_err(failed())?;
            Err(match (parked, finished) {
                (None, Some(_)) => JournalError::RunFinished { run_id: call.run_id.clone() },
                _ => JournalError::AlreadyParked { run_id: call.run_id.clone(), call_id: call.call_id.clone() },
            })
        })
    }

    /// The calls of a run still waiting for a decision, oldest first: those
    /// past their time to live, which no one may decide any more, are left
    /// out.
    pub async fn pending_for_run(self, run_id: &str) -> Result<Vec<ParkedCall>, JournalError> {
        limits::id("run_id", run_id)?;
        self.pending(BY_RUN, run_id, "pending_for_run").await
    }

    /// The calls made for a user still waiting for a decision, oldest
    /// first; as [`pending_for_run`](Self::pending_for_run), without those
    /// past their time to live.
    pub async fn pending_for_user(self, user_id: &str) -> Result<Vec<ParkedCall>, JournalError> {
        limits::id("user_id", user_id)?;
        self.pending(BY_USER, user_id, "pending_for_user").await
    }

    async fn pending(self, sql: &'static str, id: &str, operation: &'static str) -> Result<Vec<ParkedCall>, JournalError> {
        on_pool!(self.journal, pool => {
            let rows = sqlx::query(sql).bind(id).fetch_all(pool).await.map_err(JournalError::database(operation))?;
            rows.iter().map(|row| decode_approval(row).map(|approval| approval.call)).collect()
        })
    }

    /// How many calls wait for a decision now (by the journal's clock) in
    /// the runs whose ids start with either of `prefixes`: in all, and of
    /// `user_id` (0 without one). What an MCP server's waiting calls are
    /// capped by.
    pub async fn waiting_in(self, prefixes: &[&str; 2], user_id: Option<&str>) -> Result<(usize, usize), JournalError> {
        limits::optional_id("user_id", user_id)?;
        // The prefixes are the runtime's own, without LIKE's wildcards.
        debug_assert!(prefixes.iter().all(|prefix| !prefix.contains(['%', '_', '\\'])));
        let [first, second] = prefixes.map(|prefix| format!("{prefix}%"));
        on_pool!(self.journal, pool => {
            let row = sqlx::query(WAITING_IN)
                .bind(user_id)
                .bind(&first)
                .bind(&second)
                .fetch_one(pool)
                .await
                .map_err(JournalError::database("waiting_in"))?;
            let count = |column: &str| row.try_get::<i64, _>(column).map(|count| usize::try_from(count).unwrap_or(0));
            Ok((count("waiting").map_err(JournalError::database("waiting_in"))?, count("of_user").map_err(JournalError::database("waiting_in"))?))
        })
    }

    /// The calls of a run that its run has not settled yet, decided or not,
    /// oldest first: what a resumed run still holds.
    pub async fn unsettled_for_run(self, run_id: &str) -> Result<Vec<Approval>, JournalError> {
        limits::id("run_id", run_id)?;
        on_pool!(self.journal, pool => {
            let rows = sqlx::query(UNSETTLED).bind(run_id).fetch_all(pool).await.map_err(JournalError::database("unsettled_for_run"))?;
            rows.iter().map(decode_approval).collect()
        })
    }

    /// Marks a call of `run_id` settled: its run read its decision and gave
    /// the model the result. Settling twice changes nothing.
    pub async fn settle(self, run_id: &str, call_id: &str) -> Result<(), JournalError> {
        limits::id("run_id", run_id)?;
        limits::id("call_id", call_id)?;
        on_pool!(self.journal, pool => {
            sqlx::query(SETTLE)
                .bind(run_id)
                .bind(call_id)
                .execute(pool)
                .await
                .map_err(JournalError::database("settle"))?;
            Ok(())
        })
    }

    /// A call `run_id` parked, and its decision, if any; `None` when the
    /// run parked no call of that id.
    pub async fn get(self, run_id: &str, call_id: &str) -> Result<Option<Approval>, JournalError> {
        limits::id("run_id", run_id)?;
        limits::id("call_id", call_id)?;
        on_pool!(self.journal, pool => {
            let row = sqlx::query(ONE).bind(run_id).bind(call_id).fetch_optional(pool).await.map_err(JournalError::database("approval"))?;
            row.as_ref().map(decode_approval).transpose()
        })
    }

    /// Decides the call `call_id` that the run `run_id` parked, recording
    /// who (`by`) and when (now, by the journal's clock, which also decides
    /// whether it came within its time to live). Exactly one decision is
    /// ever recorded per call, and it is the one its run carries out.
    ///
    /// # Errors
    ///
    /// [`JournalError::AlreadyDecided`] (naming who decided and when) when
    /// another decider or [`expire`](Self::expire) came first, or naming
    /// [`GONE_BY`] when the process that waited for the call is gone (the
    /// call is then recorded as rejected, for nothing would carry it out),
    /// [`JournalError::ApprovalExpired`] when it expired undecided,
    /// [`JournalError::RunFinished`] when its run finished (a finished run
    /// carries no decision out),
    /// [`JournalError::UnknownApproval`] when the run parked no call of that id,
    /// [`JournalError::Refused`] for a value over the [`limits`].
    pub(crate) async fn decide(self, run_id: &str, call_id: &str, decision: Decision, by: &str) -> Result<Approval, JournalError> {
        limits::id("run_id", run_id)?;
        limits::id("call_id", call_id)?;
        limits::text("decided_by", by)?;
        let (name, edited, text) = encode_decision(&decision);
        limits::text("reject_text", text.unwrap_or_default())?;
        on_pool!(self.journal, pool => {
            let decided = sqlx::query(DECIDE)
                .bind(run_id)
                .bind(call_id)
                .bind(name)
                .bind(edited.as_deref())
                .bind(text)
                .bind(by)
                .fetch_optional(pool)
                .await
                .map_err(JournalError::database("decide"))?;
            if let Some(row) = decided {
                return decode_approval(&row);
            }
            let row = sqlx::query(ONE).bind(run_id).bind(call_id).fetch_optional(pool).await.map_err(JournalError::database("decide"))?;
            let Some(row) = row else {
                return Err(JournalError::UnknownApproval { run_id: run_id.to_owned(), call_id: call_id.to_owned() });
            };
            let approval = decode_approval(&row)?;
            if approval.decided.is_none() {
                // Undecided and not decided now: its waiting process may be gone.
                let gone = sqlx::query(GONE).bind(run_id).bind(call_id).bind(GONE_TEXT).bind(GONE_BY).fetch_optional(pool).await;
                if let Some(gone) = gone.map_err(JournalError::database("decide"))? {
                    let Approval { decided: Some(Decided { by, at, .. }), .. } = decode_approval(&gone)? else {
                        return Err(JournalError::corrupt("journal_approvals", call_id, "rejected as gone, yet read back undecided"));
                    };
                    return Err(JournalError::AlreadyDecided { run_id: run_id.to_owned(), call_id: call_id.to_owned(), by, at });
                }
            }
            let finished = sqlx::query(FINISHED_RUN).bind(run_id).fetch_optional(pool).await.map_err(JournalError::database("decide"))?;
            Err(match (approval.decided, approval.call.expires_at, finished) {
                (Some(Decided { by, at, .. }), ..) => JournalError::AlreadyDecided { run_id: run_id.to_owned(), call_id: call_id.to_owned(), by, at },
                (None, _, Some(_)) => JournalError::RunFinished { run_id: run_id.to_owned() },
                (None, Some(expires_at), None) => JournalError::ApprovalExpired { run_id: run_id.to_owned(), call_id: call_id.to_owned(), expires_at },
                // The update applies to every undecided call without an
                // expiry, so such a row means the table changed under us.
                (None, None, None) => JournalError::corrupt("journal_approvals", call_id, "undecided and without expiry, yet the decision did not apply"),
            })
        })
    }

    /// Rejects every call of the run `run_id` still waiting past its
    /// expiry by the journal's clock, with `text` for the model, decided by
    /// [`EXPIRED_BY`]; returns them, oldest first. Another run's calls are
    /// its own to expire.
    pub async fn expire_run(self, run_id: &str, text: &str) -> Result<Vec<Approval>, JournalError> {
        limits::id("run_id", run_id)?;
        self.expire_in(Some(run_id), text).await
    }

    /// Rejects every call of the run `run_id` that nobody decided, with
    /// `text` for the model, by [`GONE_BY`], and marks every call of it
    /// settled: what a run that finished leaves, which carries nothing out
    /// any more ([`Run::finish`](crate::Run::finish)), the calls other
    /// processes parked in it included. A person deciding one later is told
    /// ([`JournalError::AlreadyDecided`] naming [`GONE_BY`]).
    pub async fn end_run(self, run_id: &str, text: &str) -> Result<(), JournalError> {
        limits::id("run_id", run_id)?;
        limits::text("reject_text", text)?;
        on_pool!(self.journal, pool => {
            let failed = || JournalError::database("end_run");
            let mut tx = pool.begin().await.map_err(failed())?;
            sqlx::query(REJECT_UNDECIDED).bind(run_id).bind(text).bind(GONE_BY).execute(&mut *tx).await.map_err(failed())?;
            sqlx::query(SETTLE_ALL).bind(run_id).execute(&mut *tx).await.map_err(failed())?;
            tx.commit().await.map_err(failed())
        })
    }

    /// [`expire_run`](Self::expire_run) over every run of the journal:
    /// what an approvals inbox sweeps.
    pub async fn expire(self, text: &str) -> Result<Vec<Approval>, JournalError> {
        self.expire_in(None, text).await
    }

    /// The calls past their expiry of `run_id`'s run, or of every run,
    /// rejected with `text`.
    async fn expire_in(self, run_id: Option<&str>, text: &str) -> Result<Vec<Approval>, JournalError> {
        limits::text("reject_text", text)?;
        on_pool!(self.journal, pool => {
            let query = match run_id {
                Some(run_id) => sqlx::query(EXPIRE_RUN).bind(run_id),
                None => sqlx::query(EXPIRE_ALL),
            };
            let rows = query.bind(text).bind(EXPIRED_BY).fetch_all(pool).await.map_err(JournalError::database("expire"))?;
            rows.iter().map(decode_approval).collect::<Result<Vec<_>, _>>().map(oldest_first)
        })
    }
}

/// `approvals`, oldest first (an update returns its rows in no order).
fn oldest_first(mut approvals: Vec<Approval>) -> Vec<Approval> {
    approvals.sort_by(|a, b| (a.call.parked_at, &a.call.call_id).cmp(&(b.call.parked_at, &b.call.call_id)));
    approvals
}

pub(super) fn decode_approval<'r, R: Row>(row: &'r R) -> Result<Approval, JournalError>
where
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    Option<i64>: Decode<'r, R::Database> + Type<R::Database>,
{
    let row = RowReader::new(row, "journal_approvals", "call_id")?;
    let decision: Option<String> = row.get("decision")?;
    let decided = match decision {
        None => None,
        Some(decision) => {
            let decision = row.decision(&decision, row.optional_json("edited_input")?, row.get("reject_text")?)?;
            let by: Option<String> = row.get("decided_by")?;
            let at = row.optional_time("decided_at")?;
            match (by, at) {
                (Some(by), Some(at)) => Some(Decided { decision, by, at }),
                _ => return Err(row.corrupt("a decision without decided_by and decided_at")),
            }
        }
    };
    let input = row.json("input")?;
    // An approval parked before version 9 is bound to its arguments alone.
    let question = match row.optional_json("question")? {
        None => Question::Approval(Binding::of_arguments(&input)),
        Some(question) => serde_json::from_value(question).map_err(|error| row.corrupt(format!("column question does not decode: {error}")))?,
    };
    let call = ParkedCall {
        run_id: row.get("run_id")?,
        tool: row.get("tool")?,
        input,
        user_id: row.get("user_id")?,
        parked_at: row.time("parked_at")?,
        expires_at: row.optional_time("expires_at")?,
        question,
        call_id: row.key,
    };
    Ok(Approval { call, decided })
}

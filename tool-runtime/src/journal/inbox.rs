//! What an approvals inbox reads from the journal: the calls waiting for a
//! decision, newest first; the decisions made, newest first, each with the
//! outcome its run gave the call once it settled it; and a change feed, so
//! that a page updates when another process parks, decides, expires or
//! settles a call.
//!
//! The change feed has two sources. [`InboxQueries::mark`] is a cheap
//! poll on either backend: the number of calls waiting and the newest
//! park, decision, settling and finished call, each read from an index
//! (schema version 5), so a reader compares two marks to learn whether
//! anything it shows may have changed. On Postgres,
//! [`InboxQueries::changes`] also listens on the channel `journal_inbox`,
//! which a trigger notifies after every such write, so a reader learns of
//! a change as its transaction commits instead of at its next poll.

use std::time::SystemTime;

use sqlx::{AssertSqlSafe, ColumnIndex, Decode, Row, Type};

use super::approvals::decode_approval;
use super::rows::RowReader;
use super::{Approval, Journal, JournalError, ParkedCall, on_pool};
use crate::memory::records::millis;
use crate::result::ResultKind;

/// The most rows one inbox query returns: a page shows the newest calls,
/// and a list longer than this is cut (the page says so).
pub const MAX_INBOX_ROWS: u32 = 500;

/// The questions a person answers: approvals, and tools' forms (a
/// completion or the roots are the MCP client's to give).
macro_rules! for_people {
    () => {
        " AND a.kind IN ('approval', 'form')"
    };
}
/// The waiting calls; `$1` is now, `$2` the limit; [`page_clauses`] come
/// before the order.
const PENDING: &str = concat!(
    "SELECT call_id, run_id, tool, input, user_id, parked_at, expires_at, decision, edited_input, reject_text, decided_by, decided_at, question \
     FROM journal_approvals a WHERE decision IS NULL AND (expires_at IS NULL OR expires_at > $1)",
    for_people!()
);
const PENDING_ORDER: &str = " ORDER BY a.parked_at DESC, a.run_id DESC, a.call_id DESC LIMIT $2";
/// The decided calls; `$1` is the limit; [`page_clauses`] come before
/// the order.
const DECIDED: &str = concat!(
    "SELECT a.call_id, a.run_id, a.tool, a.input, a.user_id, a.parked_at, a.expires_at, a.decision, a.edited_input, \
     a.reject_text, a.decided_by, a.decided_at, a.settled_at, a.question, \
     (SELECT c.kind FROM journal_calls c WHERE c.run_id = a.run_id AND c.call_id = a.call_id AND c.finished_at IS NOT NULL \
      ORDER BY c.finished_at DESC LIMIT 1) AS outcome_kind, \
     (SELECT c.text FROM journal_calls c WHERE c.run_id = a.run_id AND c.call_id = a.call_id AND c.finished_at IS NOT NULL \
      ORDER BY c.finished_at DESC LIMIT 1) AS outcome_text, \
     (SELECT c.finished_at FROM journal_calls c WHERE c.run_id = a.run_id AND c.call_id = a.call_id AND c.finished_at IS NOT NULL \
      ORDER BY c.finished_at DESC LIMIT 1) AS outcome_at \
     FROM journal_approvals a WHERE a.decision IS NOT NULL",
    for_people!()
);
const DECIDED_ORDER: &str = " ORDER BY a.decided_at DESC, a.run_id DESC, a.call_id DESC LIMIT $1";
const MARK: &str = "SELECT (SELECT COUNT(*) FROM journal_approvals WHERE decision IS NULL) AS waiting, \
     (SELECT MAX(parked_at) FROM journal_approvals) AS parked, \
     (SELECT MAX(decided_at) FROM journal_approvals) AS decided, \
     (SELECT MAX(settled_at) FROM journal_approvals) AS settled, \
     (SELECT MAX(finished_at) FROM journal_calls) AS finished, \
     (SELECT MIN(expires_at) FROM journal_approvals WHERE decision IS NULL) AS next_expiry";

/// A decided call as an inbox shows it: the approval and its decision,
/// when its run settled it, and what the call gave, once it ran.
#[derive(Clone, Debug, PartialEq)]
pub struct SettledDecision {
    /// The parked call and its decision (always `Some` here).
    pub approval: Approval,
    /// When its run read the decision and gave the model the result;
    /// `None` while the run has not come back for it.
    pub settled_at: Option<SystemTime>,
    /// The finished call's journaled result, when the call ran with an
    /// effect the journal keeps (a tool that is neither `read_only` nor
    /// `idempotent`): `None` for a rejected call, one not run yet, or one
    /// whose effect is not journaled.
    pub outcome: Option<Outcome>,
}

/// How a call that ran ended, as the effect journal keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// How the call ended.
    pub kind: ResultKind,
    /// What the model read.
    pub text: String,
    /// When the result was journaled.
    pub at: SystemTime,
}

/// A summary of everything an inbox shows; two marks that differ mean
/// that something changed between them (the converse holds but for calls
/// that expire without a write, which a reader tells from their expiry).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InboxMark {
    waiting: i64,
    parked: Option<i64>,
    decided: Option<i64>,
    settled: Option<i64>,
    finished: Option<i64>,
    next_expiry: Option<i64>,
}

impl InboxMark {
    /// When the first call still waiting expires, if one does: a reader
    /// that shows it changes then, with no write to tell it so (unless it
    /// expires the call itself, [`ApprovalRecords::expire`](super::ApprovalRecords::expire)).
    pub fn next_expiry(&self) -> Option<SystemTime> {
        self.next_expiry.and_then(|ms| u64::try_from(ms).ok()).map(|ms| std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms))
    }
}

/// What an approvals inbox reads from a [`Journal`] ([`Journal::inbox`]):
/// the calls waiting for a decision and the decisions made, newest first,
/// and a change feed: [`mark`](Self::mark), a cheap poll on either
/// backend, and on Postgres [`changes`](Self::changes), told of each change
/// as it commits.
///
/// A borrowed handle, as cheap to make as a reference: take one where it
/// is used, `journal.inbox().mark()`.
#[derive(Clone, Copy, Debug)]
pub struct InboxQueries<'j> {
    pub(super) journal: &'j Journal,
}

/// Which rows of an inbox list one query reads: the calls of some users
/// only, after where the page before ended, at most how many. A list is
/// read newest first, a page at a time, so that a reader looking for one
/// approver's calls among many others' stops once it has enough and holds
/// no more than a page of calls at once.
#[derive(Clone, Copy, Debug)]
pub struct InboxPage<'a> {
    /// Only the calls made for these users (by `user_id`; an index of the
    /// waiting calls by user answers it); `None`: everyone's.
    pub users: Option<&'a [String]>,
    /// Where the page before ended ([`Paged::next`]); `None`: the first
    /// page.
    pub after: Option<&'a InboxCursor>,
    /// How many rows at most (and at most [`MAX_INBOX_ROWS`]).
    pub limit: u32,
}

impl InboxPage<'_> {
    /// The first page of everyone's calls, of at most `limit` rows.
    pub fn first(limit: u32) -> Self {
        InboxPage { users: None, after: None, limit }
    }
}

/// One page of an inbox list, and where the next one starts.
#[derive(Clone, Debug, PartialEq)]
pub struct Paged<T> {
    /// The rows, newest first.
    pub rows: Vec<T>,
    /// Where the next page starts ([`InboxPage::after`]), when this one
    /// was full: there may be more.
    pub next: Option<InboxCursor>,
}

/// Where a page of an inbox list ended: the time, run and call of its last
/// row, which the next page reads after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InboxCursor {
    at: i64,
    run_id: String,
    call_id: String,
}

impl InboxCursor {
    fn of(at: SystemTime, call: &ParkedCall) -> Self {
        InboxCursor { at: millis(at), run_id: call.run_id.clone(), call_id: call.call_id.clone() }
    }
}

/// The clauses that keep a page to its users and to the rows after its
/// cursor (in the list's order by `time`, then run and call, descending),
/// their parameters numbered from `$first`.
fn page_clauses(page: &InboxPage<'_>, time: &str, first: usize) -> String {
    let mut clauses = String::new();
    let mut next = first;
    if page.after.is_some() {
        let (at, run, call) = (next, next + 1, next + 2);
        clauses.push_str(&format!(
            " AND (a.{time} < ${at} OR (a.{time} = ${at} AND (a.run_id < ${run} OR (a.run_id = ${run} AND a.call_id < ${call}))))"
        ));
        next += 3;
    }
    if let Some(users) = page.users {
        let placeholders: Vec<String> = (next..next + users.len()).map(|n| format!("${n}")).collect();
        clauses.push_str(&format!(" AND a.user_id IN ({})", placeholders.join(", ")));
    }
    clauses
}

/// Binds a page's parameters, in [`page_clauses`]'s order.
macro_rules! bind_page {
    ($query:expr, $page:expr) => {{
        let mut query = $query;
        if let Some(after) = $page.after {
            query = query.bind(after.at).bind(after.run_id.as_str()).bind(after.call_id.as_str());
        }
        for user in $page.users.unwrap_or_default() {
            query = query.bind(user.as_str());
        }
        query
    }};
}

impl InboxQueries<'_> {
    /// The calls still waiting for a decision whose expiry is after `now`
    /// (or that never expire), newest first, at most `limit` (and at most
    /// [`MAX_INBOX_ROWS`]).
    ///
    /// # Errors
    ///
    /// [`JournalError::Database`] when the query fails,
    /// [`JournalError::Corrupt`] for a row that does not decode.
    pub async fn pending_newest(self, now: SystemTime, limit: u32) -> Result<Vec<Approval>, JournalError> {
        Ok(self.pending_page(now, &InboxPage::first(limit)).await?.rows)
    }

    /// One page of the calls still waiting for a decision whose expiry is
    /// after `now` (or that never expire), newest first: of `page`'s users,
    /// after its cursor.
    ///
    /// # Errors
    ///
    /// As [`pending_newest`](Self::pending_newest).
    pub async fn pending_page(self, now: SystemTime, page: &InboxPage<'_>) -> Result<Paged<Approval>, JournalError> {
        if page.users.is_some_and(<[String]>::is_empty) {
            return Ok(Paged { rows: Vec::new(), next: None });
        }
        let limit = page.limit.min(MAX_INBOX_ROWS);
        let text = format!("{PENDING}{}{PENDING_ORDER}", page_clauses(page, "parked_at", 3));
        let rows: Vec<Approval> = on_pool!(self.journal, pool => {
            let query = sqlx::query(AssertSqlSafe(text.as_str())).bind(millis(now)).bind(i64::from(limit));
            let rows = bind_page!(query, page).fetch_all(pool).await.map_err(JournalError::database("pending_page"))?;
            rows.iter().map(decode_approval).collect::<Result<Vec<_>, _>>()
        })?;
        let next = rows.last().filter(|_| rows.len() == limit as usize).map(|last| InboxCursor::of(last.call.parked_at, &last.call));
        Ok(Paged { rows, next })
    }

    /// The decided calls, newest decision first, at most `limit` (and at
    /// most [`MAX_INBOX_ROWS`]): who decided, when and how, and the
    /// outcome once the run settled the call.
    ///
    /// # Errors
    ///
    /// As [`pending_newest`](Self::pending_newest).
    pub async fn decisions_newest(self, limit: u32) -> Result<Vec<SettledDecision>, JournalError> {
        Ok(self.decisions_page(&InboxPage::first(limit)).await?.rows)
    }

    /// One page of the decided calls, newest decision first: of `page`'s
    /// users, after its cursor. (No index reads the decided calls by user:
    /// the database walks the decisions newest first until it has the
    /// page.)
    ///
    /// # Errors
    ///
    /// As [`pending_newest`](Self::pending_newest).
    pub async fn decisions_page(self, page: &InboxPage<'_>) -> Result<Paged<SettledDecision>, JournalError> {
        if page.users.is_some_and(<[String]>::is_empty) {
            return Ok(Paged { rows: Vec::new(), next: None });
        }
        let limit = page.limit.min(MAX_INBOX_ROWS);
        let text = format!("{DECIDED}{}{DECIDED_ORDER}", page_clauses(page, "decided_at", 2));
        let rows: Vec<SettledDecision> = on_pool!(self.journal, pool => {
            let query = sqlx::query(AssertSqlSafe(text.as_str())).bind(i64::from(limit));
            let rows = bind_page!(query, page).fetch_all(pool).await.map_err(JournalError::database("decisions_page"))?;
            rows.iter().map(decode_decision).collect::<Result<Vec<_>, _>>()
        })?;
        let last = rows.last().filter(|_| rows.len() == limit as usize);
        let next = last.and_then(|last| Some(InboxCursor::of(last.approval.decided.as_ref()?.at, &last.approval.call)));
        Ok(Paged { rows, next })
    }

    /// The journal's [`InboxMark`] now: poll it, and read the lists again
    /// when it changed.
    ///
    /// # Errors
    ///
    /// [`JournalError::Database`] when the query fails.
    pub async fn mark(self) -> Result<InboxMark, JournalError> {
        on_pool!(self.journal, pool => {
            let row = sqlx::query(MARK).fetch_one(pool).await.map_err(JournalError::database("inbox_mark"))?;
            let get = |column: &'static str| row.try_get::<Option<i64>, _>(column).map_err(JournalError::database("inbox_mark"));
            Ok(InboxMark {
                waiting: get("waiting")?.unwrap_or(0),
                parked: get("parked")?,
                decided: get("decided")?, settled: get("settled")?,
                finished: get("finished")?,
                next_expiry: get("next_expiry")?,
            })
        })
    }

    /// A listener told of every change an inbox shows as it commits, on a
    /// Postgres journal; `None` on SQLite, which cannot notify another
    /// process (poll [`mark`](Self::mark) there). It holds one
    /// of the journal's connections until it is dropped (or the journal is
    /// closed, which a waiting [`InboxChanges::next`] returns as an error).
    ///
    /// # Errors
    ///
    /// [`JournalError::Database`] when the listening connection cannot be
    /// opened.
    pub async fn changes(self) -> Result<Option<InboxChanges>, JournalError> {
        match &self.journal.backend {
            #[cfg(feature = "postgres")]
            super::Backend::Postgres(pool) => {
                let mut listener = sqlx::postgres::PgListener::connect_with(pool).await.map_err(JournalError::database("inbox_changes"))?;
                listener.listen(CHANNEL).await.map_err(JournalError::database("inbox_changes"))?;
                Ok(Some(InboxChanges { listener }))
            }
            #[allow(unreachable_patterns, reason = "SQLite, or no backend at all")]
            _ => Ok(None),
        }
    }
}

/// The Postgres channel the journal's trigger notifies (schema version 5).
#[cfg(feature = "postgres")]
const CHANNEL: &str = "journal_inbox";

/// Notifications of changes an inbox shows, from a Postgres journal
/// ([`InboxQueries::changes`]).
#[derive(Debug)]
pub struct InboxChanges {
    #[cfg(feature = "postgres")]
    listener: sqlx::postgres::PgListener,
}

impl InboxChanges {
    /// Waits for the next change. After the connection was lost and made
    /// again, this returns at once: changes may have been missed, so the
    /// reader reads its lists again either way.
    ///
    /// # Errors
    ///
    /// [`JournalError::Database`] when the connection is lost and cannot
    /// be made again.
    pub async fn next(&mut self) -> Result<(), JournalError> {
        #[cfg(feature = "postgres")]
        {
            self.listener.try_recv().await.map_err(JournalError::database("inbox_changes"))?;
            Ok(())
        }
        #[cfg(not(feature = "postgres"))]
        std::future::pending().await
    }
}

fn decode_decision<'r, R: Row>(row: &'r R) -> Result<SettledDecision, JournalError>
where
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    Option<i64>: Decode<'r, R::Database> + Type<R::Database>,
{
    let approval = decode_approval(row)?;
    let reader = RowReader::new(row, "journal_approvals", "call_id")?;
    let settled_at = reader.optional_time("settled_at")?;
    let kind: Option<String> = reader.get("outcome_kind")?;
    let outcome = match kind {
        None => None,
        Some(kind) => Some(Outcome {
            kind: reader.kind(&kind)?,
            text: reader.get::<Option<String>>("outcome_text")?.unwrap_or_default(),
            at: reader.optional_time("outcome_at")?.ok_or_else(|| reader.corrupt("a finished call without finished_at"))?,
        }),
    };
    Ok(SettledDecision { approval, settled_at, outcome })
}

//! The journal: what durable runs store, so that a run, its calls' effects
//! and its pending approvals outlive the process that started them.
//!
//! A [`Journal`] is one async API over two backends, chosen by the URL
//! given to [`Journal::open`]:
//!
//! - SQLite (feature `sqlite`, on by default): a file, created when
//!   missing, in WAL mode with a busy timeout, so that several processes on
//!   one machine can share it; an operation SQLite refuses because another
//!   process holds the lock is run again for up to 20 s (or until the
//!   deadline of the call that runs it) before its error is returned.
//!   `sqlite:path` or a plain file path.
//! - Postgres (feature `postgres`): `postgres://...`, for several
//!   instances sharing one database.
//!
//! Both keep the same values: ids are at most
//! [`MAX_ID_BYTES`](limits::MAX_ID_BYTES) long, no text holds a NUL, and a
//! long effect key is stored as its digest ([`limits`]); a value outside
//! the limits is refused before anything is written
//! ([`JournalError::Refused`]).
//!
//! It stores four things, each group behind a handle borrowed from the
//! journal, a type of its own (`journal.runs().load(id)`):
//!
//! - **runs** ([`journal.runs()`](Journal::runs), [`RunRecords`]) by the
//!   host's id: step index, tools executed, failed calls per tool, how the
//!   run ended ([`RunRecord`]; [`save`](RunRecords::save),
//!   [`load`](RunRecords::load)). A durable run's step is added to the
//!   record, not written over it: of several processes stepping one run at
//!   once, none loses another's steps, tools or failures, and a finished
//!   run stays finished; what a step writes does not grow with the run;
//! - **calls** ([`journal.calls()`](Journal::calls), [`CallRecords`]), the
//!   effect journal, by effect key: a call is recorded as started before
//!   its tool runs and as finished with its result after
//!   ([`start`](CallRecords::start), [`finish`](CallRecords::finish)). Starting a key
//!   that is already known says what is known instead ([`CallStart`]): the
//!   stored result, or that the outcome is unknown; of two processes
//!   starting one key, exactly one gets [`CallStart::Started`]. A call
//!   started and never finished is in doubt: the host lists those
//!   ([`in_doubt`](CallRecords::in_doubt)) and settles each with the result it
//!   finds the call had ([`resolve`](CallRecords::resolve));
//! - **pending approvals** ([`journal.approvals()`](Journal::approvals),
//!   [`ApprovalRecords`]) by run and call id (two runs may hold the same call
//!   id): parked ([`question::park`](crate::question::park)), listed by
//!   run and by user, decided once ([`question::decide`](crate::question::decide),
//!   the one API every decider goes through: of two deciders exactly one wins, the
//!   other gets [`JournalError::AlreadyDecided`] naming who won), expired
//!   into rejections ([`expire`](ApprovalRecords::expire));
//! - **tasks** ([`journal.tasks()`](Journal::tasks), [`TaskRecords`]) of the MCP
//!   server (feature `mcp`), one record each, which any instance on the
//!   journal reads and moves.
//!
//! An approvals inbox reads the calls waiting and the decisions made, and
//! follows the journal's changes, through
//! [`journal.inbox()`](Journal::inbox) ([`InboxQueries`]).
//!
//! The journal keeps all of it until the host prunes it:
//! [`prune`](Journal::prune) with a [`Retention`] forgets finished runs
//! (an MCP session's run finishes when the session ends) and ended tasks
//! older than it, never a run still going, an effect it stands on, or an
//! approval not settled ([`Retention`] says what goes and what stays).
//!
//! The writes of a durable run's calls and steps that wait for the
//! database at once, from many runs, share one transaction and so one
//! commit (`group.rs`): each is answered once that transaction committed,
//! and one the database refuses is sent again alone, so that it fails
//! alone.
//!
//! The schema is created and migrated when a journal is opened; a database
//! whose schema is newer than this code is refused
//! ([`JournalError::SchemaTooNew`]), and a row that does not decode is an
//! error naming its table and key ([`JournalError::Corrupt`]), never
//! skipped.
//!
//! This is the storage layer. Durable runs are built on it:
//! [`Run::durable`](crate::Run::durable) starts or resumes a run by id and
//! journals each call's effect around its execution, and
//! `McpServer::with_journal` (feature `mcp`) makes
//! each MCP session's run durable. A pool belongs to the Tokio runtime that
//! opened it: open the journal on the runtime that uses it.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use serde_json::json;
//! use tool_runtime::journal::{CallStart, Journal, JournaledResult};
//! use tool_runtime::ResultKind;
//!
//! let dir = std::env::temp_dir().join(format!("journal-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let journal = Journal::open(dir.join("journal.db").to_str().unwrap()).await?;
//!
//! let key = "refund:A-1";
//! assert_eq!(journal.calls().start("thread-1", "c1", "refund", &json!({"order": "A-1"}), key).await?, CallStart::Started);
//! // ... the tool runs ...
//! let result = JournaledResult {
//!     kind: ResultKind::Success, text: "refunded".into(), structured: None,
//!     error_code: None, status: None, truncated: false, ends_run: false,
//! };
//! journal.calls().finish(key, &result).await?;
//! // The same effect again (a step re-sent after a crash): its result, not a second refund.
//! assert_eq!(journal.calls().start("thread-1", "c1", "refund", &json!({"order": "A-1"}), key).await?, CallStart::Finished(result));
//! # journal.close().await; std::fs::remove_dir_all(&dir)?; Ok(()) }
//! ```

// Built with the feature `journal` alone, no query ever runs (no journal
// opens): what only the backends use is unused there, and only there.
#![cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(unused))]

mod approvals;
mod busy;
mod calls;
mod group;
mod inbox;
pub mod limits;
mod owners;
mod retention;
mod rows;
mod run_memory;
mod runs;
mod schema;
mod tasks;

pub use crate::memory::{
    Approval, CallInDoubt, CallStart, Decided, Decision, EXPIRED_BY, GONE_BY, JournalError, JournaledCall, JournaledResult, ParkedCall, RunRecord,
};
pub use crate::memory::{TaskRecord, TaskState};
pub use crate::run::DurableError;
pub use approvals::ApprovalRecords;
pub use calls::CallRecords;
pub use inbox::{InboxChanges, InboxCursor, InboxMark, InboxPage, InboxQueries, MAX_INBOX_ROWS, Outcome, Paged, SettledDecision};
pub use retention::{Pruned, Retention};
pub use runs::RunRecords;
pub use tasks::TaskRecords;

/// The journal of durable runs, over SQLite or Postgres. Cheap to clone:
/// clones share one connection pool.
///
/// See the [module docs](self) for what it stores.
#[derive(Clone, Debug)]
pub struct Journal {
    backend: Backend,
    /// When set, SQLite's busy answers are tried again only until then
    /// ([`busy`]): a journal bounded by a call's deadline ([`Journal::until`]).
    busy_until: Option<std::time::Instant>,
    /// This journal as an owner of calls, with its lease ([`owners`]).
    owner: std::sync::Arc<owners::Owner>,
    /// The writes waiting to share a transaction ([`group`]).
    groups: std::sync::Arc<group::Groups>,
}

#[derive(Clone, Debug)]
enum Backend {
    #[cfg(feature = "sqlite")]
    Sqlite(sqlx::SqlitePool),
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgPool),
    /// A build with the feature `journal` and neither backend: the types
    /// are there, and no journal can be opened ([`Journal::open`] says to
    /// enable `sqlite` or `postgres`).
    #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
    #[allow(dead_code, reason = "never built: no journal opens without a backend")]
    None(std::convert::Infallible),
}

/// Runs `$body` with `$pool` bound to the backend's pool: the queries are
/// the same text on both backends (both take `$1` parameters), only the
/// driver's types differ. The body is run again, whole, while SQLite says
/// another connection holds the lock ([`busy`]); a `return` in it ends
/// that one try.
macro_rules! on_pool {
    ($journal:expr, $pool:ident => $body:expr) => {{
        let mut busy = $crate::journal::busy::Retries::until($journal.busy_until);
        loop {
            let result = async {
                match &$journal.backend {
                    #[cfg(feature = "sqlite")]
                    $crate::journal::Backend::Sqlite($pool) => $body,
                    #[cfg(feature = "postgres")]
                    $crate::journal::Backend::Postgres($pool) => $body,
                    #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
                    $crate::journal::Backend::None(never) => match *never {},
                }
            }
            .await;
            if !busy.again(&result).await {
                break result;
            }
        }
    }};
}
use on_pool;

/// The journal's one clock in a query: milliseconds since the Unix epoch,
/// read from the database (the view `journal_clock` of migration 8:
/// Postgres's `clock_timestamp()`, SQLite's `unixepoch('subsec')`), never
/// from a process's own clock, so that processes whose clocks disagree
/// agree on when an approval expires.
macro_rules! now {
    () => {
        "(SELECT ms FROM journal_clock)"
    };
}
use now;

/// In a query: the run `$run` (an expression, most often a parameter) is
/// not finished. Read in the statement that starts an effect or parks or
/// decides a call, so that a finished run starts, parks and carries out
/// nothing, whatever a process that still holds it as going believes.
macro_rules! run_not_finished {
    ($run:literal) => {
        concat!("NOT EXISTS (SELECT 1 FROM journal_runs AS run WHERE run.run_id = ", $run, " AND run.state = 'finished')")
    };
}
use run_not_finished;

impl Journal {
    /// Opens the journal at `url`, creating and migrating its schema.
    ///
    /// - `sqlite:path/to/file.db` or a plain path: a SQLite file (feature
    ///   `sqlite`), created when missing, in WAL mode, with a 5 s busy
    ///   timeout.
    /// - `postgres://user:password@host:port/database`: Postgres (feature
    ///   `postgres`). The database must exist; the journal's tables are
    ///   created in it (all named `journal_*`). A server that does not
    ///   answer within 5 s, or refuses the connection, fails the open at
    ///   once with the driver's reason.
    ///
    /// # Errors
    ///
    /// [`JournalError::Url`] for a URL this build cannot open (an empty
    /// one, an in-memory SQLite database, which would not outlive the
    /// process, or a backend whose feature is off), [`JournalError::Open`]
    /// when the database cannot be reached (saying why: refused, no such
    /// database, ...), [`JournalError::SchemaTooNew`] when a newer
    /// tool-runtime wrote it.
    pub async fn open(url: &str) -> Result<Journal, JournalError> {
        let journal = Journal { backend: connect(url).await?, busy_until: None, owner: owners::Owner::new(), groups: Default::default() };
        schema::migrate(&journal).await?;
        Ok(journal)
    }

    /// This journal, its operations tried again while SQLite says busy only
    /// until `deadline` (or [`busy::BUSY_BUDGET`], whichever is first): for
    /// the writes of a call, which must not outlast its deadline.
    pub(crate) fn until(&self, deadline: std::time::Instant) -> Journal {
        Journal { busy_until: Some(deadline), ..self.clone() }
    }

    /// Sends `write`, alone or in a group of the writes that wait with it
    /// ([`group`]); its answer once it is committed.
    pub(crate) async fn write<W: group::Write>(&self, write: W) -> Result<W::Output, JournalError> {
        group::send(&self.backend, &self.groups, self.busy_until, write).await
    }

    /// The schema version this code writes and reads.
    pub const SCHEMA_VERSION: i64 = schema::LATEST;

    /// The effect journal: each call's effect by its key ([`CallRecords`]).
    pub fn calls(&self) -> CallRecords<'_> {
        CallRecords { journal: self }
    }

    /// The runs, by the host's id ([`RunRecords`]).
    pub fn runs(&self) -> RunRecords<'_> {
        RunRecords { journal: self }
    }

    /// The pending approvals, by run and call id ([`ApprovalRecords`]).
    pub fn approvals(&self) -> ApprovalRecords<'_> {
        ApprovalRecords { journal: self }
    }

    /// The MCP tasks, by task id ([`TaskRecords`]).
    pub fn tasks(&self) -> TaskRecords<'_> {
        TaskRecords { journal: self }
    }

    /// What an approvals inbox reads: the newest calls waiting and
    /// decisions made, and the journal's changes ([`InboxQueries`]).
    pub fn inbox(&self) -> InboxQueries<'_> {
        InboxQueries { journal: self }
    }

    /// Deletes what `retention` lets go: the finished calls and settled
    /// approvals of runs finished before it, those runs' records (their
    /// executed tools and failures included), finished calls journaled
    /// without a run record, MCP tasks that ended or expired (with their
    /// calls), and approvals of MCP revision 2026-07-28 that expired; and
    /// calls in doubt of runs finished before the longer retention for
    /// them. Never a row of a run still going, an effect such a run
    /// replayed, a task going on, a call in doubt of a run within that
    /// retention, or an approval not settled (see [`Retention`]).
    ///
    /// The journal does not prune by itself: call it from the host, on a
    /// schedule, in one process or in several (each deletes what is there).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = std::env::temp_dir().join(format!("journal-prune-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// use std::time::Duration;
    /// use tool_runtime::journal::{Journal, Retention};
    ///
    /// let journal = Journal::open(dir.join("journal.db").to_str().unwrap()).await?;
    /// // Once an hour, forget the runs that finished more than a week ago.
    /// let pruning = tokio::spawn({
    ///     let journal = journal.clone();
    ///     async move {
    ///         let mut every = tokio::time::interval(Duration::from_secs(3_600));
    ///         loop {
    ///             every.tick().await;
    ///             let week = Retention::finished_older_than(Duration::from_secs(7 * 24 * 3_600));
    ///             if let Err(error) = journal.prune(week).await {
    ///                 eprintln!("pruning the journal failed: {error}");
    ///             }
    ///         }
    ///     }
    /// });
    /// # pruning.abort(); journal.close().await; std::fs::remove_dir_all(&dir)?; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`JournalError::Database`] when a delete fails; what was deleted
    /// before stays deleted, and pruning again finishes the job.
    pub async fn prune(&self, retention: Retention) -> Result<Pruned, JournalError> {
        retention::prune(self, retention).await
    }

    /// Gives up this journal's lease (the calls it started and did not
    /// finish are in doubt at once, and the calls it parked for an MCP
    /// client gone) and closes the connections; clones of this journal can
    /// no longer be used.
    pub async fn close(&self) {
        owners::give_up(self).await;
        match &self.backend {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(pool) => pool.close().await,
            #[cfg(feature = "postgres")]
            Backend::Postgres(pool) => pool.close().await,
            #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
            Backend::None(never) => match *never {},
        }
    }
}

fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// The URL without its password, for error messages.
fn shown(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let user_info = &url[scheme + 3..at];
            let user = user_info.split(':').next().unwrap_or_default();
            format!("{}{user}:***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

/// How long a Postgres statement waits for a lock another session holds:
/// as long as SQLite's busy retries ([`busy::BUSY_BUDGET`]).
#[cfg(feature = "postgres")]
const LOCK_TIMEOUT: &str = "20s";

/// How long a Postgres statement may run at most (a prune of a large
/// journal included).
#[cfg(feature = "postgres")]
const STATEMENT_TIMEOUT: &str = "5min";

/// How long opening a Postgres journal waits for the server's answer.
#[cfg(feature = "postgres")]
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// A connection of the pool idle for less than this is taken as it is; one
/// idle longer is first pinged (a round trip), and replaced should it be
/// gone (the server restarted, a proxy closed it).
const PING_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// The journal's pool on either backend. sqlx pings every connection it
/// hands out by default: a round trip before each statement or transaction
/// sent on the pool, 8 of the 25 a new durable run's first step made
/// (`benches/journal.rs` counts them). A connection in use a moment ago is
/// alive, so only one that idled is pinged.
///
/// Its size is sqlx's default, 10 connections: at most 4 of them send
/// groups of writes on Postgres (1 on SQLite, which takes one writer at a
/// time), the others serve reads. The bench's runs are bound by the CPU of
/// the client and the server, not by waits for a connection.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn pool_options<DB: sqlx::Database>() -> sqlx::pool::PoolOptions<DB> {
    sqlx::pool::PoolOptions::new().test_before_acquire(false).before_acquire(|connection, meta| {
        Box::pin(async move {
            if meta.idle_for >= PING_AFTER {
                sqlx::Connection::ping(connection).await?;
            }
            Ok(true)
        })
    })
}

/// Whether `url` names no database at all (`""`, `sqlite:`): SQLite would
/// open a temporary one, deleted on close, that keeps nothing.
fn names_nothing(url: &str) -> bool {
    let path = url.trim();
    let path = path.strip_prefix("sqlite:").unwrap_or(path);
    let path = path.strip_prefix("//").unwrap_or(path);
    path.split('?').next().unwrap_or_default().trim().is_empty()
}

async fn connect(url: &str) -> Result<Backend, JournalError> {
    let open_failed = |source: sqlx::Error| JournalError::Open { url: shown(url), source: Box::new(source) };
    if names_nothing(url) {
        return Err(JournalError::Url {
            url: url.to_owned(),
            why: "the URL names no journal (it would keep nothing); give sqlite:path/to/journal.db, a file path, \
                  or postgres://user@host/database"
                .into(),
        });
    }
    if is_postgres(url) {
        #[cfg(feature = "postgres")]
        {
            use sqlx::{ConnectOptions, Connection};

            let options: sqlx::postgres::PgConnectOptions = url.parse().map_err(open_failed)?;
            // A lock another session holds, or a statement that hangs, is
            // given up, as SQLite's busy retries are: an error the caller
            // reads, never a wait without end.
            let options = options.options([("lock_timeout", LOCK_TIMEOUT), ("statement_timeout", STATEMENT_TIMEOUT)]);
            // The pool tries a refused connection again until its acquire
            // timeout (30 s), then says only that it timed out: one
            // connection first, bounded, says why it failed.
            let first = tokio::time::timeout(CONNECT_TIMEOUT, options.connect()).await.map_err(|_| JournalError::Open {
                url: shown(url),
                source: format!("the server did not answer within {CONNECT_TIMEOUT:?}").into(),
            })?;
            first.map_err(open_failed)?.close().await.map_err(open_failed)?;
            let pool = pool_options().connect_with(options).await.map_err(open_failed)?;
            return Ok(Backend::Postgres(pool));
        }
        #[cfg(not(feature = "postgres"))]
        return Err(JournalError::Url {
            url: shown(url),
            why: "this build has no Postgres support; enable tool-runtime's feature `postgres`".into(),
        });
    }
    if url.contains("://") && !url.starts_with("sqlite:") {
        return Err(JournalError::Url {
            url: shown(url),
            why: "unknown scheme; give sqlite:path, a file path, or postgres://user@host/database".into(),
        });
    }
    #[cfg(feature = "sqlite")]
    {
        use std::str::FromStr;
        use std::time::Duration;

        use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};

        if url.contains(":memory:") || url.contains("mode=memory") {
            return Err(JournalError::Url {
                url: url.to_owned(),
                why: "an in-memory SQLite journal would not outlive the process; give a file path".into(),
            });
        }
        let options = match url.strip_prefix("sqlite:") {
            Some(_) => SqliteConnectOptions::from_str(url).map_err(open_failed)?,
            None => SqliteConnectOptions::new().filename(url),
        }
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        // Every commit reaches the disk: a journaled effect survives a
        // power loss, not only a crash of the process.
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(busy::BUSY_TIMEOUT);
        // Switching a new file to WAL takes an exclusive lock, and SQLite
        // answers "database is locked" at once, without the busy timeout,
        // when two connections try it together (it would deadlock). So a
        // busy first connection is tried again until the timeout.
        let started = std::time::Instant::now();
        loop {
            match pool_options::<sqlx::Sqlite>().connect_with(options.clone()).await {
                Ok(pool) => return Ok(Backend::Sqlite(pool)),
                Err(error) if busy::is_busy(&error) && started.elapsed() < busy::BUSY_BUDGET => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(error) => return Err(open_failed(error)),
            }
        }
    }
    #[cfg(not(feature = "sqlite"))]
    Err(JournalError::Url {
        url: url.to_owned(),
        why: "this build has no SQLite support; enable tool-runtime's feature `sqlite` or give a postgres:// URL".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn a_shown_url_has_no_password() {
        assert_eq!(shown("postgres://app:s3cret@db:5432/journal"), "postgres://app:***@db:5432/journal");
        assert_eq!(shown("postgres://db/journal"), "postgres://db/journal");
        assert_eq!(shown("sqlite:runs.db"), "sqlite:runs.db");
    }
}

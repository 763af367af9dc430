//! Group commit: the writes that wait at once share one transaction, and
//! so one commit.
//!
//! A commit waits for the database to make the write durable (Postgres
//! flushes its WAL, SQLite with `synchronous = FULL` syncs its file), so
//! that a run that stepped, or a call recorded as started, survives a
//! crash of the database's machine. When a thousand runs step at once,
//! those flushes are most of the work. So the writes a durable run makes on
//! its way (a call recorded as started and as finished, a step added to the
//! run) are queued, and a few tasks of the journal ([`most_flushers`])
//! each take what waits, up to [`MOST`] writes, and send them one after
//! another in one transaction: one commit for all of them. A write that
//! finds no one waiting is sent at once, alone: a group forms only when
//! writes wait for each other.
//!
//! What each write promises holds in a group as alone:
//!
//! - A write's caller is answered only once the transaction that holds it
//!   committed: a call recorded as started is durable before its tool runs.
//! - The writes of a group run one after another, each on what the ones
//!   before it wrote, as they would alone in that order; each reads what it
//!   needs under the locks it takes, as alone.
//! - The group commits whole or not at all. When the database fails one of
//!   its statements (a lock not granted in time, a deadlock, SQLite busy),
//!   the transaction is rolled back and each write is sent again alone, so
//!   that one write's failure is never another's; only a commit that fails
//!   fails every write of the group, as a failed commit of one write fails
//!   it.
//! - A group sends its writes in the order of the first row each locks
//!   ([`Write::order`]), so that two groups, of one process or of two,
//!   never wait for each other's locks in a circle.
//! - A write whose caller stopped waiting is not committed (its group is
//!   rolled back, and the others sent alone), as a transaction whose
//!   caller dropped it is rolled back: a step given up at its deadline is
//!   sent again with the next one, and must not have been added meanwhile.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::future::BoxFuture;
use tokio::sync::oneshot;

use super::busy::Retries;
use super::{Backend, JournalError};

/// At most this many writes share one transaction: its locks are held,
/// and its callers wait, until the last is sent.
const MOST: usize = 64;

/// How many groups one journal sends at once: each holds a connection of
/// the pool while it is sent. SQLite takes one writer at a time, so one;
/// Postgres writes to different rows in parallel.
fn most_flushers(backend: &Backend) -> usize {
    match backend {
        #[cfg(feature = "sqlite")]
        Backend::Sqlite(_) => 1,
        #[cfg(feature = "postgres")]
        Backend::Postgres(_) => 4,
        #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
        Backend::None(never) => match *never {},
    }
}

/// A connection of either backend, on which a write sends its statements.
pub(crate) enum Conn<'c> {
    #[cfg(feature = "sqlite")]
    Sqlite(&'c mut sqlx::SqliteConnection),
    #[cfg(feature = "postgres")]
    Postgres(&'c mut sqlx::PgConnection),
    /// A build with neither backend, where no journal opens.
    #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
    #[allow(dead_code, reason = "never built: no journal opens without a backend")]
    None(std::convert::Infallible, std::marker::PhantomData<&'c ()>),
}

/// Runs `$body` with `$c` bound to the connection of `$conn` (a [`Conn`]):
/// the statements are the same text on both backends.
macro_rules! on_conn {
    ($conn:expr, $c:ident => $body:expr) => {
        match $conn {
            #[cfg(feature = "sqlite")]
            $crate::journal::group::Conn::Sqlite($c) => $body,
            #[cfg(feature = "postgres")]
            $crate::journal::group::Conn::Postgres($c) => $body,
            #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
            $crate::journal::group::Conn::None(never, _) => match never {},
        }
    };
}
pub(crate) use on_conn;

/// One operation's writes, sent as a unit: alone (in a transaction of its
/// own when it sends several statements that must hold together), or in a
/// group's transaction.
pub(crate) trait Write: Send + Sync + 'static {
    type Output: Send + 'static;

    /// The table (a rank) and the key of the first row it locks: a group
    /// sends its writes in this order.
    fn order(&self) -> (u8, &str);

    /// Whether, alone, it needs a transaction of its own: its statements
    /// must be committed together.
    fn atomic(&self) -> bool;

    /// Sends its statements on `conn`.
    fn send<'c>(&'c self, conn: Conn<'c>) -> BoxFuture<'c, Result<Self::Output, JournalError>>;
}

/// The writes waiting for a group, and how many tasks send groups now.
#[derive(Debug, Default)]
pub(crate) struct Groups {
    queue: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    waiting: Vec<Box<dyn Pending>>,
    flushers: usize,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").field("waiting", &self.waiting.len()).field("flushers", &self.flushers).finish()
    }
}

/// Sends `write` on `backend`, alone or with the writes that wait with it;
/// its answer once the transaction that holds it committed. `busy_until`
/// bounds SQLite's busy retries of a write sent alone.
pub(crate) async fn send<W: Write>(
    backend: &Backend,
    groups: &Arc<Groups>,
    busy_until: Option<Instant>,
    write: W,
) -> Result<W::Output, JournalError> {
    let (answer, answered) = oneshot::channel();
    let pending = Box::new(Queued { write, answer: Some(answer), result: None, busy_until });
    let start = {
        let mut queue = groups.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        queue.waiting.push(pending);
        let start = queue.flushers < most_flushers(backend);
        queue.flushers += usize::from(start);
        start
    };
    if start {
        // The slot is made here, not in the task, so that a task dropped
        // before it first runs gives its slot back too.
        tokio::spawn(flush(backend.clone(), Slot { groups: groups.clone(), held: true }));
    }
    answered.await.unwrap_or_else(|_| Err(JournalError::Database { operation: "group_commit", source: "the journal's writer stopped".into() }))
}

/// A task sending groups until none waits, in its `slot`.
async fn flush(backend: Backend, mut slot: Slot) {
    loop {
        let group: Vec<Box<dyn Pending>> = {
            let mut queue = slot.groups.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if queue.waiting.is_empty() {
                queue.flushers -= 1;
                slot.held = false;
                return;
            }
            let taken = queue.waiting.len().min(MOST);
            queue.waiting.drain(..taken).collect()
        };
        let mut group: Vec<_> = group.into_iter().filter(|pending| !pending.gone()).collect();
        match group.as_mut_slice() {
            [] => {}
            [one] => alone(&backend, one.as_mut()).await,
            several => together(&backend, several).await,
        }
        group.into_iter().for_each(|pending| pending.answer());
    }
}

/// A flusher's place among [`most_flushers`], given back should its task
/// end before the queue is empty (its runtime shut down, or a write
/// panicked): when no other flusher is left, what still waits is answered
/// at once with an error ("the journal's writer stopped") rather than left
/// waiting for a task that no longer runs; the next write starts one.
struct Slot {
    groups: Arc<Groups>,
    held: bool,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if !self.held {
            return;
        }
        let stranded = {
            let mut queue = self.groups.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            queue.flushers -= 1;
            if queue.flushers == 0 { std::mem::take(&mut queue.waiting) } else { Vec::new() }
        };
        // Dropped outside the lock: each drop wakes its caller.
        drop(stranded);
    }
}

/// Sends `group` in one transaction, in the order of [`Write::order`];
/// each write alone when the database fails one of them before the commit.
async fn together(backend: &Backend, group: &mut [Box<dyn Pending>]) {
    group.sort_by(|one, other| one.order().cmp(&other.order()));
    let committed: Result<bool, sqlx::Error> = match backend {
        #[cfg(feature = "sqlite")]
        Backend::Sqlite(pool) => {
            async {
                use sqlx::Connection;
                let mut conn = pool.acquire().await?;
                send_all(conn.begin_with("BEGIN IMMEDIATE").await?, group, |c| Conn::Sqlite(c)).await
            }
            .await
        }
        #[cfg(feature = "postgres")]
        Backend::Postgres(pool) => async { send_all(pool.begin().await?, group, |c| Conn::Postgres(c)).await }.await,
        #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
        Backend::None(never) => match *never {},
    };
    match committed {
        Ok(true) => {}
        // A statement failed, or a caller stopped waiting (the transaction
        // rolled back when dropped): nothing of it holds; each write whose
        // caller still waits is sent alone.
        Ok(false) => {
            for pending in group.iter_mut().filter(|pending| !pending.gone()) {
                alone(backend, pending.as_mut()).await;
            }
        }
        // The transaction could not begin, or SQLite was busy at the commit
        // (which then rolls back): nothing of it holds; each alone.
        Err(error) if super::busy::is_busy(&error) || !group.iter().any(|pending| pending.sent()) => {
            for pending in group.iter_mut() {
                alone(backend, pending.as_mut()).await;
            }
        }
        // The commit failed: whether it held is unknown, as for a write
        // alone whose commit failed.
        Err(error) => {
            let error = Arc::new(error);
            for pending in group.iter_mut() {
                pending.fail(JournalError::Database { operation: "group_commit", source: Box::new(Shared(error.clone())) });
            }
        }
    }
}

/// Sends each write of `group` on `tx`, then commits it: false, and
/// rolled back (dropped), when the database failed a statement or a caller
/// stopped waiting.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
async fn send_all<DB: sqlx::Database>(
    mut tx: sqlx::Transaction<'_, DB>,
    group: &mut [Box<dyn Pending>],
    conn: fn(&mut DB::Connection) -> Conn<'_>,
) -> Result<bool, sqlx::Error> {
    for pending in group.iter_mut() {
        if !pending.send(conn(&mut tx)).await {
            return Ok(false);
        }
    }
    if group.iter().any(|pending| pending.gone()) {
        return Ok(false);
    }
    tx.commit().await.map(|()| true)
}

/// One error, told to every write of a group.
#[derive(Debug)]
struct Shared(Arc<sqlx::Error>);

impl std::fmt::Display for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Shared {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.0.as_ref())
    }
}

/// Sends one write alone: in a transaction of its own when it needs one;
/// again while SQLite is busy, until its caller's bound.
async fn alone(backend: &Backend, pending: &mut dyn Pending) {
    let mut busy = Retries::until(pending.busy_until());
    loop {
        let begun: Result<(), sqlx::Error> = match backend {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(pool) => {
                async {
                    use sqlx::Connection;
                    let mut conn = pool.acquire().await?;
                    if !pending.atomic() {
                        pending.send(Conn::Sqlite(&mut conn)).await;
                        return Ok(());
                    }
                    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
                    if pending.send(Conn::Sqlite(&mut tx)).await && !pending.gone() {
                        pending.committed(tx.commit().await);
                    }
                    Ok(())
                }
                .await
            }
            #[cfg(feature = "postgres")]
            Backend::Postgres(pool) => {
                async {
                    if !pending.atomic() {
                        let mut conn = pool.acquire().await?;
                        pending.send(Conn::Postgres(&mut conn)).await;
                        return Ok(());
                    }
                    let mut tx = pool.begin().await?;
                    if pending.send(Conn::Postgres(&mut tx)).await && !pending.gone() {
                        pending.committed(tx.commit().await);
                    }
                    Ok(())
                }
                .await
            }
            #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
            Backend::None(never) => match *never {},
        };
        if let Err(error) = begun {
            pending.fail(JournalError::database("group_commit")(error));
        }
        if !busy.again_after(pending.error()).await {
            return;
        }
    }
}

/// A write waiting to be sent, its type erased so that writes of every
/// kind wait in one queue.
trait Pending: Send {
    fn order(&self) -> (u8, &str);
    fn atomic(&self) -> bool;
    fn busy_until(&self) -> Option<Instant>;
    /// Whether its caller stopped waiting.
    fn gone(&self) -> bool;
    /// Whether it was sent (it has a result).
    fn sent(&self) -> bool;
    /// Sends it on `conn`, keeping its result; false when the database
    /// failed a statement (the transaction cannot go on).
    fn send<'c>(&'c mut self, conn: Conn<'c>) -> BoxFuture<'c, bool>;
    /// Takes the commit of its transaction: a failed one is its result.
    fn committed(&mut self, commit: Result<(), sqlx::Error>);
    fn fail(&mut self, error: JournalError);
    /// The error it ended with, if any.
    fn error(&self) -> Option<&JournalError>;
    /// Gives its caller its result.
    fn answer(self: Box<Self>);
}

struct Queued<W: Write> {
    write: W,
    answer: Option<oneshot::Sender<Result<W::Output, JournalError>>>,
    result: Option<Result<W::Output, JournalError>>,
    busy_until: Option<Instant>,
}

impl<W: Write> Pending for Queued<W> {
    fn order(&self) -> (u8, &str) {
        self.write.order()
    }

    fn atomic(&self) -> bool {
        self.write.atomic()
    }

    fn busy_until(&self) -> Option<Instant> {
        self.busy_until
    }

    fn gone(&self) -> bool {
        self.answer.as_ref().is_none_or(oneshot::Sender::is_closed)
    }

    fn sent(&self) -> bool {
        self.result.is_some()
    }

    fn send<'c>(&'c mut self, conn: Conn<'c>) -> BoxFuture<'c, bool> {
        Box::pin(async move {
            let result = self.write.send(conn).await;
            let failed = matches!(result, Err(JournalError::Database { .. }));
            self.result = Some(result);
            !failed
        })
    }

    fn committed(&mut self, commit: Result<(), sqlx::Error>) {
        if let Err(error) = commit {
            self.result = Some(Err(JournalError::database("group_commit")(error)));
        }
    }

    fn fail(&mut self, error: JournalError) {
        self.result = Some(Err(error));
    }

    fn error(&self) -> Option<&JournalError> {
        self.result.as_ref().and_then(|result| result.as_ref().err())
    }

    fn answer(mut self: Box<Self>) {
        let result =
            self.result.take().unwrap_or_else(|| Err(JournalError::Database { operation: "group_commit", source: "the write was not sent".into() }));
        if let Some(answer) = self.answer.take() {
            let _ = answer.send(result);
        }
    }
}

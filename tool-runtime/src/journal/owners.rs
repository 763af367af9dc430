//! Owners: which process still lives. Each opened [`Journal`] is an owner,
//! one row of `journal_owners` holding its lease: until when, by the
//! journal's clock, it is known to live. The lease is taken when the
//! journal first starts a call's effect or parks a call it holds (a
//! journal that only reads, decides or prunes never writes one), and a
//! task of the journal's renews it every [`RENEW`] while the journal is
//! open; a process that dies (killed, crashed, its host gone) stops
//! renewing, and [`LEASE`] later it is gone. A closed journal gives its
//! lease up at once.
//!
//! A call's effect started by a journal, and a call an MCP session parks to
//! wait for its client, name their owner. So another process knows, within
//! a lease, that a call it found started will never finish (it stops
//! waiting for it and settles it as in doubt, instead of waiting out the
//! tool's timeout), and that no one waits any more for a parked call (a
//! decision on it is refused, and the call is rejected by
//! [`GONE_BY`](crate::memory::GONE_BY), never accepted and dropped).
//!
//! A process whose runtime stalls longer than a lease (a tool that blocks
//! its thread) reads as gone to the others meanwhile: what they then do is
//! what they do for a dead process, which never runs an effect twice.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::{CancellationToken, DropGuard};

use super::{Journal, JournalError, now, on_pool};
use crate::error_report::Escaped;

/// How long a lease lasts past its last renewal.
pub(crate) const LEASE: Duration = Duration::from_secs(10);

/// How often a live journal renews its lease: several times a lease, so
/// that a process slowed down a while is not taken for gone.
pub(crate) const RENEW: Duration = Duration::from_secs(2);

/// Takes or renews the lease of owner `$1`.
const RENEW_LEASE: &str = concat!(
    "INSERT INTO journal_owners (owner, lease_until) VALUES ($1, ",
    now!(),
    " + $2) ON CONFLICT (owner) DO UPDATE SET lease_until = excluded.lease_until"
);
const GIVE_UP: &str = "DELETE FROM journal_owners WHERE owner = $1";

/// In a query: the owner of the row (its `owner` column, `NULL` for a row
/// no process owns) lives.
macro_rules! owner_lives {
    ($table:literal) => {
        concat!(
            "(",
            $table,
            ".owner IS NULL OR EXISTS (SELECT 1 FROM journal_owners AS holder WHERE holder.owner = ",
            $table,
            ".owner AND holder.lease_until > ",
            $crate::journal::now!(),
            "))"
        )
    };
}
pub(crate) use owner_lives;

/// A journal's owner: its id, and the renewal of its lease, which stops when
/// the last clone of the journal is dropped.
#[derive(Debug)]
pub(crate) struct Owner {
    pub(crate) id: String,
    /// Set once the lease is taken.
    taken: tokio::sync::OnceCell<()>,
    renewing: CancellationToken,
    _stops_renewing: DropGuard,
}

impl Owner {
    /// A new owner, unique across processes (`ids`), its lease not taken yet.
    pub(crate) fn new() -> Arc<Owner> {
        let renewing = CancellationToken::new();
        let id = crate::ids::fresh_id("own-").to_string();
        Arc::new(Owner { id, taken: tokio::sync::OnceCell::new(), _stops_renewing: renewing.clone().drop_guard(), renewing })
    }
}

/// `journal`'s lease, taken (and its renewal started) on first use: before
/// the journal writes a row that names it.
pub(crate) async fn hold(journal: &Journal) -> Result<(), JournalError> {
    journal.owner.taken.get_or_try_init(|| take_lease(journal)).await.map(drop)
}

/// Takes `journal`'s lease, and renews it every [`RENEW`] in a task of its
/// own until the journal is closed or dropped.
async fn take_lease(journal: &Journal) -> Result<(), JournalError> {
    renew(journal).await?;
    // The task holds the owner weakly: the journal's last clone dropping
    // drops the owner, whose guard stops the task.
    let (weak, backend, groups, stopped) =
        (Arc::downgrade(&journal.owner), journal.backend.clone(), journal.groups.clone(), journal.owner.renewing.clone());
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = stopped.cancelled() => return,
                () = tokio::time::sleep(RENEW) => {}
            }
            // The journal's last clone went: nothing renews for it any more.
            let Some(owner) = weak.upgrade() else { return };
            let journal = Journal { backend: backend.clone(), busy_until: None, owner, groups: groups.clone() };
            if let Err(error) = renew(&journal).await {
                tracing::warn!(error = %Escaped(&error), "the journal's lease could not be renewed");
            }
        }
    });
    Ok(())
}

/// Renews `journal`'s lease: [`LEASE`] from now by the journal's clock.
async fn renew(journal: &Journal) -> Result<(), JournalError> {
    let lease = i64::try_from(LEASE.as_millis()).unwrap_or(i64::MAX);
    on_pool!(journal, pool => sqlx::query(RENEW_LEASE)
        .bind(&journal.owner.id)
        .bind(lease)
        .execute(pool)
        .await
        .map(drop)
        .map_err(JournalError::database("renew_lease")))
}

/// Gives `journal`'s lease up: its calls still started, and those it parked,
/// read as gone at once.
pub(crate) async fn give_up(journal: &Journal) {
    journal.owner.renewing.cancel();
    if journal.owner.taken.get().is_none() {
        return;
    }
    let given_up: Result<(), JournalError> = on_pool!(journal, pool => sqlx::query(GIVE_UP)
        .bind(&journal.owner.id)
        .execute(pool)
        .await
        .map(drop)
        .map_err(JournalError::database("give_up_lease")));
    if let Err(error) = given_up {
        tracing::warn!(error = %Escaped(&error), "the journal's lease could not be given up; it lapses by itself");
    }
}

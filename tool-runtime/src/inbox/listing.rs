//! What one approver sees: the journal's waiting calls and decisions,
//! newest first, kept to those [`may_decide`](super::Inbox::may_decide)
//! gives them, rendered as the lists' HTML.
//!
//! Each list is read from the journal a page of [`PAGE_ROWS`] at a time,
//! of the users [`calls_of`](super::Inbox::calls_of) names, until it holds
//! what the page shows or [`ROWS_READ`] rows were read. So one user's many
//! calls never push another's out of their list, a render holds at most a
//! page of calls' arguments at once, and the work of one render is
//! bounded whatever the journal holds. At most [`RENDERS`] lists are read
//! at once in one inbox: a change wakes every open page, and each would
//! otherwise hold its page of arguments at the same moment.

use std::time::SystemTime;

use askama::Template;

use super::auth::Approver;
use super::pages::Lists;
use super::view::{self, Shown};
use super::{CallsOf, Shared};
use crate::journal::{Approval, InboxCursor, InboxPage, JournalError, Paged, ParkedCall, SettledDecision};

/// How many waiting calls a list shows.
const WAITING_SHOWN: usize = 100;

/// How many decisions a list shows.
const DECISIONS_SHOWN: usize = 50;

/// How many rows one query of a list reads.
const PAGE_ROWS: u32 = 10;

/// How many lists one inbox reads and renders at once.
pub(crate) const RENDERS: usize = 2;

/// How many rows one list reads at most, looking for the approver's calls
/// among others'.
const ROWS_READ: usize = 2_000;

/// The most users a query names; an approver who decides for more reads
/// everyone's calls, kept by `may_decide`.
const USERS_NAMED: usize = 100;

/// The lists' HTML for `approver`, whose forms carry `token`.
pub(crate) async fn lists<App: Send + Sync + 'static>(shared: &Shared<App>, approver: &Approver, token: &str) -> Result<String, JournalError> {
    let users = match (shared.calls_of)(&approver.user) {
        CallsOf::Users(users) if users.len() <= USERS_NAMED => Some(users),
        CallsOf::Users(_) | CallsOf::Everyone => None,
    };
    let _rendering = shared.renders.acquire().await.expect("the inbox's render semaphore is never closed");
    let inbox = shared.journal.inbox();
    let now = SystemTime::now();
    let may_decide = |call: &ParkedCall| (shared.may_decide)(&approver.user, call);
    let users = users.as_deref();
    let (waiting, cut) = read(
        WAITING_SHOWN,
        |after| async move { inbox.pending_page(now, &InboxPage { users, after: after.as_ref(), limit: PAGE_ROWS }).await },
        |approval: Approval| may_decide(&approval.call).then(|| view::waiting(&shared.registry, &approval, Shown::Preview)),
    )
    .await?;
    let (made, _) = read(
        DECISIONS_SHOWN,
        |after| async move { inbox.decisions_page(&InboxPage { users, after: after.as_ref(), limit: PAGE_ROWS }).await },
        |decision: SettledDecision| may_decide(&decision.approval.call).then(|| view::made(&decision)),
    )
    .await?;
    let cut = match cut {
        Read::Whole => None,
        Read::Full => Some(format!("Only the newest {WAITING_SHOWN} calls are shown; decide some to see the others.")),
        Read::Stopped => Some(format!("The inbox read the newest {ROWS_READ} waiting calls and stopped; older calls you may decide are not shown.")),
    };
    let lists = Lists { base: &shared.base, token, waiting, made, cut };
    Ok(lists.render().unwrap_or_else(|error| format!("<p class=\"notice failed\">The lists could not be rendered ({error}).</p>")))
}

/// How much of a list was read.
enum Read {
    /// All of it.
    Whole,
    /// As much as the page shows; there may be more.
    Full,
    /// [`ROWS_READ`] rows, and not all of it.
    Stopped,
}

/// Reads a list newest first, a page at a time (`fetch`, from where the
/// page before ended), keeping what `keep` makes of each row, until
/// `shown` are kept, the list ends, or [`ROWS_READ`] rows were read.
async fn read<T, V, Fetched>(
    shown: usize,
    mut fetch: impl FnMut(Option<InboxCursor>) -> Fetched,
    mut keep: impl FnMut(T) -> Option<V>,
) -> Result<(Vec<V>, Read), JournalError>
where
    Fetched: Future<Output = Result<Paged<T>, JournalError>>,
{
    let (mut kept, mut read) = (Vec::new(), 0);
    let mut after = None;
    loop {
        let Paged { rows, next } = fetch(after).await?;
        read += rows.len();
        for row in rows {
            if kept.len() == shown {
                return Ok((kept, Read::Full));
            }
            kept.extend(keep(row));
        }
        match next {
            None => return Ok((kept, Read::Whole)),
            Some(_) if kept.len() == shown => return Ok((kept, Read::Full)),
            Some(_) if read >= ROWS_READ => return Ok((kept, Read::Stopped)),
            next => after = next,
        }
    }
}

//! What one approver sees: the journal's waiting calls and decisions,
//! newest first, kept to those [`may_decide`](super::Inbox::may_decide)
//! gives them, rendered as the lists' HTML.

use std::time::SystemTime;

use askama::Template;

use super::Shared;
use super::auth::Approver;
use super::pages::Lists;
use super::view;
use crate::journal::{JournalError, MAX_INBOX_ROWS};

/// How many decisions the inbox shows.
const DECISIONS_SHOWN: u32 = 50;

/// The lists' HTML for `approver`, whose forms carry `token`.
pub(crate) async fn lists<App: Send + Sync + 'static>(shared: &Shared<App>, approver: &Approver, token: &str) -> Result<String, JournalError> {
    let pending = shared.journal.inbox().pending_newest(SystemTime::now(), MAX_INBOX_ROWS).await?;
    let cut = pending.len() >= MAX_INBOX_ROWS as usize;
    let waiting = pending
        .iter()
        .filter(|approval| (shared.may_decide)(&approver.user, &approval.call))
        .map(|approval| view::waiting(&shared.registry, approval))
        .collect();
    let decisions = shared.journal.inbox().decisions_newest(DECISIONS_SHOWN).await?;
    let made = decisions.iter().filter(|decision| (shared.may_decide)(&approver.user, &decision.approval.call)).map(view::made).collect();
    let lists = Lists { base: &shared.base, token, waiting, made, cut };
    Ok(lists.render().unwrap_or_else(|error| format!("<p class=\"notice failed\">The lists could not be rendered ({error}).</p>")))
}

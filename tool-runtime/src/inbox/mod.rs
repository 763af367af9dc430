//! The approvals inbox: web pages where people decide the calls that
//! durable runs parked in a [`Journal`] (feature `inbox`).
//!
//! [`Inbox`] is an axum [`Router`](axum::Router) that the application
//! mounts in its own server. It lists the calls waiting for the signed-in
//! approver, newest first, with their arguments rendered from the tool's
//! input schema and a live countdown to their expiry; it approves, rejects
//! with a reason the model reads, or approves an edited input (a form
//! generated from the input schema, validated in the browser and again on
//! the server, and judged again by the tool's policy); it shows the
//! decisions made, by whom, when and how, and the call's outcome once its
//! run settled it; and it updates live, over server-sent events, as other
//! processes park, decide or expire calls.
//!
//! The approver is whoever the auth hook says ([`Inbox::with_auth`]): the
//! same shape as the MCP server's, the request's headers to a
//! [`UserContext`] or an [`Unauthorized`], asked again on every request and
//! while a page listens for updates. Which calls an approver sees and
//! decides is [`Inbox::may_decide`]; by default, the calls made for that
//! same user. [`Inbox::calls_of`] names whose calls those are, so that the
//! inbox asks the journal for them alone, whatever other users parked.
//!
//! A list shows a preview of each call's arguments (each value cut at
//! 1,000 bytes, the first 20 arguments); the call's own page shows them
//! whole, and its edit form edits them whole.
//!
//! Every decision goes through [`question::decide`](crate::question::decide): of two approvers
//! deciding one call, one wins and the other is told who did; a decision
//! is shown as done only once the journal accepted it, and a failed write
//! is shown as failed.
//!
//! The guide's page [`inbox`](crate::guide::inbox) says how to mount it,
//! what it sends (its Content-Security-Policy, cookies and cross-site
//! checks) and how it learns of changes on SQLite and on Postgres.

mod actions;
mod assets;
mod auth;
mod csrf;
mod events;
mod form;
mod listing;
mod markup;
mod pages;
mod preview;
mod recheck;
mod respond;
mod router;
mod view;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::HeaderMap;

pub use auth::Unauthorized;

use crate::caps::Capped;
use crate::context::UserContext;
use crate::journal::{Journal, ParkedCall};
use crate::registry::Registry;

/// How often an inbox reads the journal's change mark when the journal
/// cannot notify it (SQLite); on Postgres, how often it reads the mark
/// besides listening, in case a notification was lost with a connection.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(200);

/// How many pages one approver may keep open on the live updates at once,
/// by default: as many as a browser opens connections to one server over
/// HTTP/1.1, so a person's own tabs never meet it.
pub const DEFAULT_MAX_LIVE_PAGES_PER_APPROVER: usize = 6;

/// The auth hook: a request's headers to the approver, or a refusal.
pub(crate) type AuthHook = dyn Fn(&HeaderMap) -> Result<UserContext, Unauthorized> + Send + Sync;

/// Which calls an approver sees and decides.
pub(crate) type MayDecide = dyn Fn(&UserContext, &ParkedCall) -> bool + Send + Sync;

/// Whose calls an approver decides.
pub(crate) type CallsOfHook = dyn Fn(&UserContext) -> CallsOf + Send + Sync;

/// Whose calls an approver may decide, as the inbox asks the journal for
/// them ([`Inbox::calls_of`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallsOf {
    /// Any user's: the inbox reads every user's calls, newest first, and
    /// keeps those [`may_decide`](Inbox::may_decide) gives the approver,
    /// reading at most 2,000 a list.
    Everyone,
    /// Only the calls made for these users (by [`ParkedCall::user_id`]):
    /// the journal answers from its index of waiting calls by user, so
    /// other users' calls cost nothing however many there are. (More than
    /// 100 users are read as [`Everyone`](Self::Everyone).)
    Users(Vec<String>),
}

impl CallsOf {
    /// The calls made for `approver` themselves (none for an approver
    /// without an id).
    pub fn own(approver: &UserContext) -> Self {
        CallsOf::Users(approver.id.iter().cloned().collect())
    }
}

/// The approvals inbox over one journal and the registry whose tools its
/// calls name.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use tool_runtime::prelude::*;
/// # async fn serve(registry: Registry<()>) -> Result<(), Box<dyn std::error::Error>> {
/// use tool_runtime::inbox::{Inbox, Unauthorized};
/// use tool_runtime::journal::Journal;
///
/// let journal = Journal::open("sqlite:runs.db").await?;
/// let inbox = Inbox::new(journal, registry, Arc::new(()))
///     .with_auth(|headers| match headers.get("x-approver").and_then(|v| v.to_str().ok()) {
///         Some(id) => Ok(UserContext::new(id)),
///         None => Err(Unauthorized::new("Sign in to see the calls waiting for you.")),
///     })
///     // Supervisors decide every call; anyone else, the calls made for them.
///     .may_decide(|approver, call| {
///         approver.attribute("role").is_some_and(|role| role == "supervisor") || approver.id == call.user_id
///     });
/// let app = axum::Router::new().nest("/approvals", inbox.base_path("/approvals").router());
/// # let _ = app; Ok(()) }
/// ```
pub struct Inbox<App> {
    pub(crate) inner: Arc<Shared<App>>,
}

/// What every request of one inbox shares.
pub(crate) struct Shared<App> {
    pub(crate) journal: Journal,
    pub(crate) registry: Registry<App>,
    pub(crate) app: Arc<App>,
    pub(crate) auth: Box<AuthHook>,
    pub(crate) may_decide: Box<MayDecide>,
    pub(crate) calls_of: Box<CallsOfHook>,
    /// Whether [`Inbox::calls_of`] was given, so `may_decide` leaves it.
    calls_of_given: bool,
    /// The pages each approver keeps open on the live updates.
    pub(crate) live_pages: Arc<Capped<String>>,
    /// The lists being read and rendered at once (`listing`).
    pub(crate) renders: tokio::sync::Semaphore,
    pub(crate) base: String,
    pub(crate) poll_interval: Duration,
    pub(crate) secret: [u8; 32],
    pub(crate) changes: Mutex<Option<tokio::sync::watch::Receiver<u64>>>,
}

impl<App: Send + Sync + 'static> Inbox<App> {
    /// An inbox over `journal`, whose calls are of `registry`'s tools; `app`
    /// is what a tool's policy predicate sees when an edited input is
    /// judged again.
    ///
    /// Until [`with_auth`](Self::with_auth) is called, every request is
    /// refused: an inbox never shows calls to someone it cannot name.
    pub fn new(journal: Journal, registry: Registry<App>, app: Arc<App>) -> Self {
        let mut secret = [0; 32];
        // Without the system's randomness no token could be trusted.
        getrandom::fill(&mut secret).expect("the system's random number generator failed");
        Inbox {
            inner: Arc::new(Shared {
                journal,
                registry,
                app,
                auth: Box::new(|_| Err(Unauthorized::new("This inbox has no sign-in configured; its application must call Inbox::with_auth."))),
                may_decide: Box::new(|approver, call| approver.id.is_some() && approver.id == call.user_id),
                calls_of: Box::new(CallsOf::own),
                calls_of_given: false,
                live_pages: Capped::new(DEFAULT_MAX_LIVE_PAGES_PER_APPROVER),
                renders: tokio::sync::Semaphore::new(listing::RENDERS),
                base: String::new(),
                poll_interval: DEFAULT_POLL_INTERVAL,
                secret,
                changes: Mutex::new(None),
            }),
        }
    }

    fn shared(&mut self) -> &mut Shared<App> {
        Arc::get_mut(&mut self.inner).expect("an inbox is configured before its router is made")
    }

    /// Who the request's approver is: the request's headers (a session
    /// cookie, a bearer token, a header a proxy set) to a [`UserContext`],
    /// whose `id` is recorded as the decider, or an [`Unauthorized`], whose
    /// text the page shows with status 401. An approver without an id is
    /// refused.
    pub fn with_auth(mut self, hook: impl Fn(&HeaderMap) -> Result<UserContext, Unauthorized> + Send + Sync + 'static) -> Self {
        self.shared().auth = Box::new(hook);
        self
    }

    /// Which calls an approver sees and may decide. The default: the calls
    /// made for that same user (the call's `user_id` is the approver's
    /// `id`). Every action checks it again on the call it names.
    ///
    /// Unless [`calls_of`](Self::calls_of) says whose calls those are, a
    /// rule set here makes the inbox read everyone's calls and keep those
    /// the rule gives.
    pub fn may_decide(mut self, rule: impl Fn(&UserContext, &ParkedCall) -> bool + Send + Sync + 'static) -> Self {
        let shared = self.shared();
        shared.may_decide = Box::new(rule);
        if !shared.calls_of_given {
            shared.calls_of = Box::new(|_| CallsOf::Everyone);
        }
        self
    }

    /// Whose calls an approver may decide, so that the inbox asks the
    /// journal for those calls alone and each approver sees their own
    /// calls however many other users parked. The default:
    /// [`CallsOf::own`] with the default [`may_decide`](Self::may_decide),
    /// [`CallsOf::Everyone`] once a rule is set there. `may_decide` still
    /// decides each call shown.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use tool_runtime::prelude::*;
    /// # async fn serve(registry: Registry<()>) -> Result<(), Box<dyn std::error::Error>> {
    /// use tool_runtime::inbox::{CallsOf, Inbox};
    /// # let journal = tool_runtime::journal::Journal::open("sqlite:runs.db").await?;
    /// let supervisor = |approver: &UserContext| approver.attribute("role").is_some_and(|role| role == "supervisor");
    /// let inbox = Inbox::new(journal, registry, Arc::new(()))
    ///     .may_decide(move |approver, call| supervisor(approver) || approver.id == call.user_id)
    ///     .calls_of(move |approver| if supervisor(approver) { CallsOf::Everyone } else { CallsOf::own(approver) });
    /// # let _ = inbox; Ok(()) }
    /// ```
    pub fn calls_of(mut self, scope: impl Fn(&UserContext) -> CallsOf + Send + Sync + 'static) -> Self {
        let shared = self.shared();
        shared.calls_of = Box::new(scope);
        shared.calls_of_given = true;
        self
    }

    /// How many pages one approver may keep open on the live updates at
    /// once (default [`DEFAULT_MAX_LIVE_PAGES_PER_APPROVER`]; at least 1).
    /// One more is refused (`429`): that page still works, and shows
    /// changes when reloaded.
    pub fn max_live_pages_per_approver(mut self, pages: usize) -> Self {
        self.shared().live_pages = Capped::new(pages);
        self
    }

    /// The path the router is mounted at (`"/approvals"`), which its pages
    /// prefix their links and forms with; empty (the default) for the root.
    pub fn base_path(mut self, base: &str) -> Self {
        self.shared().base = base.trim_end_matches('/').to_owned();
        self
    }

    /// How often the journal's change mark is read ([`DEFAULT_POLL_INTERVAL`]).
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.shared().poll_interval = interval.max(Duration::from_millis(10));
        self
    }

    /// The key that signs the pages' form tokens; by default a random one
    /// per inbox. Give every instance behind one load balancer the same
    /// key, so that a form one served is accepted by another.
    pub fn secret(mut self, key: [u8; 32]) -> Self {
        self.shared().secret = key;
        self
    }

    /// The router: mount it in the application's server (under
    /// [`base_path`](Self::base_path)).
    pub fn router(self) -> axum::Router {
        router::router(self.inner)
    }
}

impl<App> std::fmt::Debug for Inbox<App> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbox").field("journal", &self.inner.journal).field("base", &self.inner.base).finish_non_exhaustive()
    }
}

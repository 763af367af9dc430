//! What a result hook sees of a call: [`CallReport`], one for every outcome
//! (`RegistryBuilder::on_result`, `#[tool(on_result = path)]`).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::context::UserContext;
use crate::result::CallResult;

/// One outcome of a call, for a result hook: what the model reads and the
/// host gets ([`CallResult`]), who called, and how long it took. For
/// logging the sub-flows of a run (each call, its approval, its result),
/// beside the `tracing` span every call has.
///
/// A call that needs approval has two: one when it is parked
/// ([`ResultKind::PendingApproval`](crate::ResultKind::PendingApproval)),
/// one when it is decided (run, rejected or expired). An external call has
/// one when it is handed to the host
/// ([`ResultKind::External`](crate::ResultKind::External)) and one when the
/// host completes it.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
/// use tool_runtime::prelude::*;
/// use tool_runtime::{CallReport, ResultKind};
///
/// /// Add two numbers.
/// #[tool]
/// async fn add(a: i64, b: i64) -> i64 { a + b }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<CallReport>();
/// let registry = Registry::<()>::builder()
///     .tools(tools![add])
///     .on_result(move |report| { let _ = sender.send(report.clone()); })
///     .build()
///     .unwrap();
/// registry.invoke(&Arc::new(()), "add", r#"{"a": 2, "b": 3}"#).await;
/// let report = receiver.recv().await.unwrap();
/// assert_eq!((report.result.tool.as_str(), report.result.kind), ("add", ResultKind::Success));
/// assert!(report.elapsed < Duration::from_secs(5));
/// # }
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CallReport {
    /// The outcome, as the caller got it.
    pub result: CallResult,
    /// Who called; `None` for an anonymous caller.
    pub user: Option<Arc<UserContext>>,
    /// The conversation thread, when the host set one.
    pub thread_id: Option<Arc<str>>,
    /// When the registry took the call (or the decision on it, or the
    /// host's result of an external call), by the system clock.
    pub started_at: SystemTime,
    /// How long from then until the outcome: for a call, from its name
    /// being looked up to its result (validation, policy, execution,
    /// output); for a decision, running the call as decided; for an
    /// external call's result, checking and recording it. The time a call
    /// waits for a human or for the host is between two reports.
    pub elapsed: Duration,
}

/// The hook given to `RegistryBuilder::on_result`.
pub(crate) type ResultHook = Arc<dyn Fn(&CallReport) + Send + Sync>;

/// An outcome a result hook will see, from its start: when it began, by
/// both clocks (the system's for [`CallReport::started_at`], a monotonic
/// one for its [`elapsed`](CallReport::elapsed)), and who called. Taken
/// only for a call some hook observes.
#[derive(Debug)]
pub(crate) struct Watch {
    at: SystemTime,
    clock: std::time::Instant,
    user: Option<Arc<UserContext>>,
    thread_id: Option<Arc<str>>,
}

impl Watch {
    /// Starts watching the call `info` describes.
    pub(crate) fn start(info: &crate::context::CallInfo) -> Self {
        Watch::start_for(info.user.as_ref(), info.thread_id())
    }

    /// Starts watching a call by `user` in `thread_id`.
    pub(crate) fn start_for(user: Option<&Arc<UserContext>>, thread_id: Option<&Arc<str>>) -> Self {
        Watch { at: SystemTime::now(), clock: std::time::Instant::now(), user: user.cloned(), thread_id: thread_id.cloned() }
    }

    /// The report of `result`, ending now.
    pub(crate) fn report(self, result: CallResult) -> CallReport {
        CallReport { result, user: self.user, thread_id: self.thread_id, started_at: self.at, elapsed: self.clock.elapsed() }
    }
}

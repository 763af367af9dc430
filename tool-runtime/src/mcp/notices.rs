//! What a running call tells its client, as notifications on its request's
//! stream before the result: progress (for a request with a progress
//! token) and the tool's log messages (at or above the level the client
//! asked for), the same at every revision. Each revision says which level
//! applies: a session's `logging/setLevel`, or a stateless request's
//! `_meta` (without it, none is sent).

use std::collections::VecDeque;
use std::future::IntoFuture;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

#[allow(deprecated, reason = "MCP logging is deprecated at 2026-07-28 but still part of it, and of the revisions before")]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use tokio::sync::Notify;

use crate::context::{LogLevel, LogMessage, LogSink, Progress, ProgressSink};
use crate::error_report::Escaped;
use crate::pipeline::Call;

/// One report of a running call.
enum Notice {
    Progress(Progress),
    Log(LogMessage),
}

/// The reports a running call made that its client was not sent yet:
/// queued by the call's sinks, sent by its forwarding. Not a channel: one
/// would allocate room for 32 reports for every call that carries a
/// progress token (rmcp's client sends one with each request), and most
/// calls report nothing.
#[derive(Default)]
struct Reports {
    queued: Mutex<VecDeque<Notice>>,
    /// Woken when a report is queued (a report queued before the
    /// forwarding waits leaves it a permit).
    ready: Notify,
}

impl Reports {
    fn push(&self, notice: Notice) {
        self.queued().push_back(notice);
        self.ready.notify_one();
    }

    fn pop(&self) -> Option<Notice> {
        self.queued().pop_front()
    }

    fn queued(&self) -> MutexGuard<'_, VecDeque<Notice>> {
        // Each change is one push or one pop: a panic leaves it whole.
        self.queued.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where a call's reports go: the sinks attached to its pipeline call.
#[derive(Clone, Default)]
pub(crate) struct Sinks {
    progress: Option<ProgressSink>,
    log: Option<LogSink>,
}

/// What sends a call's reports to its client while it runs.
pub(crate) struct Forwarding {
    token: Option<ProgressToken>,
    reports: Option<Arc<Reports>>,
}

/// The sinks of the request of `context`, and what forwards their reports:
/// progress when the request carries a token, log messages at or above
/// `level` when there is one.
pub(crate) fn for_request(context: &RequestContext<RoleServer>, level: Option<LogLevel>) -> (Sinks, Forwarding) {
    let token = context.meta.get_progress_token();
    if token.is_none() && level.is_none() {
        return (Sinks::default(), Forwarding { token, reports: None });
    }
    let reports = Arc::new(Reports::default());
    let progress = token.is_some().then(|| {
        let reports = reports.clone();
        ProgressSink::new(move |progress| reports.push(Notice::Progress(progress)))
    });
    let log = level.map(|level| {
        let reports = reports.clone();
        LogSink::new(move |message: LogMessage| {
            if message.level >= level {
                reports.push(Notice::Log(message));
            }
        })
    });
    (Sinks { progress, log }, Forwarding { token, reports: Some(reports) })
}

impl Sinks {
    /// `call`, its reports going to these sinks.
    pub(crate) fn attach<'r, App: Send + Sync + 'static>(&self, mut call: Call<'r, App>) -> Call<'r, App> {
        if let Some(progress) = &self.progress {
            call = call.progress(progress.clone());
        }
        if let Some(log) = &self.log {
            call = call.log(log.clone());
        }
        call
    }
}

impl Forwarding {
    /// Runs `call`, sending each report to the client as it comes, and
    /// every report made before the call settled ahead of its result. The
    /// tool's interim text is a progress notification whose `message` is
    /// the text; its progress repeats the last value sent (MCP progress
    /// never goes back). A report is sent boxed: the future of every call
    /// would otherwise hold room for rmcp's sending of one, and copy it
    /// whole each time the call's future moves.
    pub(crate) async fn run<T>(self, call: impl IntoFuture<Output = T>, peer: &Peer<RoleServer>) -> T {
        let Some(reports) = self.reports else { return call.await };
        let call = call.into_future();
        let mut sender = Sender { token: self.token, last: 0.0, peer };
        let mut call = std::pin::pin!(call);
        let output = loop {
            tokio::select! {
                output = &mut call => break output,
                () = reports.ready.notified() => sender.send_all(&reports).await,
            }
        };
        sender.send_all(&reports).await;
        output
    }
}

/// Sends reports to one request's client.
struct Sender<'p> {
    token: Option<ProgressToken>,
    /// The last progress value sent.
    last: f64,
    peer: &'p Peer<RoleServer>,
}

impl Sender<'_> {
    /// Sends each report queued, in order.
    async fn send_all(&mut self, reports: &Reports) {
        while let Some(notice) = reports.pop() {
            Box::pin(self.send(notice)).await;
        }
    }

    #[allow(deprecated, reason = "MCP logging is deprecated at 2026-07-28 but still part of it, and of the revisions before")]
    async fn send(&mut self, notice: Notice) {
        let sent = match notice {
            Notice::Progress(progress) => {
                let Some(token) = &self.token else { return };
                let value = if progress.interim { self.last } else { progress.progress };
                self.last = value;
                let mut param = ProgressNotificationParam::new(token.clone(), value);
                param.total = progress.total;
                param.message = progress.message;
                self.peer.notify_progress(param).await
            }
            Notice::Log(message) => self.peer.notify_logging_message(log_param(message)).await,
        };
        if let Err(error) = sent {
            tracing::debug!(error = %Escaped(&error), "could not send a notification of a running call");
        }
    }
}

/// A tool's log message as `notifications/message` carries it.
#[allow(deprecated, reason = "MCP logging is deprecated at 2026-07-28 but still part of it, and of the revisions before")]
fn log_param(message: LogMessage) -> LoggingMessageNotificationParam {
    LoggingMessageNotificationParam::new(mcp_level(message.level), Value::String(message.message))
}

/// A level as rmcp names it.
#[allow(deprecated, reason = "MCP logging is deprecated at 2026-07-28 but still part of it, and of the revisions before")]
fn mcp_level(level: LogLevel) -> rmcp::model::LoggingLevel {
    use rmcp::model::LoggingLevel;
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}

/// A level rmcp read from a request, as the runtime names it.
#[allow(deprecated, reason = "MCP logging is deprecated at 2026-07-28 but still part of it, and of the revisions before")]
pub(crate) fn level(level: rmcp::model::LoggingLevel) -> LogLevel {
    use rmcp::model::LoggingLevel;
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

//! [`Call`]: a call set up by [`Registry::call`](crate::Registry::call) and run by `.await`ing it
//! through the pipeline, or by [`Call::output`] for the tool's output as
//! its Rust type (`kept`).

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;

use smol_str::SmolStr;
use tokio_util::sync::CancellationToken;

use crate::call::{Arguments, CallOutcome, PendingCall};
use crate::context::{CallInfo, LogSink, ProgressSink, UserContext};
use crate::result::{CallResult, ResultKind};
use crate::table::ToolTable;

/// A call being set up; `.await` it. Made by [`Registry::call`](crate::Registry::call).
#[must_use = "a call does nothing until it is awaited"]
pub struct Call<'r, App> {
    tools: &'r ToolTable<App>,
    app: &'r Arc<App>,
    name: String,
    args: Arguments<'r>,
    info: CallInfo,
    offered: Option<Vec<String>>,
}

impl<'r, App: Send + Sync + 'static> Call<'r, App> {
    pub(crate) fn new(tools: &'r ToolTable<App>, app: &'r Arc<App>, name: &str, args: Arguments<'r>) -> Self {
        Call { tools, app, name: name.to_owned(), args, info: CallInfo::anonymous(crate::ids::fresh_call_id()), offered: None }
    }

    /// Who is calling (default: an anonymous user).
    pub fn user(mut self, user: impl Into<Arc<UserContext>>) -> Self {
        self.info.user = Some(user.into());
        self
    }

    /// The conversation thread.
    pub fn thread_id(mut self, thread_id: impl Into<Arc<str>>) -> Self {
        self.info.attach().thread_id = Some(thread_id.into());
        self
    }

    /// The call id (default: a fresh `call_N`).
    pub fn call_id(mut self, call_id: impl Into<SmolStr>) -> Self {
        self.info.call_id = call_id.into();
        self
    }

    /// A token the caller cancels to cancel the call. The tool sees a child
    /// of it, which the runtime also cancels at the timeout.
    pub fn cancellation(mut self, token: &CancellationToken) -> Self {
        self.info.cancel = token.child_token().into();
        self
    }

    /// Where the tool's progress reports go, and its interim text (a
    /// [`Progress`](crate::Progress) with `interim: true`).
    pub fn progress(mut self, sink: ProgressSink) -> Self {
        self.info.attach().progress = Some(sink);
        self
    }

    /// Where the tool's log messages go ([`Ctx::log`](crate::Ctx::log));
    /// without a sink they are `tracing` events.
    pub fn log(mut self, sink: LogSink) -> Self {
        self.info.attach().log = Some(sink);
        self
    }

    /// The memory of the run the call belongs to: its effect is recorded
    /// there.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn remembered(mut self, memory: crate::memory::Remembered) -> Self {
        self.info.attach().memory = Some(memory);
        self
    }

    /// The call's asking state: its tool may ask questions, parked in the
    /// memory [`remembered`](Self::remembered) attaches (an MCP session's).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn asking(mut self, asking: Arc<crate::question::Asking>) -> Self {
        self.info.attach().asking = Some(asking);
        self
    }

    /// What the call's policy predicate sees of its run (an MCP session's).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn run_view(mut self, view: crate::context::RunView) -> Self {
        self.info.attach().run = Some(Arc::new(view));
        self
    }

    /// Only these tools may be called (those offered in the current step);
    /// any other name is refused as unknown, as in a [`Run`](crate::Run).
    /// `None`: any registered tool (the caller found the one called
    /// offered).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn offered(mut self, offered: Option<Vec<String>>) -> Self {
        self.offered = offered;
        self
    }
}

impl<'r, App: Send + Sync + 'static> Call<'r, App> {
    /// Runs the call through the pipeline as `.await` does (validation,
    /// policy, approval, timeout, output checks), and gives the tool's
    /// output as the Rust value its function returned, a `T`, rather than
    /// the text and JSON the model and other callers get: for a Rust host
    /// that calls its own `#[tool]`s.
    ///
    /// The output is serialised for the result as ever (and its output
    /// schema checked); the value is not cut at `max_output_chars`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tool_runtime::prelude::*;
    /// use tool_runtime::OutputError;
    ///
    /// #[tool_data(Serialize, JsonSchema)]
    /// #[derive(Debug, PartialEq)]
    /// struct Quote { cents: u64, currency: String }
    ///
    /// /// Quote a price.
    /// #[tool(read_only)]
    /// async fn quote(sku: String) -> Result<Quote, ToolError> {
    ///     if sku.is_empty() { return Err(ToolError::bad_request("NO_SKU", "Give a SKU.")) }
    ///     Ok(Quote { cents: 999, currency: "EUR".into() })
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let registry = Registry::<()>::builder().tools(tools![quote]).build().unwrap();
    /// let app = Arc::new(());
    /// let price: Quote = registry.call(&app, "quote", r#"{"sku": "K-1"}"#).output().await.unwrap();
    /// assert_eq!(price, Quote { cents: 999, currency: "EUR".into() });
    /// let Err(OutputError::Failed(result)) = registry.call(&app, "quote", r#"{"sku": ""}"#).output::<Quote>().await else { panic!() };
    /// assert_eq!(result.error_code.as_deref(), Some("NO_SKU"));
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`OutputError::Failed`] with the call's result when it did not
    /// succeed (the model's line in `text`); [`OutputError::NeedsApproval`]
    /// with the pending call when it waits for a human (its approval,
    /// [`Registry::approve`](crate::Registry::approve), gives the text and
    /// JSON); [`OutputError::OtherType`] when it succeeded but its output
    /// is not a `T` (a dynamic tool's, whose output is JSON, is not kept).
    pub async fn output<T: Send + 'static>(self) -> Result<T, OutputError<App>> {
        let kept = crate::kept::Kept::<T>::new();
        match kept.scope(self.into_future()).await {
            CallOutcome::NeedsApproval(pending) => Err(OutputError::NeedsApproval(pending)),
            CallOutcome::Done(result) if result.kind != ResultKind::Success => Err(OutputError::Failed(result)),
            CallOutcome::Done(result) => kept.take().ok_or(OutputError::OtherType { result, expected: std::any::type_name::<T>() }),
        }
    }
}

/// Why [`Call::output`] gave no output.
pub enum OutputError<App> {
    /// The call did not succeed: its result, whose `text` the model would
    /// read.
    Failed(CallResult),
    /// The call waits for a human.
    NeedsApproval(PendingCall<App>),
    /// The call succeeded, but the tool's output is not of the type asked
    /// for (`expected`): a mistake in the host's code.
    OtherType {
        /// The call's result.
        result: CallResult,
        /// The type asked for.
        expected: &'static str,
    },
}

impl<App> std::fmt::Debug for OutputError<App> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OutputError::Failed(result) => f.debug_tuple("Failed").field(result).finish(),
            OutputError::NeedsApproval(pending) => f.debug_tuple("NeedsApproval").field(pending).finish(),
            OutputError::OtherType { result, expected } => f.debug_struct("OtherType").field("result", result).field("expected", expected).finish(),
        }
    }
}

impl<App> std::fmt::Display for OutputError<App> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OutputError::Failed(result) => write!(f, "the call of `{}` did not succeed: {}", result.tool, result.text),
            OutputError::NeedsApproval(pending) => write!(f, "the call of `{}` waits for approval", pending.tool()),
            OutputError::OtherType { result, expected } => write!(f, "the output of `{}` is not a `{expected}`", result.tool),
        }
    }
}

impl<App> std::error::Error for OutputError<App> {}

impl<'r, App: Send + Sync + 'static> IntoFuture for Call<'r, App> {
    type Output = CallOutcome<App>;
    type IntoFuture = Pin<Box<dyn Future<Output = CallOutcome<App>> + Send + 'r>>;

    fn into_future(self) -> Self::IntoFuture {
        let Call { tools, app, name, args, info, offered } = self;
        Box::pin(super::process(tools, app, &name, args, info, offered.as_deref(), None))
    }
}

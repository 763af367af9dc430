//! [`Call`]: a call set up by [`Registry::call`](crate::Registry::call) and run by `.await`ing it
//! through the pipeline.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;

use smol_str::SmolStr;
use tokio_util::sync::CancellationToken;

use crate::call::{Arguments, CallOutcome};
use crate::context::{CallInfo, ProgressSink, UserContext};
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

    /// The memory of the run the call belongs to: its effect is recorded
    /// there.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn remembered(mut self, memory: crate::memory::Remembered) -> Self {
        self.info.attach().memory = Some(memory);
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
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn offered(mut self, offered: Vec<String>) -> Self {
        self.offered = Some(offered);
        self
    }
}

impl<'r, App: Send + Sync + 'static> IntoFuture for Call<'r, App> {
    type Output = CallOutcome<App>;
    type IntoFuture = Pin<Box<dyn Future<Output = CallOutcome<App>> + Send + 'r>>;

    fn into_future(self) -> Self::IntoFuture {
        let Call { tools, app, name, args, info, offered } = self;
        Box::pin(super::process(tools, app, &name, args, info, offered.as_deref(), None))
    }
}

//! What a call is made of and what it ends with: its [`Arguments`], the
//! [`Call`] a host sets up, its [`CallOutcome`], a [`PendingCall`] waiting
//! for a human. The stages a call goes through are in
//! `pipeline`.

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Map, Value};
use smol_str::SmolStr;
use tokio_util::sync::CancellationToken;

use crate::context::{CallInfo, Ctx, ProgressSink, UserContext};
use crate::registry::Registry;
use crate::result::{CallResult, ResultKind, lines};
use crate::tool::ParsedFrom;

/// The arguments of a call, as text (provider payloads) or already parsed
/// (MCP). Text may be borrowed: a call with a `&str` copies it only if it
/// must keep it (a call that waits for approval).
#[derive(Clone, Debug, PartialEq)]
pub enum Arguments<'a> {
    /// Raw JSON text.
    Text(Cow<'a, str>),
    /// A parsed JSON value.
    Value(Value),
}

impl Arguments<'_> {
    /// The same arguments, owning their text.
    pub fn into_owned(self) -> Arguments<'static> {
        match self {
            Arguments::Text(text) => Arguments::Text(Cow::Owned(text.into_owned())),
            Arguments::Value(value) => Arguments::Value(value),
        }
    }
}

impl<'a> From<&'a str> for Arguments<'a> {
    fn from(text: &'a str) -> Self {
        Arguments::Text(Cow::Borrowed(text))
    }
}

impl From<String> for Arguments<'_> {
    fn from(text: String) -> Self {
        Arguments::Text(Cow::Owned(text))
    }
}

impl From<Value> for Arguments<'_> {
    fn from(value: Value) -> Self {
        Arguments::Value(value)
    }
}

impl From<Map<String, Value>> for Arguments<'_> {
    fn from(map: Map<String, Value>) -> Self {
        Arguments::Value(Value::Object(map))
    }
}

/// How a call ended: with a result, or parked until a human decides.
pub enum CallOutcome<App> {
    /// The call ended; the model reads `result.text`.
    Done(CallResult),
    /// The call waits for a human: pass it to [`Registry::approve`],
    /// [`Registry::approve_with`] or [`Registry::reject`].
    NeedsApproval(PendingCall<App>),
}

impl<App> fmt::Debug for CallOutcome<App> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallOutcome::Done(result) => f.debug_tuple("Done").field(result).finish(),
            CallOutcome::NeedsApproval(pending) => f.debug_tuple("NeedsApproval").field(pending).finish(),
        }
    }
}

impl<App> CallOutcome<App> {
    /// The result, or `None` while a human must decide.
    pub fn into_result(self) -> Option<CallResult> {
        match self {
            CallOutcome::Done(result) => Some(result),
            CallOutcome::NeedsApproval(_) => None,
        }
    }
}

/// A call that passed validation and policy and waits for a human. Pass
/// it back to [`Registry::approve`], [`Registry::approve_with`] or
/// [`Registry::reject`].
///
/// It is one pointer wide (what it holds is boxed), so a [`CallOutcome`]
/// is no larger than the [`CallResult`] of a call that did not wait.
pub struct PendingCall<App>(pub(crate) Box<Pending<App>>);

pub(crate) struct Pending<App> {
    pub(crate) id: SmolStr,
    pub(crate) tool: SmolStr,
    pub(crate) rejection_text: Option<String>,
    pub(crate) input: Box<dyn Any + Send + Sync>,
    pub(crate) args: ParsedFrom<'static>,
    pub(crate) ctx: Ctx<App>,
    /// When the call was parked; past the registry's approval TTL it is
    /// not run. Tokio's clock, so tests can pause time.
    pub(crate) parked: tokio::time::Instant,
}

impl<App> fmt::Debug for PendingCall<App> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingCall").field("id", &self.0.id).field("tool", &self.0.tool).finish_non_exhaustive()
    }
}

impl<App> PendingCall<App> {
    /// The call id (also the approval id).
    pub fn id(&self) -> &SmolStr {
        &self.0.id
    }

    /// The tool.
    pub fn tool(&self) -> &SmolStr {
        &self.0.tool
    }

    /// The validated arguments, for the human to review. A pending call
    /// keeps its arguments once, as they came (the model's text, or the
    /// object it sent), beside the parsed input it will run with; this
    /// builds the JSON value from them on each call.
    pub fn arguments(&self) -> Value {
        self.0.args.to_value()
    }

    /// What the model reads if the human rejects without a text (the
    /// policy's rejection text).
    pub fn rejection_text(&self) -> Option<&str> {
        self.0.rejection_text.as_deref()
    }

    /// The result the model reads while the call waits.
    pub fn pending_result(&self) -> CallResult {
        CallResult::failure(self.0.tool.clone(), self.0.id.clone(), ResultKind::PendingApproval, &lines::pending())
    }
}

/// A call being set up; `.await` it. Made by [`Registry::call`].
#[must_use = "a call does nothing until it is awaited"]
pub struct Call<'r, App> {
    registry: &'r Registry<App>,
    app: &'r Arc<App>,
    name: String,
    args: Arguments<'r>,
    info: CallInfo,
    offered: Option<Vec<String>>,
}

impl<'r, App: Send + Sync + 'static> Call<'r, App> {
    pub(crate) fn new(registry: &'r Registry<App>, app: &'r Arc<App>, name: &str, args: Arguments<'r>) -> Self {
        Call { registry, app, name: name.to_owned(), args, info: CallInfo::anonymous(crate::ids::fresh_call_id()), offered: None }
    }

    /// Who is calling (default: an anonymous user).
    pub fn user(mut self, user: impl Into<Arc<UserContext>>) -> Self {
        self.info.user = Some(user.into());
        self
    }

    /// The conversation thread.
    pub fn thread_id(mut self, thread_id: impl Into<Arc<str>>) -> Self {
        self.info.thread_id = Some(thread_id.into());
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
        self.info.progress = Some(sink);
        self
    }

    /// The memory of the run the call belongs to: its effect is recorded
    /// there.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn remembered(mut self, memory: crate::memory::Remembered) -> Self {
        self.info.memory = Some(memory);
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
        let Call { registry, app, name, args, info, offered } = self;
        registry.process(app, &name, args, info, offered.as_deref(), None)
    }
}

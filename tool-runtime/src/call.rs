//! What a call is made of and what it ends with: the [`ToolCall`] a model
//! emitted, its [`Arguments`], the [`Call`] a host sets up, its [`CallOutcome`], a [`PendingCall`] waiting
//! for a human. The stages a call goes through are in
//! `pipeline`.

use std::any::Any;
use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Value};
use smol_str::SmolStr;

use crate::context::Ctx;
use crate::memory::Ask;
pub use crate::result::ExternalCall;
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
    /// The call waits for a human: pass it to [`Registry::approve`](crate::Registry::approve),
    /// [`Registry::approve_with`](crate::Registry::approve_with) or [`Registry::reject`](crate::Registry::reject).
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

/// A call that waits for someone outside it: for a human's approval (it
/// passed validation and policy), or for the answers to the questions its
/// tool asked ([`questions`](Self::questions)). Pass one waiting for
/// approval back to [`Registry::approve`](crate::Registry::approve),
/// [`Registry::approve_with`](crate::Registry::approve_with) or
/// [`Registry::reject`](crate::Registry::reject); in a run, decide either
/// kind through [`Run::approvals`](crate::Run::approvals).
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
    /// The questions its tool stopped at, by id; empty for a call waiting
    /// for approval.
    pub(crate) questions: Vec<(String, Ask)>,
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

    /// The questions its tool asked and stopped at, each with its id, which
    /// [`Approvals::answer`](crate::Approvals::answer) and
    /// [`question::decide`](crate::question::decide) take; none for a call
    /// that waits for approval (its id is the call's).
    pub fn questions(&self) -> impl Iterator<Item = (&str, &Ask)> {
        self.0.questions.iter().map(|(id, ask)| (id.as_str(), ask))
    }

    /// Whether the call waits for the answers to its tool's questions,
    /// rather than for approval.
    pub fn asks(&self) -> bool {
        !self.0.questions.is_empty()
    }

    /// The result the model reads while the call waits.
    pub fn pending_result(&self) -> CallResult {
        let waiting = if self.asks() { lines::question_pending() } else { lines::pending() };
        CallResult::failure(self.0.tool.clone(), self.0.id.clone(), ResultKind::PendingApproval, &waiting)
    }
}

/// One tool call the model emitted.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// The provider's id for the call (`call_...`, `toolu_...`).
    pub id: String,
    /// The tool name as the model wrote it.
    pub name: String,
    /// The arguments as the model wrote them.
    pub arguments: Arguments<'static>,
}

impl ToolCall {
    /// A call of `name` with `arguments`, with the provider's `id`.
    pub fn new<'a>(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<Arguments<'a>>) -> Self {
        ToolCall { id: id.into(), name: name.into(), arguments: arguments.into().into_owned() }
    }
}

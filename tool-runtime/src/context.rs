//! What a tool, a policy predicate and a visibility predicate can see
//! (`context/run.rs`: what a policy predicate sees of its run).

use std::fmt;
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};
use smol_str::SmolStr;
use tokio_util::sync::CancellationToken;

use crate::error::ToolError;
use crate::error_report::Escaped;
use crate::policy::ApprovalFloor;
use crate::question::{Ask, Asking, Form, Reply, Root, Sampled, SamplingRequest};

mod run;

pub(crate) use run::StepArguments;
pub use run::{RunView, StepCall};

/// The context of one call: app state, the user, the thread and call ids,
/// the cancellation token, a progress reporter and a log.
///
/// Take it as the *first* parameter of a tool (any name) to get at the app
/// state; the tool then works only in a `Registry<App>` of that app type.
/// It is cheap to clone.
///
/// ```
/// use std::sync::Arc;
/// use tool_runtime::Ctx;
///
/// struct Shop { name: &'static str }
/// let ctx = Ctx::new(Arc::new(Shop { name: "demo" }));
/// assert_eq!(ctx.app().name, "demo");
/// assert!(!ctx.cancellation().is_cancelled());
/// ```
pub struct Ctx<App> {
    app: Arc<App>,
    call: Arc<CallInfo>,
}

/// Everything about a call that is not the app state.
#[derive(Clone, Debug, Default)]
pub(crate) struct CallInfo {
    /// `None` for an anonymous user (no allocation, no shared count).
    pub(crate) user: Option<Arc<UserContext>>,
    pub(crate) call_id: SmolStr,
    /// Made when first asked for: a call nobody can cancel (no caller's
    /// token, and a tool that finishes without waiting) needs none.
    pub(crate) cancel: OnceLock<CancellationToken>,
    /// `None` for a call nothing was attached to (no allocation).
    attached: Option<Box<Attached>>,
}

/// What a host or a run attaches to a call. Boxed apart from the rest of
/// [`CallInfo`], which every call's future holds and moves: a bare call
/// ([`Registry::invoke`](crate::Registry::invoke)) has none of it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Attached {
    pub(crate) thread_id: Option<Arc<str>>,
    pub(crate) progress: Option<ProgressSink>,
    /// Where the tool's log messages go; `None`: to `tracing`.
    pub(crate) log: Option<LogSink>,
    /// The memory of the run the call belongs to, which records its
    /// effect; `None` outside a run.
    pub(crate) memory: Option<crate::memory::Remembered>,
    /// What the call's policy predicate sees of its run; only for a call
    /// whose policy is a predicate.
    pub(crate) run: Option<Arc<RunView>>,
    /// The call's asking state, through which its tool asks questions;
    /// `None` where no one can be asked.
    pub(crate) asking: Option<Arc<Asking>>,
}

impl CallInfo {
    /// A call by an anonymous user, with nothing attached.
    pub(crate) fn anonymous(call_id: SmolStr) -> Self {
        CallInfo { user: None, call_id, cancel: OnceLock::new(), attached: None }
    }

    /// A call with `attached` (left out when it holds nothing).
    pub(crate) fn with(user: Option<Arc<UserContext>>, call_id: SmolStr, cancel: OnceLock<CancellationToken>, attached: Attached) -> Self {
        let nothing = attached.thread_id.is_none()
            && attached.progress.is_none()
            && attached.log.is_none()
            && attached.memory.is_none()
            && attached.run.is_none()
            && attached.asking.is_none();
        CallInfo { user, call_id, cancel, attached: (!nothing).then(|| Box::new(attached)) }
    }

    /// What is attached to the call, to set some of it.
    pub(crate) fn attach(&mut self) -> &mut Attached {
        self.attached.get_or_insert_default()
    }

    /// The conversation thread, when the host set one.
    pub(crate) fn thread_id(&self) -> Option<&Arc<str>> {
        self.attached.as_ref()?.thread_id.as_ref()
    }

    /// Where progress reports go, when the host listens.
    pub(crate) fn progress(&self) -> Option<&ProgressSink> {
        self.attached.as_ref()?.progress.as_ref()
    }

    /// Where log messages go, when the host takes them.
    pub(crate) fn log(&self) -> Option<&LogSink> {
        self.attached.as_ref()?.log.as_ref()
    }

    /// The memory of the run the call belongs to; `None` outside a run.
    pub(crate) fn memory(&self) -> Option<&crate::memory::Remembered> {
        self.attached.as_ref()?.memory.as_ref()
    }

    /// What the call's policy predicate sees of its run.
    pub(crate) fn run(&self) -> Option<&RunView> {
        self.attached.as_ref()?.run.as_deref()
    }

    /// The call's asking state, where its tool may ask.
    pub(crate) fn asking(&self) -> Option<&Asking> {
        self.attached.as_ref()?.asking.as_deref()
    }

    pub(crate) fn user(&self) -> &UserContext {
        static ANONYMOUS: OnceLock<UserContext> = OnceLock::new();
        self.user.as_deref().unwrap_or_else(|| ANONYMOUS.get_or_init(UserContext::default))
    }

    /// The call's token, made now if nobody asked for it before.
    pub(crate) fn cancellation(&self) -> &CancellationToken {
        self.cancel.get_or_init(CancellationToken::new)
    }

    /// Sends the tool's interim text to the progress sink, if there is one.
    pub(crate) fn interim(&self, text: &str) {
        if let Some(sink) = self.progress() {
            (sink.0)(Progress {
                call_id: self.call_id.to_string(),
                progress: 0.0,
                total: None,
                message: Some(text.to_owned()),
                interim: true,
                preliminary: None,
            });
        }
    }

    /// Whether the call was cancelled (never, if it has no token yet).
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancel.get().is_some_and(CancellationToken::is_cancelled)
    }
}

impl<App> Clone for Ctx<App> {
    fn clone(&self) -> Self {
        Ctx { app: self.app.clone(), call: self.call.clone() }
    }
}

impl<App> Ctx<App> {
    /// A context for calling a tool function directly (tests, scripts):
    /// an anonymous user, no thread, a fresh cancellation token.
    pub fn new(app: Arc<App>) -> Self {
        Ctx { app, call: Arc::new(CallInfo::default()) }
    }

    pub(crate) fn info(&self) -> &CallInfo {
        &self.call
    }

    /// The app state.
    pub fn app(&self) -> &App {
        &self.app
    }

    /// The app state, shared.
    pub fn app_arc(&self) -> &Arc<App> {
        &self.app
    }

    /// Who is calling.
    pub fn user(&self) -> &UserContext {
        self.call.user()
    }

    /// The conversation thread of the call, when the host set one.
    pub fn thread_id(&self) -> Option<&str> {
        self.call.thread_id().map(|thread| &**thread)
    }

    /// The id of this call (the provider's tool-call id when there is one).
    pub fn call_id(&self) -> &str {
        &self.call.call_id
    }

    /// The run this call belongs to, as its policy predicate sees it: the
    /// run's record as the call's step began and the step's calls
    /// ([`RunView`]). Set in a [`Run`](crate::Run) and an MCP session for
    /// a call whose policy is a predicate; `None` for a call outside a run
    /// (`Registry::invoke`, `Registry::call`) and for any other call.
    pub fn run(&self) -> Option<&RunView> {
        self.call.run()
    }

    /// The other calls of this call's step (name, id and input as the model
    /// wrote them), in the model's order; none outside a run, in an MCP
    /// session (a step of one call), and where [`run`](Self::run) is `None`.
    pub fn other_calls(&self) -> impl Iterator<Item = &StepCall> {
        let id = self.call_id();
        self.run().into_iter().flat_map(|run| run.calls.iter()).filter(move |call| call.id != id)
    }

    /// Cancelled at the tool's timeout and when the caller cancels the call.
    /// Pass it to the clients the tool uses, or `select!` on
    /// [`cancelled()`](CancellationToken::cancelled). Cancellation never
    /// undoes what the tool already did.
    pub fn cancellation(&self) -> &CancellationToken {
        self.call.cancellation()
    }

    /// Reports progress to the host (MCP progress notifications, a UI).
    /// Does nothing when the host does not listen.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(sink) = self.call.progress() {
            (sink.0)(Progress {
                call_id: self.call.call_id.to_string(),
                progress,
                total,
                message: message.map(str::to_owned),
                interim: false,
                preliminary: None,
            });
        }
    }

    /// Writes a log message for the host. Over MCP it is a
    /// `notifications/message` to the client: at revision 2025-11-25 when
    /// `level` is at or above the level the client set with
    /// `logging/setLevel` (`info` until it sets one); at 2026-07-28 only
    /// for a request whose `_meta` asks for log messages, at or above its
    /// level. Elsewhere, and where the host takes no log messages, it is a
    /// `tracing` event of the call (`warn` for `warning`, `error` for
    /// `error` and above), its text escaped.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tool_runtime::{Ctx, LogLevel};
    ///
    /// let ctx = Ctx::new(Arc::new(()));
    /// ctx.log(LogLevel::Info, "fetched 3 orders");
    /// ```
    pub fn log(&self, level: LogLevel, message: impl Into<String>) {
        let message = LogMessage { call_id: self.call.call_id.to_string(), level, message: message.into() };
        match self.call.log() {
            Some(sink) => (sink.0)(message),
            None => message.trace(),
        }
    }

    /// Asks the user to fill in a form of `T` (MCP elicitation): `message`
    /// says what for, and `T`'s fields (a struct with `#[derive(Form)]`)
    /// are the form's. Returns the user's answer, their decline, or their
    /// cancel.
    ///
    /// The call stops here until the question is answered, by the host
    /// ([`Approvals::answer`](crate::Approvals::answer)), the approvals
    /// inbox or an MCP client; then it runs again from the top, and this
    /// question, asked again, returns its answer (see
    /// [`question`](crate::question): what the tool did before it runs
    /// again, unless made through [`once`](Self::once)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use serde_json::json;
    /// use tool_runtime::prelude::*;
    /// use tool_runtime::question::Reply;
    /// use tool_runtime::Form;
    ///
    /// #[tool_data(Deserialize, JsonSchema)]
    /// #[derive(Form)]
    /// struct Confirm {
    ///     /// Go ahead.
    ///     go_ahead: bool,
    /// }
    ///
    /// /// Close an account, once its owner confirms.
    /// #[tool]
    /// async fn close_account(ctx: Ctx<()>, account: String) -> Result<String, ToolError> {
    ///     match ctx.elicit::<Confirm>(format!("Close {account} for good?")).await? {
    ///         Reply::Answered(Confirm { go_ahead: true }) => Ok(format!("closed {account}")),
    ///         _ => Ok(format!("{account} stays open")),
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let registry = Registry::<()>::builder().tools(tools![close_account]).build().unwrap();
    /// let mut run = registry.run(Arc::new(()));
    /// let step = run.execute(vec![ToolCall::new("c1", "close_account", json!({"account": "A-7"}))]).await;
    /// assert!(step.has_pending());
    /// let question = run.pending()[0].questions().map(|(id, _form)| id.to_owned()).next().unwrap();
    /// let result = run.approvals().answer(&question, json!({"go_ahead": true})).await.unwrap();
    /// assert_eq!(result.text, "closed A-7");
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// A [`ToolError`] for the tool to return: no one can be asked here
    /// (outside a run: `QUESTION_UNAVAILABLE`), the question could not be
    /// recorded, or `T` has a field MCP's forms cannot carry.
    pub async fn elicit<T: Form>(&self, message: impl Into<String>) -> Result<Reply<T>, ToolError> {
        self.form::<T>(message.into(), None).await
    }

    /// Asks as [`elicit`](Self::elicit) does, the question named `name`:
    /// where a client answers questions by key (revision 2026-07-28's
    /// `inputRequests`), it goes by `name` instead of its id
    /// (`<call id>#<n>`), which the memory keys it by all the same. A name
    /// is unique in its call: a second question of the call of that name
    /// cannot be asked by key.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tool_runtime::prelude::*;
    /// use tool_runtime::question::{Ask, Reply};
    /// use tool_runtime::Form;
    ///
    /// #[tool_data(Deserialize, JsonSchema)]
    /// #[derive(Form)]
    /// struct Name {
    ///     /// Your name.
    ///     name: String,
    /// }
    ///
    /// /// Greet the user by name.
    /// #[tool]
    /// async fn greet(ctx: Ctx<()>) -> Result<String, ToolError> {
    ///     match ctx.elicit_named::<Name>("user_name", "What is your name?").await? {
    ///         Reply::Answered(Name { name }) => Ok(format!("Hello, {name}!")),
    ///         _ => Ok("Hello!".into()),
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let registry = Registry::<()>::builder().tools(tools![greet]).build().unwrap();
    /// let mut run = registry.run(Arc::new(()));
    /// let step = run.execute(vec![ToolCall::new("c1", "greet", serde_json::json!({}))]).await;
    /// assert!(step.has_pending());
    /// let (id, ask) = run.pending()[0].questions().next().unwrap();
    /// assert_eq!(id, "c1#1", "the memory keys it by its id");
    /// assert_eq!(ask.key(id), "user_name", "a client answers it by its name");
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`elicit`](Self::elicit).
    pub async fn elicit_named<T: Form>(&self, name: impl Into<String>, message: impl Into<String>) -> Result<Reply<T>, ToolError> {
        self.form::<T>(message.into(), Some(name.into())).await
    }

    /// Asks for a form of `T`, named or not.
    async fn form<T: Form>(&self, message: String, name: Option<String>) -> Result<Reply<T>, ToolError> {
        let schema = crate::question::requested_schema::<T>().map_err(|why| ToolError::internal().with_message(why))?;
        self.ask(Ask::Form { message, schema, name }).await
    }

    /// Asks the client's model for a completion (MCP sampling), as
    /// [`elicit`](Self::elicit) asks: the call stops here until it is
    /// answered.
    ///
    /// # Errors
    ///
    /// As [`elicit`](Self::elicit).
    pub async fn sample(&self, request: SamplingRequest) -> Result<Reply<Sampled>, ToolError> {
        self.ask(Ask::Sample(request)).await
    }

    /// Asks the client for its roots (MCP `roots/list`), as
    /// [`elicit`](Self::elicit) asks: the call stops here until it is
    /// answered.
    ///
    /// # Errors
    ///
    /// As [`elicit`](Self::elicit).
    pub async fn roots(&self) -> Result<Reply<Vec<Root>>, ToolError> {
        self.ask(Ask::Roots).await
    }

    /// Makes `effect` once for this call under `key` (unique in the call):
    /// a call that asks a question runs again from the top once it is
    /// answered, and every later run gets the value this one made, without
    /// making it again. A durable run keeps it in its journal, across
    /// processes; outside a run, `effect` is simply made.
    ///
    /// ```
    /// # use tool_runtime::prelude::*;
    /// # use tool_runtime::question::Reply;
    /// # #[tool_data(Deserialize, JsonSchema)] #[derive(tool_runtime::Form)] struct Confirm { go_ahead: bool }
    /// # async fn place_hold(order: &str) -> String { format!("hold-{order}") }
    /// /// Refund an order: hold the money, then ask.
    /// #[tool]
    /// async fn refund(ctx: Ctx<()>, order: String) -> Result<String, ToolError> {
    ///     let hold = ctx.once("hold", place_hold(&order)).await?;
    ///     match ctx.elicit::<Confirm>("Refund it?").await? {
    ///         Reply::Answered(Confirm { go_ahead: true }) => Ok(format!("refunded from {hold}")),
    ///         _ => Ok(format!("{hold} released")),
    ///     }
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// `OUTCOME_UNKNOWN` when a durable run's journal holds the effect as
    /// started and never finished (its process was cut off while making
    /// it); the generic 500 when the journal fails.
    pub async fn once<T, F>(&self, key: &str, effect: F) -> Result<T, ToolError>
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
        F: Future<Output = T>,
    {
        crate::question::once(self.call.asking(), self.call.memory(), &self.call.call_id, key, effect).await
    }

    async fn ask<T: serde::de::DeserializeOwned>(&self, ask: Ask) -> Result<Reply<T>, ToolError> {
        let Some(asking) = self.call.asking() else { return Err(crate::result::lines::cannot_ask()) };
        let remembered = asking.memory(self.call.memory());
        crate::question::reply(crate::question::ask(asking, remembered, &self.call.call_id, ask).await?)
    }

    /// Replaces the user (for direct calls in tests).
    pub fn with_user(mut self, user: UserContext) -> Self {
        Arc::make_mut(&mut self.call).user = Some(Arc::new(user));
        self
    }
}

/// A call's app state and call information as the registry holds them
/// while the call runs: the app borrowed from the caller, the information
/// owned. They are put behind a shared [`Ctx`] (the app's `Arc` cloned) only
/// when a tool or a predicate takes one: a tool without a context costs no
/// shared allocation and no reference count.
#[doc(hidden)]
pub struct CallState<'a, App> {
    app: &'a Arc<App>,
    /// The call's information, moved into the context when one is made.
    info: CallInfo,
    ctx: Option<Ctx<App>>,
    /// The tool's output limit, set when it runs (for a streaming tool's
    /// preliminary items).
    output_limit: usize,
}

impl<'a, App> CallState<'a, App> {
    pub(crate) fn new(app: &'a Arc<App>, info: CallInfo) -> Self {
        CallState { app, info, ctx: None, output_limit: usize::MAX }
    }

    /// The state of a call whose context exists already (a call that
    /// waited for approval): every context the call hands out is `ctx`.
    pub(crate) fn shared(ctx: &'a Ctx<App>) -> Self {
        CallState { app: &ctx.app, info: CallInfo::default(), ctx: Some(ctx.clone()), output_limit: usize::MAX }
    }

    pub(crate) fn set_output_limit(&mut self, limit: usize) {
        self.output_limit = limit;
    }

    pub(crate) fn output_limit(&self) -> usize {
        self.output_limit
    }

    pub(crate) fn info(&self) -> &CallInfo {
        self.ctx.as_ref().map_or(&self.info, Ctx::info)
    }

    pub(crate) fn call_id(&self) -> &SmolStr {
        &self.info().call_id
    }

    /// The call's context, made on first use; every later one shares it
    /// (and its cancellation token).
    pub fn ctx(&mut self) -> &Ctx<App> {
        let CallState { app, info, ctx, .. } = self;
        ctx.get_or_insert_with(|| Ctx { app: Arc::clone(app), call: Arc::new(std::mem::take(info)) })
    }

    /// Cuts the call off from its caller's cancellation, for a tool that
    /// is not interruptible: from now on the call has a token of its own,
    /// which only its timeout cancels.
    pub(crate) fn detach(&mut self) {
        match &mut self.ctx {
            None => self.info.cancel = OnceLock::new(),
            Some(ctx) => {
                let info = CallInfo { cancel: OnceLock::new(), ..CallInfo::clone(&ctx.call) };
                ctx.call = Arc::new(info);
            }
        }
    }

    pub(crate) fn into_ctx(self) -> Ctx<App> {
        match self.ctx {
            Some(ctx) => ctx,
            None => Ctx { app: Arc::clone(self.app), call: Arc::new(self.info) },
        }
    }
}

impl<App> fmt::Debug for Ctx<App> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ctx")
            .field("user", &self.call.user().id)
            .field("thread_id", &self.call.thread_id())
            .field("call_id", &self.call.call_id)
            .finish_non_exhaustive()
    }
}

/// One progress report of a running call: one the tool made
/// ([`Ctx::progress`]), or its interim text (`interim: true`).
///
/// The interim text (`#[tool(interim = "...")]`) is sent by the runtime,
/// once, when the call is still running after its delay: `message` is the
/// text, `progress` is 0 and `total` is `None`.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// The call reporting.
    pub call_id: String,
    /// Work done so far, in the tool's own unit.
    pub progress: f64,
    /// Total work, when known.
    pub total: Option<f64>,
    /// A short human-readable message.
    pub message: Option<String>,
    /// Whether this is the tool's interim text, sent by the runtime, rather
    /// than a report the tool made.
    pub interim: bool,
    /// A preliminary result of a streaming tool ([`Streamed`](crate::Streamed)):
    /// an item before the last, whose text is `message`; `progress` counts
    /// them from 1. An item whose text crosses the output limit is its cut
    /// text instead (a string, as `message`, ending in the marker).
    pub preliminary: Option<serde_json::Value>,
}

/// Where a call's progress reports go.
#[derive(Clone)]
pub struct ProgressSink(pub(crate) Arc<dyn Fn(Progress) + Send + Sync>);

impl ProgressSink {
    /// A sink calling `f` for every report.
    pub fn new(f: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        ProgressSink(Arc::new(f))
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// How severe a log message is: the levels of syslog (RFC 5424) that MCP
/// uses, from the least severe to the most, so that `Warning > Info`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// What the tool is doing.
    Info,
    /// A normal but significant event.
    Notice,
    /// Something that may need attention.
    Warning,
    /// An error the tool met.
    Error,
    /// A part of the system failed.
    Critical,
    /// Someone must act at once.
    Alert,
    /// The system cannot be used.
    Emergency,
}

/// One log message a tool wrote ([`Ctx::log`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogMessage {
    /// The call that wrote it.
    pub call_id: String,
    /// How severe it is.
    pub level: LogLevel,
    /// Its text.
    pub message: String,
}

impl LogMessage {
    /// The message as a `tracing` event, its text escaped (the tool's text
    /// may quote its input).
    fn trace(&self) {
        let (call_id, message) = (&self.call_id, &self.message);
        match self.level {
            LogLevel::Debug => tracing::debug!(call_id = %Escaped(call_id), text = %Escaped(message), "a tool's log message"),
            LogLevel::Info | LogLevel::Notice => tracing::info!(call_id = %Escaped(call_id), text = %Escaped(message), "a tool's log message"),
            LogLevel::Warning => tracing::warn!(call_id = %Escaped(call_id), text = %Escaped(message), "a tool's log message"),
            _ => tracing::error!(call_id = %Escaped(call_id), text = %Escaped(message), "a tool's log message"),
        }
    }
}

/// Where a call's log messages go (see [`Ctx::log`]).
#[derive(Clone)]
pub struct LogSink(pub(crate) Arc<dyn Fn(LogMessage) + Send + Sync>);

impl LogSink {
    /// A sink calling `f` for every message.
    pub fn new(f: impl Fn(LogMessage) + Send + Sync + 'static) -> Self {
        LogSink(Arc::new(f))
    }
}

impl fmt::Debug for LogSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LogSink")
    }
}

/// Who is calling: an id, the approvals their profile always requires, and
/// free attributes (roles, plan, locale) for predicates to read.
///
/// ```
/// use tool_runtime::{ApprovalFloor, UserContext};
///
/// let user = UserContext::new("u-42")
///     .with_floor(ApprovalFloor::default().tag("billing"))
///     .with_attribute("role", "agent");
/// assert_eq!(user.attribute("role").and_then(|v| v.as_str()), Some("agent"));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UserContext {
    /// The user's id, when known.
    pub id: Option<String>,
    /// Tools and tags that always need approval for this user.
    pub floor: ApprovalFloor,
    /// Free attributes for predicates.
    pub attributes: Map<String, Value>,
}

impl UserContext {
    /// A user with this id.
    pub fn new(id: impl Into<String>) -> Self {
        UserContext { id: Some(id.into()), ..UserContext::default() }
    }

    /// Sets the approval floor.
    pub fn with_floor(mut self, floor: ApprovalFloor) -> Self {
        self.floor = floor;
        self
    }

    /// Adds an attribute.
    pub fn with_attribute(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.attributes.insert(key.into(), value.into());
        self
    }

    /// Reads an attribute.
    pub fn attribute(&self, key: &str) -> Option<&Value> {
        self.attributes.get(key)
    }
}

/// What a `visible_when` predicate sees before a model call: the step index
/// (0 for the first model call of a run), the tools executed successfully so
/// far in the run, the app state and the user.
///
/// ```
/// use tool_runtime::StepView;
///
/// fn first_step_only<App>(view: &StepView<'_, App>) -> bool {
///     view.step == 0
/// }
/// fn after_lookup<App>(view: &StepView<'_, App>) -> bool {
///     view.has_executed("lookup_order")
/// }
/// # let _ = (first_step_only::<()> as fn(&StepView<'_, ()>) -> bool, after_lookup::<()> as fn(&StepView<'_, ()>) -> bool);
/// ```
#[non_exhaustive]
pub struct StepView<'a, App> {
    /// The index of the model call this offer is for.
    pub step: usize,
    /// Names of the tools executed successfully so far, each once, in the
    /// order of its first success.
    pub executed: &'a [String],
    /// The app state.
    pub app: &'a App,
    /// Who is calling.
    pub user: &'a UserContext,
}

impl<'a, App> StepView<'a, App> {
    /// A view of step `step` after `executed`.
    pub fn new(step: usize, executed: &'a [String], app: &'a App, user: &'a UserContext) -> Self {
        StepView { step, executed, app, user }
    }

    /// Whether `tool` ran successfully earlier in this run.
    pub fn has_executed(&self, tool: &str) -> bool {
        self.executed.iter().any(|name| name == tool)
    }
}
/// Why an authentication hook refused an HTTP request (the MCP server's,
/// [`McpServer::with_auth`](crate::mcp), and the approvals inbox's): the
/// server answers `401 Unauthorized` with this text (the MCP server also
/// with `WWW-Authenticate: Bearer`).
///
/// ```
/// use tool_runtime::Unauthorized;
/// let refused = Unauthorized::new("This token has expired; sign in again to get a new one.");
/// assert_eq!(refused.to_string(), "This token has expired; sign in again to get a new one.");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unauthorized {
    message: String,
}

impl Unauthorized {
    /// A refusal the caller reads; say what to send instead.
    pub fn new(message: impl Into<String>) -> Self {
        Unauthorized { message: message.into() }
    }

    /// A request with no usable `Authorization: Bearer` header.
    pub fn missing_bearer_token() -> Self {
        Unauthorized::new("Unauthorized: this server needs a bearer token. Send it as `Authorization: Bearer <token>`.")
    }
}

impl fmt::Display for Unauthorized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Unauthorized {}

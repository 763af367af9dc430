//! Runs of many steps: what is offered each step, how the calls of a step
//! execute, pending approvals, and how a run ends.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use tokio_util::sync::CancellationToken;

use crate::call::{Arguments, CallOutcome, PendingCall};
use crate::context::{CallInfo, ProgressSink, UserContext};
use crate::error_report::Escaped;
use crate::ids::fresh_call_id;
pub use crate::memory::RunState;
use crate::memory::{JournalError, Remembered};
use crate::policy::PolicyKind;
use crate::registry::{BuildError, Registry, RegistryBuilder};
use crate::result::{CallResult, Deadline, ResultKind, lines};
use crate::steps::Steps;
use crate::tool::BoxedTool;
use crate::tool::ToolDefinition;

mod approvals;
mod refusals;
mod remembered;
mod turn;

pub use remembered::DurableError;
pub(crate) use turn::{Scoped, Turn};

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

/// The results of one step's calls, in the order the model emitted them.
/// Calls waiting for a human have a [`ResultKind::PendingApproval`] result
/// until [`Run::approve`] or [`Run::reject`] settles them.
#[derive(Clone, Debug, PartialEq)]
pub struct StepResults {
    /// The step these calls belonged to.
    pub step: usize,
    /// One result per call.
    pub results: Vec<CallResult>,
    /// Calls of earlier steps that this step settled as expired (each reads
    /// `APPROVAL_EXPIRED`; none ran): pending calls past the approval TTL,
    /// swept to make room for a call of this step that needs approval.
    /// Give each to [`settle`](Self::settle) on the step that parked it.
    pub expired: Vec<CallResult>,
}

impl StepResults {
    /// Replaces the result with the same call id (after an approval).
    pub fn settle(&mut self, result: CallResult) {
        if let Some(slot) = self.results.iter_mut().find(|slot| slot.call_id == result.call_id) {
            *slot = result;
        }
    }

    /// Whether a call still waits for a human.
    pub fn has_pending(&self) -> bool {
        self.results.iter().any(|result| result.kind == ResultKind::PendingApproval)
    }
}

/// Why a run could not do what the host asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// No pending approval has this id.
    #[error("no call with id `{0}` waits for approval in this run")]
    UnknownApproval(String),
    /// In a durable run, another process decided this call first; settle
    /// it with [`Run::settle_decided`].
    #[error("call `{call_id}` was already decided by {by}; settle it with settle_decided")]
    AlreadyDecided {
        /// The call.
        call_id: String,
        /// Who decided it.
        by: String,
    },
    /// In a durable run, the journal could not record the decision; the
    /// call still waits.
    #[error("the journal could not record the decision: {0}")]
    Journal(String),
    /// No call of an external tool with this id waits for its result.
    #[error("no external call with id `{0}` waits for a result in this run")]
    UnknownExternal(String),
    /// The host's output of an external call does not match the tool's
    /// output schema; the call still waits.
    #[error("the output of `{tool}` does not match its output schema: {}", problems.join("; "))]
    InvalidOutput {
        /// The tool.
        tool: String,
        /// What is wrong, as `pointer: reason` lines.
        problems: Vec<String>,
    },
}

impl From<JournalError> for RunError {
    fn from(error: JournalError) -> Self {
        match error {
            JournalError::AlreadyDecided { call_id, by, .. } => RunError::AlreadyDecided { call_id, by },
            other => RunError::Journal(other.to_string()),
        }
    }
}

/// A run: the host's loop of offering tools, calling the model and executing
/// its calls. The run owns the state (step index, tools executed, pending
/// approvals, how it ended); the host owns the model calls.
///
/// ```
/// use std::sync::Arc;
/// use tool_runtime::prelude::*;
/// use tool_runtime::{RunState, ToolCall};
///
/// /// Classify the request. Only offered on the first step.
/// #[tool(visible_when = first_step)]
/// async fn classify(text: String) -> String { if text.contains("refund") { "refund".into() } else { "other".into() } }
/// fn first_step<App>(view: &StepView<'_, App>) -> bool { view.step == 0 }
///
/// /// Hand the conversation to a human agent.
/// #[tool(ends_run)]
/// async fn hand_over() -> String { "A human agent will reply.".into() }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let registry = Registry::<()>::builder().tools(tools![classify, hand_over]).build().unwrap();
/// let mut run = registry.run(Arc::new(()));
/// assert_eq!(run.offered_names(), ["classify", "hand_over"]);
/// run.execute(vec![ToolCall::new("c1", "classify", r#"{"text": "refund please"}"#)]).await;
/// assert_eq!(run.offered_names(), ["hand_over"]);
/// run.execute(vec![ToolCall::new("c2", "hand_over", "")]).await;
/// assert_eq!(run.state(), &RunState::Ending { by: "hand_over".into() });
/// assert!(run.offered().is_empty());
/// # }
/// ```
pub struct Run<App> {
    pub(crate) registry: Registry<App>,
    pub(crate) app: Arc<App>,
    pub(crate) user: Arc<UserContext>,
    thread_id: Option<Arc<str>>,
    progress: Option<ProgressSink>,
    pub(crate) cancel: CancellationToken,
    pub(crate) steps: Steps,
    pub(crate) pending: Vec<PendingCall<App>>,
    /// When the run must be over (`with_deadline`).
    deadline: Option<tokio::time::Instant>,
    /// How long one step may take (`with_step_timeout`).
    step_timeout: Option<Duration>,
    /// The calls of external tools handed to the host, waiting for its result.
    pub(crate) external: Vec<crate::call::ExternalCall>,
    /// The tools of the current turn, after [`Run::select`]; `None` offers every tool.
    pub(crate) turn: Option<Turn>,
    /// The run's memory and its id there: its own ([`Remembered::local`]),
    /// or a journal's for a durable run ([`Run::durable`]).
    pub(crate) memory: Remembered,
}

impl<App: Send + Sync + 'static> Registry<App> {
    /// This registry's tools and settings, plus `tools` (typed or dynamic),
    /// checked as [`build`](crate::RegistryBuilder::build) checks them: a
    /// name twice, a `requires` naming no tool, an unusable schema. This
    /// registry is unchanged. For tools of one run, see
    /// [`Run::with_tools`].
    ///
    /// Every tool's schema is compiled again: it costs what building the
    /// registry costs, so do it once per run, not per call.
    ///
    /// # Errors
    ///
    /// Every problem found, as [`build`](crate::RegistryBuilder::build)
    /// reports them.
    pub fn with_tools(&self, tools: impl IntoIterator<Item = BoxedTool<App>>) -> Result<Registry<App>, BuildError> {
        let own = self.inner.entries.iter().map(|entry| BoxedTool::dynamic(entry.tool.clone()));
        RegistryBuilder { tools: own.chain(tools).collect(), config: self.inner.config.clone() }.build()
    }

    /// Starts a run over this registry's tools for `app`.
    pub fn run(&self, app: Arc<App>) -> Run<App> {
        Run {
            registry: self.clone(),
            app,
            user: Arc::new(UserContext::default()),
            thread_id: None,
            progress: None,
            cancel: CancellationToken::new(),
            steps: Steps::default(),
            pending: Vec::new(),
            deadline: None,
            step_timeout: None,
            turn: None,
            external: Vec::new(),
            memory: Remembered::local(),
        }
    }
}

impl<App: Send + Sync + 'static> Run<App> {
    /// Who the run is for (default: an anonymous user).
    pub fn with_user(mut self, user: UserContext) -> Self {
        self.user = Arc::new(user);
        self
    }

    /// The conversation thread.
    pub fn with_thread_id(mut self, thread_id: impl Into<Arc<str>>) -> Self {
        self.thread_id = Some(thread_id.into());
        self
    }

    /// Where the tools' progress reports go, and their interim texts (a
    /// [`Progress`](crate::Progress) with `interim: true`, sent once when a
    /// call of a tool with `interim` is still running after its delay).
    pub fn with_progress(mut self, sink: ProgressSink) -> Self {
        self.progress = Some(sink);
        self
    }

    /// Limits the whole run to `limit` from now. A step still running at
    /// the deadline is stopped: each call in flight is cancelled, and every
    /// call not finished reads that the run's time ran out (code
    /// `RUN_DEADLINE`, not to be retried in this run); calls of later steps
    /// are not run and read the same.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// # use tool_runtime::prelude::*;
    /// # use tool_runtime::{ResultKind, ToolCall};
    /// /// Think for a long time.
    /// #[tool]
    /// async fn ponder() -> String {
    ///     tokio::time::sleep(Duration::from_secs(60)).await;
    ///     "42".into()
    /// }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let registry = Registry::<()>::builder().tools(tools![ponder]).build().unwrap();
    /// let mut run = registry.run(Arc::new(())).with_deadline(Duration::from_millis(50));
    /// let step = run.execute(vec![ToolCall::new("c1", "ponder", "{}")]).await;
    /// assert_eq!(step.results[0].kind, ResultKind::TimedOut);
    /// assert_eq!(step.results[0].error_code.as_deref(), Some("RUN_DEADLINE"));
    /// # }
    /// ```
    pub fn with_deadline(mut self, limit: Duration) -> Self {
        self.deadline = Some(tokio::time::Instant::now() + limit);
        self
    }

    /// Limits each step ([`execute`](Self::execute)) to `limit`: at the
    /// limit, each call in flight is cancelled and every call not finished
    /// reads that the step's time ran out (code `STEP_DEADLINE`).
    pub fn with_step_timeout(mut self, limit: Duration) -> Self {
        self.step_timeout = Some(limit);
        self
    }

    /// Gives this run tools of its own (typed or dynamic) besides the
    /// registry's, checked as the registry's are (a name twice, a
    /// `requires` naming no tool...). Other runs of the registry do not see
    /// them. Call it before the first step.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use serde_json::json;
    /// # use tool_runtime::prelude::*;
    /// # use tool_runtime::ToolCall;
    /// /// Echo.
    /// #[tool]
    /// async fn echo(text: String) -> String { text }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let registry = Registry::<()>::builder().tools(tools![echo]).build().unwrap();
    /// let today = DynamicTool::new("today", "Today's date.", json!({"type": "object"}), |_args, _ctx: Ctx<()>| async {
    ///     Ok::<_, ToolError>(json!("2026-12-01"))
    /// });
    /// let mut run = registry.run(Arc::new(())).with_tools([today.into()]).unwrap();
    /// assert_eq!(run.offered_names(), ["echo", "today"]);
    /// let step = run.execute(vec![ToolCall::new("c1", "today", "{}")]).await;
    /// assert_eq!(step.results[0].text, "2026-12-01");
    /// assert_eq!(registry.names().collect::<Vec<_>>(), ["echo"], "the registry is unchanged");
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// Every problem found, as [`RegistryBuilder::build`] reports them.
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = BoxedTool<App>>) -> Result<Self, BuildError> {
        self.registry = self.registry.with_tools(tools)?;
        Ok(self)
    }

    /// The index of the next model call (0 for the first).
    pub fn step(&self) -> usize {
        self.steps.step
    }

    /// The tools executed successfully so far, each once, in the order of
    /// its first success.
    pub fn executed(&self) -> &[String] {
        &self.steps.executed
    }

    /// Where the run stands.
    pub fn state(&self) -> &RunState {
        &self.steps.state
    }

    /// The tool whose call ended the run, if one did.
    pub fn ended_by(&self) -> Option<&str> {
        match &self.steps.state {
            RunState::Active => None,
            RunState::Ending { by } => Some(by),
            RunState::Finished { by } => by.as_deref(),
        }
    }

    /// Calls waiting for a human, oldest first.
    pub fn pending(&self) -> &[PendingCall<App>] {
        &self.pending
    }

    /// Cancelled when the host cancels the run; every call's token is a
    /// child of it.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The tools to offer the model for the current step, in declaration
    /// order: those whose `requires` ran and whose `visible_when` passes,
    /// and, after [`select`](Self::select), that the turn offers (a scoped
    /// tool as its scope rebuilt it). Empty once a call ended the run. A
    /// visibility predicate that panics hides its tool and is reported.
    pub fn offered(&self) -> Vec<&ToolDefinition> {
        let offered = self.steps.offered(&self.registry, self.app.as_ref(), &self.user);
        match &self.turn {
            None => offered,
            Some(turn) => {
                offered.into_iter().filter(|def| turn.offers(&def.name)).map(|def| turn.scoped(&def.name).map_or(def, |scoped| &scoped.def)).collect()
            }
        }
    }

    /// The names of [`offered`](Self::offered).
    pub fn offered_names(&self) -> Vec<String> {
        self.offered().into_iter().map(|def| def.name.clone()).collect()
    }

    /// Executes the calls the model emitted in the current step, then moves
    /// to the next step. A call to a tool not offered in this step is
    /// refused as unknown. The calls run concurrently when every called tool
    /// is `parallel_safe`, except that a call whose policy is a predicate is
    /// decided after the earlier calls of the step finished (the predicate
    /// may read what they change); otherwise one after the other, in the
    /// model's order, each decided by its policy after the earlier ones ran.
    ///
    /// A call whose id an earlier call of the step, a call still waiting
    /// for approval, or an external call still waiting for the host's
    /// result already has is not run: the model reads that the id is taken
    /// (code `DUPLICATE_CALL_ID`), and every other call's result stays its
    /// own. (In a durable run, a re-sent step's call of an external call
    /// still with the host, same id, tool and arguments, is that call: it
    /// is handed again, and kept once.) A call that needs approval while
    /// [`max_pending_approvals`](crate::RegistryBuilder::max_pending_approvals)
    /// calls already wait is refused (code `TOO_MANY_PENDING`), once the
    /// expired ones are swept ([`StepResults::expired`]); a call of an
    /// external tool beyond
    /// [`max_external_calls`](crate::RegistryBuilder::max_external_calls)
    /// is not handed over (code `TOO_MANY_EXTERNAL`).
    ///
    /// In a durable run, a step whose calls carry exactly the ids of the
    /// run's last journaled step is that step re-sent (a host retrying
    /// after a crash): its calls are replayed from the journal, the step
    /// index does not advance, and [`StepResults::step`] is the index the
    /// step had.
    pub async fn execute(&mut self, calls: Vec<ToolCall>) -> StepResults {
        let step = self.steps.step;
        let digest = self.step_digest(&calls);
        let offered = self.offered_names();
        let refusals = self.refusals(&calls);
        let parallel = calls.len() > 1 && calls.iter().all(|call| self.parallel_safe(call));
        // The step's calls are cancelled together at its deadline.
        let step_token = self.cancel.child_token();
        let calls = calls.into_iter().zip(refusals).map(|(call, refusal)| (self.call_info(&call.id, &step_token), call, refusal));
        let limit = self.step_limit();
        let running = self.run_calls(calls, parallel, &offered);
        let (outcomes, ran_out) = match limit.and_then(|(deadline, which)| Some((crate::pipeline::runtime_timer(deadline)?, which))) {
            None => (running.await, None),
            Some((timer, which)) => {
                let mut running = std::pin::pin!(running);
                tokio::select! {
                    // Biased: a step that starts past its deadline runs nothing.
                    biased;
                    () = timer => {
                        step_token.cancel();
                        (running.await, Some(which))
                    }
                    outcomes = &mut running => (outcomes, None),
                }
            }
        };
        // What a call stopped by the deadline reads.
        let outcomes = outcomes.into_iter().map(|outcome| match (outcome, ran_out) {
            (CallOutcome::Done(result), Some(which)) if result.kind == ResultKind::Cancelled => {
                CallOutcome::Done(CallResult::failure(result.tool, result.call_id, ResultKind::TimedOut, &lines::deadline(which)))
            }
            (outcome, _) => outcome,
        });
        let mut results = Vec::with_capacity(outcomes.len());
        let mut expired = Vec::new();
        for outcome in outcomes {
            match outcome {
                CallOutcome::Done(result) => {
                    self.steps.record(&result, self.ends_turn(&result));
                    self.track_external(&result);
                    results.push(result);
                }
                CallOutcome::NeedsApproval(pending) => {
                    let max = self.registry.inner.config.max_pending;
                    // Expired calls give up their places first.
                    if self.pending.len() >= max {
                        expired.extend(self.sweep_expired().await);
                    }
                    if self.pending.len() >= max {
                        tracing::warn!(tool = %Escaped(pending.tool()), max, "too many calls wait for approval in this run; refused");
                        let (tool, id) = (pending.tool().clone(), pending.id().clone());
                        results.push(CallResult::failure(tool, id, ResultKind::Denied, &lines::too_many_pending(max)));
                    } else {
                        match self.park_durably(pending).await {
                            Ok(pending) => {
                                results.push(pending.pending_result());
                                self.pending.push(pending);
                            }
                            Err(refused) => results.push(refused),
                        }
                    }
                }
            }
        }
        self.steps.advance(digest);
        self.save_or_report().await;
        let step = self.steps.resent.take().unwrap_or(step);
        StepResults { step, results, expired }
    }

    /// Marks the run finished: call it after the model's last answer.
    /// Pending approvals are dropped; in a durable run they are rejected in
    /// the journal (so no one is asked to decide them any more), and the
    /// run is journaled as finished.
    pub async fn finish(&mut self) {
        let by = self.ended_by().map(str::to_owned);
        let dropped = std::mem::take(&mut self.pending);
        self.steps.state = RunState::Finished { by };
        self.journal_finish(&dropped).await;
        drop(dropped);
    }

    /// The outcomes of a step's calls, concurrently or in order (see
    /// [`execute`](Self::execute)).
    async fn run_calls(
        &self,
        calls: impl ExactSizeIterator<Item = (CallInfo, ToolCall, Option<CallResult>)>,
        parallel: bool,
        offered: &[String],
    ) -> Vec<CallOutcome<App>> {
        if parallel {
            // A call whose policy is a predicate is decided after the
            // earlier calls of the step finished, since the predicate may
            // read what they change: the step runs in groups that each
            // start at such a call, one group after the other.
            let mut outcomes = Vec::with_capacity(calls.len());
            let mut group = Vec::new();
            for (info, call, refusal) in calls {
                let decided_by_predicate = self.registry.definition(&call.name).is_some_and(|def| def.policy == PolicyKind::Predicate);
                if decided_by_predicate && !group.is_empty() {
                    outcomes.extend(join_all(std::mem::take(&mut group)).await);
                }
                let (app, registry, turn) = (&self.app, &self.registry, &self.turn);
                group.push(async move {
                    match refusal {
                        Some(refused) => CallOutcome::Done(refused),
                        None => registry.process(app, &call.name, call.arguments, info, Some(offered), scoped(turn, &call.name)).await,
                    }
                });
            }
            outcomes.extend(join_all(group).await);
            outcomes
        } else {
            let turn = &self.turn;
            let mut outcomes = Vec::with_capacity(calls.len());
            for (info, call, refusal) in calls {
                outcomes.push(match refusal {
                    Some(refused) => CallOutcome::Done(refused),
                    None => self.registry.process(&self.app, &call.name, call.arguments, info, Some(offered), scoped(turn, &call.name)).await,
                });
            }
            outcomes
        }
    }

    /// Whether `call` may run beside the other calls of its step: its tool
    /// is `parallel_safe`, or its `parallel_safe` predicate says so on the
    /// raw arguments (guarded as any arguments are; text that does not
    /// pass, or a predicate that panics, means not).
    fn parallel_safe(&self, call: &ToolCall) -> bool {
        let Some(entry) = self.registry.entry(&call.name) else { return false };
        if entry.def.parallel_safe {
            return true;
        }
        let Some(args) = self.guarded_value(&call.arguments) else { return false };
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| entry.tool.parallel_safe(&args))).ok().flatten().unwrap_or(false)
    }

    /// The raw arguments as a JSON value, once they passed the guard; `None`
    /// when they do not, or are not JSON.
    pub(crate) fn guarded_value<'a>(&self, arguments: &'a Arguments<'_>) -> Option<std::borrow::Cow<'a, serde_json::Value>> {
        let limits = &self.registry.inner.config.limits;
        match arguments {
            Arguments::Value(value) if crate::guard::check_value(value, limits).is_ok() => Some(std::borrow::Cow::Borrowed(value)),
            Arguments::Text(text) if crate::guard::check_text(text, limits).is_ok() => serde_json::from_str(text).ok().map(std::borrow::Cow::Owned),
            _ => None,
        }
    }

    /// Whether the tool of `result` halts the run when it succeeds.
    pub(crate) fn ends_turn(&self, result: &CallResult) -> bool {
        self.registry.definition(&result.tool).is_some_and(|def| def.ends_turn)
    }

    /// When the current step must end, and which limit that is.
    fn step_limit(&self) -> Option<(tokio::time::Instant, Deadline)> {
        let step = self.step_timeout.map(|limit| (tokio::time::Instant::now() + limit, Deadline::Step));
        let run = self.deadline.map(|deadline| (deadline, Deadline::Run));
        [step, run].into_iter().flatten().min_by_key(|(at, _)| *at)
    }

    /// Cancels every running call of this run.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    pub(crate) fn call_info(&self, id: &str, step: &CancellationToken) -> CallInfo {
        CallInfo {
            user: Some(self.user.clone()),
            thread_id: self.thread_id.clone(),
            call_id: if id.is_empty() { fresh_call_id() } else { id.into() },
            cancel: step.child_token().into(),
            progress: self.progress.clone(),
            memory: Some(self.memory.clone()),
        }
    }
}

/// The validator of `tool`'s scoped schema in the current turn, if any.
fn scoped<'t>(turn: &'t Option<Turn>, tool: &str) -> Option<&'t jsonschema::Validator> {
    Some(&turn.as_ref()?.scoped(tool)?.validator)
}

impl<App> fmt::Debug for Run<App> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Run")
            .field("step", &self.steps.step)
            .field("executed", &self.steps.executed)
            .field("pending", &self.pending.iter().map(|p| p.id()).collect::<Vec<_>>())
            .field("state", &self.steps.state)
            .finish_non_exhaustive()
    }
}

//! Runs of many steps: what is offered each step, how the calls of a step
//! execute, and how a run ends. What the host does with the calls a step
//! left waiting has a handle of its own: [`Run::approvals`] for the calls
//! waiting for a human (`run/approvals.rs`), [`Run::external_calls`] for
//! those handed to the host (`run/external.rs`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use smol_str::SmolStr;
use tokio_util::sync::CancellationToken;

use crate::call::{Arguments, CallOutcome, PendingCall, ToolCall};
use crate::context::{Attached, CallInfo, ProgressSink, RunView, StepArguments, StepCall, UserContext};
use crate::error_report::Escaped;
use crate::external::ExternalError;
use crate::ids::fresh_call_id;
use crate::intent::{Classifier, ScopeProblem, Selection};
pub use crate::memory::RunState;
use crate::memory::{CallStart, JournalError, Remembered, RunMemory};
use crate::pipeline::guarded_value;
use crate::policy::PolicyKind;
use crate::result::{CallResult, Deadline, ResultKind, lines};
use crate::steps::Steps;
use crate::table::{BuildError, ToolTable};
use crate::tool::{BoxedTool, ToolDefinition};

mod approvals;
mod external;
mod refusals;
mod remembered;
mod turn;

pub use approvals::Approvals;
pub use external::ExternalCalls;
use refusals::Refusals;
pub use remembered::DurableError;
use turn::Turn;

/// How long past a step's limit its save may take: time to journal a step
/// whose calls took all of it.
const SAVE_GRACE: Duration = Duration::from_millis(200);

/// The results of one step's calls, in the order the model emitted them.
/// Calls waiting for a human have a [`ResultKind::PendingApproval`] result
/// until [`Approvals::approve`] or [`Approvals::reject`] settles them.
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
    /// The decision does not answer the question it was given for (an
    /// approval answered, a tool's question approved, a form's answer that
    /// does not fit its schema); nothing was recorded, and the call still
    /// waits.
    #[error("question `{id}` cannot be decided so: {why}")]
    Unanswerable {
        /// The question (an approval's is its call's id).
        id: String,
        /// Why the decision does not answer it.
        why: String,
    },
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

impl From<ExternalError> for RunError {
    fn from(error: ExternalError) -> Self {
        match error {
            ExternalError::Unknown(id) => RunError::UnknownExternal(id),
            ExternalError::InvalidOutput { tool, problems } => RunError::InvalidOutput { tool, problems },
        }
    }
}

impl From<JournalError> for RunError {
    fn from(error: JournalError) -> Self {
        match error {
            JournalError::AlreadyDecided { call_id, by, .. } => RunError::AlreadyDecided { call_id, by },
            JournalError::Unanswerable { call_id, why, .. } => RunError::Unanswerable { id: call_id, why },
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
    tools: Arc<ToolTable<App>>,
    app: Arc<App>,
    user: Arc<UserContext>,
    thread_id: Option<Arc<str>>,
    progress: Option<ProgressSink>,
    cancel: CancellationToken,
    steps: Steps,
    pending: Vec<PendingCall<App>>,
    /// When the run must be over (`with_deadline`).
    deadline: Option<tokio::time::Instant>,
    /// How long one step may take (`with_step_timeout`).
    step_timeout: Option<Duration>,
    /// The calls of external tools handed to the host, waiting for its result.
    external: Vec<crate::call::ExternalCall>,
    /// The tools of the current turn, after [`Run::select`]; `None` offers every tool.
    turn: Option<Turn>,
    /// The run's memory and its id there: its own ([`Remembered::local`]),
    /// or a journal's for a durable run ([`Run::durable`]).
    memory: Remembered,
}

impl<App: Send + Sync + 'static> Run<App> {
    /// A run over `tools` for `app` ([`Registry::run`](crate::Registry::run)).
    pub(crate) fn new(tools: Arc<ToolTable<App>>, app: Arc<App>) -> Self {
        Run {
            tools,
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
    /// Every problem found, as [`RegistryBuilder::build`](crate::RegistryBuilder::build) reports them.
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = BoxedTool<App>>) -> Result<Self, BuildError> {
        self.tools = Arc::new(self.tools.with_tools(tools)?);
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

    /// Calls waiting for a human, oldest first; decide them with
    /// [`approvals`](Self::approvals).
    pub fn pending(&self) -> &[PendingCall<App>] {
        &self.pending
    }

    /// The calls handed to the host that still wait for their result, in
    /// the order they were handed; complete them with
    /// [`external_calls`](Self::external_calls).
    pub fn external(&self) -> &[crate::call::ExternalCall] {
        &self.external
    }

    /// The host's decisions on this run's pending calls: approve, approve
    /// with an edited input, reject.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use tool_runtime::prelude::*;
    /// # use tool_runtime::ToolCall;
    /// /// Refund an order.
    /// #[tool(policy = needs_approval)]
    /// async fn refund(order_id: String) -> String { format!("refunded {order_id}") }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let registry = Registry::<()>::builder().tools(tools![refund]).build().unwrap();
    /// let mut run = registry.run(Arc::new(()));
    /// let step = run.execute(vec![ToolCall::new("c1", "refund", r#"{"order_id": "A-1"}"#)]).await;
    /// assert!(step.has_pending());
    /// let result = run.approvals().approve("c1").await.unwrap();
    /// assert_eq!(result.text, "refunded A-1");
    /// # }
    /// ```
    pub fn approvals(&mut self) -> Approvals<'_, App> {
        Approvals::new(self)
    }

    /// The host's results of this run's external calls (see
    /// [`external`](Self::external)): complete, fail.
    pub fn external_calls(&mut self) -> ExternalCalls<'_, App> {
        ExternalCalls::new(self)
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
        let offered = self.steps.offered(&self.tools, self.app.as_ref(), &self.user);
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
    /// judged after the earlier calls of the step finished (the predicate
    /// may read what they change); otherwise one after the other, in the
    /// model's order, each judged by its policy after the earlier ones ran.
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
        let digest = remembered::step_digest(&self.memory, &calls);
        let offered = self.offered_names();
        let refusals =
            Refusals { tools: &self.tools, steps: &self.steps, pending: &self.pending, external: &self.external, durable: self.memory.durable };
        let refusals = refusals.of(&calls);
        for refused in refusals.iter().flatten() {
            self.tools.report_outcome(self.tools.watch_for(&refused.tool, Some(&self.user), self.thread_id.as_ref()), refused);
        }
        let parallel = calls.len() > 1 && calls.iter().all(|call| self.parallel_safe(call));
        // A call without an id gets one here, which its step's view shares.
        let ids: Vec<SmolStr> = calls.iter().map(|call| if call.id.is_empty() { fresh_call_id() } else { call.id.as_str().into() }).collect();
        let view = self.view(&calls, &ids);
        // The step's calls are cancelled together at its deadline.
        let step_token = self.cancel.child_token();
        let calls = calls.into_iter().zip(ids).zip(refusals).map(|((call, id), refusal)| {
            let view = view.as_ref().filter(|_| self.judged_by_predicate(&call.name)).cloned();
            (self.call_info(id, &call.name, &step_token, view), call, refusal)
        });
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
                    let result = remembered::tool_gone(&self.memory, &self.tools, result).await;
                    self.record(&result);
                    results.push(result);
                }
                CallOutcome::NeedsApproval(pending) => results.push(self.approvals().park(pending, &mut expired).await),
            }
        }
        self.steps.advance(digest);
        // Within the step's limit: a run's record another process holds
        // locked does not keep the step past it (a moment more, to save it).
        self.steps.save_or_report_until(&self.memory, limit.map(|(deadline, _)| deadline + SAVE_GRACE)).await;
        let step = self.steps.resent.take().unwrap_or(step);
        StepResults { step, results, expired }
    }

    /// Marks the run finished: call it after the model's last answer.
    /// Pending approvals are dropped. In a durable run the run is journaled
    /// as finished first, then every call of it still undecided in the
    /// journal is rejected (so no one is asked to decide it any more),
    /// whichever process parked it; from then on no process starts,
    /// parks or carries out a call of the run (`RUN_FINISHED`), a decision
    /// made before included.
    pub async fn finish(&mut self) {
        let by = self.ended_by().map(str::to_owned);
        self.steps.state = RunState::Finished { by };
        self.steps.save_or_report(&self.memory).await;
        if let Err(error) = self.memory.memory.end_run(&self.memory.run_id, approvals::FINISHED_TEXT).await {
            tracing::error!(run_id = %Escaped(&self.memory.run_id), error = %Escaped(&error), "the finished run's waiting calls could not be rejected in the journal");
        }
        self.approvals().drop_all().await;
    }

    /// Makes this run durable under `run_id` in `journal`: a run the
    /// journal knows is resumed (its step, tools executed, failures per
    /// tool, how it ended and its pending approvals), a new one is
    /// recorded. From then on each step, each call's effect and each
    /// approval are journaled (see the [module docs](crate::memory)).
    /// Several processes may resume and step one run at once: each step is
    /// added to the journal's record, and after it the run holds the steps
    /// and tools of all of them. Set the run's user and thread first:
    /// resumed pending calls run as that user, and an approval, a permit
    /// bound to the user its call was parked for, runs only for that user
    /// (another reads `PERMIT_MISMATCH`).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use tool_runtime::prelude::*;
    /// # use tool_runtime::{journal::Journal, ToolCall};
    /// /// Refund an order.
    /// #[tool(policy = needs_approval)]
    /// async fn refund(order_id: String) -> String { format!("refunded {order_id}") }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = std::env::temp_dir().join(format!("durable-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let journal = Journal::open(dir.join("runs.db").to_str().unwrap()).await?;
    /// let registry = Registry::<()>::builder().tools(tools![refund]).build()?;
    ///
    /// // One process parks the refund...
    /// let mut run = registry.run(Arc::new(())).durable(&journal, "thread-7").await?;
    /// run.execute(vec![ToolCall::new("c1", "refund", r#"{"order_id": "A-1"}"#)]).await;
    ///
    /// // ...a human approves it from another (an admin page)...
    /// tool_runtime::question::decide(&journal, "thread-7", "c1", tool_runtime::journal::Decision::Approve, "alice").await?;
    ///
    /// // ...and the run, resumed anywhere, runs it.
    /// let mut run = registry.run(Arc::new(())).durable(&journal, "thread-7").await?;
    /// let settled = run.settle_decided().await?;
    /// assert_eq!(settled[0].text, "refunded A-1");
    /// # journal.close().await; std::fs::remove_dir_all(&dir)?; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`DurableError::Journal`] when the journal cannot be read or
    /// written; [`DurableError::Incompatible`] when the tool of a call the
    /// run still holds (pending approval, handed to the host, or started
    /// and not finished) is gone or no longer accepts its journaled input.
    /// A finished call's tool may be gone: that call, re-sent, reads
    /// `TOOL_GONE`.
    pub async fn durable(mut self, memory: &(impl RunMemory + Clone), run_id: &str) -> Result<Self, DurableError> {
        self.memory = Remembered::durable(Arc::new(memory.clone()), run_id);
        let memory = self.memory.memory.clone();
        // In one step of the memory: the run's user, as the first process
        // to record it named it; a run the journal knows taken as it holds
        // it, a new one recorded (with whatever this run did before); and
        // whether it holds the calls read below, so that a new run (most
        // runs) reads neither.
        self.steps.journaled = (0, 0);
        let opened = self.steps.open(&self.memory, self.user.id.as_deref()).await?;
        self.memory.user = opened.user.map(Into::into);
        // The calls not finished (an external call still with the host
        // among them) must still fit this registry; a finished call is
        // checked only when it is re-sent (`remembered::tool_gone`).
        let calls = if opened.unfinished_calls { memory.calls_of_run(run_id).await? } else { Vec::new() };
        for call in calls {
            if !matches!(call.outcome, CallStart::UnknownOutcome { .. }) {
                continue;
            }
            let (entry, _) = remembered::check_fits(&self.tools, run_id, &call.call_id, &call.tool, &call.input)?;
            if entry.def.external {
                self.external.push(crate::call::ExternalCall { id: call.call_id.into(), tool: call.tool.into(), input: call.input });
            }
        }
        // Decided or not: a decision made elsewhere is settled by
        // `settle_decided`.
        if opened.unsettled {
            let unsettled = memory.unsettled_for_run(run_id).await?;
            self.approvals().resume(&unsettled)?;
        }
        Ok(self)
    }

    /// The run's id in its journal, for a durable run.
    pub fn run_id(&self) -> Option<&str> {
        self.memory.durable.then_some(&*self.memory.run_id)
    }

    /// Settles the pending calls that were decided out of band (by any
    /// process, with [`RunMemory::decide`]) or that expired: an approved call
    /// runs (with its edited input, validated and judged again) unless the
    /// run may no longer run it (past its deadline, or its tool exhausted
    /// by `max_retries`, as [`Approvals::approve`] says), a rejected one
    /// reads its rejection, an expired one `APPROVAL_EXPIRED`. Returns their results,
    /// in the order they were parked, then those of the external calls
    /// another process completed ([`ExternalCalls::complete`] on the resumed run);
    /// calls still waiting stay pending.
    /// A run that is not durable has nothing to settle.
    ///
    /// # Errors
    ///
    /// [`DurableError::Journal`] when the journal cannot be read or written.
    pub async fn settle_decided(&mut self) -> Result<Vec<CallResult>, DurableError> {
        if !self.memory.durable {
            return Ok(Vec::new());
        }
        let mut results = self.approvals().settle_decided().await?;
        results.extend(self.external_calls().settle_completed().await?);
        self.steps.save(&self.memory).await?;
        Ok(results)
    }

    /// The intent classifier's call over this run's tools.
    pub fn classifier(&self) -> Classifier {
        Classifier::new(self.tools.definitions(), self.tools.config.intent_opt_in)
    }

    /// Offers, from now until the next `select` or
    /// [`clear_selection`](Self::clear_selection), only the tools
    /// `selection` names, those `always_active`, and what they `require`
    /// (each still subject to its visibility and `requires`). A selection
    /// that failed open offers every tool.
    ///
    /// A selected tool with a scope value is rebuilt by its scope function
    /// for the turn: [`offered`](Self::offered) gives its rebuilt
    /// description and input schema, and its calls are validated against
    /// that schema as well. A scope value is checked against the scope
    /// schema the classifier was shown before the scope function sees it.
    /// A tool whose scope value does not fit it or is over 4 KiB as JSON,
    /// whose function panics or writes a description or schema more than
    /// 4 KiB longer than the tool's own, or whose rebuilt schema would
    /// accept an input its own refuses keeps its own definition; each is
    /// returned and reported (kind [`ErrorKind::Scope`](crate::ErrorKind::Scope)).
    pub fn select(&mut self, selection: &Selection) -> Vec<ScopeProblem> {
        let (turn, problems) = Turn::select(&self.tools, selection);
        self.turn = turn;
        problems
    }

    /// Offers every tool again, as before the first
    /// [`select`](Self::select).
    pub fn clear_selection(&mut self) {
        self.turn = None;
    }

    /// Records a call's result in the run's steps, and keeps its call when
    /// it was handed to the host.
    fn record(&mut self, result: &CallResult) {
        self.steps.record(result, self.ends_turn(result));
        // A re-sent step hands a call still with the host again: kept once.
        if let Some(call) = result.external_call()
            && !self.external.iter().any(|kept| kept.id == call.id)
        {
            self.external.push(call);
        }
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
            // A call whose policy is a predicate is judged after the
            // earlier calls of the step finished, since the predicate may
            // read what they change: the step runs in groups that each
            // start at such a call, one group after the other.
            let mut outcomes = Vec::with_capacity(calls.len());
            let mut group = Vec::new();
            for (info, call, refusal) in calls {
                if self.judged_by_predicate(&call.name) && !group.is_empty() {
                    outcomes.extend(join_all(std::mem::take(&mut group)).await);
                }
                let (app, tools, turn) = (&self.app, &*self.tools, &self.turn);
                group.push(async move {
                    match refusal {
                        Some(refused) => CallOutcome::Done(refused),
                        None => crate::pipeline::process(tools, app, &call.name, call.arguments, info, Some(offered), scoped(turn, &call.name)).await,
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
                    None => {
                        crate::pipeline::process(&self.tools, &self.app, &call.name, call.arguments, info, Some(offered), scoped(turn, &call.name))
                            .await
                    }
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
        let Some(entry) = self.tools.entry(&call.name) else { return false };
        if entry.def.parallel_safe {
            return true;
        }
        let Some(args) = guarded_value(&self.tools, &call.arguments) else { return false };
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| entry.tool.parallel_safe(&args))).ok().flatten().unwrap_or(false)
    }

    /// Whether the tool of `result` halts the run when it succeeds.
    fn ends_turn(&self, result: &CallResult) -> bool {
        self.tools.definition(&result.tool).is_some_and(|def| def.ends_turn)
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

    /// What the policy predicates of this step's `calls` see of the run
    /// ([`RunView`]); `None`, and nothing copied, where no call's policy is
    /// a predicate.
    fn view(&self, calls: &[ToolCall], ids: &[SmolStr]) -> Option<Arc<RunView>> {
        if !self.tools.predicates || !calls.iter().any(|call| self.judged_by_predicate(&call.name)) {
            return None;
        }
        let limits = self.tools.config.limits;
        let calls = calls.iter().zip(ids).map(|(call, id)| {
            let arguments = match &call.arguments {
                Arguments::Text(text) => StepArguments::Text(text.as_ref().into()),
                Arguments::Value(value) => StepArguments::Value(value.clone()),
            };
            StepCall::new(id.clone(), call.name.clone(), arguments, limits)
        });
        Some(Arc::new(self.steps.view(calls.collect())))
    }

    /// Whether the tool `name` decides its calls with a predicate.
    fn judged_by_predicate(&self, name: &str) -> bool {
        self.tools.definition(name).is_some_and(|def| def.policy == PolicyKind::Predicate)
    }

    /// What a call of `tool` carries in this run: the run's user, thread,
    /// progress sink and memory, its step's token, and an asking state,
    /// through which its tool asks questions parked in the run's memory.
    fn call_info(&self, call_id: SmolStr, tool: &str, step: &CancellationToken, run: Option<Arc<RunView>>) -> CallInfo {
        // A run that is not durable checks the TTL by its own clock, as it
        // does an approval's.
        let ttl = self.memory.durable.then(|| self.tools.approval_ttl());
        let asking = Arc::new(crate::question::Asking::new(tool.into(), self.user.id.clone(), ttl));
        let attached = Attached {
            thread_id: self.thread_id.clone(),
            progress: self.progress.clone(),
            log: None,
            memory: Some(self.memory.clone()),
            run,
            asking: Some(asking),
        };
        CallInfo::with(Some(self.user.clone()), call_id, step.child_token().into(), attached)
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

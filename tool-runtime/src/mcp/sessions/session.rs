//! One MCP session: its run, its `tools/list` and `tools/call`, the
//! approvals it asks the client's user for, and the level of the log
//! messages it sends (`logging/setLevel`).

use std::borrow::Cow;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ElicitationAction, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerConfig, Tool,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use crate::call::{CallOutcome, PendingCall};
use crate::context::{LogLevel, UserContext};
use crate::error::ToolError;
use crate::error_report::Escaped;
use crate::mcp::approval::{approval_message, approval_unavailable, elicitation};
use crate::mcp::caller::Caller;
use crate::mcp::http::sessions::BoundedSessions;
use crate::mcp::notices::{self, Sinks};
use crate::mcp::server::{ExternalRunner, Server};
use crate::mcp::{results, subscriptions, tool_list};
use crate::memory::{Question, Remembered, RunState};
use crate::question::Asking;
use crate::result::{CallResult, ResultKind, lines};
use crate::steps::Steps;
use crate::tool::ToolDefinition;

/// One MCP session: one run over the registry (step index, tools executed,
/// whether a call ended it). Implements rmcp's [`ServerHandler`]; made by
/// [`McpServer::session`](crate::mcp::McpServer::session).
pub struct McpSession<App> {
    server: Server<App>,
    run: Arc<Mutex<SessionRun>>,
    /// The session's memory and its run id there: the server's journal,
    /// when it has one, else the session's own.
    remembered: Remembered,
    /// Over HTTP, the session store, told while a call is in flight.
    sessions: Option<Arc<BoundedSessions>>,
}

/// What a session remembers between calls: the state a [`Run`](crate::Run)
/// keeps, with each `tools/call` as one step.
#[derive(Debug)]
struct SessionRun {
    steps: Steps,
    /// Calls of this session waiting for a human now.
    waiting: usize,
    /// The least severe log message sent to the client (`logging/setLevel`).
    log_level: LogLevel,
}

impl Default for SessionRun {
    fn default() -> Self {
        SessionRun { steps: Steps::default(), waiting: 0, log_level: LogLevel::Info }
    }
}

impl<App: Send + Sync + 'static> McpSession<App> {
    pub(crate) fn new(server: Server<App>) -> Self {
        let remembered = match server.durable_memory().cloned() {
            // Unique across instances and restarts sharing the journal (`ids`).
            Some(memory) => Remembered::durable(memory, crate::ids::fresh_id("mcp-").as_str()),
            None => Remembered::local(),
        };
        McpSession { server, run: Arc::new(Mutex::new(SessionRun::default())), remembered, sessions: None }
    }

    /// A session served over HTTP from `sessions`: its calls in flight keep
    /// it busy there (never idle, never evicted), even when the client's
    /// stream of one was dropped and the call still runs.
    pub(crate) fn in_store(mut self, sessions: Arc<BoundedSessions>) -> Self {
        self.sessions = Some(sessions);
        self
    }

    /// The session's run id in the server's journal, if it has one.
    pub fn run_id(&self) -> Option<&str> {
        self.remembered.durable.then_some(&*self.remembered.run_id)
    }

    /// Journals how the session's run stands, and takes what other saves
    /// added to it (a failure is logged: the call's result stands, and the
    /// next save sends what this one could not).
    async fn save(&self) {
        let save = self.lock().steps.take_save();
        let answer = save.send(&self.remembered).await;
        if let Err(error) = self.lock().steps.saved(save, answer) {
            tracing::error!(run_id = %Escaped(&self.remembered.run_id), error = %Escaped(&error), "the session's run could not be journaled");
        }
    }
    /// The tools offered now to `user`: an external tool only where a
    /// runner runs it.
    fn offered<'s>(&'s self, run: &SessionRun, user: &UserContext) -> Vec<&'s ToolDefinition> {
        tool_list::offered(&self.server, &run.steps, user, self.server.external.is_some())
    }

    /// Who makes this request.
    fn caller(&self, extensions: &rmcp::model::Extensions) -> Arc<UserContext> {
        Caller::of(&self.server.user, extensions).user
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SessionRun> {
        // The guarded code calls only visibility predicates, whose panics
        // are caught, so a poisoned lock still holds a consistent state.
        self.run.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a settled call as the end of a step; whether what is offered
    /// changed.
    fn record(&self, result: &CallResult, user: &UserContext) -> bool {
        let mut run = self.lock();
        let before = self.offered(&run, user);
        run.steps.advance(None);
        let ends_turn = self.server.registry.definition(&result.tool).is_some_and(|def| def.ends_turn);
        run.steps.record(result, ends_turn);
        // The same definitions, the registry's own, in the same order.
        let after = self.offered(&run, user);
        before.len() != after.len() || before.iter().zip(&after).any(|(before, after)| !std::ptr::eq(*before, *after))
    }

    /// The whole call: the pipeline, then a human's decision when the call
    /// needs one.
    async fn run_call(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        sinks: &Sinks,
        user: &Arc<UserContext>,
    ) -> CallResult {
        let server = &self.server;
        let (offered, view) = {
            let run = self.lock();
            // A tool that failed `max_retries` times in this session reads why.
            if let Some(error) = server.registry.definition(&request.name).and_then(|def| run.steps.exhausted(def)) {
                let id = crate::ids::fresh_call_id();
                return CallResult::failure(request.name.as_ref().into(), id, ResultKind::Denied, &error);
            }
            // A session is a run, each call a step of its own: a policy predicate sees the session's record.
            let judged = server.registry.definition(&request.name).is_some_and(|def| def.policy == crate::PolicyKind::Predicate);
            let offered = tool_list::restriction(&self.server, &run.steps, user, self.server.external.is_some(), &request.name);
            (offered, judged.then(|| run.steps.view(Vec::new())))
        };
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let mut call = server.registry.call(&server.app, &request.name, arguments).user(user.clone()).cancellation(&context.ct).offered(offered);
        if let Some(view) = view {
            call = call.run_view(view);
        }
        // A question parked in a durable session's journal waits there as
        // long as an approval; the session's own memory times it itself.
        let ttl = self.remembered.durable.then(|| server.registry.approval_ttl());
        let asking = Arc::new(Asking::new(request.name.as_ref().into(), user.id.clone(), ttl));
        let call = sinks.attach(call).remembered(self.remembered.clone()).asking(asking.clone());
        let mut outcome = call.await;
        let result = loop {
            outcome = match outcome {
                CallOutcome::Done(result) => break result,
                // Boxed, as every wait for an answer: the future of every
                // call would otherwise hold room for the longest wait.
                CallOutcome::NeedsApproval(pending) if pending.asks() => Box::pin(self.answer_questions(pending, context, user)).await,
                CallOutcome::NeedsApproval(pending) => Box::pin(self.ask_human(pending, context)).await,
            }
        };
        // Its questions are settled: a later run of the session asks anew.
        for n in 1..=asking.asked() {
            self.remembered.settle_or_report(&Question::id_of(&result.call_id, n)).await;
        }
        // Only a server with a runner offers external tools: without one, a
        // call of one was refused as unknown before it could be handed over.
        match (result.external_call(), &self.server.external) {
            (Some(handed), Some(runner)) => Box::pin(self.run_external(handed, runner, context)).await,
            _ => result,
        }
    }

    /// An external tool's call, run by the server's runner while the client
    /// waits.
    async fn run_external(&self, call: crate::ExternalCall, runner: &ExternalRunner, context: &RequestContext<RoleServer>) -> CallResult {
        let registry = &self.server.registry;
        let (tool, id) = (call.tool.clone(), call.id.clone());
        let timeout = registry.definition(&tool).and_then(|def| def.timeout).unwrap_or(registry.tools().config.default_timeout);
        let ran = tokio::select! {
            ran = tokio::time::timeout(timeout, runner(call)) => ran,
            () = context.ct.cancelled() => return CallResult::failure(tool, id, ResultKind::Cancelled, &lines::cancelled()),
        };
        let watch = registry.tools().watch_for(&tool, Some(&self.caller(&context.extensions)), None);
        let done = match ran {
            Err(_) => Ok(CallResult::failure(tool.clone(), id.clone(), ResultKind::TimedOut, &lines::timed_out(timeout))),
            Ok(Ok(output)) => crate::external::complete(registry.tools(), &tool, &id, output),
            Ok(Err(error)) => crate::external::fail(registry.tools(), &tool, &id, &error),
        };
        let result = done.unwrap_or_else(|error| crate::external::went_wrong(registry.tools(), &tool, &id, &error));
        registry.tools().report_outcome(watch, &result);
        result
    }

    /// Asks the client the questions `pending` stopped at, counted as
    /// waiting as an approval is, and runs it again once answered.
    async fn answer_questions(&self, pending: PendingCall<App>, context: &RequestContext<RoleServer>, user: &UserContext) -> CallOutcome<App> {
        let _waiting = match Waiting::enter(self, context) {
            Ok(waiting) => waiting,
            Err(refused) => {
                return CallOutcome::Done(CallResult::failure(pending.tool().clone(), pending.id().clone(), ResultKind::Denied, &refused));
            }
        };
        let answering = super::questions::Answering { registry: &self.server.registry, remembered: &self.remembered, by: user.id.as_deref() };
        Box::pin(super::questions::answer(answering, pending, context)).await
    }

    /// Asks the client's user to accept or decline a pending call.
    async fn ask_human(&self, pending: PendingCall<App>, context: &RequestContext<RoleServer>) -> CallOutcome<App> {
        let registry = &self.server.registry;
        let done = CallOutcome::Done;
        if self.remembered.durable {
            let _waiting = match Waiting::enter(self, context) {
                Ok(waiting) => waiting,
                Err(refused) => return done(CallResult::failure(pending.tool().clone(), pending.id().clone(), ResultKind::Denied, &refused)),
            };
            let message = approval_message(&pending, registry.definition(pending.tool()));
            let user_id = self.caller(&context.extensions).id.clone();
            let asking = super::durable::Asking { registry, durable: &self.remembered, user_id, message };
            return Box::pin(super::durable::ask(asking, pending, context)).await;
        }
        if !context.peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
            tracing::info!(tool = %Escaped(pending.tool()), call_id = %Escaped(pending.id()), "needs approval; the client cannot elicit");
            return done(CallResult::failure(pending.tool().clone(), pending.id().clone(), ResultKind::Rejected, &approval_unavailable()));
        }
        let _waiting = match Waiting::enter(self, context) {
            Ok(waiting) => waiting,
            Err(refused) => return done(CallResult::failure(pending.tool().clone(), pending.id().clone(), ResultKind::Denied, &refused)),
        };
        // The arguments as they came stay with the call: once approved, its
        // tool may ask a question, and the call is read again from them.
        let ask = elicitation(approval_message(&pending, registry.definition(pending.tool())));
        // The wait ends at the approval's time to live: a client that went
        // away must not hold the call forever, nor run it when it comes back.
        let answer = tokio::select! {
            answer = tokio::time::timeout(registry.approval_ttl(), context.peer.create_elicitation(ask)) => answer,
            () = context.ct.cancelled() => {
                return done(CallResult::failure(pending.tool().clone(), pending.id().clone(), ResultKind::Cancelled, &lines::cancelled()));
            }
        };
        let Ok(answer) = answer else {
            tracing::info!(tool = %Escaped(pending.tool()), call_id = %Escaped(pending.id()), "no answer to the approval request in time");
            // Past the TTL, approving refuses the call as expired.
            return crate::approval::approve(registry.tools(), pending).await;
        };
        match answer {
            // Approved, the call runs, and its tool may then ask.
            Ok(answer) if answer.action == ElicitationAction::Accept => crate::approval::approve(registry.tools(), pending).await,
            Ok(_) => done(registry.reject(pending, None)),
            Err(error) => {
                tracing::warn!(tool = %Escaped(pending.tool()), call_id = %Escaped(pending.id()), error = %Escaped(&error), "the approval request failed");
                done(registry.reject(
                    pending,
                    Some(
                        "No human could be asked to approve this call, so it was not run. \
                         Tell the user it was not done.",
                    ),
                ))
            }
        }
    }
}

/// What a call waiting in a session that ended reads, in the journal.
const SESSION_ENDED: &str = "The client's session ended before a decision.";

/// A session's end finishes its durable run: the run is journaled as
/// finished and every call of it still undecided is rejected, so that the
/// journal can forget the run once its retention passed
/// ([`Journal::prune`](crate::journal::Journal::prune)). A session that
/// journaled no step has no run to finish. Done on the runtime, as the
/// session is dropped where nothing waits.
impl<App> Drop for McpSession<App> {
    fn drop(&mut self) {
        let mut run = self.run.lock().unwrap_or_else(PoisonError::into_inner);
        if !self.remembered.durable || run.steps.journaled.0 == 0 {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let by = match &run.steps.state {
            RunState::Active => None,
            RunState::Ending { by } => Some(by.clone()),
            RunState::Finished { by } => by.clone(),
        };
        run.steps.state = RunState::Finished { by };
        let save = run.steps.take_save();
        let remembered = self.remembered.clone();
        runtime.spawn(async move {
            if let Err(error) = save.send(&remembered).await {
                tracing::error!(run_id = %Escaped(&remembered.run_id), error = %Escaped(&error), "an ended session's run could not be journaled as finished");
            }
            if let Err(error) = remembered.memory.end_run(&remembered.run_id, SESSION_ENDED).await {
                tracing::error!(run_id = %Escaped(&remembered.run_id), error = %Escaped(&error), "an ended session's waiting calls could not be rejected");
            }
        });
    }
}

/// One call of a session waiting for a human, counted while it lives, in
/// its session and in the server's [`WaitingCalls`](crate::mcp::waiting::WaitingCalls).
pub(crate) struct Waiting<'s, App> {
    session: &'s McpSession<App>,
    _counted: crate::mcp::waiting::WaitingCall,
}

impl<'s, App: Send + Sync + 'static> Waiting<'s, App> {
    /// Counts one more waiting call, unless the session's cap
    /// (`max_pending_approvals`, as in a run), its user's or the server's
    /// is reached: then the refusal the model reads.
    pub(crate) fn enter(session: &'s McpSession<App>, context: &RequestContext<RoleServer>) -> Result<Self, ToolError> {
        let max = session.server.registry.tools().config.max_pending;
        let user = session.caller(&context.extensions);
        let mut run = session.lock();
        let counted = match run.waiting >= max {
            true => Err(lines::too_many_pending(max)),
            false => session.server.waiting.enter(user.id.as_deref()),
        };
        let counted = counted.inspect_err(|refused| {
            tracing::warn!(code = %Escaped(&refused.code()), "too many calls wait for approval; refused");
        })?;
        run.waiting += 1;
        Ok(Waiting { session, _counted: counted })
    }
}

impl<App> Drop for Waiting<'_, App> {
    fn drop(&mut self) {
        let mut run = self.session.run.lock().unwrap_or_else(PoisonError::into_inner);
        run.waiting -= 1;
    }
}

impl<App: Send + Sync + 'static> ServerHandler for McpSession<App> {
    fn get_info(&self) -> ServerConfig {
        self.server.config(self.server.capabilities())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::LATEST_WITH_INITIALIZE))
    }

    async fn list_tools(&self, _request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        let user = self.caller(&context.extensions);
        Ok(tool_list::list(&self.server, &self.offered(&self.lock(), &user)))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.server.registry.definition(name).map(tool_list::mcp_tool)
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        let user = self.caller(&context.extensions);
        let _in_flight = self.sessions.as_ref().and_then(|sessions| sessions.call_in_flight(&context.extensions));
        let (sinks, forwarding) = notices::for_request(&context, Some(self.lock().log_level));
        // The call boxed where it is made, before anything wraps it: rmcp
        // moves the handler's future into a task per request, and every
        // future around the call (the forwarding takes it by value) would
        // otherwise hold, and copy, a room of its size.
        let result = forwarding.run(Box::pin(self.run_call(request, &context, &sinks, &user)), &context.peer).await;
        let changed = self.record(&result, &user);
        self.save().await;
        // Boxed, as it is rare: rmcp's sending of a notification would
        // otherwise take room in the future of every call.
        if changed && let Err(error) = Box::pin(context.peer.notify_tool_list_changed()).await {
            tracing::debug!(error = %Escaped(&error), "could not notify the client that the tool list changed");
        }
        subscriptions::announce_changes(&self.server).await;
        Ok(CallToolResponse::from(results::answer(&self.server, result)))
    }

    #[allow(deprecated, reason = "logging/setLevel is this revision's")]
    async fn set_level(&self, request: rmcp::model::SetLevelRequestParams, _context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.lock().log_level = notices::level(request.level);
        Ok(())
    }

    crate::mcp::composed::serve_composed!();
}

//! One MCP session: its run, its `tools/list` and `tools/call`, and the
//! approvals it asks the client's user for.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::future::{Future, IntoFuture};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams, ElicitationAction, ElicitationSchema,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ProtocolVersion, ResourceContents, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::mpsc;

use super::sessions::BoundedSessions;
use super::{McpServer, http};
use crate::call::{CallOutcome, PendingCall};
use crate::content::{Block, ResourceBody, base64};
use crate::context::{Progress, ProgressSink, UserContext};
use crate::error::ToolError;
use crate::error_report::Escaped;
use crate::memory::{Remembered, RunState};
use crate::result::{CallResult, ResultKind, lines};
use crate::steps::Steps;
use crate::tool::{ParsedFrom, ToolDefinition};

/// One MCP session: one run over the registry (step index, tools executed,
/// whether a call ended it). Implements rmcp's [`ServerHandler`]; made by
/// [`McpServer::session`].
pub struct McpSession<App> {
    server: McpServer<App>,
    run: Arc<Mutex<SessionRun>>,
    /// The session's memory and its run id there: the server's journal,
    /// when it has one, else the session's own.
    remembered: Remembered,
    /// Over HTTP, the session store, told while a call is in flight.
    sessions: Option<Arc<BoundedSessions>>,
}

/// What a session remembers between calls: the state a [`Run`](crate::Run)
/// keeps, with each `tools/call` as one step.
#[derive(Debug, Default)]
struct SessionRun {
    steps: Steps,
    /// Calls of this session waiting for a human now.
    waiting: usize,
}

impl<App: Send + Sync + 'static> McpSession<App> {
    pub(super) fn new(server: McpServer<App>) -> Self {
        let remembered = match server.memory.clone() {
            // Unique across instances and restarts sharing the journal (`ids`).
            Some(memory) => Remembered::durable(memory, crate::ids::fresh_id("mcp-").as_str()),
            None => Remembered::local(),
        };
        McpSession { server, run: Arc::new(Mutex::new(SessionRun::default())), remembered, sessions: None }
    }

    /// A session served over HTTP from `sessions`: its calls in flight keep
    /// it busy there (never idle, never evicted), even when the client's
    /// stream of one was dropped and the call still runs.
    pub(super) fn in_store(mut self, sessions: Arc<BoundedSessions>) -> Self {
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
    /// The names of the tools offered now to `user`.
    fn offered_names(&self, run: &SessionRun, user: &UserContext) -> Vec<String> {
        self.offered(run, user, |def| def.name.clone())
    }

    fn offered<T>(&self, run: &SessionRun, user: &UserContext, map: impl Fn(&ToolDefinition) -> T) -> Vec<T> {
        let server = &self.server;
        let offered = run.steps.offered(server.registry.tools(), server.app.as_ref(), user).into_iter();
        // A provider's built-in tool is that provider's: never an MCP tool;
        // an external tool is listed only where a runner runs it.
        offered.filter(|def| def.provider_defined.is_none() && (!def.external || server.external.is_some())).map(map).collect()
    }

    /// Who makes this request: the user the authentication hook gave for
    /// it (rmcp hands the handler the HTTP request's `Parts`, which carry
    /// it), else the server's user.
    pub(super) fn caller(&self, extensions: &rmcp::model::Extensions) -> Arc<UserContext> {
        extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<http::Caller>())
            .map_or_else(|| self.server.user.clone(), |caller| caller.0.clone())
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
        let before = self.offered_names(&run, user);
        run.steps.advance(None);
        let ends_turn = self.server.registry.definition(&result.tool).is_some_and(|def| def.ends_turn);
        run.steps.record(result, ends_turn);
        self.offered_names(&run, user) != before
    }

    /// The whole call: the pipeline, then a human's decision when the call
    /// needs one.
    async fn run_call(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        progress: Option<ProgressSink>,
        user: &Arc<UserContext>,
    ) -> CallResult {
        let server = &self.server;
        let offered = {
            let run = self.lock();
            // A tool that failed `max_retries` times in this session reads why.
            if let Some(error) = server.registry.definition(&request.name).and_then(|def| run.steps.exhausted(def)) {
                let id = crate::ids::fresh_call_id();
                return CallResult::failure(request.name.as_ref().into(), id, ResultKind::Denied, &error);
            }
            self.offered_names(&run, user)
        };
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let mut call = server.registry.call(&server.app, &request.name, arguments).user(user.clone()).cancellation(&context.ct).offered(offered);
        if let Some(sink) = progress {
            call = call.progress(sink);
        }
        let call = call.remembered(self.remembered.clone());
        let result = match call.await {
            CallOutcome::Done(result) => result,
            CallOutcome::NeedsApproval(pending) => self.ask_human(pending, context).await,
        };
        // Only a server with a runner offers external tools: without one, a
        // call of one was refused as unknown before it could be handed over.
        match (result.external_call(), &self.server.external) {
            (Some(handed), Some(runner)) => self.run_external(handed, runner, context).await,
            _ => result,
        }
    }

    /// An external tool's call, run by the server's runner while the client
    /// waits.
    async fn run_external(&self, call: crate::ExternalCall, runner: &super::ExternalRunner, context: &RequestContext<RoleServer>) -> CallResult {
        let registry = &self.server.registry;
        let (tool, id) = (call.tool.clone(), call.id.clone());
        let timeout = registry.definition(&tool).and_then(|def| def.timeout).unwrap_or(registry.tools().config.default_timeout);
        let ran = tokio::select! {
            ran = tokio::time::timeout(timeout, runner(call)) => ran,
            () = context.ct.cancelled() => return CallResult::failure(tool, id, ResultKind::Cancelled, &lines::cancelled()),
        };
        let done = match ran {
            Err(_) => return CallResult::failure(tool, id, ResultKind::TimedOut, &lines::timed_out(timeout)),
            Ok(Ok(output)) => crate::external::complete(registry.tools(), &tool, &id, output),
            Ok(Err(error)) => crate::external::fail(registry.tools(), &tool, &id, &error),
        };
        done.unwrap_or_else(|error| crate::external::went_wrong(registry.tools(), &tool, &id, &error))
    }

    /// Asks the client's user to accept or decline a pending call.
    async fn ask_human(&self, pending: PendingCall<App>, context: &RequestContext<RoleServer>) -> CallResult {
        let registry = &self.server.registry;
        if self.remembered.durable {
            let _waiting = match Waiting::enter(self, context) {
                Ok(waiting) => waiting,
                Err(refused) => return CallResult::failure(pending.tool().clone(), pending.id().clone(), ResultKind::Denied, &refused),
            };
            let message = approval_message(&pending, registry.definition(pending.tool()));
            let user_id = self.caller(&context.extensions).id.clone();
            let asking = super::durable::Asking { registry, durable: &self.remembered, user_id, message };
            return Box::pin(super::durable::ask(asking, pending, context)).await;
        }
        if !context.peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
            tracing::info!(tool = %Escaped(pending.tool()), call_id = %Escaped(pending.id()), "needs approval; the client cannot elicit");
            return CallResult::failure(pending.tool().clone(), pending.id().clone(), ResultKind::Rejected, &approval_unavailable());
        }
        let _waiting = match Waiting::enter(self, context) {
            Ok(waiting) => waiting,
            Err(refused) => return CallResult::failure(pending.tool().clone(), pending.id().clone(), ResultKind::Denied, &refused),
        };
        let def = registry.definition(pending.tool());
        let ask = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: approval_message(&pending, def),
            // Nothing to fill in: accepting or declining is the answer.
            requested_schema: ElicitationSchema::new(BTreeMap::new()),
        };
        let mut pending = pending;
        keep_arguments_once(&mut pending, def);
        // The wait ends at the approval's time to live: a client that went
        // away must not hold the call forever, nor run it when it comes back.
        let answer = tokio::select! {
            answer = tokio::time::timeout(registry.approval_ttl(), context.peer.create_elicitation(ask)) => answer,
            () = context.ct.cancelled() => {
                return CallResult::failure(pending.tool().clone(), pending.id().clone(), ResultKind::Cancelled, &lines::cancelled());
            }
        };
        let Ok(answer) = answer else {
            tracing::info!(tool = %Escaped(pending.tool()), call_id = %Escaped(pending.id()), "no answer to the approval request in time");
            // Past the TTL, approving refuses the call as expired.
            return registry.approve(pending).await;
        };
        match answer {
            Ok(answer) if answer.action == ElicitationAction::Accept => registry.approve(pending).await,
            Ok(_) => registry.reject(pending, None),
            Err(error) => {
                tracing::warn!(tool = %Escaped(pending.tool()), call_id = %Escaped(pending.id()), error = %Escaped(&error), "the approval request failed");
                registry.reject(
                    pending,
                    Some(
                        "No human could be asked to approve this call, so it was not run. \
                         Tell the user it was not done.",
                    ),
                )
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
/// its session and in the server's [`WaitingCalls`](super::waiting::WaitingCalls).
pub(super) struct Waiting<'s, App> {
    session: &'s McpSession<App>,
    _counted: super::waiting::WaitingCall,
}

impl<'s, App: Send + Sync + 'static> Waiting<'s, App> {
    /// Counts one more waiting call, unless the session's cap
    /// (`max_pending_approvals`, as in a run), its user's or the server's
    /// is reached: then the refusal the model reads.
    pub(super) fn enter(session: &'s McpSession<App>, context: &RequestContext<RoleServer>) -> Result<Self, ToolError> {
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
        self.server.server_config(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::LATEST_WITH_INITIALIZE))
    }

    async fn list_tools(&self, _request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        let user = self.caller(&context.extensions);
        let tools = self.offered(&self.lock(), &user, mcp_tool);
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.server.registry.definition(name).map(mcp_tool)
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        let user = self.caller(&context.extensions);
        let _in_flight = self.sessions.as_ref().and_then(|sessions| sessions.call_in_flight(&context.extensions));
        // Boxed: rmcp moves the handler's future into a task per request, so
        // a small future here saves a large copy on every call.
        let result = Box::pin(async {
            match context.meta.get_progress_token() {
                Some(token) => {
                    let (sender, reports) = mpsc::unbounded_channel();
                    let sink = ProgressSink::new(move |progress| {
                        let _ = sender.send(progress);
                    });
                    let settling = self.run_call(request, &context, Some(sink), &user);
                    forwarding_progress(settling, reports, token, &context.peer).await
                }
                None => self.run_call(request, &context, None, &user).await,
            }
        })
        .await;
        let changed = self.record(&result, &user);
        self.save().await;
        if changed && let Err(error) = context.peer.notify_tool_list_changed().await {
            tracing::debug!(error = %Escaped(&error), "could not notify the client that the tool list changed");
        }
        let declares_output = self.server.registry.definition(&result.tool).is_some_and(declares_output_schema);
        Ok(CallToolResponse::from(call_tool_result(result, declares_output)))
    }
}

/// Runs `call`, sending each progress report to the client as it comes, and
/// every report made before the call settled ahead of its result. The
/// tool's interim text is a notification whose `message` is the text; its
/// progress repeats the last value sent (MCP progress never goes back).
pub(super) async fn forwarding_progress<T>(
    call: impl Future<Output = T>,
    mut reports: mpsc::UnboundedReceiver<Progress>,
    token: ProgressToken,
    peer: &Peer<RoleServer>,
) -> T {
    let mut last = 0.0;
    let mut notification = move |progress: Progress| {
        let value = if progress.interim { last } else { progress.progress };
        last = value;
        let mut param = ProgressNotificationParam::new(token.clone(), value);
        param.total = progress.total;
        param.message = progress.message;
        param
    };
    let send = async |param: ProgressNotificationParam| {
        if let Err(error) = peer.notify_progress(param).await {
            tracing::debug!(error = %Escaped(&error), "could not send a progress notification");
        }
    };
    let mut call = std::pin::pin!(call.into_future());
    let output = loop {
        tokio::select! {
            output = &mut call => break output,
            Some(progress) = reports.recv() => send(notification(progress)).await,
        }
    };
    while let Ok(progress) = reports.try_recv() {
        send(notification(progress)).await;
    }
    output
}

/// A result as MCP carries it: the model's line as text; on success the
/// structured output too, when it is an object (MCP's `structuredContent`
/// must be one) and the text was not cut. A cut output is never sent whole
/// as structured content; a tool that declares an `outputSchema` must send
/// structured content with every success (clients such as the Python SDK
/// reject a success without it), so its cut output is flagged `isError`.
/// A tool error's structured value (a typed failure) goes with its
/// `isError` result, under the same object rule; clients check
/// `structuredContent` against the `outputSchema` on success only.
///
/// A success with content blocks carries them as MCP content blocks, and
/// no structured content (such a tool declares no `outputSchema`).
pub(super) fn call_tool_result(result: CallResult, declares_output: bool) -> CallToolResult {
    let content = match result.content.is_empty() {
        true => vec![ContentBlock::text(result.text)],
        false => result.content.into_iter().map(mcp_block).collect(),
    };
    if result.kind == ResultKind::ToolError {
        let mut failure = CallToolResult::error(content);
        failure.structured_content = result.structured.map(|value| *value).filter(Value::is_object);
        return failure;
    }
    if result.kind != ResultKind::Success || (result.truncated && declares_output) {
        return CallToolResult::error(content);
    }
    let mut success = CallToolResult::success(content);
    if !result.truncated {
        success.structured_content = result.structured.map(|value| *value).filter(Value::is_object);
    }
    success
}

/// A content block as rmcp writes it (binary data in base64).
fn mcp_block(block: Block) -> ContentBlock {
    match block {
        Block::Text(text) => ContentBlock::text(text),
        Block::Image(image) => ContentBlock::image(base64(&image.data), image.mime_type),
        Block::Audio(audio) => ContentBlock::audio(base64(&audio.data), audio.mime_type),
        Block::ResourceLink(link) => {
            let mut resource = rmcp::model::Resource::new(link.uri, link.name);
            resource.description = link.description;
            resource.mime_type = link.mime_type;
            ContentBlock::resource_link(resource)
        }
        Block::Resource(resource) => {
            let contents = match resource.body {
                ResourceBody::Text(text) => ResourceContents::text(text, resource.uri),
                ResourceBody::Blob(data) => ResourceContents::blob(base64(&data), resource.uri),
            };
            ContentBlock::resource(match resource.mime_type {
                Some(mime_type) => contents.with_mime_type(mime_type),
                None => contents,
            })
        }
    }
}

/// Whether `tools/list` gives the tool an `outputSchema`.
pub(super) fn declares_output_schema(def: &ToolDefinition) -> bool {
    def.output_schema.as_deref().is_some_and(crate::providers::mcp::is_object_schema)
}

/// One `tools/list` entry, as [`providers::mcp::tool`](crate::providers::mcp::tool) writes it.
pub(super) fn mcp_tool(def: &ToolDefinition) -> Tool {
    serde_json::from_value(crate::providers::mcp::tool(def)).expect("providers::mcp writes valid MCP tools")
}

/// What the human reads when asked to approve a call: the tool and its
/// arguments, pretty-printed. Written straight from the call's copy of the
/// arguments (no second value of them) into a text no larger than it is:
/// it holds them for as long as the call waits.
pub(super) fn approval_message<App>(pending: &PendingCall<App>, def: Option<&ToolDefinition>) -> String {
    let tool = match def.and_then(|def| def.title.as_deref()) {
        Some(title) => format!("{title} (`{}`)", pending.tool()),
        None => format!("`{}`", pending.tool()),
    };
    let mut text = format!("The assistant wants to call {tool} with these arguments:\n\n").into_bytes();
    let written = match &pending.0.args {
        ParsedFrom::Value(arguments) => serde_json::to_writer_pretty(&mut text, &**arguments),
        ParsedFrom::Text(_) => serde_json::to_writer_pretty(&mut text, &pending.arguments()),
    };
    // Serialising a JSON value to memory cannot fail.
    debug_assert!(written.is_ok(), "{written:?}");
    text.extend_from_slice(b"\n\nThis call needs your approval. Accept to run it; decline to refuse it.");
    text.shrink_to_fit();
    String::from_utf8(text).expect("JSON and the text around it are UTF-8")
}

/// Drops the arguments as they came from a call that waits for its human,
/// once [`approval_message`] shows them: a call that is neither handed over
/// (an external tool) nor journaled (a durable session, which keeps them)
/// runs from its parsed input alone, so while it waits it holds its
/// arguments twice (input and message), not three times.
fn keep_arguments_once<App>(pending: &mut PendingCall<App>, def: Option<&ToolDefinition>) {
    if def.is_some_and(|def| !def.external) {
        pending.0.args = ParsedFrom::Text(Cow::Borrowed("{}"));
    }
}

/// The line the model reads when a call needs approval and the client
/// cannot ask a human.
pub(super) fn approval_unavailable() -> ToolError {
    ToolError::forbidden(
        "APPROVAL_UNAVAILABLE",
        "This call needs a human's approval, which this MCP client cannot give (it does not support \
         elicitation), so it was not run. Tell the user it needs approval and cannot be done here.",
    )
    .no_retry()
}

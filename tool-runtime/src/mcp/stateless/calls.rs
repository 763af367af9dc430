//! `tools/list` and `tools/call` at revision 2026-07-28, each computed from
//! the request alone: its caller, its arguments, and for an approval's
//! second round its sealed state and the human's answer.

use std::future::IntoFuture;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{CacheScope, CallToolRequestParams, CallToolResponse, ListToolsResult};
use rmcp::service::RequestContext;
use serde_json::Value;
use tokio::sync::mpsc;

use super::answers::{complete, offered};
use super::{approvals, retries};
use crate::call::CallOutcome;
use crate::context::{ProgressSink, UserContext};
use crate::error::ToolError;
use crate::mcp::sessions::{forwarding_progress, mcp_tool};
use crate::mcp::{McpServer, http};
use crate::pipeline::Call;
use crate::result::CallResult;
use crate::result::ResultKind;
use smol_str::SmolStr;

/// Who makes a request, and whether the server can tell them from others.
pub(crate) struct Caller {
    /// The user the request runs as.
    pub(crate) user: Arc<UserContext>,
    /// The authentication hook accepted the request without naming a user:
    /// nothing tells this caller from another such one, so nothing kept for
    /// a caller (a keyed result, a task, an approval) can be theirs.
    pub(crate) nameless: bool,
}

/// Who makes this request: the user the authentication hook gave for it
/// (rmcp hands the handler the HTTP request's `Parts`, which carry it),
/// else the server's user (over stdio, or HTTP without a hook: the one
/// principal the server was configured with).
pub(super) fn caller<App>(server: &McpServer<App>, context: &RequestContext<RoleServer>) -> Caller {
    let authenticated = context.extensions.get::<axum::http::request::Parts>().and_then(|parts| parts.extensions.get::<http::Caller>());
    match authenticated {
        Some(caller) => Caller { user: caller.0.clone(), nameless: caller.0.id.is_none() },
        None => Caller { user: server.user.clone(), nameless: false },
    }
}

/// `tools/list` for the request's caller, with its cache hints: stale at
/// once and private, since what is listed depends on who asks.
pub(super) fn list<App: Send + Sync + 'static>(server: &McpServer<App>, context: &RequestContext<RoleServer>) -> ListToolsResult {
    let user = caller(server, context).user;
    let mut result = ListToolsResult::with_all_items(offered(server, &user).into_iter().map(mcp_tool).collect());
    result.ttl_ms = Some(0);
    result.cache_scope = Some(CacheScope::Private);
    result
}

/// `tools/call`: the whole pipeline for the request's caller; a call that
/// needs approval answers `input_required`, and its second round (with the
/// human's answer and the sealed state) is carried out by `approvals`.
pub(super) async fn call<App: Send + Sync + 'static>(
    server: &McpServer<App>,
    request: CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> CallToolResponse {
    let caller = caller(server, context);
    let user = caller.user.clone();
    let CallToolRequestParams { name, arguments, input_responses, request_state, .. } = request;
    let arguments = Value::Object(arguments.unwrap_or_default());
    if request_state.is_some() || input_responses.is_some() {
        return approvals::resume(server, &name, arguments, (request_state, input_responses), &caller, context).await;
    }
    let key = match retries::key(&context.meta) {
        Ok(key) => key,
        Err(invalid) => return refused(server, &name, &invalid),
    };
    // A keyed call answers directly, never with a task: a retry of it must
    // find its effect, not start a second task.
    #[cfg(feature = "journal")]
    if key.is_none() && super::tasks::wanted(server, server.registry.definition(&name), &caller, context) {
        return super::tasks::create(server, &name, arguments, &user).await;
    }
    let names = offered(server, &user).into_iter().map(|def| def.name.clone()).collect();
    let call = server.registry.call(&server.app, &name, arguments).user(user.clone()).cancellation(&context.ct).offered(names);
    let keyed = key.is_some();
    let call = match key {
        None => call,
        Some(key) => match keyed_call(server, call, key, &caller) {
            Ok(call) => call,
            Err(refusal) => return refused(server, &name, &refusal),
        },
    };
    let outcome = match context.meta.get_progress_token() {
        Some(token) => {
            let (sender, reports) = mpsc::unbounded_channel();
            let sink = ProgressSink::new(move |progress| {
                let _ = sender.send(progress);
            });
            forwarding_progress(call.progress(sink).into_future(), reports, token, &context.peer).await
        }
        None => call.await,
    };
    match outcome {
        CallOutcome::Done(result) => complete(server, result),
        #[cfg(feature = "journal")]
        CallOutcome::NeedsApproval(pending) if !keyed && super::tasks::declared(server, &caller, context) => {
            super::tasks::create_waiting(server, pending.tool(), pending.arguments(), &user).await
        }
        CallOutcome::NeedsApproval(pending) => approvals::ask(server, pending, &caller, keyed, context).await,
    }
}

/// `call` with its effect journaled under the idempotency `key`, for its
/// caller; the refusal the model reads without a journal, or for a caller
/// without a name.
fn keyed_call<'r, App: Send + Sync + 'static>(
    server: &McpServer<App>,
    call: Call<'r, App>,
    key: SmolStr,
    caller: &Caller,
) -> Result<Call<'r, App>, ToolError> {
    if caller.nameless {
        return Err(retries::nameless());
    }
    #[cfg(feature = "journal")]
    if let Some(journal) = &server.journal {
        let durable = crate::memory::Remembered::durable(Arc::new(journal.clone()), &retries::run_id(&caller.user));
        return Ok(call.remembered(durable).call_id(key));
    }
    let _ = (server, call, key);
    Err(retries::unavailable())
}

/// A call refused before the pipeline, with `error` as its one line.
fn refused<App: Send + Sync + 'static>(server: &McpServer<App>, tool: &str, error: &ToolError) -> CallToolResponse {
    complete(server, CallResult::failure(tool.into(), crate::ids::fresh_call_id(), ResultKind::Denied, error))
}

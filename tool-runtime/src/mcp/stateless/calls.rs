//! `tools/call` at revision 2026-07-28, computed from the request alone:
//! its caller, its arguments, and for an approval's second round its
//! sealed state and the human's answer.

use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;
use smol_str::SmolStr;

use super::{Stateless, approvals, questions, retries};
use crate::call::CallOutcome;
use crate::context::LogLevel;
use crate::error::ToolError;
use crate::mcp::caller::Caller;
use crate::mcp::server::Server;
use crate::mcp::{notices, results, tool_list};
use crate::pipeline::Call;
use crate::steps::Steps;

/// `tools/call`: the whole pipeline for the request's caller; a call that
/// needs approval answers `input_required`, and its second round (with the
/// human's answer and the sealed state) is carried out by `approvals`.
/// What only some calls do (a later round, a task, an approval) is awaited
/// boxed, so that the future every call copies into its box holds no room
/// for it.
///
/// # Errors
///
/// `-32602` for a log level in `_meta` that is not one; `-32021` for a tool
/// that requires a task, called by a client that does not declare tasks.
pub(super) async fn call<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    request: CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let level = log_level(context)?;
    let caller = Caller::of(&server.user, &context.extensions);
    let user = caller.user.clone();
    let CallToolRequestParams { name, arguments, input_responses, request_state, .. } = request;
    let arguments = Value::Object(arguments.unwrap_or_default());
    if let Some(state) = request_state.as_deref()
        && let Some(answered) =
            Box::pin(questions::resume(server, stateless, &name, arguments.clone(), (state, input_responses.as_ref()), &caller, context)).await?
    {
        return Ok(answered);
    }
    let answers_approval = input_responses.as_ref().is_some_and(|responses| responses.contains_key(approvals::APPROVAL_INPUT));
    // Answers without the state they answer answer no question of a
    // tool's: the call starts again, and asks again.
    if request_state.is_some() || answers_approval {
        return Ok(Box::pin(approvals::resume(server, stateless, &name, arguments, (request_state, input_responses), &caller, context)).await);
    }
    let key = match retries::key(&context.meta) {
        Ok(key) => key,
        Err(invalid) => return Ok(results::refused(server, &name, &invalid)),
    };
    // A keyed call answers directly, never with a task: a retry of it must
    // find its effect, not start a second task.
    if key.is_none() && super::tasks::wanted(server, stateless, server.registry.definition(&name), &caller, context)? {
        return Ok(Box::pin(super::tasks::create(server, stateless, &name, arguments, &user)).await);
    }
    let names = tool_list::restriction(server, &Steps::default(), &user, false, &name);
    let call = server.registry.call(&server.app, &name, arguments).user(user.clone()).cancellation(&context.ct).offered(names);
    let keyed = key.is_some();
    // A call without a key may ask questions, over several rounds.
    let round = (!keyed).then(|| questions::Round::first(&name, &user));
    let call = match key {
        None => match &round {
            Some(round) => round.attach(call),
            None => call,
        },
        Some(key) => match keyed_call(server, call, key, &caller) {
            Ok(call) => call,
            Err(refusal) => return Ok(results::refused(server, &name, &refusal)),
        },
    };
    let (sinks, forwarding) = notices::for_request(context, level);
    let outcome = forwarding.run(sinks.attach(call), &context.peer).await;
    let asked = match (outcome, &round) {
        (CallOutcome::Done(result), _) => return Ok(results::answer(server, result).into()),
        // Only a call run in a round asks (a keyed call cannot).
        (CallOutcome::NeedsApproval(pending), Some(round)) if pending.asks() => (pending, round),
        (CallOutcome::NeedsApproval(pending), _) if !keyed && super::tasks::declared(server, &caller, context) => {
            return Ok(Box::pin(super::tasks::create(server, stateless, pending.tool(), pending.arguments(), &user)).await);
        }
        (CallOutcome::NeedsApproval(pending), _) => return Ok(Box::pin(approvals::ask(server, stateless, pending, &caller, keyed, context)).await),
    };
    let (pending, round) = asked;
    // A tool whose questions come first asks them in rounds, as one whose
    // client does not declare tasks does; the round that answers the last
    // of them answers with the task (`questions::resume`). Any other that
    // asks a client that declares tasks is a task at once.
    if super::tasks::declared(server, &caller, context) && !super::tasks::after_questions(server, stateless, &name, &caller, context) {
        return Box::pin(questions::to_task(server, stateless, (&pending, round), &caller)).await;
    }
    questions::ask(server, stateless, (&pending, round), Vec::new(), &caller, context)
}

/// The level of the log messages the request asks for, if it asks.
///
/// # Errors
///
/// `-32602` for a level that is not one.
fn log_level(context: &RequestContext<RoleServer>) -> Result<Option<LogLevel>, ErrorData> {
    const KEY: &str = "io.modelcontextprotocol/logLevel";
    match (context.meta.0.get(KEY), context.meta.log_level()) {
        (None, _) => Ok(None),
        (Some(_), Some(level)) => Ok(Some(notices::level(level))),
        (Some(level), None) => Err(ErrorData::invalid_params(
            format!("{KEY} is {level}, not a log level: debug, info, notice, warning, error, critical, alert or emergency"),
            None,
        )),
    }
}

/// `call` with its effect journaled under the idempotency `key`, for its
/// caller; the refusal the model reads without a journal, or for a caller
/// without a name.
fn keyed_call<'r, App: Send + Sync + 'static>(
    server: &Server<App>,
    call: Call<'r, App>,
    key: SmolStr,
    caller: &Caller,
) -> Result<Call<'r, App>, ToolError> {
    if caller.nameless {
        return Err(retries::nameless());
    }
    match server.durable_memory() {
        Some(memory) => Ok(call.remembered(crate::memory::Remembered::durable(memory.clone(), &retries::run_id(&caller.user))).call_id(key)),
        None => Err(retries::unavailable()),
    }
}

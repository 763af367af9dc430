//! A tool's own questions at revision 2026-07-28, as multi round-trip
//! requests: a call whose tool asks ([`Ctx::elicit`](crate::Ctx::elicit),
//! [`Ctx::sample`](crate::Ctx::sample), [`Ctx::roots`](crate::Ctx::roots))
//! answers `input_required`, each question it stopped at one of
//! `inputRequests` (keyed by the question's name where the tool gave it
//! one, [`Ctx::elicit_named`](crate::Ctx::elicit_named), else by its id,
//! `<call id>#<n>`), with a
//! sealed `requestState` (`state.rs`) that carries every question asked so
//! far and the answers given, and the values of the effects the tool made
//! once ([`Ctx::once`](crate::Ctx::once)); the client sends the same call
//! again with `inputResponses` and that state.
//!
//! Nothing is kept between the rounds but the state: each round parks the
//! questions it carries in a memory of its own, records the answers given
//! through [`question::decide`] (a form's answer checked against its
//! schema), and runs the call again from the top under the same call id,
//! so that each question asked again returns its answer. A call that asks
//! several questions at once sends them in one round; one whose answers
//! lead to a new question answers `input_required` again, with a new state
//! (several rounds). Whatever instance receives a round can finish it (the
//! key that seals the state shared, `with_request_state_key`).
//!
//! A tool that goes on as a task once its questions are answered
//! ([`TaskSupport::AfterQuestions`](super::TaskSupport::AfterQuestions))
//! asks in rounds all the same; the round that answers the last question
//! records the task instead of running the call, parks the answered
//! questions in the task's run as the task's own (`<task id>#<n>`), and
//! answers with the task, whose call reads them where it asks again.
//!
//! Only what the request's `_meta` declares is asked: a question the
//! client cannot answer is refused with `-32021`, naming the capability in
//! `requiredCapabilities` (HTTP 400). A state that does not open for the
//! call (altered, another call's or user's, expired) is `-32602`, and
//! runs nothing; so is an answer that is not the result its question asks
//! for, or a form's answer that does not fit it. A round whose
//! `inputResponses` leaves a question unanswered asks it again.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{CallToolResponse, InputRequiredResult, InputResponses};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;
use smol_str::SmolStr;

use super::Stateless;
use super::approvals::run_id_for;
use super::state::{Answered, Carried, Sealed, binding};
use crate::call::{CallOutcome, PendingCall};
use crate::context::UserContext;
use crate::mcp::caller::Caller;
use crate::mcp::server::Server;
use crate::mcp::{asked, results, tool_list};
use crate::memory::{Decision, LocalMemory, ParkedCall, Question, Remembered, RunMemory};
use crate::pipeline::Call;
use crate::question::{self, Asking};
use crate::steps::Steps;

/// One round of a call whose tool may ask: its id, and the memory and
/// asking state it runs with.
pub(super) struct Round {
    call_id: SmolStr,
    /// The memory holding the questions earlier rounds answered; none for
    /// a first round, whose questions (if its tool asks) are parked in a
    /// memory its asking state makes then.
    remembered: Option<Remembered>,
    asking: Arc<Asking>,
}

impl Round {
    /// A new call's first round, of `tool` for `user`: nothing made for
    /// questions but the asking state, since most calls ask none.
    pub(super) fn first(tool: &str, user: &UserContext) -> Self {
        let asking = Arc::new(Asking::new(tool.into(), user.id.clone(), None));
        Round { call_id: crate::ids::fresh_call_id(), remembered: None, asking }
    }

    /// A later round of the call `call_id`, whose earlier rounds made
    /// `made` once and whose questions `answered` holds.
    fn of(call_id: &str, (tool, user): (&str, &UserContext), made: BTreeMap<String, Value>, answered: Remembered) -> Self {
        let asking = Arc::new(Asking::new(tool.into(), user.id.clone(), None));
        asking.made_before(made);
        Round { call_id: call_id.into(), remembered: Some(answered), asking }
    }

    /// `call`, run in this round: its tool may ask, its questions kept in
    /// the round's memory.
    pub(super) fn attach<'r, App: Send + Sync + 'static>(&self, call: Call<'r, App>) -> Call<'r, App> {
        let call = call.call_id(self.call_id.as_str()).asking(self.asking.clone());
        match &self.remembered {
            Some(remembered) => call.remembered(remembered.clone()),
            None => call,
        }
    }

    /// The effects the call made once so far, which the next round's state
    /// carries.
    pub(super) fn made_once(&self) -> BTreeMap<String, Value> {
        self.asking.made_once()
    }
}

/// Answers a call that stopped at its questions with `input_required`:
/// each question not yet answered one of `inputRequests`, and the state
/// that carries them (after `before`, the questions of earlier rounds).
///
/// # Errors
///
/// `-32021` for a question the request's `_meta` does not declare the
/// capability for.
pub(super) fn ask<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    (pending, round): (&PendingCall<App>, &Round),
    mut carried: Vec<Carried>,
    caller: &Caller,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let capabilities = context.client_capabilities().unwrap_or_default();
    for (id, ask) in pending.questions() {
        if !asked::declared(&capabilities, ask) {
            return Err(ErrorData::missing_required_client_capability(asked::required(ask)));
        }
        if !carried.iter().any(|question| question.id == id) {
            carried.push(Carried { id: id.to_owned(), ask: ask.clone(), answer: None });
        }
    }
    let arguments = pending.arguments();
    let (run_id, call_id) = (run_id_for(pending.id()), pending.id().to_string());
    let sealed = Sealed { run_id, call_id, questions: carried, once: round.made_once(), ..Sealed::default() };
    input_required(server, stateless, sealed, &binding(pending.tool(), caller.user.id.as_deref(), &arguments))
}

/// The `input_required` result that asks each question of `sealed` not
/// yet answered, with `sealed` as its state.
fn input_required<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    sealed: Sealed,
    binding: &[u8],
) -> Result<CallToolResponse, ErrorData> {
    let mut requests = BTreeMap::new();
    for question in sealed.questions.iter().filter(|question| question.answer.is_none()) {
        let request = asked::input_request(&question.ask).map_err(|why| ErrorData::internal_error(why, None))?;
        let key = question.ask.key(&question.id);
        if requests.insert(key.to_owned(), request).is_some() {
            let why = format!("two questions of the call are named {key:?}: give each question of a call its own name");
            return Err(ErrorData::internal_error(why, None));
        }
    }
    let state = stateless.sealing.seal(&sealed, binding, server.registry.approval_ttl());
    Ok(CallToolResponse::InputRequired(InputRequiredResult::new(Some(requests), Some(state))))
}

/// A later round: the state opened against the call, the answers it
/// carries and those of `responses` recorded, and the call run again.
/// `None` for a state that carries no question (an approval's).
///
/// # Errors
///
/// `-32602` for a state that does not open for this call, or an answer
/// that does not answer its question; as [`ask`] for a new round.
pub(super) async fn resume<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    tool: &str,
    arguments: Value,
    (state, responses): (&str, Option<&InputResponses>),
    caller: &Caller,
    context: &RequestContext<RoleServer>,
) -> Result<Option<CallToolResponse>, ErrorData> {
    let binding = binding(tool, caller.user.id.as_deref(), &arguments);
    let mut sealed = match stateless.sealing.open(state, &binding) {
        Ok(sealed) => sealed,
        Err(error) if responses.is_some_and(|responses| responses.contains_key(super::approvals::APPROVAL_INPUT)) => {
            // An approval's answer: its own path says why it is refused.
            tracing::debug!(error = %crate::error_report::Escaped(&error), "an approval's state did not open");
            return Ok(None);
        }
        Err(error) => {
            let why = format!(
                "the requestState does not open for this call ({error}): altered, made for another call or user, or expired; \
                 call the tool again without requestState and inputResponses"
            );
            return Err(ErrorData::invalid_params(why, None));
        }
    };
    if sealed.questions.is_empty() {
        return Ok(None);
    }
    let mut unanswered = false;
    for question in sealed.questions.iter_mut().filter(|question| question.answer.is_none()) {
        match responses.and_then(|responses| responses.get(question.ask.key(&question.id))) {
            Some(response) => question.answer = Some(answer_of(question, response)?),
            None => unanswered = true,
        }
    }
    if unanswered {
        return input_required(server, stateless, sealed, &binding).map(Some);
    }
    if super::tasks::after_questions(server, stateless, tool, caller, context) {
        return as_task(server, stateless, tool, arguments, &sealed, caller).await.map(Some);
    }
    let answered = Remembered { memory: Arc::new(LocalMemory::default()), run_id: run_id_for(&sealed.call_id).into(), user: None, durable: false };
    remember(&*answered.memory, &answered.run_id, &sealed.call_id, (&sealed, tool, &arguments, None)).await?;
    let round = Round::of(&sealed.call_id, (tool, &caller.user), std::mem::take(&mut sealed.once), answered);
    let names = tool_list::restriction(server, &Steps::default(), &caller.user, false, tool);
    let call = server.registry.call(&server.app, tool, arguments).user(caller.user.clone()).cancellation(&context.ct).offered(names);
    match round.attach(call).await {
        CallOutcome::Done(result) => Ok(Some(results::answer(server, result).into())),
        CallOutcome::NeedsApproval(pending) if pending.asks() => {
            ask(server, stateless, (&pending, &round), sealed.questions, caller, context).map(Some)
        }
        // Asked for approval only once its questions were answered: the
        // model reads that it waits (an approval is asked before the tool
        // runs, on the call's first round).
        CallOutcome::NeedsApproval(pending) => Ok(Some(results::answer(server, pending.pending_result()).into())),
    }
}

/// The client's answer to `question`, checked to be the result it asks for.
///
/// # Errors
///
/// `-32602`, saying what the answer should have been.
fn answer_of(question: &Carried, response: &Value) -> Result<Answered, ErrorData> {
    let invalid = |why: String| ErrorData::invalid_params(format!("inputResponses[{:?}]: {why}", question.ask.key(&question.id)), None);
    let parked = Question::Tool { call_id: String::new(), n: 0, ask: question.ask.clone() };
    let decision = asked::answered(&question.ask, response).map_err(invalid)?;
    question::admits(&parked, &decision).map_err(invalid)?;
    Ok(match decision {
        Decision::Answer(answer) => Answered::Answer(answer),
        Decision::Cancel => Answered::Cancel,
        _ => Answered::Decline,
    })
}

/// A call that stopped at its questions in its first round, for a client
/// that declares tasks: a task at once, whose call asks them again
/// (`tasks/get` carries them), with the effects the round made once.
///
/// # Errors
///
/// As [`as_task`].
pub(super) async fn to_task<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    (pending, round): (&PendingCall<App>, &Round),
    caller: &Caller,
) -> Result<CallToolResponse, ErrorData> {
    let (run_id, call_id) = (run_id_for(pending.id()), pending.id().to_string());
    let sealed = Sealed { run_id, call_id, once: round.made_once(), ..Sealed::default() };
    as_task(server, stateless, pending.tool(), pending.arguments(), &sealed, caller).await
}

/// The call whose questions `sealed` answers, gone on as a task
/// ([`TaskSupport::AfterQuestions`](super::TaskSupport::AfterQuestions)):
/// the task recorded, each answered question parked in the task's run, as
/// the task's own (`<task id>#<n>`), and each effect made once kept there
/// too, and the task started; its call runs from the top and reads each
/// answer where it asks again, each effect where it makes it again.
///
/// # Errors
///
/// As [`remember`]; `-32603` when the memory fails.
async fn as_task<App: Send + Sync + 'static>(
    server: &Server<App>,
    stateless: &Stateless,
    tool: &str,
    arguments: Value,
    sealed: &Sealed,
    caller: &Caller,
) -> Result<CallToolResponse, ErrorData> {
    let task = match super::tasks::record(server, stateless, tool, arguments.clone(), &caller.user).await {
        Ok(task) => task,
        Err(refused) => return Ok(refused),
    };
    let run_id = super::task_approvals::run_id(&task.task_id);
    remember(&*server.memory, &run_id, &task.task_id, (sealed, tool, &arguments, caller.user.id.clone())).await?;
    let remembered = Remembered::durable(server.memory.clone(), &run_id);
    let made = question::made_elsewhere(&remembered, (&task.task_id, tool, &arguments), sealed.once.clone()).await;
    made.map_err(|error| ErrorData::internal_error(format!("the effects made once of task {}: {error}", task.task_id), None))?;
    Ok(super::tasks::begin(server, stateless, &task, &caller.user))
}

/// Parks each question `sealed` carries in `memory`, as a question of the
/// call `call_id` of the run `run_id` (for `user`), decided as answered,
/// through the one place and the one API.
///
/// # Errors
///
/// `-32602` for a question id that is not one of the sealed call's.
async fn remember(
    memory: &dyn RunMemory,
    run_id: &str,
    call_id: &str,
    (sealed, tool, arguments, user_id): (&Sealed, &str, &Value, Option<String>),
) -> Result<(), ErrorData> {
    for carried in &sealed.questions {
        let n = carried.id.strip_prefix(&format!("{}#", sealed.call_id)).and_then(|n| n.parse().ok());
        let Some(n) = n else { return Err(ErrorData::invalid_params(format!("{:?} is not a question of this call", carried.id), None)) };
        let question = Question::Tool { call_id: call_id.to_owned(), n, ask: carried.ask.clone() };
        let id = Question::id_of(call_id, n);
        let parked = ParkedCall {
            run_id: run_id.to_owned(),
            call_id: id.clone(),
            tool: tool.to_owned(),
            input: arguments.clone(),
            user_id: user_id.clone(),
            parked_at: std::time::SystemTime::now(),
            expires_at: None,
            question,
        };
        let decision = match &carried.answer {
            Some(Answered::Answer(answer)) => Decision::Answer(answer.clone()),
            Some(Answered::Decline) => Decision::Reject(String::new()),
            Some(Answered::Cancel) | None => Decision::Cancel,
        };
        let kept = async {
            question::park(memory, &parked).await?;
            question::decide(memory, run_id, &id, decision, "mcp-client").await
        };
        kept.await.map_err(|error| ErrorData::internal_error(format!("question {id}: {error}"), None))?;
    }
    Ok(())
}

//! Questions a call puts to someone outside it, one concept for every kind:
//! an approval (may the call run?), which the policy asks, and a tool's own
//! question, which the tool asks while it runs: a form for its user
//! ([`Ctx::elicit`](crate::Ctx::elicit)), a completion from the client's
//! model ([`Ctx::sample`](crate::Ctx::sample)), the client's roots
//! ([`Ctx::roots`](crate::Ctx::roots)).
//!
//! # One place, one API, one type
//!
//! - **Parked in one place**: the run's memory ([`RunMemory`]), as a
//!   [`ParkedCall`] whose [`Question`] says what it asks, keyed by its run
//!   and its id: an approval's id is its call's id, a tool's `n`th question
//!   is `<call id>#<n>` ([`Question::id_of`]). Every door parks through
//!   [`park`] (and the runtime's own variants of it here): a run's
//!   approvals, a tool's ask, both MCP revisions.
//! - **Decided through one API**: [`decide`], whoever decides (the host
//!   through its run, [`Approvals`](crate::Approvals), or out of band, the
//!   inbox, an MCP client's answer). It checks that the decision answers
//!   the question (an approval is approved, edited or rejected; a tool's
//!   question answered, declined or cancelled; a form's answer fits its
//!   schema), then records it, once: of several deciders one wins and the
//!   others read who did.
//! - **Said by one type**: [`Decision`]. A tool reads its question's
//!   decision as a [`Reply`]: an answer, a decline (a rejection) or a
//!   cancel; an expiry ends the call instead.
//!
//! An approval is a permit ([`Binding`], `permit.rs`): bound to its call's
//! arguments, its principal, its tool's definition and its expiry, and used
//! once; one whose binding no longer matches runs nothing and says why.
//!
//! # A call that asks goes on from the top
//!
//! A tool's question parks its call: the tool is stopped at the question
//! (its future dropped), the call waits like a call waiting for approval
//! (its result `PendingApproval`, a [`PendingCall`](crate::PendingCall)
//! whose [`questions`](crate::PendingCall::questions) say what it asks),
//! and once every question it parked at is decided, the call runs again
//! from the top. Each question it asks again, by its position, is
//! answered from the run's memory; the first one not yet asked parks it
//! again. So a call's code after a question runs only once it is
//! answered, in whatever process goes on with the run. An effect the tool
//! makes before a question is made once through
//! [`Ctx::once`](crate::Ctx::once): keyed by the run, the call and a key
//! the tool names, its result kept (in a durable run's journal, which
//! survives the process) and returned as it was on every later run of the
//! call; anything else the tool does before a question runs again.
//!
//! # What an MCP adapter does with a question
//!
//! An MCP adapter (either revision) answers its client's tools through the
//! same questions, never a copy of its own:
//!
//! 1. **Park and read** through the memory seam. A call's questions are
//!    parked by its tool's asks when the call carries an asking state and
//!    a memory (what a [`Run`](crate::Run) attaches to its calls); the
//!    call's outcome is then `NeedsApproval` with a pending call whose
//!    [`questions`](crate::PendingCall::questions) list `(id, Ask)`. The
//!    decision of each is read with [`RunMemory::approval`] (run id, id).
//! 2. **Turn a question into a request, an answer into a decision.** An
//!    [`Ask::Form`] is `elicitation/create` in form mode with its `message`
//!    and `schema` as `requestedSchema` (already in the restricted shape of
//!    MCP's forms); [`Ask::Sample`] is `sampling/createMessage` (its
//!    messages as text content, `systemPrompt`, `maxTokens`,
//!    `temperature`); [`Ask::Roots`] is `roots/list`. An elicitation's
//!    `accept` with its `content` is [`Decision::Answer`], `decline` is
//!    [`Decision::Reject`], `cancel` is [`Decision::Cancel`]; a sampling
//!    result is [`Decision::Answer`] of a [`Sampled`] as JSON, a roots
//!    result [`Decision::Answer`] of its array of [`Root`]s. Each goes
//!    through [`decide`], which refuses one that does not fit. An approval
//!    ([`Question::Approval`]) is asked as today, its accept
//!    [`Decision::Approve`].
//! 3. **Carry a question across requests.** A question's id is made from
//!    its call's id and its position, and the call's run id names where it
//!    is kept: an adapter that answers in another request (2026-07-28's
//!    `input_required`, whose `requestState` seals the run id and the call
//!    id, and, where no memory outlives the request, the questions asked
//!    and the answers given, parked and decided again in each round's own
//!    memory, and the values of the effects made once) keys each of `inputRequests` by the question's key
//!    ([`Ask::key`]: the name the tool gave it, else its id), records
//!    each of `inputResponses` with [`decide`] under its id, and sends the
//!    same call again under the same run id and call id: it runs from the
//!    top, each question answered from the memory. A call with several
//!    questions parked at once (a tool that asks them together) waits
//!    until each is decided; a call whose answers lead to a new question
//!    parks again, for another round.

mod asking;
mod form;
mod permit;

use serde::Deserialize;

use crate::memory::{Approval, JournalError, ParkedCall, RunMemory};

pub use crate::memory::{Ask, Binding, Decision, Question, Root, Sampled, SamplingMessage, SamplingRequest, SamplingRole};
#[cfg(feature = "mcp")]
pub(crate) use asking::made_elsewhere;
pub(crate) use asking::{Asking, ask, once, reply};
pub use form::Form;
#[doc(hidden)]
pub use form::{FormChoice, FormField};
pub(crate) use form::{check_answer, requested_schema};
pub use permit::PermitMismatch;
pub(crate) use permit::check as check_permit;

/// What a tool reads of its question's decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply<T> {
    /// It was answered.
    Answered(T),
    /// Whoever was asked declined to answer ([`Decision::Reject`]).
    Declined,
    /// Whoever was asked dismissed the question without a choice
    /// ([`Decision::Cancel`]), or the call's run could no longer wait.
    Cancelled,
}

/// Whether `decision` answers `question`; why not, when it does not.
pub fn admits(question: &Question, decision: &Decision) -> Result<(), String> {
    match (question, decision) {
        (_, Decision::Reject(_) | Decision::Cancel) => Ok(()),
        (Question::Approval(_), Decision::Approve | Decision::ApproveEdited(_)) => Ok(()),
        (Question::Approval(_), Decision::Answer(_)) => {
            Err("an approval is approved (perhaps with an edited input) or rejected, not answered".into())
        }
        (Question::Tool { .. }, Decision::Approve | Decision::ApproveEdited(_)) => {
            Err("a tool's question is answered, declined (rejected) or cancelled, not approved".into())
        }
        (Question::Tool { ask: Ask::Form { schema, .. }, .. }, Decision::Answer(answer)) => {
            check_answer(schema, answer).map_err(|problems| format!("the answer does not fit the form: {problems}"))
        }
        (Question::Tool { ask: Ask::Sample(_), .. }, Decision::Answer(answer)) => {
            Sampled::deserialize(answer).map(drop).map_err(|error| format!("a completion is answered as {{\"model\": ..., \"text\": ...}}: {error}"))
        }
        (Question::Tool { ask: Ask::Roots, .. }, Decision::Answer(answer)) => <Vec<Root>>::deserialize(answer)
            .map(drop)
            .map_err(|error| format!("roots are answered as an array of {{\"uri\": ..., \"name\": ...}}: {error}")),
    }
}

/// Decides the question `id` of the run `run_id`, recording who (`by`):
/// the one API every decider goes through (see the [module docs](self)).
/// A decision that does not answer the question (an approval answered, a
/// tool's question approved, a form's answer that does not fit its
/// schema) is refused before anything is recorded; then the memory
/// records it, once.
///
/// ```
/// use tool_runtime::memory::{Decision, LocalMemory, ParkedCall};
/// use tool_runtime::question::{self, Question};
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let memory = LocalMemory::default();
/// let input = serde_json::json!({"order_id": "A-1"});
/// let refund = tool_runtime::ToolDefinition::new("refund", "Refund an order.", serde_json::json!({"type": "object"}));
/// let call = ParkedCall::new("thread-7", "c1", &refund, input.clone(), Question::approval(&refund, &input));
/// question::park(&memory, &call).await.unwrap();
/// let refused = question::decide(&memory, "thread-7", "c1", Decision::Answer(input), "alice").await;
/// assert!(refused.is_err(), "an approval is approved or rejected, not answered");
/// let decided = question::decide(&memory, "thread-7", "c1", Decision::Approve, "alice").await.unwrap();
/// assert_eq!(decided.decided.unwrap().by, "alice");
/// # }
/// ```
///
/// # Errors
///
/// [`JournalError::Unanswerable`] for a decision that does not answer the
/// question; [`JournalError::AlreadyDecided`] (naming who) when another
/// decider came first; [`JournalError::ApprovalExpired`] past its expiry;
/// [`JournalError::UnknownApproval`] when no such question was parked;
/// [`JournalError::RunFinished`] when its run finished.
pub async fn decide(memory: &dyn RunMemory, run_id: &str, id: &str, decision: Decision, by: &str) -> Result<Approval, JournalError> {
    // A rejection and a cancel answer every question: nothing to read first.
    if !matches!(decision, Decision::Reject(_) | Decision::Cancel) {
        let unknown = || JournalError::UnknownApproval { run_id: run_id.to_owned(), call_id: id.to_owned() };
        let parked = memory.approval(run_id, id).await?.ok_or_else(unknown)?;
        if let Err(why) = admits(&parked.call.question, &decision) {
            return Err(JournalError::Unanswerable { run_id: run_id.to_owned(), call_id: id.to_owned(), why });
        }
    }
    memory.decide(run_id, id, decision, by).await
}

/// Parks `call`, which waits for someone to decide its question, in
/// `memory`: the one place a question is parked (see the [module
/// docs](self)). A journal stamps it by its own clock.
///
/// # Errors
///
/// [`JournalError::AlreadyParked`] when the run parked a question of that
/// id already; [`JournalError::RunFinished`] when the run finished.
pub async fn park(memory: &dyn RunMemory, call: &ParkedCall) -> Result<(), JournalError> {
    memory.park(call).await
}

/// [`park`] a call that this process waits for ([`RunMemory::park_held`]).
#[cfg_attr(not(feature = "mcp"), allow(dead_code, reason = "an MCP session's door"))]
pub(crate) async fn park_held(memory: &dyn RunMemory, call: &ParkedCall) -> Result<(), JournalError> {
    memory.park_held(call).await
}

/// [`park`] a tool's question, and withdraw the start of its call's effect
/// `effect` (its key and the call id that started it), which did not
/// finish and runs again from the top once answered
/// ([`RunMemory::park_asked`]).
pub(crate) async fn park_asked(memory: &dyn RunMemory, call: &ParkedCall, effect: Option<(&str, &str)>) -> Result<(), JournalError> {
    memory.park_asked(call, effect).await
}

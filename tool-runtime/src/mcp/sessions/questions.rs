//! A session's call whose tool asked (revisions with sessions): each
//! question the call stopped at goes to the client as a request through
//! rmcp's peer (`elicitation/create`, `sampling/createMessage`,
//! `roots/list`; `mcp/asked.rs`), only where the client declared the
//! capability in `initialize`; the client's answer is recorded through
//! [`question::decide`], and the call runs again from the top
//! ([`approval::carry_out`]), each question answered from the session's
//! memory. A call whose client cannot answer, does not answer within the
//! approval TTL, or goes away, ends where it asked.

use rmcp::RoleServer;
use rmcp::service::RequestContext;

use crate::approval::{self, Carrier};
use crate::call::{CallOutcome, PendingCall};
use crate::error::ToolError;
use crate::error_report::Escaped;
use crate::mcp::approval::{question_unanswered, question_unavailable};
use crate::mcp::asked;
use crate::memory::{Approval, Ask, Decision, GONE_BY, JournalError, Remembered};
use crate::question;
use crate::registry::Registry;
use crate::result::{CallResult, ResultKind, lines};

/// What answering a call's questions needs of its session: the registry,
/// the session's memory, and who answers (the caller, by id).
pub(super) struct Answering<'a, App> {
    pub(super) registry: &'a Registry<App>,
    pub(super) remembered: &'a Remembered,
    pub(super) by: Option<&'a str>,
}

/// Asks the client each question `pending` stopped at, records its
/// answers, and runs the call again: its outcome (which may stop at a
/// question again, for another round).
pub(super) async fn answer<App: Send + Sync + 'static>(
    answering: Answering<'_, App>,
    pending: PendingCall<App>,
    context: &RequestContext<RoleServer>,
) -> CallOutcome<App> {
    let Answering { registry, remembered, by } = answering;
    let questions: Vec<(String, Ask)> = pending.questions().map(|(id, ask)| (id.to_owned(), ask.clone())).collect();
    let capabilities = context.peer.peer_info().map(|info| info.capabilities.clone()).unwrap_or_default();
    if let Some((_, ask)) = questions.iter().find(|(_, ask)| !asked::declared(&capabilities, ask)) {
        let refused = question_unavailable(asked::capability(ask));
        return CallOutcome::Done(ended(remembered, pending, ResultKind::Rejected, &refused).await);
    }
    let mut last = None;
    for (id, ask) in &questions {
        let answered = tokio::select! {
            answered = tokio::time::timeout(registry.approval_ttl(), request(context, ask)) => answered,
            () = context.ct.cancelled() => return CallOutcome::Done(ended(remembered, pending, ResultKind::Cancelled, &lines::cancelled()).await),
        };
        let decision = match answered {
            Ok(Ok(decision)) => decision,
            Ok(Err(why)) => return CallOutcome::Done(ended(remembered, pending, ResultKind::ToolError, &question_unanswered(&why)).await),
            Err(_) => {
                let expired = lines::question_expired(registry.approval_ttl());
                return CallOutcome::Done(ended(remembered, pending, ResultKind::Rejected, &expired).await);
            }
        };
        match record(remembered, id, decision, by.unwrap_or("mcp-client")).await {
            Ok(approval) => last = Some(approval),
            Err(why) => return CallOutcome::Done(ended(remembered, pending, ResultKind::ToolError, &question_unanswered(&why)).await),
        }
    }
    let Some(approval) = last else { return CallOutcome::NeedsApproval(pending) };
    approval::carry_out(registry.tools(), pending, &approval, Carrier { principal: by, timed: false }).await
}

/// The client's answer to `ask`, as a decision; why it could not answer.
async fn request(context: &RequestContext<RoleServer>, ask: &Ask) -> Result<Decision, String> {
    let failed = |error: rmcp::service::ServiceError| format!("the client's answer failed: {error}");
    #[allow(deprecated, reason = "sampling and roots are this revision's")]
    match ask {
        Ask::Form { message, schema, .. } => {
            let params = asked::elicitation(message, schema)?;
            context.peer.create_elicitation(params).await.map(asked::elicited).map_err(failed)
        }
        Ask::Sample(request) => context.peer.create_message(asked::sampling(request)).await.map(asked::sampled).map_err(failed),
        Ask::Roots => context.peer.list_roots().await.map(asked::roots).map_err(failed),
    }
}

/// Records `decision` on the question `id` through the one API; where
/// another decider came first (a durable session's inbox), that decision.
async fn record(remembered: &Remembered, id: &str, decision: Decision, by: &str) -> Result<Approval, String> {
    match question::decide(&*remembered.memory, &remembered.run_id, id, decision, by).await {
        Ok(approval) => Ok(approval),
        Err(JournalError::AlreadyDecided { .. }) => match remembered.memory.approval(&remembered.run_id, id).await {
            Ok(Some(approval)) => Ok(approval),
            Ok(None) => Err(format!("question {id} is no longer kept")),
            Err(error) => Err(error.to_string()),
        },
        Err(JournalError::Unanswerable { why, .. }) => Err(why),
        Err(error) => Err(error.to_string()),
    }
}

/// Ends `pending` where it asked, with `error`: its questions still
/// undecided are rejected in the memory (by [`GONE_BY`]), so no one
/// answers them later.
async fn ended<App: Send + Sync + 'static>(remembered: &Remembered, pending: PendingCall<App>, kind: ResultKind, error: &ToolError) -> CallResult {
    for (id, _) in pending.questions() {
        let withdrawn =
            question::decide(&*remembered.memory, &remembered.run_id, id, Decision::Reject(error.user_message().to_owned()), GONE_BY).await;
        if let Err(error) = withdrawn
            && !matches!(error, JournalError::AlreadyDecided { .. } | JournalError::UnknownApproval { .. })
        {
            tracing::error!(call_id = %Escaped(id), error = %Escaped(&error), "a question the client did not answer could not be withdrawn");
        }
    }
    CallResult::failure(pending.tool().clone(), pending.id().clone(), kind, error)
}

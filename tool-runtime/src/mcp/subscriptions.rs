//! `subscriptions/listen` (revision 2026-07-28). A client opens a stream to hear when its lists change; rmcp
//! acknowledges it with the part of its filter the server accepts (the
//! tool list, and the prompt and resource lists where the composed handler
//! declares `listChanged`) and tags what is sent on it with its id.
//!
//! Each stream is kept for its caller with what its lists held when it
//! last heard. After every call (at any revision, a task's too) and when
//! the host says the app changed
//! ([`McpServer::notify_list_changes`](super::McpServer::notify_list_changes)),
//! every stream's lists are read again for its caller, and each list that
//! changed is announced on it (`notifications/tools/list_changed`, ...).
//! A stream hears of what changes on the instance that holds it.

use rmcp::ErrorData;
use rmcp::model::SubscriptionFilter;
use rmcp::service::SubscriptionContext;

use super::caller::Caller;
use super::listeners::{Listener, Lists};
use super::server::Server;
use super::tool_list;
use crate::error_report::Escaped;
use crate::steps::Steps;

/// What the server announces on a stream: the tool list, and the lists of
/// the composed handler that declares they change.
pub(crate) fn accepted<App>(server: &Server<App>) -> SubscriptionFilter {
    let mut filter = SubscriptionFilter::builder().tools_list_changed();
    let capabilities = server.composed.capabilities();
    if capabilities.prompts.is_some_and(|prompts| prompts.list_changed == Some(true)) {
        filter = filter.prompts_list_changed();
    }
    if capabilities.resources.is_some_and(|resources| resources.list_changed == Some(true)) {
        filter = filter.resources_list_changed();
    }
    filter.build()
}

/// Holds one acknowledged stream open until its client ends it.
pub(crate) async fn listen<App: Send + Sync + 'static>(server: &Server<App>, subscription: SubscriptionContext) -> Result<(), ErrorData> {
    let context = subscription.request_context().clone();
    let user = Caller::of(&server.user, &context.extensions).user;
    let accepted = subscription.accepted().clone();
    let id = server.listeners.next_id();
    let mut listener = Listener { id, user, context, sink: subscription.sink().clone(), heard: Lists::default() };
    listener.heard = read(server, &listener, &accepted).await;
    server.listeners.add(listener);
    subscription.cancelled().await;
    server.listeners.remove(id);
    Ok(())
}

/// Reads every stream's lists again and announces those that changed.
/// Every `tools/call` awaits this, mostly with no stream open: the reading
/// is awaited boxed, so that the future of a call holds no room for it.
pub(crate) async fn announce_changes<App: Send + Sync + 'static>(server: &Server<App>) {
    if server.listeners.all().is_empty() {
        return;
    }
    Box::pin(announce_all(server)).await;
}

/// Reads every stream's lists again and announces those that changed, one
/// reading at a time.
async fn announce_all<App: Send + Sync + 'static>(server: &Server<App>) {
    let listeners = &server.listeners;
    let _reading = listeners.reading().await;
    for listener in listeners.all() {
        let now = read(server, &listener, listener.sink.accepted()).await;
        if now != listener.heard {
            announce(&listener, &now).await;
            listeners.heard(listener.id, now);
        }
    }
}

/// Announces on `listener` each list that differs from what it heard.
async fn announce(listener: &Listener, now: &Lists) {
    let sink = &listener.sink;
    if now.tools != listener.heard.tools
        && let Err(error) = sink.notify_tool_list_changed().await
    {
        tracing::debug!(error = %Escaped(&error), "could not announce a tool list change");
    }
    if now.prompts != listener.heard.prompts
        && let Err(error) = sink.notify_prompt_list_changed().await
    {
        tracing::debug!(error = %Escaped(&error), "could not announce a prompt list change");
    }
    if now.resources != listener.heard.resources
        && let Err(error) = sink.notify_resource_list_changed().await
    {
        tracing::debug!(error = %Escaped(&error), "could not announce a resource list change");
    }
}

/// The names in the lists `accepted` asks for, as `listener`'s caller sees
/// them now.
async fn read<App: Send + Sync + 'static>(server: &Server<App>, listener: &Listener, accepted: &SubscriptionFilter) -> Lists {
    let mut lists = Lists::default();
    if accepted.tools_list_changed == Some(true) {
        lists.tools = Some(tool_list::names(&tool_list::offered(server, &Steps::default(), &listener.user, false)));
    }
    let (composed, cache) = (&server.composed, &server.cache);
    if accepted.prompts_list_changed == Some(true) {
        let listed = composed.list_prompts(cache, None, listener.context.clone()).await;
        lists.prompts = Some(listed.map(|list| list.prompts.into_iter().map(|prompt| prompt.name).collect()).unwrap_or_default());
    }
    if accepted.resources_list_changed == Some(true) {
        let listed = composed.list_resources(cache, None, listener.context.clone()).await;
        lists.resources = Some(listed.map(|list| list.resources.into_iter().map(|resource| resource.uri.clone()).collect()).unwrap_or_default());
    }
    lists
}

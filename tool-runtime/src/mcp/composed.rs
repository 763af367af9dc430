//! The protocol beside the tools: prompts, resources (and their templates),
//! completion, served by an rmcp [`ServerHandler`] the host composes with
//! its tools ([`McpServer::with_handler`](super::McpServer::with_handler)),
//! at every revision.
//!
//! The composed handler is the host's own rmcp code: a `#[prompt_router]`,
//! its `list_resources`, `read_resource`, `list_resource_templates` and
//! `complete`. The server asks it for what it declares in its
//! `get_info().capabilities` (prompts, resources, completions) and only
//! that; its tools, if it has any, are not served (the registry's are).
//! On what it answers the server puts the caching hints
//! ([`cache`](super::cache)), and on a read of a resource it does not have
//! the URI, as `data.uri` of the error (`-32602` at 2026-07-28, `-32002`
//! before; rmcp maps one to the other).

use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorCode, GetPromptRequestParams, GetPromptResponse, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use std::sync::Arc;

use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::cache::{CacheHints, Cached};
use crate::tool::BoxFuture;

/// The handler composed beside the tools, if the host gave one. Cheap to
/// clone.
#[derive(Clone, Default)]
pub(crate) struct Composed(Option<Arc<dyn Handler>>);

/// An rmcp handler as the server holds it: its methods that serve what is
/// beside the tools, boxed, so that any handler type fits one field.
pub(crate) trait Handler: Send + Sync + 'static {
    fn capabilities(&self) -> ServerCapabilities;
    fn list_prompts(&self, request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> Answer<'_, ListPromptsResult>;
    fn get_prompt(&self, request: GetPromptRequestParams, context: RequestContext<RoleServer>) -> Answer<'_, GetPromptResponse>;
    fn list_resources(&self, request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> Answer<'_, ListResourcesResult>;
    fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourceTemplatesResult>;
    fn read_resource(&self, request: ReadResourceRequestParams, context: RequestContext<RoleServer>) -> Answer<'_, ReadResourceResponse>;
    fn complete(&self, request: CompleteRequestParams, context: RequestContext<RoleServer>) -> Answer<'_, CompleteResult>;
    fn subscribe(&self, request: SubscribeRequestParams, context: RequestContext<RoleServer>) -> Answer<'_, ()>;
    fn unsubscribe(&self, request: UnsubscribeRequestParams, context: RequestContext<RoleServer>) -> Answer<'_, ()>;
}

/// What a composed handler's method answers.
pub(crate) type Answer<'h, T> = BoxFuture<'h, Result<T, ErrorData>>;

#[allow(deprecated, reason = "resources/subscribe is the revisions before 2026-07-28's, which the server still serves")]
impl<H: ServerHandler> Handler for H {
    fn capabilities(&self) -> ServerCapabilities {
        let declared = self.get_info().capabilities;
        let mut capabilities = ServerCapabilities::default();
        capabilities.prompts = declared.prompts;
        capabilities.resources = declared.resources;
        capabilities.completions = declared.completions;
        capabilities
    }

    fn list_prompts(&self, request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> Answer<'_, ListPromptsResult> {
        Box::pin(ServerHandler::list_prompts(self, request, context))
    }

    fn get_prompt(&self, request: GetPromptRequestParams, context: RequestContext<RoleServer>) -> Answer<'_, GetPromptResponse> {
        Box::pin(ServerHandler::get_prompt(self, request, context))
    }

    fn list_resources(&self, request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> Answer<'_, ListResourcesResult> {
        Box::pin(ServerHandler::list_resources(self, request, context))
    }

    fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourceTemplatesResult> {
        Box::pin(ServerHandler::list_resource_templates(self, request, context))
    }

    fn read_resource(&self, request: ReadResourceRequestParams, context: RequestContext<RoleServer>) -> Answer<'_, ReadResourceResponse> {
        Box::pin(ServerHandler::read_resource(self, request, context))
    }

    fn complete(&self, request: CompleteRequestParams, context: RequestContext<RoleServer>) -> Answer<'_, CompleteResult> {
        Box::pin(ServerHandler::complete(self, request, context))
    }

    fn subscribe(&self, request: SubscribeRequestParams, context: RequestContext<RoleServer>) -> Answer<'_, ()> {
        Box::pin(ServerHandler::subscribe(self, request, context))
    }

    fn unsubscribe(&self, request: UnsubscribeRequestParams, context: RequestContext<RoleServer>) -> Answer<'_, ()> {
        Box::pin(ServerHandler::unsubscribe(self, request, context))
    }
}

impl Composed {
    /// `handler`, composed beside the tools.
    pub(crate) fn new(handler: impl ServerHandler) -> Self {
        Composed(Some(Arc::new(handler)))
    }

    /// What the handler declares it serves: prompts, resources,
    /// completions (none without a handler).
    pub(crate) fn capabilities(&self) -> ServerCapabilities {
        self.0.as_ref().map(|handler| handler.capabilities()).unwrap_or_default()
    }

    /// The handler, when it declares `declared` of its capabilities; else
    /// the method is not found (`-32601`), as rmcp answers it.
    fn declaring(&self, method: &str, declared: impl Fn(&ServerCapabilities) -> bool) -> Result<&dyn Handler, ErrorData> {
        match &self.0 {
            Some(handler) if declared(&handler.capabilities()) => Ok(&**handler),
            _ => Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, method.to_owned(), None)),
        }
    }

    fn prompts(&self, method: &str) -> Result<&dyn Handler, ErrorData> {
        self.declaring(method, |capabilities| capabilities.prompts.is_some())
    }

    fn resources(&self, method: &str) -> Result<&dyn Handler, ErrorData> {
        self.declaring(method, |capabilities| capabilities.resources.is_some())
    }

    /// `prompts/list`, with its caching hints.
    pub(crate) async fn list_prompts(
        &self,
        cache: &CacheHints,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let mut result = self.prompts("prompts/list")?.list_prompts(request, context).await?;
        cache.apply(Cached::Prompts, &mut result.ttl_ms, &mut result.cache_scope);
        Ok(result)
    }

    /// `prompts/get`.
    pub(crate) async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.prompts("prompts/get")?.get_prompt(request, context).await
    }

    /// `resources/list`, with its caching hints.
    pub(crate) async fn list_resources(
        &self,
        cache: &CacheHints,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut result = self.resources("resources/list")?.list_resources(request, context).await?;
        cache.apply(Cached::Resources, &mut result.ttl_ms, &mut result.cache_scope);
        Ok(result)
    }

    /// `resources/templates/list`, with its caching hints.
    pub(crate) async fn list_resource_templates(
        &self,
        cache: &CacheHints,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let mut result = self.resources("resources/templates/list")?.list_resource_templates(request, context).await?;
        cache.apply(Cached::ResourceTemplates, &mut result.ttl_ms, &mut result.cache_scope);
        Ok(result)
    }

    /// `resources/read`, with its caching hints; a resource the handler
    /// does not have is an error naming its URI.
    pub(crate) async fn read_resource(
        &self,
        cache: &CacheHints,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.clone();
        match self.resources("resources/read")?.read_resource(request, context).await {
            Ok(ReadResourceResponse::Complete(mut result)) => {
                cache.apply(Cached::ResourceReads, &mut result.ttl_ms, &mut result.cache_scope);
                Ok(ReadResourceResponse::Complete(result))
            }
            Ok(other) => Ok(other),
            Err(mut error) => {
                let not_found = error.code == ErrorCode::RESOURCE_NOT_FOUND || error.code == ErrorCode::INVALID_PARAMS;
                if not_found && error.data.is_none() {
                    error.data = Some(serde_json::json!({ "uri": uri }));
                }
                Err(error)
            }
        }
    }

    /// `completion/complete`.
    pub(crate) async fn complete(&self, request: CompleteRequestParams, context: RequestContext<RoleServer>) -> Result<CompleteResult, ErrorData> {
        self.declaring("completion/complete", |capabilities| capabilities.completions.is_some())?.complete(request, context).await
    }

    /// `resources/subscribe` (the revisions before 2026-07-28).
    pub(crate) async fn subscribe(&self, request: SubscribeRequestParams, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.resources("resources/subscribe")?.subscribe(request, context).await
    }

    /// `resources/unsubscribe` (the revisions before 2026-07-28).
    pub(crate) async fn unsubscribe(&self, request: UnsubscribeRequestParams, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.resources("resources/unsubscribe")?.unsubscribe(request, context).await
    }
}

/// The methods of an rmcp handler that serve what is beside the tools
/// from its `self.server` (a [`Server`](super::server::Server)): written
/// once, for both handlers that serve it (the server's and a session's).
macro_rules! serve_composed {
    () => {
        async fn list_prompts(
            &self,
            request: Option<rmcp::model::PaginatedRequestParams>,
            context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<rmcp::model::ListPromptsResult, rmcp::ErrorData> {
            self.server.composed.list_prompts(&self.server.cache, request, context).await
        }

        async fn get_prompt(
            &self,
            request: rmcp::model::GetPromptRequestParams,
            context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<rmcp::model::GetPromptResponse, rmcp::ErrorData> {
            self.server.composed.get_prompt(request, context).await
        }

        async fn list_resources(
            &self,
            request: Option<rmcp::model::PaginatedRequestParams>,
            context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<rmcp::model::ListResourcesResult, rmcp::ErrorData> {
            self.server.composed.list_resources(&self.server.cache, request, context).await
        }

        async fn list_resource_templates(
            &self,
            request: Option<rmcp::model::PaginatedRequestParams>,
            context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<rmcp::model::ListResourceTemplatesResult, rmcp::ErrorData> {
            self.server.composed.list_resource_templates(&self.server.cache, request, context).await
        }

        async fn read_resource(
            &self,
            request: rmcp::model::ReadResourceRequestParams,
            context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<rmcp::model::ReadResourceResponse, rmcp::ErrorData> {
            self.server.composed.read_resource(&self.server.cache, request, context).await
        }

        async fn complete(
            &self,
            request: rmcp::model::CompleteRequestParams,
            context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<rmcp::model::CompleteResult, rmcp::ErrorData> {
            self.server.composed.complete(request, context).await
        }

        #[allow(deprecated, reason = "resources/subscribe is the session revisions'; rmcp refuses it at 2026-07-28")]
        async fn subscribe(
            &self,
            request: rmcp::model::SubscribeRequestParams,
            context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<(), rmcp::ErrorData> {
            self.server.composed.subscribe(request, context).await
        }

        #[allow(deprecated, reason = "resources/unsubscribe is the session revisions'; rmcp refuses it at 2026-07-28")]
        async fn unsubscribe(
            &self,
            request: rmcp::model::UnsubscribeRequestParams,
            context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<(), rmcp::ErrorData> {
            self.server.composed.unsubscribe(request, context).await
        }
    };
}

pub(crate) use serve_composed;

//! Caching hints (revision 2026-07-28): on every list and every read, how
//! long a client may keep the result (`ttlMs`) and whether it may share it
//! between callers (`cacheScope`).
//!
//! A hint set with [`McpServer::with_cache_hint`](super::McpServer::with_cache_hint)
//! is put on every result of its kind. Where none is set, a result keeps
//! the hint the composed handler gave it (rmcp's `#[prompt_handler]` says
//! stale at once and public), and one without a hint is stale at once and
//! private (`ttlMs: 0`, `cacheScope: "private"`): the tool list depends on
//! its caller and on the app's state, and what the composed handler lists
//! or reads may too. rmcp leaves the hints out for the revisions before
//! 2026-07-28, which have none.

use std::time::Duration;

use rmcp::model::CacheScope;

/// The kinds of result that carry caching hints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cached {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    ResourceTemplates,
    /// `resources/read`.
    ResourceReads,
}

/// One kind of result's caching hint: how long it stays fresh, and who may
/// share it.
///
/// ```
/// use std::time::Duration;
/// use tool_runtime::mcp::CacheHint;
///
/// let hint = CacheHint::public(Duration::from_secs(300));
/// assert_eq!(hint.ttl(), Duration::from_secs(300));
/// assert_eq!(CacheHint::default(), CacheHint::private(Duration::ZERO));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheHint {
    ttl: Duration,
    scope: CacheScope,
}

impl Default for CacheHint {
    /// Stale at once, and private.
    fn default() -> Self {
        CacheHint::private(Duration::ZERO)
    }
}

impl CacheHint {
    /// Fresh for `ttl`, and the same for every caller: a client, a gateway
    /// or a proxy may serve it to anyone.
    pub fn public(ttl: Duration) -> Self {
        CacheHint { ttl, scope: CacheScope::Public }
    }

    /// Fresh for `ttl`, for the caller who asked only.
    pub fn private(ttl: Duration) -> Self {
        CacheHint { ttl, scope: CacheScope::Private }
    }

    /// How long the result stays fresh.
    pub fn ttl(self) -> Duration {
        self.ttl
    }

    /// Who may share it.
    pub fn scope(self) -> CacheScope {
        self.scope
    }

    fn ttl_ms(self) -> u64 {
        u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX)
    }
}

/// The hint set for each kind of result, if one is.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CacheHints {
    tools: Option<CacheHint>,
    prompts: Option<CacheHint>,
    resources: Option<CacheHint>,
    templates: Option<CacheHint>,
    reads: Option<CacheHint>,
}

impl CacheHints {
    fn slot(&mut self, kind: Cached) -> &mut Option<CacheHint> {
        match kind {
            Cached::Tools => &mut self.tools,
            Cached::Prompts => &mut self.prompts,
            Cached::Resources => &mut self.resources,
            Cached::ResourceTemplates => &mut self.templates,
            Cached::ResourceReads => &mut self.reads,
        }
    }

    /// Sets the hint of `kind`.
    pub(crate) fn set(&mut self, kind: Cached, hint: CacheHint) {
        *self.slot(kind) = Some(hint);
    }

    /// Puts the hints on a result of `kind`: the one set for it, else the
    /// result's own, else the default.
    pub(crate) fn apply(mut self, kind: Cached, ttl_ms: &mut Option<u64>, scope: &mut Option<CacheScope>) {
        match *self.slot(kind) {
            Some(hint) => (*ttl_ms, *scope) = (Some(hint.ttl_ms()), Some(hint.scope)),
            None => {
                ttl_ms.get_or_insert(CacheHint::default().ttl_ms());
                scope.get_or_insert(CacheHint::default().scope);
            }
        }
    }
}

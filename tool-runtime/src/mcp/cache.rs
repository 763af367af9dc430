//! Caching hints (revision 2026-07-28): on every list and every read, how
//! long a client may keep the result (`ttlMs`) and whether it may share it
//! between callers (`cacheScope`).
//!
//! By default every result is stale at once and private (`ttlMs: 0`,
//! `cacheScope: "private"`): the tool list depends on its caller and on
//! the app's state, and what the composed handler lists or reads may too.
//! [`McpServer::with_cache_hint`](super::McpServer::with_cache_hint) sets
//! the hint of one kind of result; a hint the composed handler put on its
//! own result wins over both. rmcp leaves the hints out for the revisions
//! before 2026-07-28, which have none.

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

    /// Sets the hint on a result that has none of its own.
    pub(crate) fn fill(self, ttl_ms: &mut Option<u64>, scope: &mut Option<CacheScope>) {
        ttl_ms.get_or_insert(u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX));
        scope.get_or_insert(self.scope);
    }
}

/// The hint of each kind of result.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CacheHints {
    pub(crate) tools: CacheHint,
    pub(crate) prompts: CacheHint,
    pub(crate) resources: CacheHint,
    pub(crate) templates: CacheHint,
    pub(crate) reads: CacheHint,
}

impl CacheHints {
    /// The hint of `kind`, to set.
    pub(crate) fn of(&mut self, kind: Cached) -> &mut CacheHint {
        match kind {
            Cached::Tools => &mut self.tools,
            Cached::Prompts => &mut self.prompts,
            Cached::Resources => &mut self.resources,
            Cached::ResourceTemplates => &mut self.templates,
            Cached::ResourceReads => &mut self.reads,
        }
    }
}

//! What happens to a call before it runs: allow, deny, or wait for a human.

use std::collections::BTreeSet;

use crate::origin::Origin;

/// The decision on one call, from the tool's `policy` (a static verdict or a
/// predicate) and the caller's [`ApprovalFloor`].
///
/// A predicate returns it, sync or async, alone or in a `Result` (an `Err`
/// denies the call: predicates fail closed):
///
/// ```
/// use tool_runtime::Verdict;
///
/// fn amount_policy(amount_cents: u64) -> Verdict {
///     if amount_cents > 50_00 {
///         Verdict::needs_approval().with_rejection_text("A human declined the refund; tell the customer.")
///     } else {
///         Verdict::Allow
///     }
/// }
/// assert!(amount_policy(100_00).is_needs_approval());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The call runs.
    Allow,
    /// The call waits for a human (see `Approvals::approve` / `Approvals::reject`).
    NeedsApproval {
        /// What the model reads when the human rejects without a text of their own.
        rejection_text: Option<String>,
    },
    /// The call is refused; it never runs and no human is asked.
    Deny {
        /// What the model reads; a generic refusal when `None`.
        reason: Option<String>,
    },
}

impl Verdict {
    /// A call that waits for a human.
    pub const fn needs_approval() -> Self {
        Verdict::NeedsApproval { rejection_text: None }
    }

    /// A refused call, with the reason the model reads.
    pub fn deny(reason: impl Into<String>) -> Self {
        Verdict::Deny { reason: Some(reason.into()) }
    }

    /// Sets the text the model reads when a human rejects this call.
    pub fn with_rejection_text(self, text: impl Into<String>) -> Self {
        match self {
            Verdict::NeedsApproval { .. } => Verdict::NeedsApproval { rejection_text: Some(text.into()) },
            other => other,
        }
    }

    /// `true` for [`Verdict::Allow`].
    pub fn is_allow(&self) -> bool {
        matches!(self, Verdict::Allow)
    }

    /// `true` for [`Verdict::Deny`].
    pub fn is_deny(&self) -> bool {
        matches!(self, Verdict::Deny { .. })
    }

    /// `true` for [`Verdict::NeedsApproval`].
    pub fn is_needs_approval(&self) -> bool {
        matches!(self, Verdict::NeedsApproval { .. })
    }

    /// Applies the caller's floor: an `Allow` for a tool (or tag) on the
    /// floor becomes `NeedsApproval`; `Deny` stays `Deny`.
    pub(crate) fn with_floor(self, floor_applies: bool) -> Self {
        match self {
            Verdict::Allow if floor_applies => Verdict::needs_approval(),
            other => other,
        }
    }

    /// A short lowercase name for logs and transcripts.
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::NeedsApproval { .. } => "needs_approval",
            Verdict::Deny { .. } => "deny",
        }
    }
}

/// How a tool decides its calls, as declared by `#[tool(policy = ...)]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    /// Every call runs (the default).
    Allow,
    /// Every call is refused: a kill switch for a tool that stays registered.
    Deny,
    /// Every call waits for a human.
    NeedsApproval,
    /// A predicate decides each call on its parsed input and context.
    Predicate,
}

impl PolicyKind {
    pub(crate) fn static_verdict(self) -> Option<Verdict> {
        match self {
            PolicyKind::Allow => Some(Verdict::Allow),
            PolicyKind::Deny => Some(Verdict::Deny { reason: None }),
            PolicyKind::NeedsApproval => Some(Verdict::needs_approval()),
            PolicyKind::Predicate => None,
        }
    }
}

/// Tools and tags that always need approval for one user: the floor under
/// every tool's own policy. It turns `Allow` into `NeedsApproval` and never
/// lifts a `Deny`.
///
/// ```
/// use tool_runtime::ApprovalFloor;
///
/// let floor = ApprovalFloor::default().tool("refund").tag("billing");
/// assert!(floor.applies("refund", []));
/// assert!(floor.applies("charge", ["billing"]));
/// assert!(!floor.applies("lookup_order", ["orders"]));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApprovalFloor {
    tools: BTreeSet<String>,
    tags: BTreeSet<String>,
    origins: BTreeSet<Origin>,
}

impl ApprovalFloor {
    /// Adds a tool that always needs approval.
    pub fn tool(mut self, name: impl Into<String>) -> Self {
        self.tools.insert(name.into());
        self
    }

    /// Adds a tag whose tools always need approval.
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.insert(tag.into());
        self
    }

    /// Adds an origin whose tools always need approval: every dynamic tool
    /// (discovered from an MCP server, loaded from configuration), say.
    ///
    /// ```
    /// use tool_runtime::{ApprovalFloor, Origin};
    ///
    /// let floor = ApprovalFloor::default().origin(Origin::Dynamic);
    /// assert!(floor.applies_to("weather", [], Origin::Dynamic));
    /// assert!(!floor.applies_to("lookup_order", [], Origin::Typed));
    /// ```
    pub fn origin(mut self, origin: Origin) -> Self {
        self.origins.insert(origin);
        self
    }

    /// Whether a tool with this name and these tags needs approval, by the
    /// tools and tags of the floor (not its origins: see
    /// [`applies_to`](Self::applies_to)).
    pub fn applies<'a>(&self, tool: &str, tags: impl IntoIterator<Item = &'a str>) -> bool {
        self.tools.contains(tool) || tags.into_iter().any(|tag| self.tags.contains(tag))
    }

    /// Whether a tool with this name, these tags and this origin needs
    /// approval: what the registry asks of every call.
    pub fn applies_to<'a>(&self, tool: &str, tags: impl IntoIterator<Item = &'a str>, origin: Origin) -> bool {
        self.origins.contains(&origin) || self.applies(tool, tags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_turns_allow_into_needs_approval() {
        assert_eq!(Verdict::Allow.with_floor(true), Verdict::needs_approval());
        assert_eq!(Verdict::Allow.with_floor(false), Verdict::Allow);
    }

    #[test]
    fn the_floor_never_lifts_a_deny() {
        assert_eq!(Verdict::deny("no").with_floor(true), Verdict::deny("no"));
    }
}

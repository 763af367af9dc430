//! What stops a registry from being built: every problem found, each
//! worded for the developer with what to do.

/// Why a registry could not be built: every problem found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the tool registry is invalid:{}", problems.iter().map(|p| format!("\n  - {p}")).collect::<String>())]
pub struct BuildError {
    /// Each problem, in the order the tools were added.
    pub problems: Vec<BuildProblem>,
}

/// One problem found while building a registry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildProblem {
    /// Two tools share a name.
    #[error("two tools are named `{tool}`; rename one (`#[tool(name = \"...\")]` or the dynamic tool's name)")]
    DuplicateName {
        /// The name.
        tool: String,
    },
    /// `requires` names a tool that is not registered.
    #[error("tool `{tool}` requires `{requires}`, which is not in the registry; add it or fix the name")]
    UnknownRequires {
        /// The tool with the `requires`.
        tool: String,
        /// The missing name.
        requires: String,
    },
    /// `related` names a tool that is not registered.
    #[error("tool `{tool}` lists `{related}` as related, but it is not in the registry; add it or fix the name")]
    UnknownRelated {
        /// The tool with the `related` list.
        tool: String,
        /// The missing name.
        related: String,
    },
    /// Both `kind` and a `meta` entry named `kind`: they would be exported
    /// under the same MCP `_meta` key.
    #[error("tool `{tool}` sets both `kind` and a `meta` entry named `kind`, which MCP `_meta` exports under the same key; rename the `meta` entry")]
    KindInMeta {
        /// The tool.
        tool: String,
    },
    /// A failure schema and a `meta` entry named `failureSchema`: they would
    /// be exported under the same MCP `_meta` key.
    #[error(
        "tool `{tool}` has a failure schema and a `meta` entry named `failureSchema`, which MCP `_meta` exports under the same key; rename the `meta` entry"
    )]
    FailureSchemaInMeta {
        /// The tool.
        tool: String,
    },
    /// A name providers would reject.
    #[error("tool name `{tool}` must match ^[a-z][a-z0-9_]{{0,63}}$")]
    InvalidName {
        /// The name.
        tool: String,
    },
    /// The model would not know when to call the tool.
    #[error("tool `{tool}` has an empty description; say what it does and when to call it")]
    EmptyDescription {
        /// The tool.
        tool: String,
    },
    /// A provider's built-in tool declared wrongly (a host-run one without a
    /// handler, an argument that is the provider's).
    #[error("tool `{tool}`: {reason}")]
    ProviderTool {
        /// The tool.
        tool: String,
        /// What is wrong, and what to do.
        reason: String,
    },
    /// A provider's built-in tool whose provider name another tool of the
    /// registry has: the model's calls would be ambiguous.
    #[error("tool `{tool}` is called `{wire_name}` by its provider, and `{other}` answers to that name too; keep only one of them")]
    ProviderNameTaken {
        /// The built-in tool.
        tool: String,
        /// The provider's name for it.
        wire_name: String,
        /// The other tool.
        other: String,
    },
    /// The input schema is not an object schema, or not a valid JSON Schema.
    #[error("tool `{tool}` has an unusable input schema: {reason}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// What is wrong.
        reason: String,
    },
    /// An interim text that is empty, or whose delay is zero or not
    /// shorter than the tool's timeout.
    #[error("tool `{tool}`: {reason}")]
    InvalidInterim {
        /// The tool.
        tool: String,
        /// What is wrong.
        reason: String,
    },
    /// Two keys of a [`DynamicTool`](crate::DynamicTool) that contradict
    /// each other, as `#[tool]` refuses them at compile time (`read_only`
    /// and `destructive`, `replay(false)` and `idempotency_key`, a key about
    /// running the tool here on an external tool, ...).
    #[error("dynamic tool `{tool}`: {reason}")]
    Contradiction {
        /// The tool.
        tool: String,
        /// What contradicts what, why, and what to do.
        reason: String,
    },
    /// `intent_opt_in(true)` with no tool written `as_intent`: the intent
    /// classifier would list no tool.
    #[error(
        "the registry lists to the intent classifier only the tools that opt in (`intent_opt_in(true)`), and none does; \
         mark the tools it may choose `#[tool(as_intent)]` (`DynamicTool::as_intent(true)`), or drop `intent_opt_in`"
    )]
    NoIntentTools,
    /// A [`Variant`](crate::Variant) whose keys contradict each other or
    /// its tool, as `#[tool]` refuses them at compile time, or whose
    /// narrowed input schema would accept more than its tool's.
    #[error("variant `{tool}` of `{of}`: {reason}")]
    Variant {
        /// The variant.
        tool: String,
        /// The `#[tool]` it is a variant of.
        of: String,
        /// What contradicts what, why, and what to do.
        reason: String,
    },
    /// `max_argument_depth` above what JSON text can be parsed at.
    #[error("max_argument_depth({depth}) is above the largest supported depth, {max}; lower it")]
    DepthLimitTooHigh {
        /// The depth asked for.
        depth: usize,
        /// The largest supported depth.
        max: usize,
    },
}

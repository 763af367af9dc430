//! Where a tool's definition comes from: [`Origin`], which every
//! [`ToolDefinition`](crate::ToolDefinition) carries, for hosts that treat
//! tools apart by it (a filter, an approval floor).

use std::fmt;

/// Where a tool's definition comes from, in
/// [`ToolDefinition::origin`](crate::ToolDefinition::origin).
///
/// One origin per tool, the first that holds: a provider's built-in is
/// [`ProviderDefined`](Self::ProviderDefined); a tool the host runs is
/// [`External`](Self::External), whether `#[tool(external)]` or
/// [`DynamicTool::external`](crate::DynamicTool::external) declared it;
/// any other is [`Typed`](Self::Typed) (`#[tool]`, and a
/// [`Variant`](crate::Variant) of one) or [`Dynamic`](Self::Dynamic)
/// ([`DynamicTool::new`](crate::DynamicTool::new) and
/// [`DynamicTool::streamed`](crate::DynamicTool::streamed): tools
/// discovered from an MCP server or loaded from configuration).
///
/// ```
/// use serde_json::{json, Value};
/// use tool_runtime::prelude::*;
/// use tool_runtime::Origin;
///
/// /// Look up an order.
/// #[tool(read_only)]
/// async fn lookup_order(order_id: String) -> String { order_id }
///
/// let weather = DynamicTool::new("weather", "The weather.", json!({"type": "object"}), |_: Value, _: Ctx<()>| async {
///     Ok::<_, ToolError>(json!("sunny"))
/// });
/// let registry = Registry::<()>::builder().tools(tools![lookup_order]).tool(weather).build().unwrap();
/// assert_eq!(registry.definition("lookup_order").unwrap().origin, Origin::Typed);
/// let discovered: Vec<&str> = registry.definitions_of_origin(Origin::Dynamic).map(|def| def.name.as_str()).collect();
/// assert_eq!(discovered, ["weather"]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Origin {
    /// Written in Rust with `#[tool]`: its input and output are Rust types.
    Typed,
    /// Defined at run time from a name, a description and a JSON Schema.
    Dynamic,
    /// A provider's built-in tool (web search, Anthropic's bash...),
    /// declared with `providers::builtin::ProviderTool`.
    ProviderDefined,
    /// Declared here and run by the host: its calls are handed over.
    External,
}

impl Origin {
    /// A short lowercase name: `typed`, `dynamic`, `provider_defined`,
    /// `external`.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Typed => "typed",
            Origin::Dynamic => "dynamic",
            Origin::ProviderDefined => "provider_defined",
            Origin::External => "external",
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

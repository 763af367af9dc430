//! Provider dialects: the one canonical schema of each tool, exported as a
//! separate pass for each provider, and the provider's tool-call payloads
//! parsed into calls and results rendered back.
//!
//! - [`mcp`]: MCP `tools/list` entries (annotations as hints, `outputSchema`).
pub mod mcp;

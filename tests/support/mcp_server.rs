//! The `mcp_server` example's executable, for the tests that run it as a
//! process of its own (`mcp_interop`, `mcp_processes`); a test that
//! includes it includes `support/examples.rs` as `examples` too.

use std::path::PathBuf;
use std::sync::OnceLock;

/// Builds the example (once per test process) and returns its path. It is
/// built with the features this test was, so that it reuses what the test
/// build compiled, and `mcp`, which it needs.
pub fn example_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| crate::examples::build_example("mcp_server", &["mcp"])).clone()
}

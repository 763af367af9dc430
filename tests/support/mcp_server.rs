//! The `mcp_server` example's executable, for the tests that run it as a
//! process of its own (`mcp_interop`, `mcp_processes`); a test that
//! includes it includes `support/examples.rs` as `examples` too.

use std::path::PathBuf;
use std::sync::OnceLock;

/// Builds the example (once per test process) and returns its path. It is
/// built with the features this test was, so that it reuses what the test
/// build compiled.
pub fn example_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    // The example needs `mcp` whatever the test was built with.
    let features = if cfg!(feature = "postgres") { "mcp,postgres" } else { "mcp" };
    BINARY.get_or_init(|| crate::examples::build_example("mcp_server", features)).clone()
}

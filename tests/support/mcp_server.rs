//! The `mcp_server` example's executable, for the tests that run it as a
//! process of its own (`mcp_interop`, `mcp_processes`).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Builds the example (once per test process) and returns its path. It is
/// built with the features this test was, so that it reuses what the test
/// build compiled.
pub fn example_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    let features = if cfg!(feature = "postgres") { "mcp,postgres" } else { "mcp" };
    BINARY
        .get_or_init(|| {
            let output = Command::new(env!("CARGO"))
                .args(["build", "--example", "mcp_server", "--features", features, "--message-format=json"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .stderr(Stdio::inherit())
                .output()
                .expect("cargo runs");
            assert!(output.status.success(), "`cargo build --example mcp_server --features {features}` failed");
            String::from_utf8_lossy(&output.stdout)
                .lines()
                .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
                .filter(|message| message["target"]["name"] == "mcp_server")
                .find_map(|message| message["executable"].as_str().map(PathBuf::from))
                .expect("cargo reports the example's executable")
        })
        .clone()
}

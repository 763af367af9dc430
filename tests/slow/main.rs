//! The root package's slow tests, as one test binary: each file of
//! `tests/slow/` is a module of it (`crash::`, `mcp_conformance::`, ...),
//! and the support files they share (`tests/support/`, the support desk's
//! shop) are compiled once for all of them.
//!
//! Their time goes mostly in waiting: on child processes of this binary
//! killed at a point of a call (`crash`, `mcp_crash`, `race`, `clocks`), on
//! the peers' own clients and suites (the Python SDKs, the MCP conformance
//! suite, Chromium), on example servers. Cargo runs test binaries one after
//! another; here they wait beside each other (8 tests at a time,
//! `.cargo/config.toml`), and `agreement`'s property tests compute
//! meanwhile. One file's tests, or one test:
//!
//! ```text
//! cargo test --features mcp,postgres,inbox --test slow crash::
//! cargo test --features postgres --test slow -- --exact race::two_processes_approving_one_call_record_one_decision_and_run_it_once
//! ```
//!
//! A child process is this binary run again with its test's whole path
//! (`--exact crash::crash_child`). The quick tests are the binary
//! `tests/quick/main.rs`; those that measure the process itself (its
//! memory, its `tracing` subscriber, timings to tens of milliseconds) stay
//! binaries of their own in `tests/`.

#[path = "../support/examples.rs"]
mod examples;
#[cfg(feature = "mcp")]
#[path = "../support/listening.rs"]
mod listening;
#[cfg(feature = "mcp")]
#[path = "../support/mcp_server.rs"]
mod mcp_server;
#[path = "../support/modules.rs"]
mod modules;
#[cfg(all(feature = "mcp", feature = "postgres"))]
#[path = "../support/restarting.rs"]
mod restarting;
#[path = "../../examples/common/shop.rs"]
#[allow(dead_code, reason = "the shop's tools these tests do not call")]
mod shop;

mod agreement;
mod clocks;
mod crash;
mod inbox_browser;
mod mcp_conformance;
mod mcp_crash;
mod mcp_instances;
mod mcp_interop;
mod mcp_processes;
mod provider_peers;
mod race;

/// Cargo finds only `tests/slow/main.rs` in this folder: a file left out
/// of the list above would never be compiled, and its tests never run.
#[test]
fn every_file_of_the_folder_is_a_module_of_the_binary() {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slow");
    let left_out = modules::undeclared(&folder, "main.rs");
    assert!(left_out.is_empty(), "files of {} that tests/slow/main.rs does not declare (`mod name;`): {left_out:?}", folder.display());
}

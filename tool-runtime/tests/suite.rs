//! The runtime's integration tests, as one test binary: each file of
//! `tests/` is a module of it (`durable::`, `mcp_current::`, ...), and
//! `tests/journal/db.rs` (a fresh database per test) and
//! `tests/mcp/support.rs` (a server over a store, and a client of it) are
//! compiled once for all of them.
//!
//! One binary, not one per file: the files instantiate the same generic
//! code of the runtime (its MCP server, its journal), which each binary
//! compiled and linked again; and their tests, most of which wait, run
//! beside each other's (`.cargo/config.toml`), where cargo runs binaries
//! one after another. One file's tests, or one test:
//!
//! ```text
//! cargo test -p tool-runtime --features mcp,postgres --test suite durable::
//! cargo test -p tool-runtime --features mcp,postgres --test suite -- --exact journal::postgres::expiry_rejects_what_waited_too_long
//! ```

#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[macro_use]
#[path = "journal/db.rs"]
mod db;
#[path = "../../tests/support/modules.rs"]
mod modules;
#[cfg(feature = "mcp")]
#[path = "mcp/support.rs"]
mod support;

mod decisions;
mod durable;
mod durable_questions;
mod identity;
mod inbox_http;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod inbox_journal;
mod journal;
mod mcp;
mod mcp_approvals;
mod mcp_composed;
mod mcp_content;
mod mcp_current;
mod mcp_http;
mod mcp_questions;
mod mcp_sessions;
mod permits;
mod question_costs;
mod questions;
mod retention;
mod upgrades;

/// Cargo no longer finds the files of `tests/` on its own
/// (`autotests = false`): a file left out of the list above would never be
/// compiled, and its tests never run.
#[test]
fn every_file_of_tests_is_a_module_of_the_suite() {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let left_out = modules::undeclared(&folder, "suite.rs");
    assert!(left_out.is_empty(), "files of {} that tests/suite.rs does not declare (`mod name;`): {left_out:?}", folder.display());
}

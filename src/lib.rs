//! The root package (`tool-workspace`, not published) holds the examples,
//! the integration tests and the benchmarks. Its library holds only
//! [`peers`], what the tests need from outside Rust (a Postgres server, a
//! Python package, Chromium), and one doc-test: README's test command
//! (`cargo test --workspace --features mcp,postgres,inbox`) runs it last,
//! after every other test, and it fails naming each test that skipped for
//! want of its peer ([`peers::none_skipped`]; the module's docs say how).
//!
//! ```
//! tool_workspace::peers::none_skipped();
//! ```

#[path = "../tests/support/peers.rs"]
pub mod peers;

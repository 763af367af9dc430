//! Compile-fail and compile-pass tests of `#[tool]` and `tools!`.
//!
//! Each file under `tests/ui/fail/` holds one mistake, with the compiler's
//! output beside it (`.stderr`); each file under `tests/ui/pass/` must
//! compile and run. Regenerate the snapshots with
//! `TRYBUILD=overwrite cargo test -p tool-macros --test compile` and read
//! every diff: the snapshots depend on the toolchain pinned in
//! `rust-toolchain.toml`.
//!
//! They live in the macro crate, which has no features, so trybuild builds
//! the cases against `tool-runtime` without features (the workspace's
//! dependency on it has none; the cases need no journal) whatever features
//! the workspace is tested with (`--features mcp,postgres` too):
//! rustc words an error by the paths it can see, and with `mcp` it would
//! see serde and schemars through rmcp's re-exports and `Option` beside
//! other crates' types of that name.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}

//! Compile-fail and compile-pass tests of `#[tool]` and `tools!`.
//!
//! Each file under `tests/ui/fail/` holds one mistake, with the compiler's
//! output beside it (`.stderr`); each file under `tests/ui/pass/` must
//! compile and run. Regenerate the snapshots with
//! `TRYBUILD=overwrite cargo test --test compile` and read every diff: the
//! snapshots depend on the toolchain pinned in `rust-toolchain.toml`.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}

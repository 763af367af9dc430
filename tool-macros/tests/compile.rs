//! Compile-fail tests of `#[tool]`, `#[tool_data]` and `tools!`, and
//! README's example built as a crate of its own.
//!
//! Each file under `tests/ui/fail/` holds one mistake, with the compiler's
//! output beside it (`.stderr`). Regenerate the snapshots with
//! `TRYBUILD=overwrite cargo test -p tool-macros --test compile` and read
//! every diff: the snapshots depend on the toolchain pinned in
//! `rust-toolchain.toml`.
//!
//! The compile-pass cases (`tests/ui/pass/`) are not trybuild's: they are
//! modules of the test binary `tests/pass.rs`. With no pass case, trybuild
//! only checks (`cargo check`) its dependencies and the cases, all cases in
//! one command; a single pass case would make it build them with code, and
//! each case in a cargo command of its own, one after another.
//!
//! They live in the macro crate, which has no features, so trybuild builds
//! the cases against `tool-runtime` without features (the workspace's
//! dependency on it has none; the cases need no journal) whatever features
//! the workspace is tested with (`--features mcp,postgres` too):
//! rustc words an error by the paths it can see, and with `mcp` it would
//! see serde and schemars through rmcp's re-exports and `Option` beside
//! other crates' types of that name.

use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
}

/// README says users depend on `tool-runtime` alone. A trybuild case
/// cannot show it, since it builds against this crate's dev-dependencies,
/// serde and schemars among them; so README's first example is built and
/// run here as a crate of its own, outside the workspace, whose manifest
/// (below) names `tool-runtime` and tokio and nothing else.
///
/// It is built in trybuild's target directory, where trybuild only checks,
/// and for the platform trybuild names (`--target`, the host's) with
/// trybuild's environment (no `RUSTFLAGS`, no incremental builds): cargo
/// then gives trybuild's flags (`--cfg trybuild`, ...) only to the
/// target's crates, which a check and a build never share, and builds the
/// proc macros and build scripts (syn, serde's derive, `tool-macros`, ...)
/// once for both. A copy of the workspace's `Cargo.lock` pins the same
/// versions, and nothing is fetched (`--offline`).
#[test]
fn readme_example_needs_only_tool_runtime_and_tokio() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the macro crate is in the workspace").to_owned();
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| workspace.join("target"), PathBuf::from);
    let project = target.join("tests").join("standalone");
    std::fs::create_dir_all(project.join("src")).unwrap();
    let runtime = workspace.join("tool-runtime");
    let manifest = format!(
        "[package]\nname = \"standalone\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [dependencies]\ntool-runtime = {{ path = {runtime:?}, default-features = false }}\n\
         tokio = {{ version = \"1\", features = [\"rt\", \"macros\"] }}\n\n\
         # Not a member of the repository's workspace.\n[workspace]\n"
    );
    assert!(!manifest.contains("serde") && !manifest.contains("schemars"), "{manifest}");
    std::fs::write(project.join("Cargo.toml"), manifest).unwrap();
    std::fs::copy(workspace.join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    let readme = std::fs::read_to_string(workspace.join("README.md")).unwrap();
    std::fs::write(project.join("src").join("main.rs"), first_rust_block(&readme)).unwrap();

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let ran = Command::new(cargo)
        .args(["run", "--quiet", "--offline", "--target", &host_tuple(), "--manifest-path"])
        .arg(project.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target.join("tests").join("trybuild"))
        .env("CARGO_INCREMENTAL", "0")
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "README's example did not build or run with only tool-runtime and tokio:\n{stderr}");
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert_eq!(stdout.trim(), r#"{"id":"A-4711","status":"shipped","items":null}"#, "{stderr}");
}

/// The platform rustc builds for by default, which trybuild names with
/// `--target`.
fn host_tuple() -> String {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let printed = Command::new(rustc).args(["--print", "host-tuple"]).output().unwrap();
    assert!(printed.status.success(), "{}", String::from_utf8_lossy(&printed.stderr));
    String::from_utf8(printed.stdout).unwrap().trim().to_owned()
}

/// The first ```` ```rust ```` block of a Markdown text.
fn first_rust_block(markdown: &str) -> String {
    let start = markdown.find("```rust\n").expect("README has a Rust block") + "```rust\n".len();
    let end = start + markdown[start..].find("\n```").expect("the block is closed");
    markdown[start..end].to_owned()
}

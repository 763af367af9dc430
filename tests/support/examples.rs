//! An example's executable, built for a test that runs it as a process of
//! its own.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Builds the example `name` and returns its path. It is built by the
/// command that built the test that calls this: `cargo test --workspace
/// --no-run` with the features this test was built with, plus `needs`
/// (those the example requires), as README's test command (`cargo test
/// --workspace --features mcp,postgres,inbox`) builds every test and
/// example. Cargo then resolves every crate's features as it did for that
/// build (the dev-dependencies of every package included) and finds all of
/// it built; `cargo build --example` would select fewer targets, resolve
/// other features (of syn, serde_derive...) and compile them again, inside
/// the test, while it runs.
pub fn build_example(name: &str, needs: &[&str]) -> PathBuf {
    let built_with = [("mcp", cfg!(feature = "mcp")), ("postgres", cfg!(feature = "postgres")), ("inbox", cfg!(feature = "inbox"))];
    let mut features: Vec<&str> = built_with.iter().filter(|(_, on)| *on).map(|(feature, _)| *feature).collect();
    for feature in needs {
        if !features.contains(feature) {
            features.push(feature);
        }
    }
    let features = features.join(",");
    let mut cargo = Command::new(env!("CARGO"));
    cargo.args(["test", "--workspace", "--no-run", "--message-format=json"]);
    if !features.is_empty() {
        cargo.args(["--features", &features]);
    }
    let output = cargo.current_dir(env!("CARGO_MANIFEST_DIR")).stderr(Stdio::inherit()).output().expect("cargo runs");
    assert!(output.status.success(), "`cargo test --workspace --no-run --features {features}` failed (building the example {name})");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["target"]["name"] == name && message["target"]["kind"][0] == "example")
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .expect("cargo reports the example's executable")
}

//! An example's executable, built for a test that runs it as a process of
//! its own.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Builds the example `name` with `features` and returns its path.
pub fn build_example(name: &str, features: &str) -> PathBuf {
    let output = Command::new(env!("CARGO"))
        .args(["build", "--example", name, "--features", features, "--message-format=json"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::inherit())
        .output()
        .expect("cargo runs");
    assert!(output.status.success(), "`cargo build --example {name} --features {features}` failed");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["target"]["name"] == name)
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .expect("cargo reports the example's executable")
}

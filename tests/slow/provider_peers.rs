//! Each provider's export, provider-defined tools included, against that
//! provider's own SDK types: google-genai's pydantic models (which forbid
//! unknown fields), openai's models (strict mode, no unknown key kept) and
//! anthropic's TypedDicts (walked field by field). The export is the
//! `catalog` example's output (`--builtins`), read by the scripts in
//! `tests/peers/`.
//!
//! ```text
//! python3 -m pip install 'google-genai==3.6.1' 'openai==3.57.0' 'anthropic==2.10.0'
//! cargo test --test slow provider_peers::
//! ```
//!
//! Without a provider's Python package its test is skipped with a message,
//! except in CI (`CI` set), where it fails.

use crate::examples;

use std::process::{Command, Stdio};
use std::sync::OnceLock;
use tool_workspace::peers;

/// The `catalog` example, built once per test process.
fn catalog() -> &'static std::path::Path {
    static BINARY: OnceLock<std::path::PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| examples::build_example("catalog", &[]))
}

/// Pipes the catalog of `provider` into the peer script `script`, which
/// must find `builtins` provider-defined tools; returns what it printed.
fn check(provider: &str, script: &str, builtins: usize) -> String {
    let export = Command::new(catalog()).args(["--provider", provider, "--builtins"]).stderr(Stdio::null()).output().expect("catalog runs");
    assert!(export.status.success(), "catalog --provider {provider} failed");
    let path = format!("{}/tests/peers/{script}", env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new("python3")
        .args([path.as_str(), &builtins.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &export.stdout).unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{script} refused the {provider} export: {stderr}\n{}", String::from_utf8_lossy(&export.stdout));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn the_gemini_export_is_valid_google_genai_declarations() {
    if peers::python_module("from google import genai", "google-genai==3.6.1") {
        check("gemini", "gemini_declarations.py", 2);
    }
}

#[test]
fn the_openai_responses_export_is_valid_openai_tools() {
    if peers::python_module("import openai", "openai==3.57.0") {
        check("openai-responses", "openai_tools.py", 3);
    }
}

#[test]
fn the_anthropic_export_is_valid_anthropic_tool_params() {
    if peers::python_module("import anthropic", "anthropic==2.10.0") {
        check("anthropic", "anthropic_tools.py", 3);
    }
}

//! Gemini tool results with content blocks against the Gemini SDK's own
//! types: `tests/peers/gemini_results.py` reads `gemini::results` with
//! `google.genai.types.Content` (unknown fields refused, `inlineData` bytes
//! read as base64).
//!
//! ```text
//! python3 -m pip install 'google-genai==3.6.1'
//! cargo test --test quick gemini_results::
//! ```
//!
//! Without the Python package the test is skipped with a message, except
//! in CI (`CI` set), where it fails.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use tool_workspace::peers;

use serde_json::Value;
use tool_runtime::Block;
use tool_runtime::prelude::*;
use tool_runtime::providers::gemini;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/gemini_results.py");

/// A chart, its data as a PDF, and a clip Gemini does not take.
#[tool]
async fn report() -> Vec<Block> {
    vec![
        Block::text("The quarter."),
        Block::image(vec![0x89, b'P', b'N', b'G', 0, 1, 2], "image/png"),
        Block::resource_blob("file:///q1.pdf", "application/pdf", b"%PDF-1.7".to_vec()),
        Block::audio(vec![0; 5], "audio/wav"),
    ]
}

/// Echo.
#[tool]
async fn echo(text: String) -> String {
    text
}

#[tokio::test]
async fn gemini_function_responses_with_parts_are_valid_sdk_contents() {
    if !peers::python_module("from google import genai", "google-genai==3.6.1") {
        return;
    }
    let registry = Registry::<()>::builder().tools(tools![report, echo]).build().unwrap();
    let app = Arc::new(());
    let blocks = registry.call(&app, "report", "{}").call_id("fc_1").await.into_result().unwrap();
    let plain = registry.call(&app, "echo", r#"{"text": "hi"}"#).call_id("fc_2").await.into_result().unwrap();
    let contents = Value::Array(gemini::results(&[blocks, plain]));

    let mut child =
        Command::new("python3").arg(SCRIPT).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("python3 runs");
    child.stdin.take().unwrap().write_all(contents.to_string().as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "the SDK refused the results: {}\n{contents}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(stdout, "report image/png:7 application/pdf:8\necho\nok\n", "the SDK read back each part's bytes");
}

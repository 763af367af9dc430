use std::sync::Arc;

use tool_runtime::prelude::*;

// `ends_run`'s predicate takes the output as the tool returns it.
#[allow(clippy::ptr_arg)]
fn is_final(input: &answer, output: &String) -> bool {
    input.done && !output.is_empty()
}

/// Give an answer.
#[tool(ends_run = is_final)]
async fn answer(text: String, done: bool) -> String {
    let _ = done;
    text
}

/// Stop the run.
#[tool(ends_run)]
async fn stop() -> String {
    "stopped".into()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::<()>::builder().tools(tools![answer, stop]).build().unwrap();
    let app = Arc::new(());
    assert!(registry.invoke(&app, "answer", r#"{"text": "42", "done": true}"#).await.ends_run);
    assert!(!registry.invoke(&app, "answer", r#"{"text": "42", "done": false}"#).await.ends_run);
    assert!(registry.invoke(&app, "stop", "{}").await.ends_run);
}

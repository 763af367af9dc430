use std::io;
use std::sync::Arc;

use tool_runtime::prelude::*;

/// Plain return.
#[tool]
async fn plain() -> u32 {
    1
}

/// Unit return.
#[tool]
async fn nothing() {}

/// A result with a tool error.
#[tool]
async fn checked(fail: bool) -> Result<String, ToolError> {
    if fail {
        Err(ToolError::not_found("NOPE", "Nothing here."))
    } else {
        Ok("fine".into())
    }
}

/// An io result.
#[tool]
async fn read_disk(fail: bool) -> io::Result<String> {
    if fail { Err(io::Error::other("disk on fire")) } else { Ok("bytes".into()) }
}

/// A result with a boxed error.
#[tool]
async fn boxed() -> Result<u8, Box<dyn std::error::Error + Send + Sync>> {
    Ok(2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::<()>::builder()
        .tools(tools![plain, nothing, checked, read_disk, boxed])
        .build()
        .unwrap();
    let app = Arc::new(());
    assert_eq!(registry.invoke(&app, "plain", "{}").await.text, "1");
    assert!(!registry.invoke(&app, "nothing", "{}").await.is_error());
    assert_eq!(registry.invoke(&app, "checked", r#"{"fail": false}"#).await.text, "fine");
    let err = registry.invoke(&app, "checked", r#"{"fail": true}"#).await;
    assert_eq!(err.error_code.as_deref(), Some("NOPE"));
    assert_eq!(registry.invoke(&app, "read_disk", r#"{"fail": false}"#).await.text, "bytes");
    let err = registry.invoke(&app, "read_disk", r#"{"fail": true}"#).await;
    assert!(err.is_error() && !err.text.contains("disk on fire"), "{}", err.text);
    assert_eq!(registry.invoke(&app, "boxed", "{}").await.text, "2");
    assert!(registry.definition("checked").unwrap().output_schema.is_some());
}

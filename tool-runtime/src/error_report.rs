//! What the developer learns about a failed call: everything the model
//! must not see.

use std::sync::Arc;

use serde_json::Value;

/// The hook given to `RegistryBuilder::on_tool_error`.
pub(crate) type ErrorHook = Arc<dyn Fn(&ErrorReport) + Send + Sync>;

/// The full detail of one failed call, for logs and alerting.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ErrorReport {
    /// The tool.
    pub tool: String,
    /// The call id.
    pub call_id: String,
    /// What failed.
    pub kind: ErrorKind,
    /// The code stamped on the result the model read.
    pub code: String,
    /// The error's own text (`Display`), or the panic message.
    pub error: String,
    /// The developer-only message of a `ToolError`.
    pub message: Option<String>,
    /// The developer-only data of a `ToolError`.
    pub data: Option<Value>,
}

impl ErrorReport {
    /// A report without a `ToolError`'s developer-only fields.
    pub(crate) fn new(
        tool: impl Into<String>,
        call_id: impl Into<String>,
        kind: ErrorKind,
        code: impl Into<String>,
        error: impl Into<String>,
    ) -> Self {
        ErrorReport {
            tool: tool.into(),
            call_id: call_id.into(),
            kind,
            code: code.into(),
            error: error.into(),
            message: None,
            data: None,
        }
    }
}

/// The class of a reported failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The tool returned a `ToolError`.
    Tool,
    /// The tool returned another error (a bug or an outage).
    Internal,
    /// The tool panicked.
    Panic,
    /// The tool did not finish within its timeout.
    Timeout,
    /// A policy predicate panicked or returned an error; the call was denied.
    Policy,
    /// A visibility predicate panicked; the tool was hidden.
    Visibility,
}

impl ErrorKind {
    /// A short lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Tool => "tool",
            ErrorKind::Internal => "internal",
            ErrorKind::Panic => "panic",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Policy => "policy",
            ErrorKind::Visibility => "visibility",
        }
    }
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "panic with a non-text payload".to_owned()
    }
}

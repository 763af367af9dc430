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
    /// The tool's output did not match its output schema, or a typed
    /// failure's value its failure schema
    /// ([`RegistryBuilder::validate_outputs`](crate::RegistryBuilder::validate_outputs)),
    /// or a journaled result replayed in a durable run did not.
    Output,
    /// In a durable run, the journal could not be read or written: a call
    /// that could not be recorded as started was not run.
    Journal,
    /// In a durable run, a call of a tool that is not idempotent was found
    /// started but never finished (its process died mid-call): it was not
    /// run again, since its effect may have happened. Check, then decide.
    OutcomeUnknown,
    /// A scope did not apply ([`Run::select`](crate::Run::select)): the
    /// scope value did not fit the scope type, the scope function panicked,
    /// or its rebuilt schema would accept more than the tool's own. The
    /// tool kept its own definition for the turn.
    Scope,
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
            ErrorKind::Output => "output",
            ErrorKind::Journal => "journal",
            ErrorKind::OutcomeUnknown => "outcome_unknown",
            ErrorKind::Scope => "scope",
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

/// An error and its sources, for the developer.
pub(crate) fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Text the model chose (a tool name, a call id, an error that may quote
/// its input), written into a log field with its control characters
/// escaped: a newline in a tool name must not forge a log line.
pub(crate) struct Escaped<'a>(pub(crate) &'a str);

impl std::fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for c in self.0.chars() {
            if c.is_control() {
                write!(f, "{}", c.escape_default())?;
            } else {
                std::fmt::Write::write_char(f, c)?;
            }
        }
        Ok(())
    }
}

impl<App> crate::registry::Registry<App> {
    /// Full detail to `tracing` and the hook; never to the model.
    pub(crate) fn report(&self, report: ErrorReport) {
        tracing::error!(
            tool = %report.tool,
            call_id = %Escaped(&report.call_id),
            kind = report.kind.as_str(),
            code = %report.code,
            error = %Escaped(&report.error),
            message = report.message.as_deref(),
            "tool call failed"
        );
        if let Some(hook) = &self.inner.config.on_tool_error {
            hook(&report);
        }
    }
}

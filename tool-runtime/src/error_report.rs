//! What the developer learns about a failed call: everything the model
//! must not see; and [`Escaped`], how text that a model, a client or a
//! tool's input chose is written into a log field.

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
        ErrorReport { tool: tool.into(), call_id: call_id.into(), kind, code: code.into(), error: error.into(), message: None, data: None }
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
    /// In a durable run, the journal holds the call's effect for another
    /// call: its id (or its `idempotency_key`) was journaled with another
    /// tool, or its id with another input. The journaled result was not
    /// served and the call was not run; the report says what differed.
    CallMismatch,
    /// A scope did not apply ([`Run::select`](crate::Run::select)): the
    /// scope value did not fit the scope type, the scope function panicked,
    /// or its rebuilt schema would accept more than the tool's own. The
    /// tool kept its own definition for the turn.
    Scope,
    /// An approved call whose permit no longer matched it was not run: its
    /// tool's definition changed since it was parked, it carried other
    /// arguments than those approved, or it would run for another user
    /// ([`PermitMismatch`](crate::question::PermitMismatch)); the report
    /// says which.
    PermitMismatch,
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
            ErrorKind::CallMismatch => "call_mismatch",
            ErrorKind::Scope => "scope",
            ErrorKind::PermitMismatch => "permit_mismatch",
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

/// A value written into a log field with its control characters escaped:
/// a newline in a tool name, a call id or an error that quotes its input
/// must not forge a log line, nor a terminal escape rewrite one.
///
/// Every `tracing` field whose text can come from a model, a client or a
/// tool's input is written through it: `%Escaped(&text)` for its `Display`,
/// `?Escaped(&value)` for its `Debug`. Escaped are the control characters
/// (`char::is_control`: `\n`, `\r`, `\u{1b}`, ...), the line and paragraph
/// separators (U+2028, U+2029) and the bidirectional overrides and isolates
/// (U+202A to U+202E, U+2066 to U+2069), each as `char::escape_default`
/// writes it; everything else is kept. `tests/quick/log_fields.rs` fails for a
/// field written otherwise, unless its type cannot carry text.
pub(crate) struct Escaped<'a, T: ?Sized>(pub(crate) &'a T);

impl<'a> Escaped<'a, str> {
    /// An optional text as an optional field: absent when there is none.
    pub(crate) fn optional(text: Option<&'a str>) -> Option<tracing::field::DisplayValue<Escaped<'a, str>>> {
        text.map(|text| tracing::field::display(Escaped(text)))
    }
}

impl<T: std::fmt::Display + ?Sized> std::fmt::Display for Escaped<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::write(&mut Escaping(f), format_args!("{}", self.0))
    }
}

impl<T: std::fmt::Debug + ?Sized> std::fmt::Debug for Escaped<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::write(&mut Escaping(f), format_args!("{:?}", self.0))
    }
}

/// Writes through to `0`, escaping what [`Escaped`] escapes.
struct Escaping<'f, 'b>(&'f mut std::fmt::Formatter<'b>);

impl std::fmt::Write for Escaping<'_, '_> {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        let mut rest = text;
        while let Some((at, c)) = rest.char_indices().find(|&(_, c)| breaks_a_line(c)) {
            self.0.write_str(&rest[..at])?;
            write!(self.0, "{}", c.escape_default())?;
            rest = &rest[at + c.len_utf8()..];
        }
        self.0.write_str(rest)
    }
}

/// Whether `c`, written as it is, could end a log line or change how one
/// reads.
fn breaks_a_line(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::Escaped;

    #[test]
    fn escaped_keeps_text_on_one_line_and_loses_nothing() {
        let forged = "a\n2026-12-01 INFO admin\r\u{1b}[2K\u{2028}\u{202e}é 🦀\\n";
        assert_eq!(Escaped(forged).to_string(), "a\\n2026-12-01 INFO admin\\r\\u{1b}[2K\\u{2028}\\u{202e}é 🦀\\n");
        assert_eq!(Escaped("plain text").to_string(), "plain text");
    }

    #[test]
    fn escaped_wraps_any_display_or_debug_value() {
        let error = std::io::Error::other("disk\nfull");
        assert_eq!(Escaped(&error).to_string(), "disk\\nfull");
        /// A `Debug` that writes its text as it is.
        struct Raw;
        impl std::fmt::Debug for Raw {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("origin\nINFO forged")
            }
        }
        assert_eq!(format!("{:?}", Escaped(&Raw)), "origin\\nINFO forged");
    }
}

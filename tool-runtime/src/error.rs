//! The error a tool returns when the model should read what went wrong.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

/// A failure the model can act on.
///
/// Return it from a tool (`Result<T, ToolError>`) when the model should learn
/// what went wrong and how to proceed. The model reads exactly one line,
/// built by [`ToolError::model_line`]:
///
/// ```text
/// code: ORDER_NOT_FOUND, status: 404, userMessage: No order A-1; ask for the number on the invoice.
/// ```
///
/// followed by `Do not retry this call.` when [`can_retry`](Self::can_retry)
/// is false. [`message`](Self::message) and [`data`](Self::data) are for the
/// developer only: they go to `tracing` and to the registry's
/// `on_tool_error` hook, never to the model. A
/// [`structured`](Self::structured) value, by contrast, is for the host: it
/// reaches [`CallResult::structured`](crate::CallResult::structured) and MCP's
/// `structuredContent`.
///
/// Any error that is *not* a `ToolError` (an `io::Error`, an HTTP client's
/// error, a panic) is treated as a bug or an outage: the model reads a
/// generic status-500 line that says its input was not the cause.
///
/// ```
/// use tool_runtime::ToolError;
///
/// let err = ToolError::not_found("ORDER_NOT_FOUND", "No order A-1; ask for the number on the invoice.")
///     .with_message("orders table has no row for A-1");
/// assert_eq!(
///     err.model_line(),
///     "code: ORDER_NOT_FOUND, status: 404, userMessage: No order A-1; ask for the number on the invoice."
/// );
/// ```
#[derive(Clone, PartialEq)]
pub struct ToolError {
    status: u16,
    code: Cow<'static, str>,
    user_message: Cow<'static, str>,
    can_retry: bool,
    message: Option<String>,
    data: Option<Value>,
    structured: Option<Box<Value>>,
}

/// The code stamped on results that failed for a reason the model did not cause.
pub const INTERNAL_ERROR_CODE: &str = "TOOL_INTERNAL_ERROR";

impl ToolError {
    /// A tool error with an HTTP-like `status` class, a `code` a user can quote
    /// to support, and a `user_message` that is safe to show and says how to
    /// proceed. Retrying is allowed unless [`no_retry`](Self::no_retry) is called.
    pub fn new(status: u16, code: impl Into<Cow<'static, str>>, user_message: impl Into<Cow<'static, str>>) -> Self {
        ToolError { status, code: code.into(), user_message: user_message.into(), can_retry: true, message: None, data: None, structured: None }
    }

    /// Status 400: the input is wrong in a way the schema could not express.
    pub fn bad_request(code: impl Into<Cow<'static, str>>, user_message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(400, code, user_message)
    }

    /// Status 403: the caller may not do this.
    pub fn forbidden(code: impl Into<Cow<'static, str>>, user_message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(403, code, user_message).no_retry()
    }

    /// Status 404: what the input names does not exist.
    pub fn not_found(code: impl Into<Cow<'static, str>>, user_message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(404, code, user_message)
    }

    /// Status 409: the request conflicts with the current state.
    pub fn conflict(code: impl Into<Cow<'static, str>>, user_message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(409, code, user_message)
    }

    /// Status 429: too many calls; retry later.
    pub fn rate_limited(code: impl Into<Cow<'static, str>>, user_message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(429, code, user_message)
    }

    /// Status 503: a dependency is unavailable.
    pub fn unavailable(code: impl Into<Cow<'static, str>>, user_message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(503, code, user_message)
    }

    /// Marks the failure as one that will repeat with the same input: the
    /// model reads `Do not retry this call.`
    pub fn no_retry(mut self) -> Self {
        self.can_retry = false;
        self
    }

    /// Sets whether retrying the same call can succeed.
    pub fn with_retry(mut self, can_retry: bool) -> Self {
        self.can_retry = can_retry;
        self
    }

    /// A message for the developer only (logs and `on_tool_error`).
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// Structured data for the developer only (logs and `on_tool_error`).
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// A structured value of the failure for the host: it reaches
    /// [`CallResult::structured`](crate::CallResult::structured) and, over
    /// MCP, the result's `structuredContent` (beside `isError: true`; MCP
    /// sends it only when it is a JSON object). Unlike [`data`](Self::data)
    /// it is not developer-only: an MCP client may show it to the model, so
    /// put nothing in it the user may not see. The model's own text stays
    /// the one line of [`model_line`](Self::model_line).
    ///
    /// A tool written `-> Result<T, E>` whose `E` is `Serialize + JsonSchema`
    /// and converts into `ToolError` sets it itself, to the serialised `E`
    /// (a typed failure), and advertises `E`'s schema as its
    /// [`failure_schema`](crate::ToolDefinition::failure_schema).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_runtime::ToolError;
    ///
    /// let err = ToolError::conflict("OUT_OF_STOCK", "Only 2 left; ask for at most 2.")
    ///     .with_structured(json!({"kind": "out_of_stock", "available": 2}));
    /// assert_eq!(err.structured(), Some(&json!({"kind": "out_of_stock", "available": 2})));
    /// assert!(!err.model_line().contains("available"));
    /// ```
    pub fn with_structured(mut self, value: Value) -> Self {
        self.structured = Some(Box::new(value));
        self
    }

    /// The HTTP-like class of the failure.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The locator a user can quote to support; stamped on the result.
    pub fn code(&self) -> &str {
        &self.code
    }

    /// The text the model (and the end user) may read.
    pub fn user_message(&self) -> &str {
        &self.user_message
    }

    /// Whether calling again with the same input can succeed.
    pub fn can_retry(&self) -> bool {
        self.can_retry
    }

    /// The developer-only message, if any.
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// The developer-only data, if any.
    pub fn data(&self) -> Option<&Value> {
        self.data.as_ref()
    }

    /// The structured value for the host, if any (see
    /// [`with_structured`](Self::with_structured)).
    pub fn structured(&self) -> Option<&Value> {
        self.structured.as_deref()
    }

    /// The one line the model reads for this error.
    ///
    /// It is one line whatever the message holds: control characters (a
    /// newline in an order number the model sent and the tool echoed, say)
    /// are written as escapes (`\n`).
    ///
    /// ```
    /// use tool_runtime::ToolError;
    ///
    /// let err = ToolError::not_found("NO_ORDER", "There is no order A-1\nB.");
    /// assert_eq!(err.model_line(), "code: NO_ORDER, status: 404, userMessage: There is no order A-1\\nB.");
    /// ```
    pub fn model_line(&self) -> String {
        let mut line = String::with_capacity(40 + self.code.len() + self.user_message.len());
        line.push_str("code: ");
        push_one_line(&mut line, &self.code);
        line.push_str(", status: ");
        line.push_str(&self.status.to_string());
        line.push_str(", userMessage: ");
        push_one_line(&mut line, &self.user_message);
        if !self.can_retry {
            line.push_str(" Do not retry this call.");
        }
        line
    }

    /// The error the model reads for a bug or an outage: status 500, the
    /// framework's code, and a message that says the input was not the cause.
    pub fn internal() -> Self {
        ToolError::new(
            500,
            INTERNAL_ERROR_CODE,
            "The tool failed because of an internal error, not because of your input. \
             Continue without this tool's result or try again later.",
        )
    }
}

/// Appends `text` with its control characters escaped, so that it stays on
/// one line (found by the fuzz target: an unknown tool name with a newline).
fn push_one_line(line: &mut String, text: &str) {
    for c in text.chars() {
        if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
            line.extend(c.escape_default());
        } else {
            line.push(c);
        }
    }
}

/// Shows the status, code and user message; never the developer-only fields,
/// so that formatting a `ToolError` into a model-facing text cannot leak them.
impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.model_line())
    }
}

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolError")
            .field("status", &self.status)
            .field("code", &self.code)
            .field("user_message", &self.user_message)
            .field("can_retry", &self.can_retry)
            .field("message", &self.message)
            .field("data", &self.data)
            .field("structured", &self.structured)
            .finish()
    }
}

impl std::error::Error for ToolError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_line_has_the_specified_format() {
        let err = ToolError::new(409, "ORDER_SHIPPED", "The order has shipped; offer a return instead.");
        assert_eq!(err.model_line(), "code: ORDER_SHIPPED, status: 409, userMessage: The order has shipped; offer a return instead.");
    }

    #[test]
    fn model_line_says_do_not_retry_when_retrying_cannot_help() {
        let err = ToolError::forbidden("NOT_OWNER", "This order belongs to another customer.");
        assert!(err.model_line().ends_with("another customer. Do not retry this call."));
    }

    #[test]
    fn the_model_line_is_one_line_whatever_the_message_holds() {
        let err = ToolError::not_found("X\r\nY", "No order \"A\n1\"\t\u{1b}[31m; ask again.");
        let line = err.model_line();
        assert!(!line.chars().any(char::is_control), "{line:?}");
        assert_eq!(line, "code: X\\r\\nY, status: 404, userMessage: No order \"A\\n1\"\\t\\u{1b}[31m; ask again.");
    }

    #[test]
    fn developer_fields_never_reach_the_model_line_or_display() {
        let err = ToolError::not_found("X", "Nothing here.")
            .with_message("SELECT * FROM secret_table")
            .with_data(serde_json::json!({"host": "db-internal-7"}));
        let shown = format!("{err} {}", err.model_line());
        assert!(!shown.contains("secret_table"));
        assert!(!shown.contains("db-internal-7"));
    }

    #[test]
    fn a_structured_value_stays_out_of_the_model_line() {
        let err = ToolError::conflict("OUT_OF_STOCK", "Only 2 left.").with_structured(serde_json::json!({"available": 2}));
        assert_eq!(err.model_line(), "code: OUT_OF_STOCK, status: 409, userMessage: Only 2 left.");
        assert_eq!(err.to_string(), err.model_line());
        assert_eq!(err.structured(), Some(&serde_json::json!({"available": 2})));
        assert_eq!(ToolError::internal().structured(), None);
    }
}

//! What a human reads when a call asks for approval, at every revision,
//! and what the model reads when no one can be asked.

use std::collections::BTreeMap;

use rmcp::model::{ElicitRequestParams, ElicitationSchema};

use crate::call::PendingCall;
use crate::error::ToolError;
use crate::tool::{ParsedFrom, ToolDefinition};

/// What the human reads when asked to approve a call: the tool and its
/// arguments, pretty-printed. Written straight from the call's copy of the
/// arguments (no second value of them) into a text no larger than it is:
/// it holds them for as long as the call waits.
pub(crate) fn approval_message<App>(pending: &PendingCall<App>, def: Option<&ToolDefinition>) -> String {
    let tool = match def.and_then(|def| def.title.as_deref()) {
        Some(title) => format!("{title} (`{}`)", pending.tool()),
        None => format!("`{}`", pending.tool()),
    };
    let mut text = format!("The assistant wants to call {tool} with these arguments:\n\n").into_bytes();
    let written = match &pending.0.args {
        ParsedFrom::Value(arguments) => serde_json::to_writer_pretty(&mut text, &**arguments),
        ParsedFrom::Text(_) => serde_json::to_writer_pretty(&mut text, &pending.arguments()),
    };
    // Serialising a JSON value to memory cannot fail.
    debug_assert!(written.is_ok(), "{written:?}");
    text.extend_from_slice(b"\n\nThis call needs your approval. Accept to run it; decline to refuse it.");
    text.shrink_to_fit();
    String::from_utf8(text).expect("JSON and the text around it are UTF-8")
}

/// The form an approval asks the client to show: `message`, and nothing to
/// fill in (accepting or declining is the answer).
pub(crate) fn elicitation(message: String) -> ElicitRequestParams {
    ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: ElicitationSchema::new(BTreeMap::new()) }
}

/// The line the model reads when a call needs approval and the client
/// cannot ask a human.
pub(crate) fn approval_unavailable() -> ToolError {
    ToolError::forbidden(
        "APPROVAL_UNAVAILABLE",
        "This call needs a human's approval, which this MCP client cannot give (it does not support \
         elicitation), so it was not run. Tell the user it needs approval and cannot be done here.",
    )
    .no_retry()
}

/// The line the model reads when its tool asked the client something the
/// client did not declare it can answer (`capability`: `elicitation`,
/// `sampling` or `roots`).
pub(crate) fn question_unavailable(capability: &str) -> ToolError {
    ToolError::forbidden(
        "QUESTION_UNAVAILABLE",
        format!(
            "This tool needs to ask the client through MCP `{capability}`, which this MCP client did not declare in its \
             capabilities, so the call stopped there and did nothing more. Tell the user it cannot be done from this client."
        ),
    )
    .no_retry()
}

/// The line the model reads when the client could not answer its tool's
/// question (`why`: the client's error, or why its answer does not fit).
pub(crate) fn question_unanswered(why: &str) -> ToolError {
    ToolError::unavailable(
        "QUESTION_UNANSWERED",
        format!("This tool asked the client a question, which it did not answer ({why}), so the call stopped there. Tell the user it was not done."),
    )
    .no_retry()
}

//! The result of one call, and the lines the model reads for each way a
//! call can end.

use serde_json::Value;
use smol_str::SmolStr;

use crate::error::ToolError;

/// How a call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultKind {
    /// The tool ran and returned.
    Success,
    /// The tool returned a `ToolError`.
    ToolError,
    /// The arguments were refused before the tool ran (size, depth, JSON,
    /// schema, or deserialisation).
    InvalidArguments,
    /// No tool of that name is offered.
    UnknownTool,
    /// The policy refused the call.
    Denied,
    /// A human rejected the call.
    Rejected,
    /// The call waits for a human; it has not run.
    PendingApproval,
    /// The tool did not finish within its timeout.
    TimedOut,
    /// The caller cancelled the call.
    Cancelled,
    /// A bug or an outage: another error, a panic, an unserialisable output.
    Internal,
    /// The call of an external tool was validated and allowed, and handed
    /// to the host to run: [`CallResult::external_call`] has its input, and
    /// the host supplies the result through the run that handed it
    /// ([`ExternalCalls::complete`](crate::ExternalCalls::complete), [`ExternalCalls::fail`](crate::ExternalCalls::fail)).
    External,
    /// The tool failed, and its failure is the host's to handle
    /// (`failure_mode = "error"`, [`FailureMode::Error`](crate::FailureMode::Error)):
    /// the model reads the generic status-500 line, while `error_code` and
    /// `status` are the failure's own, and the failure went to
    /// `on_tool_error` in full.
    HostError,
}

impl ResultKind {
    /// A short lowercase name for logs and transcripts.
    pub fn as_str(self) -> &'static str {
        match self {
            ResultKind::Success => "success",
            ResultKind::ToolError => "tool_error",
            ResultKind::InvalidArguments => "invalid_arguments",
            ResultKind::UnknownTool => "unknown_tool",
            ResultKind::Denied => "denied",
            ResultKind::Rejected => "rejected",
            ResultKind::PendingApproval => "pending_approval",
            ResultKind::TimedOut => "timed_out",
            ResultKind::Cancelled => "cancelled",
            ResultKind::Internal => "internal_error",
            ResultKind::External => "external",
            ResultKind::HostError => "host_error",
        }
    }

    /// The kind named by [`as_str`](Self::as_str), for what reads it back
    /// (the journal).
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn parse(name: &str) -> Option<Self> {
        const ALL: [ResultKind; 12] = [
            ResultKind::Success,
            ResultKind::ToolError,
            ResultKind::InvalidArguments,
            ResultKind::UnknownTool,
            ResultKind::Denied,
            ResultKind::Rejected,
            ResultKind::PendingApproval,
            ResultKind::TimedOut,
            ResultKind::Cancelled,
            ResultKind::Internal,
            ResultKind::External,
            ResultKind::HostError,
        ];
        ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

/// The result of one call: the text the model reads, and what the host
/// needs besides (structured output, error code, whether the run ends).
///
/// It is kept small, since every call returns one through several layers:
/// the tool name and the call id are [`SmolStr`]s (inline up to 23 bytes,
/// shared beyond; compare them with `==` against a `&str`, or read them as
/// `&str`), and the structured output is boxed.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CallResult {
    /// The tool that was called (as the model spelled it).
    pub tool: SmolStr,
    /// The call id.
    pub call_id: SmolStr,
    /// How the call ended.
    pub kind: ResultKind,
    /// Exactly what the model reads.
    pub text: String,
    /// The whole output of a success as JSON (for MCP `structuredContent`),
    /// kept whole even when `text` was cut. `None` for a string the model
    /// read whole: then `text` is the output.
    ///
    /// On a tool error ([`ResultKind::ToolError`]), the error's structured
    /// value ([`ToolError::with_structured`], set by a typed failure), which
    /// the model does not read: `text` is still the error's one line. `None`
    /// for every other failure.
    pub structured: Option<Box<Value>>,
    /// The error code stamped on a failed call: the code of the line the
    /// model read, except for a [`ResultKind::HostError`], where the model
    /// read the generic line and this is the failure's own code.
    pub error_code: Option<String>,
    /// The HTTP-like status of a failed call.
    pub status: Option<u16>,
    /// The content blocks of a success whose tool returned blocks
    /// ([`Block`](crate::Block)), text blocks cut at `max_output_chars`;
    /// empty otherwise. Then `text` is every block's
    /// [`describe`](crate::Block::describe) line, for what reads text only,
    /// and each dialect renders the blocks in its own shape where it can.
    ///
    /// (A boxed slice, not a `Vec`: every call returns a `CallResult`
    /// through several layers, and at 128 bytes it is moved without a
    /// `memcpy` call.)
    pub content: Box<[crate::content::Block]>,
    /// Whether the text was cut at `max_output_chars`.
    pub truncated: bool,
    /// Whether this successful call ends the run.
    pub ends_run: bool,
}

impl CallResult {
    /// `true` unless the tool ran and returned successfully (or, external,
    /// was handed to the host to run).
    pub fn is_error(&self) -> bool {
        !matches!(self.kind, ResultKind::Success | ResultKind::External)
    }

    /// The structured output of a success, or the structured value of a
    /// tool error, when there is one.
    pub fn structured(&self) -> Option<&Value> {
        self.structured.as_deref()
    }

    #[inline]
    pub(crate) fn success(tool: SmolStr, call_id: SmolStr, text: String, structured: Option<Box<Value>>, truncated: bool, ends_run: bool) -> Self {
        CallResult {
            tool,
            call_id,
            kind: ResultKind::Success,
            text,
            structured,
            error_code: None,
            status: None,
            content: Box::default(),
            truncated,
            ends_run,
        }
    }

    pub(crate) fn with_content(mut self, content: Vec<crate::content::Block>) -> Self {
        self.content = content.into_boxed_slice();
        self
    }

    /// What a call that needs approval reads when its run's memory could
    /// not record that it waits: it was not run, and no one can approve it.
    pub(crate) fn unrecorded(tool: SmolStr, call_id: SmolStr) -> Self {
        let error = lines::rejected(Some("The approval could not be recorded, so the call was not run."));
        CallResult::failure(tool, call_id, ResultKind::Rejected, &error)
    }

    pub(crate) fn failure(tool: SmolStr, call_id: SmolStr, kind: ResultKind, error: &ToolError) -> Self {
        CallResult {
            tool,
            call_id,
            kind,
            text: error.model_line(),
            structured: error.structured().cloned().map(Box::new),
            error_code: Some(error.code().to_owned()),
            status: Some(error.status()),
            content: Box::default(),
            truncated: false,
            ends_run: false,
        }
    }

    /// A tool's failure that is the host's (`failure_mode = "error"`): the
    /// model reads the generic line; the code and status are the failure's.
    pub(crate) fn host_error(tool: SmolStr, call_id: SmolStr, error: &ToolError) -> Self {
        let mut result = CallResult::failure(tool, call_id, ResultKind::HostError, &ToolError::internal());
        result.error_code = Some(error.code().to_owned());
        result.status = Some(error.status());
        result
    }

    /// For a result of kind [`ResultKind::External`], the call the host
    /// runs: its id, tool and validated input.
    pub fn external_call(&self) -> Option<ExternalCall> {
        (self.kind == ResultKind::External).then(|| ExternalCall {
            id: self.call_id.clone(),
            tool: self.tool.clone(),
            input: self.structured.as_deref().cloned().unwrap_or(Value::Null),
        })
    }

    /// A call handed to the host, carrying its input.
    pub(crate) fn handed(tool: SmolStr, call_id: SmolStr, input: Value) -> Self {
        let mut result = CallResult::success(tool, call_id, lines::handed(), Some(Box::new(input)), false, false);
        result.kind = ResultKind::External;
        result
    }
}

/// A call of an external tool, handed to the host to run: what
/// [`Run::external`](crate::Run::external) lists and [`CallResult::external_call`] reads.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ExternalCall {
    /// The call id, to complete it with.
    pub id: SmolStr,
    /// The tool.
    pub tool: SmolStr,
    /// The input, validated against the tool's schema (for a scoped tool,
    /// against the turn's) and allowed by its policy.
    pub input: Value,
}

/// The errors the runtime itself reports to the model, one constructor each.
pub(crate) mod lines {
    use std::time::Duration;

    use super::Deadline;
    use crate::error::ToolError;

    pub(crate) fn unknown_tool(name: &str, offered: &[&str]) -> ToolError {
        let name = shorten(name, 64);
        let available = if offered.is_empty() {
            "No tools are available in this step; answer without tools.".to_owned()
        } else {
            format!("Call one of: {}.", offered.join(", "))
        };
        ToolError::not_found("UNKNOWN_TOOL", format!("There is no tool named \"{name}\" in this step. {available}")).no_retry()
    }

    pub(crate) fn too_large(bytes: Option<usize>, max: usize) -> ToolError {
        let size = match bytes {
            Some(bytes) => format!("The arguments are {bytes} bytes; the limit is {max}."),
            None => format!("The arguments are over the limit of {max} bytes."),
        };
        ToolError::new(413, "ARGUMENTS_TOO_LARGE", format!("{size} Send less data in one call."))
    }

    pub(crate) fn too_many_values(max: usize) -> ToolError {
        ToolError::new(413, "ARGUMENTS_TOO_MANY_VALUES", format!("The arguments hold more than {max} values. Send fewer items in one call."))
    }

    pub(crate) fn too_deep(max: usize) -> ToolError {
        ToolError::bad_request("ARGUMENTS_TOO_DEEP", format!("The arguments are nested more than {max} levels deep. Send a flatter value."))
    }

    pub(crate) fn not_json(tool: &str, error: &serde_json::Error) -> ToolError {
        ToolError::bad_request("INVALID_ARGUMENTS", format!("The arguments of {tool} are not valid JSON ({error}). Send one JSON object."))
    }

    pub(crate) fn schema(tool: &str, problems: &[String]) -> ToolError {
        ToolError::bad_request(
            "INVALID_ARGUMENTS",
            format!("The arguments do not match the input schema of {tool}: {}. Fix these fields and call again.", problems.join("; ")),
        )
    }

    pub(crate) fn parse(tool: &str, error: &serde_json::Error) -> ToolError {
        ToolError::bad_request(
            "INVALID_ARGUMENTS",
            format!("The arguments of {tool} could not be read: {}. Fix them and call again.", shorten(&error.to_string(), 300)),
        )
    }

    pub(crate) fn denied(reason: Option<&str>) -> ToolError {
        ToolError::forbidden("POLICY_DENIED", reason.unwrap_or("This call is not allowed. Tell the user it cannot be done here.").to_owned())
    }

    pub(crate) fn rejected(text: Option<&str>) -> ToolError {
        ToolError::forbidden(
            "APPROVAL_REJECTED",
            text.unwrap_or("A human reviewed this call and rejected it. Tell the user it was not done.").to_owned(),
        )
    }

    pub(crate) fn approval_expired(ttl: Duration) -> ToolError {
        ToolError::forbidden(
            "APPROVAL_EXPIRED",
            format!(
                "No human approved this call within {}, so it was not run. Tell the user it was not done; \
                 call it again only if they still want it.",
                human_duration(ttl)
            ),
        )
        .no_retry()
    }

    /// What a call handed to the host reads until the host's result replaces it.
    pub(crate) fn handed() -> String {
        "The call was handed to the application, which runs it; its result comes later.".to_owned()
    }

    pub(crate) fn pending() -> ToolError {
        ToolError::new(202, "APPROVAL_PENDING", "This call waits for a human's approval and has not run yet.")
    }

    /// What a call reads while it waits for the answers to its tool's
    /// questions.
    pub(crate) fn question_pending() -> ToolError {
        ToolError::new(202, "ANSWER_PENDING", "This call asked a question and waits for its answer; it has not finished yet.")
    }

    /// A tool asked a question where no one can be asked: outside a run.
    pub(crate) fn cannot_ask() -> ToolError {
        ToolError::unavailable(
            "QUESTION_UNAVAILABLE",
            "This tool needs to ask a question, which cannot be asked where it was called, so it was not done. Tell the user it \
             could not be done here.",
        )
        .no_retry()
        .with_message("a tool asked a question outside a run: a call asks only in a Run (or a door that attaches an asking state)")
    }

    /// A tool asked another question than the one answered at its position.
    pub(crate) fn question_changed() -> ToolError {
        ToolError::conflict(
            "QUESTION_CHANGED",
            "The tool asked another question than the one that was answered, so the answer was not used and the call stopped. \
             Call the tool again.",
        )
    }

    /// A tool's question could not be recorded.
    pub(crate) fn question_not_recorded() -> ToolError {
        ToolError::unavailable(
            "QUESTION_NOT_RECORDED",
            "This tool needed to ask a question, which could not be recorded, so it stopped. Try again in a moment.",
        )
    }

    /// A call whose question no one answered in time.
    pub(crate) fn question_expired(ttl: Duration) -> ToolError {
        ToolError::forbidden(
            "QUESTION_EXPIRED",
            format!(
                "No one answered this call's question within {}, so it stopped there. Tell the user it was not done; call it \
                 again only if they still want it.",
                human_duration(ttl)
            ),
        )
        .no_retry()
    }

    /// An approved call whose permit no longer matches it (`why`).
    pub(crate) fn permit_mismatch(why: &str) -> ToolError {
        ToolError::conflict(
            "PERMIT_MISMATCH",
            format!("This call was approved, but {why}, so it was not run. Ask for approval again if it is still wanted."),
        )
        .no_retry()
    }

    /// The code of a call its tool's own timeout stopped.
    pub(crate) const TOOL_TIMEOUT: &str = "TOOL_TIMEOUT";

    pub(crate) fn timed_out(timeout: Duration) -> ToolError {
        ToolError::new(
            504,
            TOOL_TIMEOUT,
            format!("The tool did not finish within {}; it was stopped. Try again later or with a smaller request.", human_duration(timeout)),
        )
    }

    pub(crate) fn not_started(timeout: Duration) -> ToolError {
        ToolError::new(
            504,
            TOOL_TIMEOUT,
            format!("The call could not be started within {} (its journal was busy), so it was not run. Try again later.", human_duration(timeout)),
        )
    }

    pub(crate) fn duplicate_call_id(id: &str) -> ToolError {
        ToolError::bad_request(
            "DUPLICATE_CALL_ID",
            format!(
                "Another call in this conversation already has the id `{}`, so this one was not run. \
                 Give each call its own id.",
                shorten(id, 64)
            ),
        )
    }

    pub(crate) fn call_id_reused(id: &str) -> ToolError {
        ToolError::bad_request(
            "CALL_ID_REUSED",
            format!(
                "The id `{}` already belongs to another call in this run (another tool or other arguments), \
                 so this one was not run. Give each call its own id.",
                shorten(id, 64)
            ),
        )
    }

    pub(crate) fn key_reused() -> ToolError {
        ToolError::new(
            409,
            "IDEMPOTENCY_KEY_REUSED",
            "An earlier call of this tool with the same key (the same order, say) but other arguments was already made, \
             so this one was not run and that call's result is not repeated. Check what was done (for example, look the record up) \
             before asking for anything more.",
        )
        .no_retry()
    }

    pub(crate) fn too_many_pending(max: usize) -> ToolError {
        ToolError::rate_limited(
            "TOO_MANY_PENDING",
            format!(
                "{max} calls already wait for a human's approval, so this one was not run. \
                 Ask the user to decide those first, then call it again."
            ),
        )
    }

    pub(crate) fn too_many_external(max: usize) -> ToolError {
        ToolError::rate_limited(
            "TOO_MANY_EXTERNAL",
            format!(
                "{max} calls already wait for the application to run them, so this one was not handed over. \
                 Wait for their results, then call it again."
            ),
        )
    }

    pub(crate) fn policy_timed_out(timeout: Duration) -> ToolError {
        ToolError::new(
            403,
            "POLICY_TIMEOUT",
            format!(
                "Whether this call is allowed could not be decided within {}, so it was not run. \
                 Tell the user it cannot be done right now.",
                human_duration(timeout)
            ),
        )
    }

    pub(crate) fn exhausted(tool: &str, failed: u32) -> ToolError {
        let tool = shorten(tool, 64);
        let message = format!(
            "The tool `{tool}` failed {failed} times in this run and is no longer offered. Do not call it again; \
             tell the user what could not be done."
        );
        ToolError::new(429, "TOOL_EXHAUSTED", message).no_retry()
    }

    pub(crate) fn deadline(which: Deadline) -> ToolError {
        let (code, what) = match which {
            Deadline::Run => ("RUN_DEADLINE", "the run's"),
            Deadline::Step => ("STEP_DEADLINE", "this step's"),
        };
        let message = format!("The call was stopped: {what} time limit ran out before it finished. Tell the user it was not done.");
        ToolError::new(504, code, message).no_retry()
    }

    pub(crate) fn tool_gone(tool: &str) -> ToolError {
        let tool = shorten(tool, 64);
        let message = format!(
            "The tool `{tool}` this call ran with is no longer available, so the call was neither read back nor run again. \
             Do not retry it; tell the user it cannot be done now."
        );
        ToolError::new(410, "TOOL_GONE", message).no_retry()
    }

    pub(crate) fn run_finished() -> ToolError {
        ToolError::new(409, "RUN_FINISHED", "This conversation's run has finished, so the call was not run. Tell the user it was not done.")
            .no_retry()
    }

    pub(crate) fn outcome_unknown() -> ToolError {
        ToolError::new(
            409,
            "OUTCOME_UNKNOWN",
            "This call's effect was started before and never finished (the call timed out, was cancelled, or its process stopped), \
             so whether it took effect is unknown. Check its effect first (for example, look the record up); do not repeat it blindly.",
        )
        .no_retry()
    }

    pub(crate) fn cancelled() -> ToolError {
        ToolError::new(499, "CALL_CANCELLED", "The call was cancelled before it finished.").no_retry()
    }

    pub(crate) fn human_duration(duration: Duration) -> String {
        let ms = duration.as_millis();
        if ms.is_multiple_of(60_000) && ms > 0 {
            format!("{}m", ms / 60_000)
        } else if ms.is_multiple_of(1000) && ms > 0 {
            format!("{}s", ms / 1000)
        } else {
            format!("{ms}ms")
        }
    }

    /// At most `max` characters of model-controlled text echoed back.
    pub(crate) fn shorten(text: &str, max: usize) -> String {
        match text.char_indices().nth(max) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text.to_owned(),
        }
    }
}
/// Which time limit stopped a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Deadline {
    Run,
    Step,
}

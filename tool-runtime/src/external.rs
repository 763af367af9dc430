//! External tools (`#[tool(external)]`, [`DynamicTool::external`](crate::DynamicTool::external)):
//! a call is validated and judged like any other, then handed to the host
//! (a frontend, a worker) instead of executed. Its result is
//! [`ResultKind::External`], carrying the validated input; the host runs
//! the tool and supplies the output later, which is checked against the
//! tool's output schema before the model reads it.
//!
//! Only what handed a call can complete it, since only it knows what it
//! handed: a run's external calls ([`ExternalCalls::complete`](crate::ExternalCalls::complete),
//! [`ExternalCalls::fail`](crate::ExternalCalls::fail)), each call once, or
//! an MCP server's runner; both check the host's result with the
//! functions below. A call handed by [`Registry::invoke`](crate::Registry::invoke)
//! outside a run is not completed by the runtime. A run keeps a call's id taken
//! while the call waits (a later call with that id is refused, so that the
//! host's result cannot answer it), and hands over at most
//! [`max_external_calls`](crate::RegistryBuilder::max_external_calls) at a
//! time.
//!
//! An external tool with `resolve` converts a call's validated input into
//! the host's typed proposal: a call whose conversion fails is refused
//! before it is handed over (`pipeline::run_tool`), and the host reads the
//! proposal of a handed call with [`proposal`], which converts the call's
//! input again (a call resumed from a journal has only its input).

use serde_json::Value;

use crate::call::ExternalCall;
use crate::error::ToolError;
use crate::error_report::{ErrorKind, ErrorReport};
use crate::result::{CallResult, ResultKind};
use crate::table::ToolTable;

/// Why the host's result of an external call was not accepted; the call
/// still waits for one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ExternalError {
    /// No external call with this id waits (in this run), or its tool is
    /// not an external tool of the registry.
    #[error("no external call `{0}` waits for a result")]
    Unknown(String),
    /// The output does not match the tool's output schema.
    #[error("the output of `{tool}` does not match its output schema: {}", problems.join("; "))]
    InvalidOutput {
        /// The tool.
        tool: String,
        /// What is wrong, as `pointer: reason` lines.
        problems: Vec<String>,
    },
}

/// Why an external call's proposal could not be read
/// ([`Registry::proposal`](crate::Registry::proposal),
/// [`ExternalCalls::proposal`](crate::ExternalCalls::proposal)).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProposalError {
    /// The call's tool is not an external tool of this registry with a
    /// `resolve` (or no external call of the run has this id).
    #[error("`{0}` is not an external call whose tool converts its input (`resolve`)")]
    NoResolve(String),
    /// The call's input does not read as the tool's input, or the
    /// conversion failed or panicked: the input is not the one handed over.
    #[error("the input of `{tool}` does not convert into its proposal: {reason}")]
    Refused {
        /// The tool.
        tool: String,
        /// Why.
        reason: String,
    },
    /// The proposal is not of the type asked for: a mistake in the host's
    /// code.
    #[error("the proposal of `{tool}` is not a `{expected}`")]
    OtherType {
        /// The tool.
        tool: String,
        /// The type asked for.
        expected: &'static str,
    },
}

/// The proposal of the external call `call`, as its tool's `resolve`
/// converts its input, of type `P`.
///
/// # Errors
///
/// As [`ProposalError`] says.
pub(crate) fn proposal<App: Send + Sync + 'static, P: 'static>(tools: &ToolTable<App>, call: &ExternalCall) -> Result<P, ProposalError> {
    let tool = call.tool.to_string();
    let entry =
        tools.entry(&call.tool).filter(|entry| entry.def.external && entry.def.resolve).ok_or_else(|| ProposalError::NoResolve(tool.clone()))?;
    let refused = |reason: String| ProposalError::Refused { tool: tool.clone(), reason };
    let Value::Object(args) = &call.input else { return Err(refused("the input is not an object".to_owned())) };
    let resolved = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let input = entry.tool.parse(args).map_err(|error| error.to_string())?;
        entry.tool.resolve(input.as_ref()).unwrap_or_else(|| Err("the tool has no `resolve`".to_owned()))
    }));
    let proposal = match resolved {
        Ok(resolved) => resolved.map_err(refused)?,
        Err(payload) => return Err(refused(format!("the conversion panicked: {}", crate::error_report::panic_message(payload.as_ref())))),
    };
    proposal.downcast::<P>().map(|proposal| *proposal).map_err(|_| ProposalError::OtherType { tool, expected: std::any::type_name::<P>() })
}

/// What the model reads of an external call the host ran: `output`,
/// checked against the tool's output schema and rendered as a tool's
/// output is (cut at `max_output_chars`). `ends_run` on the tool ends
/// the run as it does for any tool (a predicate is not called: the
/// host decides, and it ends nothing). The caller knows that it handed
/// `call_id` and that it waits (a run's external calls, the MCP runner).
///
/// # Errors
///
/// [`ExternalError::Unknown`] when `tool` is not an external tool of
/// this registry; [`ExternalError::InvalidOutput`] when `output` does
/// not match its output schema.
pub(crate) fn complete<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    tool: &str,
    call_id: &str,
    output: Value,
) -> Result<CallResult, ExternalError> {
    let entry = tools.entry(tool).filter(|entry| entry.def.external).ok_or_else(|| ExternalError::Unknown(call_id.to_owned()))?;
    if let Some(schema) = &entry.def.output_schema {
        let problems = match jsonschema::draft202012::new(schema) {
            Ok(validator) => crate::validation::problems(&validator, &output),
            Err(err) => vec![format!("(schema): {err}")],
        };
        if !problems.is_empty() {
            return Err(ExternalError::InvalidOutput { tool: tool.to_owned(), problems });
        }
    }
    let limit = entry.def.max_output_chars.unwrap_or(tools.config.default_max_output_chars);
    let (text, structured, truncated) = crate::output::render(output, limit);
    let ends_run = entry.def.ends_run == crate::definition::EndsRun::Always;
    Ok(CallResult::success(entry.name.clone(), call_id.into(), text, structured, truncated, ends_run))
}

/// The generic 500 for a host's output the tool's schema refuses, where
/// the caller waits for it (MCP); `error` is reported.
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) fn went_wrong<App: Send + Sync + 'static>(tools: &ToolTable<App>, tool: &str, call_id: &str, error: &ExternalError) -> CallResult {
    let public = ToolError::internal();
    tools.report(ErrorReport::new(tool, call_id, ErrorKind::Output, public.code(), error.to_string()));
    CallResult::failure(tool.into(), call_id.into(), ResultKind::Internal, &public)
}

/// What the model reads of an external call that failed where the host
/// ran it: `error`'s line, as for a tool's own error (and reported to
/// `on_tool_error`). As for [`complete`],
/// the caller knows the call waits.
///
/// # Errors
///
/// [`ExternalError::Unknown`] when `tool` is not an external tool of
/// this registry.
pub(crate) fn fail<App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    tool: &str,
    call_id: &str,
    error: &ToolError,
) -> Result<CallResult, ExternalError> {
    let entry = tools.entry(tool).filter(|entry| entry.def.external).ok_or_else(|| ExternalError::Unknown(call_id.to_owned()))?;
    tools.report(ErrorReport {
        message: error.message().map(str::to_owned),
        data: error.data().cloned(),
        ..ErrorReport::new(&entry.def.name, call_id, ErrorKind::Tool, error.code(), error.model_line())
    });
    Ok(CallResult::failure(entry.name.clone(), call_id.into(), ResultKind::ToolError, error))
}

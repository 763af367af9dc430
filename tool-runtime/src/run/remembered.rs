//! A run's memory ([`RunMemory`](crate::memory::RunMemory)): why a durable
//! run could not be started or resumed ([`DurableError`]), a journaled call
//! checked against this registry's tools before a resumed run takes it
//! back, and the digest by which a re-sent step is told from a new one.
//! Every run has a memory: one that is not durable keeps it in the process
//! ([`LocalMemory`](crate::memory::LocalMemory)). [`Run::durable`](crate::Run::durable)
//! starts or resumes a durable one; its approvals and external calls are
//! recorded by their handles (`approvals.rs`, `external.rs`).
//!
//! After each step (and each approval settled), what the run changed since
//! its last save is added to its record in the memory, in one step of it:
//! the steps taken, the tools executed for the first time, the failures per
//! tool (`max_retries` counts, so they survive a resume), and the state,
//! which only moves forward. The run then takes its record as the memory
//! holds it, so that processes stepping one durable run at once each see
//! the others' steps, and one that steps a run another finished learns that
//! it is finished. A step that re-sends exactly the call ids of the run's
//! last step (a host retrying after a crash) replays its calls and is not
//! counted again.

use serde_json::Value;
use smol_str::SmolStr;

use crate::call::Arguments;
use crate::call::ToolCall;
use crate::memory::{JournalError, Keyed, Remembered};
use crate::pipeline::{Input, read_input};
use crate::result::{CallResult, ResultKind, lines};
use crate::table::{Entry, ToolTable};

/// Why a durable run could not be started, resumed or kept.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DurableError {
    /// The run's memory (its journal) could not be read or written.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The run's journal holds a call this registry cannot take any more:
    /// its tool is gone or renamed, or its input schema no longer accepts
    /// the journaled input. Resume it with a registry compatible with the
    /// one that started it.
    #[error("the journaled call `{call_id}` of run `{run_id}` cannot be resumed with this registry: tool `{tool}` {reason}")]
    Incompatible {
        /// The run.
        run_id: String,
        /// The journaled call.
        call_id: String,
        /// Its tool.
        tool: String,
        /// What changed.
        reason: String,
    },
}

/// The digest of a step's call ids in a durable run, by which a step
/// re-sent after a crash is told from a new one; `None` when the run is
/// not durable, or a call has no id of the host's.
pub(super) fn step_digest(remembered: &Remembered, calls: &[ToolCall]) -> Option<String> {
    use sha2::{Digest, Sha256};

    if !remembered.durable || calls.is_empty() || calls.iter().any(|call| call.id.is_empty()) {
        return None;
    }
    let ids: Vec<&str> = calls.iter().map(|call| call.id.as_str()).collect();
    let digest = Sha256::digest(serde_json::to_string(&ids).unwrap_or_default().as_bytes());
    Some(digest.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// A call refused as unknown in a durable run, whose call (its run and call
/// id, with that tool) the journal holds: its tool left the registry since
/// it ran. It reads `TOOL_GONE`, saying so, rather than that the tool is
/// unknown; any other result is returned as it is.
pub(super) async fn tool_gone<App: Send + Sync + 'static>(remembered: &Remembered, tools: &ToolTable<App>, result: CallResult) -> CallResult {
    if !remembered.durable || result.kind != ResultKind::UnknownTool || tools.entry(&result.tool).is_some() {
        return result;
    }
    let key = remembered.call_key(&result.call_id);
    let keyed = Keyed { run_id: &remembered.run_id, call_id: &result.call_id, tool: &result.tool, key: &key, earlier: None };
    match remembered.memory.find_keyed(keyed).await {
        Ok(Some(_)) => CallResult::failure(result.tool.clone(), result.call_id.clone(), ResultKind::UnknownTool, &lines::tool_gone(&result.tool)),
        _ => result,
    }
}

/// The tool of a journaled call, and the call's input read by it; an error
/// naming the tool when it is gone or refuses the input.
pub(super) fn check_fits<'t, App: Send + Sync + 'static>(
    tools: &'t ToolTable<App>,
    run_id: &str,
    call_id: &str,
    tool: &str,
    input: &Value,
) -> Result<(&'t Entry<App>, Input<'static>), DurableError> {
    let incompatible =
        |reason: String| DurableError::Incompatible { run_id: run_id.to_owned(), call_id: call_id.to_owned(), tool: tool.to_owned(), reason };
    let Some(entry) = tools.entry(tool) else {
        return Err(incompatible("is not in this registry (removed or renamed)".to_owned()));
    };
    let input = read_input(tools, entry, &SmolStr::new(call_id), Arguments::Value(input.clone()))
        .map_err(|refused| incompatible(format!("no longer accepts the journaled input: {}", refused.text)))?;
    Ok((entry, input))
}

//! External tools (`#[tool(external)]`, [`DynamicTool::external`](crate::DynamicTool::external)):
//! a call is validated and decided like any other, then handed to the host
//! (a frontend, a worker) instead of executed. Its result is
//! [`ResultKind::External`], carrying the validated input; the host runs
//! the tool and supplies the output later, which is checked against the
//! tool's output schema before the model reads it.
//!
//! Only what handed a call can complete it, since only it knows what it
//! handed: a [`Run`] ([`Run::complete`], [`Run::fail`]), each call once, or
//! an MCP server's runner. A call handed by [`Registry::invoke`] outside a
//! run is not completed by the runtime. A run keeps a call's id taken
//! while the call waits (a later call with that id is refused, so that the
//! host's result cannot answer it), and hands over at most
//! [`max_external_calls`](crate::RegistryBuilder::max_external_calls) at a
//! time.

use serde_json::Value;

use crate::call::ExternalCall;
use crate::error::ToolError;
use crate::error_report::{ErrorKind, ErrorReport};
use crate::memory::{JournalError, JournaledResult};
use crate::registry::Registry;
use crate::result::{CallResult, ResultKind};
use crate::run::{Run, RunError};

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

impl<App: Send + Sync + 'static> Registry<App> {
    /// What the model reads of an external call the host ran: `output`,
    /// checked against the tool's output schema and rendered as a tool's
    /// output is (cut at `max_output_chars`). `ends_run` on the tool ends
    /// the run as it does for any tool (a predicate is not called: the
    /// host decides, and it ends nothing). The caller knows that it handed
    /// `call_id` and that it waits ([`Run::complete`], the MCP runner).
    ///
    /// # Errors
    ///
    /// [`ExternalError::Unknown`] when `tool` is not an external tool of
    /// this registry; [`ExternalError::InvalidOutput`] when `output` does
    /// not match its output schema.
    pub(crate) fn complete_external(&self, tool: &str, call_id: &str, output: Value) -> Result<CallResult, ExternalError> {
        let entry = self.entry(tool).filter(|entry| entry.def.external).ok_or_else(|| ExternalError::Unknown(call_id.to_owned()))?;
        if let Some(schema) = &entry.def.output_schema {
            let problems = match jsonschema::draft202012::new(schema) {
                Ok(validator) => crate::validation::problems(&validator, &output),
                Err(err) => vec![format!("(schema): {err}")],
            };
            if !problems.is_empty() {
                return Err(ExternalError::InvalidOutput { tool: tool.to_owned(), problems });
            }
        }
        let limit = entry.def.max_output_chars.unwrap_or(self.inner.config.default_max_output_chars);
        let (text, structured, truncated) = crate::output::render(output, limit);
        let ends_run = entry.def.ends_run == crate::definition::EndsRun::Always;
        Ok(CallResult::success(entry.name.clone(), call_id.into(), text, structured, truncated, ends_run))
    }

    /// The generic 500 for a host's output the tool's schema refuses, where
    /// the caller waits for it (MCP); `error` is reported.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn external_went_wrong(&self, tool: &str, call_id: &str, error: &ExternalError) -> CallResult {
        let public = ToolError::internal();
        self.report(ErrorReport::new(tool, call_id, ErrorKind::Output, public.code(), error.to_string()));
        CallResult::failure(tool.into(), call_id.into(), ResultKind::Internal, &public)
    }

    /// What the model reads of an external call that failed where the host
    /// ran it: `error`'s line, as for a tool's own error (and reported to
    /// `on_tool_error`). As for [`complete_external`](Self::complete_external),
    /// the caller knows the call waits.
    ///
    /// # Errors
    ///
    /// [`ExternalError::Unknown`] when `tool` is not an external tool of
    /// this registry.
    pub(crate) fn fail_external(&self, tool: &str, call_id: &str, error: &ToolError) -> Result<CallResult, ExternalError> {
        let entry = self.entry(tool).filter(|entry| entry.def.external).ok_or_else(|| ExternalError::Unknown(call_id.to_owned()))?;
        self.report(ErrorReport {
            message: error.message().map(str::to_owned),
            data: error.data().cloned(),
            ..ErrorReport::new(&entry.def.name, call_id, ErrorKind::Tool, error.code(), error.model_line())
        });
        Ok(CallResult::failure(entry.name.clone(), call_id.into(), ResultKind::ToolError, error))
    }
}

impl<App: Send + Sync + 'static> Run<App> {
    /// The calls handed to the host that still wait for their result, in
    /// the order they were handed.
    pub fn external(&self) -> &[ExternalCall] {
        &self.external
    }

    /// Settles the external call `id` with the output the host's run of it
    /// gave: checked against the tool's output schema, recorded in the run
    /// (it counts as executed, and may end the run), and returned for the
    /// model (replace the call's result in the step with
    /// [`StepResults::settle`](crate::StepResults::settle)).
    ///
    /// # Errors
    ///
    /// [`RunError::UnknownExternal`] when no external call with this id
    /// waits; [`RunError::InvalidOutput`] when the output does not match
    /// the tool's output schema (the call still waits). In a durable run,
    /// where the result is journaled first, [`RunError::AlreadyDecided`]
    /// when another process completed the call first (settle it with
    /// [`settle_decided`](Self::settle_decided)), [`RunError::Journal`]
    /// when the journal failed (the call still waits).
    pub async fn complete(&mut self, id: &str, output: Value) -> Result<CallResult, RunError> {
        let index = self.external_index(id)?;
        let result = self.registry.complete_external(&self.external[index].tool, id, output).map_err(RunError::from)?;
        self.settle_external(index, result).await
    }

    /// Settles the external call `id` as failed where the host ran it; the
    /// model reads `error`'s line, and the failure counts toward the tool's
    /// `max_retries`.
    ///
    /// # Errors
    ///
    /// [`RunError::UnknownExternal`] when no external call with this id
    /// waits; in a durable run, as [`complete`](Self::complete).
    pub async fn fail(&mut self, id: &str, error: &ToolError) -> Result<CallResult, RunError> {
        let index = self.external_index(id)?;
        let result = self.registry.fail_external(&self.external[index].tool, id, error).map_err(RunError::from)?;
        self.settle_external(index, result).await
    }

    /// Records the result of the external call at `index` (journaled
    /// first in a durable run, where of two processes one wins).
    async fn settle_external(&mut self, index: usize, result: CallResult) -> Result<CallResult, RunError> {
        let key = self.memory.call_key(&result.call_id);
        match self.memory.memory.finish_call(&key, &JournaledResult::from(&result)).await {
            // Not started: a call handed over before the run had a memory
            // of it (a run made durable after the call was handed).
            Ok(()) | Err(JournalError::CallNotStarted { .. }) => {}
            Err(JournalError::CallAlreadyFinished { .. }) => {
                return Err(RunError::AlreadyDecided { call_id: result.call_id.to_string(), by: "another process".into() });
            }
            Err(error) => return Err(RunError::Journal(error.to_string())),
        }
        self.external.remove(index);
        self.steps.record(&result, self.ends_turn(&result));
        self.save_or_report().await;
        Ok(result)
    }

    fn external_index(&self, id: &str) -> Result<usize, RunError> {
        self.external.iter().position(|call| call.id == id).ok_or_else(|| RunError::UnknownExternal(id.to_owned()))
    }

    /// Keeps `result`'s call when it was handed to the host.
    pub(crate) fn track_external(&mut self, result: &CallResult) {
        // A re-sent step hands a call still with the host again: kept once.
        if let Some(call) = result.external_call()
            && !self.external.iter().any(|kept| kept.id == call.id)
        {
            self.external.push(call);
        }
    }
}

impl From<ExternalError> for RunError {
    fn from(error: ExternalError) -> Self {
        match error {
            ExternalError::Unknown(id) => RunError::UnknownExternal(id),
            ExternalError::InvalidOutput { tool, problems } => RunError::InvalidOutput { tool, problems },
        }
    }
}

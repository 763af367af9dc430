//! What the code `#[tool]` and `tools!` generate names: re-exports only, of
//! the files below, each named for what it holds. Not a public API: paths
//! here may change in any release, with the macro crate.
//!
//! - `names`: the duplicate-name check of `tools!`;
//! - `probes`: the traits generated code goes through so that a mistake
//!   fails on the user's token with a message that says what to do;
//! - `readers`: the arguments into a tool's input, from text or a parsed object;
//! - `schemas`: the input, output and failure schemas from parameters and types;
//! - `returns`: a tool's return value into its output or failure (a typed
//!   failure keeps its value);
//! - `form_field`: the check `#[derive(Form)]` writes at each field's type.

mod names;
mod probes;
mod recovery;
mod returns;
mod schemas;

pub use schemars;
pub use serde;
pub use serde_json;

pub use core::time::Duration;

pub use crate::call_report::CallReport;
pub use crate::context::{CallState, Ctx, StepView};
pub use crate::policy::{PolicyKind, Verdict};
pub use crate::tool::{
    Annotations, BoxError, CallFuture, EndsRun, Execution, Failure, FailureMode, Interim, MetaValue, Metadata, Output, ParsedFrom, PolicyCall,
    Proposal, Reconciled, Tool, ToolMeta, ToolOutput,
};

pub use crate::readers::Args;

/// What `#[derive(Form)]` writes at each field's type: the field must be
/// one a form carries (the trait says which, and what to do otherwise).
pub fn form_field<T: crate::question::FormField + ?Sized>() {}
pub use crate::scope::ScopedTool;
pub use crate::streamed::{Preliminary, drain};
pub use names::{Named, assert_unique_names};
pub use probes::{
    CtxAppWritten, CtxParam, DefaultParam, EffectKey, EndsRunProbe, EndsRunVerdict, InputParam, IntoReconciled, IntoVerdict, NoApp, ParallelSafeWhen,
    ParallelVerdict, PolicyProbe, ResolveError, ScopeFn, SyncEndsRun, SyncPolicy, ToolInput, ToolParam, VisibleWhen, effect_key_call, ends_run_call,
    on_result_call, reconcile_call, resolve_call, scope_fn,
};
pub use recovery::{OutputOf, Recovered, RecoveryProbe, SyncRecovery, output_of, recovery_call};
pub use returns::{FailureProbe, PlainReturn, Returned, ToolErrorType, ToolReturn, UntypedFailure, output};
pub use schemas::{
    FailureSchema, InputSchema, MaybeJson, NoFailureSchema, NoOutputSchema, NotJson, OutputSchema, PlainOutputSchema, param_description,
    struct_schema,
};

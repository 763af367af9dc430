//! The contradiction checks `#[tool]` makes at compile time, made on a
//! [`DynamicTool`] when the registry is built: each is a
//! [`BuildProblem::Contradiction`](crate::BuildProblem::Contradiction)
//! naming the tool, worded as the macro's error and its help, with the
//! builder's methods where the macro names its keys.

use crate::tool::{EndsRun, FailureMode};

use super::{DynamicTool, Handler};

/// Every contradiction between the keys of `tool`, each as "what
/// contradicts what: why, and what to do".
pub(crate) fn contradictions<App>(tool: &DynamicTool<App>) -> Vec<String> {
    let def = &tool.definition;
    let mut found = Vec::new();
    let read_only = def.annotations.read_only == Some(true);
    if read_only && def.annotations.destructive == Some(true) {
        found.push(
            "`read_only` and `destructive` contradict each other: a tool that changes nothing cannot destroy anything; \
             remove one of them from its `Annotations`"
                .to_owned(),
        );
    }
    if read_only && tool.parallel.is_some() {
        found.push(
            "`parallel_safe = predicate` contradicts `read_only`: a read-only tool is always parallel-safe; \
             remove the predicate (`parallel_safe_fn`) or `read_only`"
                .to_owned(),
        );
    } else if read_only && !def.parallel_safe {
        found.push(
            "`parallel_safe = false` contradicts `read_only`: a read-only tool is always parallel-safe; remove `parallel_safe(false)`".to_owned(),
        );
    }
    if def.ends_turn && def.ends_run != EndsRun::Never {
        found.push(
            "`ends_turn` and `ends_run` cannot both be set: `ends_turn` halts the run at once; \
             `ends_run` gives the model one more step to answer: keep one"
                .to_owned(),
        );
    }
    if !def.replay && def.idempotency_key {
        found.push(
            "`replay = false` contradicts `idempotency_key`: a tool that always runs again never answers from the journal, \
             so its key would never be used: remove `idempotency_key` for a tool that must run on every call, \
             or `replay(false)` for one whose effect must happen once"
                .to_owned(),
        );
    }
    if def.requires.contains(&def.name) {
        found.push(format!(
            "tool `{0}` cannot require itself: `requires` names tools that must run before this one; remove `{0}` from `requires`",
            def.name
        ));
    }
    if def.related.contains(&def.name) {
        found.push(format!(
            "tool `{0}` cannot be related to itself: `related` names other tools often used together with this one; \
             remove `{0}` from `related`",
            def.name
        ));
    }
    if def.scope_schema.is_some() && def.always_active {
        found.push(
            "`scope` contradicts `always_active`: an always-active tool is offered in every turn without being chosen, \
             so no scope value ever reaches it: remove `always_active` to let the intent classifier choose and scope the tool, \
             or remove `scope`"
                .to_owned(),
        );
    }
    if def.as_intent && def.always_active {
        found.push(
            "`as_intent` contradicts `always_active`: an always-active tool is offered in every turn and never listed to the \
             intent classifier: remove `always_active(true)` to let the classifier choose the tool, or `as_intent(true)`"
                .to_owned(),
        );
    }
    if tool.recover.is_some() && matches!(tool.handler, Handler::Streamed(_)) {
        found.push(
            "`on_error` does not apply to a streaming tool: a streaming tool fails with an `Err` item \
             (`Streamed::try_new`), and the items before it were sent already: handle the error where the stream makes \
             its items, or remove `on_error`"
                .to_owned(),
        );
    }
    if def.external {
        found.extend(external(tool));
    } else if def.resolve {
        found.push(
            "`resolve` is for an `external` tool: it converts a call's input into what the host runs, and the registry runs \
             this one; make the tool with `DynamicTool::external`, or remove `resolve`"
                .to_owned(),
        );
    }
    found
}

/// The keys about running the tool here, which an external tool (run by
/// the host) contradicts.
fn external<App>(tool: &DynamicTool<App>) -> impl Iterator<Item = String> {
    let def = &tool.definition;
    let here = [
        ("on_error", tool.recover.is_some()),
        ("interim", def.interim.is_some()),
        ("interruptible", !def.interruptible),
        ("idempotency_key", def.idempotency_key),
        ("ends_run = path", def.ends_run == EndsRun::Predicate),
        ("failure_mode", def.failure_mode != FailureMode::Return),
    ];
    here.into_iter().filter(|(_, set)| *set).map(|(key, _)| {
        format!(
            "`{key}` contradicts `external`: `{key}` is about running the tool here, but the host runs an external tool: \
             remove `{key}`, or make the tool with `DynamicTool::new`"
        )
    })
}

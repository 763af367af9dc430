//! Stages 1 to 6 at once, for a call whose verdict does not depend on its
//! input: a tool whose policy is a plain `Allow`, with no approval floor
//! over it, nothing of its effect remembered, run by the registry (not
//! external) and interruptible, called with text its reader reads whole.
//! Its text is read straight into the tool's input and the tool's call is
//! made on it at once, so the input is never boxed between stage 3 and
//! stage 6; stages 4 and 5 have nothing to do. Any other call, and text
//! the reader leaves to the value path, goes down the stages one by one
//! (`pipeline::process`), where the same rules word the same errors.

use std::borrow::Cow;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use super::{effects, floor_applies, internal, outcome, output_limit, run_started};
use crate::call::{Arguments, CallOutcome};
use crate::context::CallState;
use crate::error_report::{ErrorKind, panic_message};
use crate::policy::Verdict;
use crate::result::CallResult;
use crate::table::{Entry, ToolTable};
use crate::tool::{CallFuture, ParsedFrom};

/// What [`start`] made of a call.
pub(super) enum AtOnce<'a> {
    /// The tool's call, made on the call's state: its future.
    Started(CallFuture),
    /// Making the call panicked (a parameter's `Deserialize`, say).
    Ended(CallResult),
    /// Not a call for this path: its arguments, as given. No context was
    /// made from the call's state (at most its output limit was set, which
    /// stage 6 sets again).
    Stages(Arguments<'a>),
}

/// Reads the input and makes the call, where the call is one for this
/// path (see the module docs).
pub(super) fn start<'a, App: Send + Sync + 'static>(
    tools: &ToolTable<App>,
    entry: &Entry<App>,
    args: Arguments<'a>,
    call: &mut CallState<'_, App>,
    scoped: Option<&jsonschema::Validator>,
) -> AtOnce<'a> {
    let def = &entry.def;
    let verdict_known = matches!(def.policy.static_verdict(), Some(Verdict::Allow)) && !floor_applies(entry, call.info());
    let runs_here = def.interruptible && !def.external && scoped.is_none() && effects::memory_of(entry, call.info()).is_none();
    let text = match args {
        Arguments::Text(text) if entry.text_exact && verdict_known && runs_here && crate::guard::check_text(&text, &tools.config.limits).is_ok() => {
            text
        }
        args => return AtOnce::Stages(args),
    };
    call.set_output_limit(output_limit(tools, entry));
    let from = ParsedFrom::Text(Cow::Borrowed(&text));
    match std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.call_text(&text, &entry.properties, call, &from))) {
        Ok(Some(future)) => AtOnce::Started(future),
        // Read nothing, made no call: the state is as it was.
        Ok(None) => AtOnce::Stages(Arguments::Text(text)),
        Err(payload) => AtOnce::Ended(internal(tools, entry.name.clone(), call.call_id(), ErrorKind::Panic, panic_message(payload.as_ref()))),
    }
}

/// Stage 6 and 7 of a call [`start`] made. (A plain function, as
/// `run_validated`: an `async fn` would keep a second copy of its
/// arguments.)
#[allow(clippy::manual_async_fn, reason = "an `async fn` would keep a second copy of its arguments in its future")]
pub(super) fn run<'s, App: Send + Sync + 'static>(
    tools: &'s ToolTable<App>,
    entry: &'s Entry<App>,
    mut call: CallState<'s, App>,
    future: CallFuture,
    span: tracing::Span,
) -> impl Future<Output = CallOutcome<App>> + Send + 's {
    async move {
        let verdict = Verdict::Allow;
        span.record("verdict", verdict.as_str());
        // Cancelled before its first poll: the call made is dropped unpolled.
        let started = if call.info().is_cancelled() { Err(None) } else { Ok(future) };
        let result = run_started(tools, entry, started, &mut call, &span).await;
        outcome(&span, CallOutcome::Done(result))
    }
}

//! Preliminary results: a tool written `-> Streamed<T>` returns a stream of
//! `T`; every item but the last is preliminary and goes to the call's
//! progress sink (the host's event stream, MCP progress notifications),
//! and the last is the result the model reads.

use std::fmt;
use std::pin::Pin;

use futures_util::{Stream, StreamExt};
use serde::Serialize;
use serde_json::Value;
use smol_str::SmolStr;

use crate::context::{CallState, Progress, ProgressSink};
use crate::error::ToolError;
use crate::tool::Failure;

/// What a streaming tool returns: its items, of which every one but the
/// last is a preliminary result, and the last is the result.
///
/// Each preliminary item reaches the call's progress sink as a [`Progress`]
/// report whose `preliminary` holds the item (and `message` its text), and
/// an MCP client that asked for progress as a notification carrying the
/// text. The tool's timeout and cancellation cover the whole stream, also
/// one whose items are always ready (its reading yields to the scheduler, by
/// Tokio's cooperative budget), and its output limit (`max_output_chars`) all
/// of it: preliminary items are sent until their text reaches the limit, an
/// item whose text crosses it is sent cut (its `preliminary` is then the cut
/// text, a string ending in the marker that says so, not the item), and the
/// result is cut at it as any output is.
///
/// A stream that ends without an item is a bug of the tool: the model reads
/// the generic 500 line. An `Err` item of [`try_new`](Self::try_new) ends
/// the call with that error.
///
/// ```
/// use tool_runtime::prelude::*;
/// use tool_runtime::{stream, Streamed};
///
/// /// Count to three; the model reads "3", the host sees 1 and 2 first.
/// #[tool]
/// async fn count() -> Streamed<u32> {
///     Streamed::new(stream::iter([1, 2, 3]))
/// }
/// ```
pub struct Streamed<T> {
    items: Pin<Box<dyn Stream<Item = Result<T, ToolError>> + Send>>,
}

impl<T: Send + 'static> Streamed<T> {
    /// The items of `stream`.
    pub fn new(stream: impl Stream<Item = T> + Send + 'static) -> Self {
        Streamed { items: Box::pin(stream.map(Ok)) }
    }

    /// The items of `stream`, where an `Err` ends the call with that error
    /// (the preliminary items before it were sent already).
    pub fn try_new(stream: impl Stream<Item = Result<T, ToolError>> + Send + 'static) -> Self {
        Streamed { items: Box::pin(stream) }
    }
}

impl<T> fmt::Debug for Streamed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Streamed")
    }
}

/// Where a streaming call's preliminary items go, taken from its state
/// before the tool runs.
#[doc(hidden)]
pub struct Preliminary {
    sink: Option<ProgressSink>,
    call_id: SmolStr,
    /// The characters preliminary items may still take.
    budget: usize,
}

impl Preliminary {
    /// The sink of the preliminary items of the call whose state is `call`.
    #[doc(hidden)]
    pub fn of<App>(call: &CallState<'_, App>) -> Self {
        let info = call.info();
        Preliminary { sink: info.progress().cloned(), call_id: info.call_id.clone(), budget: call.output_limit() }
    }

    /// Sends `item` as the `index`th preliminary result, while the budget lasts.
    fn send(&mut self, index: usize, item: &impl Serialize) {
        let Some(sink) = &self.sink else { return };
        if self.budget == 0 {
            return;
        }
        let Ok(value) = serde_json::to_value(item) else { return };
        let (text, structured, cut) = crate::output::render(value, self.budget);
        self.budget = if cut { 0 } else { self.budget.saturating_sub(text.chars().count()) };
        // A cut item is sent as its cut text: the whole one is what the
        // limit keeps from the host's event stream.
        let preliminary = match structured {
            Some(value) if !cut => *value,
            _ => Value::String(text.clone()),
        };
        (sink.0)(Progress {
            call_id: self.call_id.to_string(),
            progress: index as f64,
            total: None,
            message: Some(text),
            interim: false,
            preliminary: Some(preliminary),
        });
    }
}

/// How many items `drain` reads at most without yielding, where the
/// cooperative budget does not make it yield sooner.
const YIELD_EVERY: usize = 1024;

/// Reads a tool's stream to its end: every item but the last sent as a
/// preliminary result, the last returned.
///
/// Each item takes a unit of the task's cooperative budget: a stream that
/// is always ready would otherwise never give the scheduler back, and
/// neither the tool's timer nor its cancellation (nor a caller's own
/// timeout) would ever run. Where there is no budget (the first poll of a
/// call awaited under `tokio::task::coop::unconstrained`, or outside a
/// runtime), every `YIELD_EVERY`th item yields all the same.
#[doc(hidden)]
pub async fn drain<T: Serialize>(streamed: Streamed<T>, mut preliminary: Preliminary) -> Result<T, Failure> {
    let mut items = streamed.items;
    let mut last: Option<T> = None;
    let mut sent = 0;
    let mut read = 0usize;
    while let Some(item) = items.next().await {
        read = read.wrapping_add(1);
        match read % YIELD_EVERY {
            0 => tokio::task::yield_now().await,
            _ => tokio::task::coop::consume_budget().await,
        }
        // An item is preliminary once another, or an error, follows it.
        let (item, failed) = match item {
            Ok(item) => (Some(item), None),
            Err(error) => (None, Some(error)),
        };
        if let Some(previous) = std::mem::replace(&mut last, item) {
            sent += 1;
            preliminary.send(sent, &previous);
        }
        if let Some(error) = failed {
            return Err(Failure::Tool(Box::new(error)));
        }
    }
    last.ok_or_else(|| Failure::Internal("the tool's stream ended without an item; its last item is the result".into()))
}

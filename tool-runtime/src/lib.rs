//! Tools for language-model agents, defined as ordinary `async fn`s.
//!
//! Put [`#[tool]`](macro@tool) on an `async fn`: its name, doc comment and
//! signature become the tool's name, description and JSON Schema; its
//! attributes set policy, visibility, limits and effect hints. Collect tools
//! with [`tools!`] into a [`Registry`], which validates the model's input,
//! decides policy, runs the tool under a timeout and turns every outcome into
//! one line of text the model can act on.
//!
//! ```
//! use std::sync::Arc;
//! use tool_runtime::prelude::*;
//!
//! struct Shop;
//!
//! /// Look up one order by the number printed on the invoice.
//! #[tool(read_only, timeout = "5s")]
//! async fn lookup_order(
//!     ctx: Ctx<Shop>,
//!     /// The order number, for example `A-4711`.
//!     order_id: String,
//!     /// Include the line items.
//!     #[tool(default)]
//!     with_items: bool,
//! ) -> Result<String, ToolError> {
//!     let _shop = ctx.app();
//!     if order_id.starts_with("A-") {
//!         Ok(format!("{order_id}: shipped (items: {with_items})"))
//!     } else {
//!         Err(ToolError::not_found("ORDER_NOT_FOUND", "No such order; ask for the number on the invoice."))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let registry = Registry::<Shop>::builder().tools(tools![lookup_order]).build().unwrap();
//! let app = Arc::new(Shop);
//! let ok = registry.invoke(&app, "lookup_order", r#"{"order_id": "A-1"}"#).await;
//! assert_eq!(ok.text, "A-1: shipped (items: false)");
//! let err = registry.invoke(&app, "lookup_order", r#"{"order_id": "B-1"}"#).await;
//! assert_eq!(err.text, "code: ORDER_NOT_FOUND, status: 404, userMessage: No such order; ask for the number on the invoice.");
//! # }
//! ```
//!
//! See the crate's README for the attribute reference.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod content;
mod context;
mod definition;
#[cfg(feature = "journal")]
mod durable;
mod docs;
mod dynamic;
mod error;
mod error_report;
mod external;
mod guard;
mod intent;
#[cfg(feature = "journal")]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sqlite", feature = "postgres"))))]
pub mod journal;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;
mod normalize;
mod output;
mod approval;
mod call;
mod pipeline;
mod policy;
pub mod providers;
mod registry;
mod result;
mod run;
mod steps;
mod streamed;
mod schema;
mod tool;
mod validation;

#[doc(hidden)]
pub mod __private;

pub use content::{Binary, Block, Resource, ResourceBody, ResourceLink, MAX_MIME_TYPE_BYTES};
pub use context::{Ctx, Progress, ProgressSink, StepView, UserContext};
pub use dynamic::DynamicTool;
pub use error::{ToolError, INTERNAL_ERROR_CODE};
pub use error_report::{ErrorKind, ErrorReport};
pub use external::ExternalCall;
pub use guard::{ArgumentLimits, MAX_ARGUMENT_DEPTH};
pub use intent::{Classifier, ScopeProblem, ScopedTool, Selection};
pub use call::{Arguments, Call, CallOutcome, PendingCall};
pub use policy::{ApprovalFloor, PolicyKind, Verdict};
pub use registry::{BuildError, BuildProblem, Registry, RegistryBuilder, DEFAULT_APPROVAL_TTL};
pub use result::{CallResult, ResultKind};
pub use run::{Run, RunError, RunState, StepResults, ToolCall};
pub use schema::SCHEMA_DIALECT;
pub use streamed::Streamed;
/// futures-util's `stream` module: what a [`Streamed`] tool makes its
/// stream with (`stream::iter`, `stream::unfold`, `StreamExt`, ...).
pub use futures_util::stream;
pub use tool::{Annotations, BoxError, BoxFuture, BoxedTool, EndsRun, Interim, Tool, ToolDefinition};

pub use serde_json;
/// The string type of [`CallResult::tool`] and [`CallResult::call_id`].
pub use smol_str::SmolStr;
pub use tokio_util::sync::CancellationToken;

/// Defines a tool from an `async fn`.
///
/// The function stays an ordinary function. Beside it, the attribute
/// defines a type of the same name that holds the parsed input (one field
/// per parameter); `tools![...]` lists these types and policy predicates
/// receive them.
///
/// The return type is the output (its schema, when it implements
/// `JsonSchema`, is the output schema); `Result<T, E>` fails with `E`. A
/// tool written `-> Streamed<T>` streams: every item but the last is a
/// preliminary result ([`Streamed`]). An `external` tool is declared
/// without a body: the host runs it.
///
/// | key | meaning |
/// |---|---|
/// | `name = "..."` | the name the model calls; default: the function's name; must match `^[a-z][a-z0-9_]{0,63}$` |
/// | `description = "..."` | overrides the doc comment (which is read up to its first heading) |
/// | `title = "..."` | human-readable title (MCP) |
/// | `tags("a", "b")` | free tags, for filtering and for the approval floor |
/// | `read_only`, `destructive`, `idempotent`, `open_world` | effect hints, each also `= bool`; `read_only` conflicts with `destructive` |
/// | `policy = allow \| deny \| needs_approval \| path` | a static verdict, or a predicate `fn(&Input, &Ctx<App>) -> Verdict`, sync or async, optionally returning `Result<Verdict, E>` |
/// | `visible_when = path` | `fn(&StepView<'_, App>) -> bool`, decided before each model call |
/// | `requires("a", "b")` | offered only after each named tool ran successfully in the run |
/// | `ends_run` / `ends_run = path` | a successful call ends the run; the predicate is `fn(&Input, &Output) -> bool`, sync or async |
/// | `ends_turn` | a successful call halts the run on the same step, with no last step for the model; not with `ends_run` |
/// | `on_error = path` | recovers from the tool's own error: `fn(&Input, &Error) -> Output` (or `Option<Output>`, `Result<Output, E>`), sync or async; never for timeouts, cancellation, invalid arguments or refusals; declining or panicking gives the original error |
/// | `interruptible = false` | the caller's cancellation does not cancel the tool's token, only its timeout does |
/// | `reconcile = path` | in a durable run, asked about a call found started and never finished (its process died mid-call) before it reads `OUTCOME_UNKNOWN`: `fn(&Input) -> Option<Output>` gives the output when the effect happened (journaled as the call's result), `None` when that is unknown |
/// | `idempotency_key = path` | in a durable run, the call's effect is keyed by `fn(&Input) -> String` (or `-> &str`), such as an order id, instead of by the run and the call id; not with `replay = false` |
/// | `replay = false` | in a durable run, the tool runs again even when the journal holds its result (an observation, a command that must run each time); a call started and never finished still reads `OUTCOME_UNKNOWN` unless the tool is `read_only` or `idempotent` |
/// | `interim = "..."`, `interim_after = "2s"` | a call still running after the delay (default 2 s) sends the text once, as a [`Progress`] report with `interim: true` |
/// | `timeout = "500ms" \| "5s" \| "2m"` | overrides the registry default |
/// | `max_output_chars = N` | overrides the registry default |
/// | `max_retries = N` | after N failed calls in one run (invalid arguments, tool errors, internal errors, the tool's own timeout), the tool is no longer offered in that run |
/// | `parallel_safe` / `parallel_safe = bool` / `parallel_safe = path` | may run concurrently with other calls of the same step; implied by `read_only`; a predicate `fn(&serde_json::Value) -> bool` decides on the raw arguments |
/// | `strict = bool` | per-tool override of provider strict mode |
/// | `kind = "..."` | a declared grouping, filterable with [`Registry::definitions_of_kind`]; not an authorisation boundary |
/// | `examples("...")`, `example_prompts("...")`, `related("tool")`, `always_active`, `classification = "..."`, `scope_prompt = "..."` | kept in the definition, for documentation and intent classifiers ([`Classifier`]); `related` names are checked like `requires` |
/// | `external` | declared without a body: calls are validated and decided, then handed to the host ([`ResultKind::External`], [`Run::complete`]) |
/// | `scope = path` | `fn(&Scope, &mut ScopedTool)`: rebuilds the tool's description and input schema for a turn from the scope value an intent classifier chose ([`Run::select`]); narrowing only, checked. Not with `always_active` |
/// | `meta(key = value, ...)` | free-form literal metadata, in the definition and as MCP `_meta` |
/// | `crate = path` | where this crate is, for crates that re-export it |
///
/// On a parameter: `///` docs become the property's description (or the
/// entry of the function's `# Arguments` section); `#[tool(default)]` and
/// `#[tool(default = expr)]` make it optional; `#[serde(...)]` and
/// `#[schemars(...)]` are carried onto the input field. A first parameter of
/// type [`Ctx<App>`](Ctx) is the context, not an input; [`Input<T>`](Input)
/// takes a whole struct as the input.
///
/// A tool without a context works in a registry of any app, so its
/// predicates are generic over the app.
///
/// A tool written `-> Result<T, E>` whose `E` is `Serialize + JsonSchema`
/// and converts into [`ToolError`] has a typed failure: `E`'s schema is its
/// [`failure_schema`](ToolDefinition::failure_schema), and a failure's
/// value reaches [`CallResult::structured`] and MCP's `structuredContent`
/// beside the model's one line.
///
/// ```
/// use std::time::Duration;
/// use schemars::JsonSchema;
/// use serde::Serialize;
/// use tool_runtime::prelude::*;
///
/// pub struct Bank;
///
/// #[derive(Serialize, JsonSchema)]
/// pub struct Receipt { id: String }
///
/// /// Send money to a saved payee.
/// ///
/// /// # Arguments
/// ///
/// /// * `payee` - The saved payee's id.
/// #[tool(
///     name = "send_money",
///     title = "Send money",
///     tags("billing"),
///     destructive,
///     open_world,
///     policy = over_limit,
///     requires("list_payees"),
///     timeout = "10s",
///     max_output_chars = 2000,
///     strict = true,
/// )]
/// pub async fn send(
///     ctx: Ctx<Bank>,
///     payee: String,
///     /// In cents.
///     #[schemars(range(min = 1, max = 1_000_000))]
///     amount: u32,
///     /// Shown to the payee.
///     #[tool(default = String::from("Payment"))]
///     memo: String,
/// ) -> Result<Receipt, ToolError> {
///     let _ = (ctx, amount, memo);
///     Ok(Receipt { id: format!("tx-{payee}") })
/// }
///
/// fn over_limit(input: &send, _ctx: &Ctx<Bank>) -> Verdict {
///     if input.amount > 100_000 { Verdict::needs_approval() } else { Verdict::Allow }
/// }
///
/// /// List the saved payees.
/// #[tool(read_only)]
/// pub async fn list_payees() -> Vec<String> {
///     vec!["p-1".into()]
/// }
///
/// let registry = Registry::<Bank>::builder().tools(tools![list_payees, send]).build().unwrap();
/// let send = registry.definition("send_money").unwrap();
/// assert_eq!(send.timeout, Some(Duration::from_secs(10)));
/// assert_eq!(send.input_schema["properties"]["payee"]["description"], "The saved payee's id.");
/// assert_eq!(send.input_schema["required"], serde_json::json!(["payee", "amount"]));
/// ```
pub use tool_macros::tool;

/// Takes a whole input struct as a tool's input, instead of one parameter
/// per field. The struct derives `Deserialize` and `JsonSchema`; its fields
/// become the schema's properties.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use tool_runtime::prelude::*;
///
/// /// A new ticket.
/// #[derive(Deserialize, JsonSchema)]
/// struct NewTicket {
///     /// One line.
///     title: String,
///     /// 1 (low) to 3 (urgent).
///     #[schemars(range(min = 1, max = 3))]
///     priority: u8,
/// }
///
/// /// Open a support ticket.
/// #[tool]
/// async fn open_ticket(Input(ticket): Input<NewTicket>) -> String {
///     format!("{} ({})", ticket.title, ticket.priority)
/// }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Input<T>(pub T);

/// Everything a tool module needs: `use tool_runtime::prelude::*;`.
pub mod prelude {
    pub use crate::{
        tool, tools, ApprovalFloor, BoxedTool, CallResult, Ctx, DynamicTool, Input, PolicyKind, Registry, Run,
        ScopedTool, Selection, StepView, ToolCall, ToolError, UserContext, Verdict,
    };
}

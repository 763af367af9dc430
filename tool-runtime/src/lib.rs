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
//! The manual is the [`guide`]: the keys of `#[tool(...)]` in one table
//! ([`guide::keys`]), a call stage by stage ([`guide::pipeline`]), runs,
//! providers, MCP and durable runs.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod approval;
mod call;
mod call_report;
#[cfg(any(feature = "mcp", feature = "inbox"))]
mod caps;
mod content;
mod context;
mod definition;
mod docs;
mod dynamic;
mod error;
mod error_report;
mod external;
mod guard;
mod ids;
#[cfg(feature = "inbox")]
#[cfg_attr(docsrs, doc(cfg(feature = "inbox")))]
pub mod inbox;
mod intent;
#[cfg(feature = "journal")]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sqlite", feature = "postgres"))))]
pub mod journal;
mod kept;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;
pub mod memory;
mod normalize;
mod origin;
mod output;
mod pipeline;
mod policy;
pub mod providers;
pub mod question;
mod readers;
mod registry;
mod result;
mod run;
mod schema;
mod scope;
mod steps;
mod streamed;
mod table;
mod tool;
mod validation;
mod variant;

#[doc(hidden)]
pub mod __private;

/// The manual, one page per subject. The pages are documentation only:
/// their examples are compiled and run as doctests.
///
/// - [`defining`](crate::guide::defining): what `#[tool]` reads from a
///   function: name, description, parameters, context, returns.
/// - [`keys`](crate::guide::keys): every key of `#[tool(...)]`, in one table.
/// - [`pipeline`](crate::guide::pipeline): one call, stage by stage.
/// - [`runs`](crate::guide::runs): steps, offered tools, time limits.
/// - [`intent`](crate::guide::intent): a cheap model call picks a turn's
///   tools, and scopes them.
/// - [`streaming`](crate::guide::streaming): preliminary results.
/// - [`external`](crate::guide::external): tools the host runs.
/// - [`content`](crate::guide::content): images, audio and resources.
/// - [`dynamic`](crate::guide::dynamic): tools defined at run time.
/// - [`providers`](crate::guide::providers): the dialects of OpenAI,
///   Anthropic, Gemini and MCP; provider-defined tools.
/// - [`mcp`](crate::guide::mcp): the MCP server (feature `mcp`).
/// - [`durable`](crate::guide::durable): durable runs and the journal
///   (feature `sqlite` or `postgres`).
/// - [`inbox`](crate::guide::inbox): the approvals inbox, a web page where
///   people decide pending calls (feature `inbox`).
///
/// A page of a feature that is not enabled is empty: its examples need the
/// feature.
pub mod guide {
    #[doc = include_str!("../docs/defining.md")]
    pub mod defining {}
    #[doc = include_str!("../docs/keys.md")]
    pub mod keys {}
    #[doc = include_str!("../docs/pipeline.md")]
    pub mod pipeline {}
    #[doc = include_str!("../docs/runs.md")]
    pub mod runs {}
    #[doc = include_str!("../docs/intent.md")]
    pub mod intent {}
    #[doc = include_str!("../docs/streaming.md")]
    pub mod streaming {}
    #[doc = include_str!("../docs/external.md")]
    pub mod external {}
    #[doc = include_str!("../docs/content.md")]
    pub mod content {}
    #[doc = include_str!("../docs/dynamic.md")]
    pub mod dynamic {}
    #[doc = include_str!("../docs/providers.md")]
    pub mod providers {}
    /// The MCP server (feature `mcp`).
    #[cfg_attr(feature = "mcp", doc = include_str!("../docs/mcp.md"))]
    pub mod mcp {}
    /// Durable runs and the journal (feature `sqlite` or `postgres`).
    #[cfg_attr(feature = "journal", doc = include_str!("../docs/durable.md"))]
    pub mod durable {}
    /// The approvals inbox (feature `inbox`).
    #[cfg_attr(feature = "inbox", doc = include_str!("../docs/inbox.md"))]
    pub mod inbox {}
}

/// The README's Rust blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

pub use call::{Arguments, CallOutcome, ExternalCall, PendingCall, ToolCall};
pub use call_report::CallReport;
pub use content::{Binary, Block, MAX_MIME_TYPE_BYTES, Resource, ResourceBody, ResourceLink};
pub use context::{Ctx, LogLevel, LogMessage, LogSink, Progress, ProgressSink, RunView, StepCall, StepView, Unauthorized, UserContext};
pub use dynamic::DynamicTool;
pub use error::{INTERNAL_ERROR_CODE, ToolError};
pub use error_report::{ErrorKind, ErrorReport};
pub use external::ProposalError;
/// futures-util's `stream` module: what a [`Streamed`] tool makes its
/// stream with (`stream::iter`, `stream::unfold`, `StreamExt`, ...).
pub use futures_util::stream;
pub use guard::{ArgumentLimits, MAX_ARGUMENT_DEPTH};
pub use intent::{Classifier, ScopeProblem, ScopedTool, Selection};
pub use origin::Origin;
pub use pipeline::{Call, OutputError};
pub use policy::{ApprovalFloor, PolicyKind, Verdict};
pub use question::Form;
pub use registry::{Registry, RegistryBuilder};
pub use result::{CallResult, ResultKind};
pub use run::{Approvals, DurableError, ExternalCalls, Run, RunError, RunState, StepResults};
pub use schema::SCHEMA_DIALECT;
pub use streamed::Streamed;
pub use table::{BuildError, BuildProblem, DEFAULT_APPROVAL_TTL};
pub use tool::{Annotations, BoxError, BoxFuture, BoxedTool, EndsRun, FailureMode, Interim, Reconciled, Tool, ToolDefinition};
pub use variant::Variant;

/// schemars, for `#[tool_data]`'s derives and a crate that depends on
/// `tool-runtime` alone.
pub use schemars;
/// serde, for `#[tool_data]`'s derives and a crate that depends on
/// `tool-runtime` alone.
pub use serde;
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
/// Its keys (`name`, `read_only`, `policy`, `timeout`, ...) are in one
/// table, on the [`guide::keys`] page; what it reads from the function is
/// on [`guide::defining`].
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

/// Derives `Serialize`, `Deserialize` and `JsonSchema` for a tool's input
/// and output types from the [`serde`] and [`schemars`] this crate
/// re-exports, so that a crate that depends on `tool-runtime` alone (and
/// tokio, for its runtime) needs neither in its `Cargo.toml`.
///
/// `#[tool_data(Serialize, JsonSchema)]` writes
/// `#[derive(::tool_runtime::serde::Serialize, ::tool_runtime::schemars::JsonSchema)]`
/// and the `#[serde(crate = "...")]` and `#[schemars(crate = "...")]`
/// attributes by which those derives find their crates (a derive cannot
/// write them: it adds items, never attributes). List the derives the type
/// needs, in any order; any other derive goes in `#[derive(...)]` as
/// usual, and `#[serde(...)]` and `#[schemars(...)]` on the type and its
/// fields mean what they always mean. `crate = path` names the runtime for
/// a crate that re-exports it, as on `#[tool]`.
///
/// ```
/// use tool_runtime::prelude::*;
///
/// #[tool_data(Deserialize, JsonSchema)]
/// struct NewTicket {
///     /// One line.
///     title: String,
///     #[serde(default)]
///     urgent: bool,
/// }
///
/// #[tool_data(Serialize, JsonSchema)]
/// #[derive(Debug)]
/// struct Ticket { id: u32, title: String }
///
/// /// Open a support ticket.
/// #[tool]
/// async fn open_ticket(Input(ticket): Input<NewTicket>) -> Ticket {
///     Ticket { id: if ticket.urgent { 1 } else { 2 }, title: ticket.title }
/// }
/// ```
pub use tool_macros::tool_data;

/// Derives [`Form`](trait@Form) for a struct a tool asks its user to fill
/// in ([`Ctx::elicit`]), or makes an enum of unit variants a form's
/// choices. Each field of the struct must be one MCP's flat forms carry
/// (a string, a number, a boolean, a choice, several choices, or an
/// `Option` of one): anything else fails to compile, at the field. The
/// type also derives `Deserialize` and `JsonSchema` (or is written with
/// `#[tool_data(Deserialize, JsonSchema)]`), from which its form's schema
/// is made; `#[form(crate = path)]` names the runtime for a crate that
/// re-exports it.
pub use tool_macros::Form;

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
        ApprovalFloor, BoxedTool, CallResult, Ctx, DynamicTool, Input, LogLevel, PolicyKind, Reconciled, Registry, Run, ScopedTool, Selection,
        StepView, ToolCall, ToolError, UserContext, Verdict, tool, tool_data, tools,
    };
}

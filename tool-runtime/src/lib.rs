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
//! let ok = registry.invoke(app.clone(), "lookup_order", r#"{"order_id": "A-1"}"#).await;
//! assert_eq!(ok.text, "A-1: shipped (items: false)");
//! let err = registry.invoke(app, "lookup_order", r#"{"order_id": "B-1"}"#).await;
//! assert_eq!(err.text, "code: ORDER_NOT_FOUND, status: 404, userMessage: No such order; ask for the number on the invoice.");
//! # }
//! ```
//!
//! See the crate's README for the attribute reference.
#![deny(missing_docs)]

mod context;
pub mod docs;
mod dynamic;
mod error;
mod guard;
mod output;
mod pipeline;
mod policy;
mod registry;
mod report;
mod result;
mod run;
pub mod schema;
mod definition;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use context::{Ctx, Progress, ProgressSink, StepView, UserContext};
pub use dynamic::DynamicTool;
pub use error::{ToolError, INTERNAL_ERROR_CODE};
pub use guard::ArgumentLimits;
pub use pipeline::{Arguments, Call, CallOutcome, PendingCall};
pub use policy::{ApprovalFloor, PolicyKind, Verdict};
pub use registry::{BuildError, BuildProblem, Registry, RegistryBuilder};
pub use report::{ErrorKind, ErrorReport};
pub use result::{CallResult, ResultKind};
pub use run::{Run, RunError, RunState, StepResults, ToolCall};
pub use definition::{Annotations, BoxError, BoxFuture, BoxedTool, EndsRun, Tool, ToolDefinition};

pub use serde_json;
pub use tokio_util::sync::CancellationToken;

/// Defines a tool from an `async fn`. See the crate documentation and the
/// README for every key.
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
        StepView, ToolCall, ToolError, UserContext, Verdict,
    };
}

//! The registry: the public face of an app's tools. It is built once from
//! a [`RegistryBuilder`] (the checks are the tool table's, `table`), and
//! every call, run and approval starts here; the work is done below it, by
//! the pipeline's stages (`pipeline`), the host's side of approval
//! (`approval`) and runs (`run`), over the tool table.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::call::{Arguments, CallOutcome, ExternalCall, PendingCall};
use crate::call_report::CallReport;
use crate::error_report::ErrorReport;
use crate::external::ProposalError;
use crate::guard::ArgumentLimits;
use crate::intent::Classifier;
use crate::origin::Origin;
use crate::pipeline::Call;
use crate::result::CallResult;
use crate::run::Run;
use crate::table::{BuildError, Config, ToolTable};
use crate::tool::{BoxedTool, ToolDefinition};

/// The tools an app offers the model, in declaration order, with the
/// limits and hooks every call goes through.
///
/// Build it once with [`Registry::builder`]; it is cheap to clone and can
/// serve calls from many tasks at once.
///
/// ```
/// use std::sync::Arc;
/// use tool_runtime::prelude::*;
///
/// /// Add two numbers.
/// #[tool(read_only)]
/// async fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let registry = Registry::<()>::builder().tools(tools![add]).build().unwrap();
/// let result = registry.invoke(&Arc::new(()), "add", r#"{"a": 2, "b": 3}"#).await;
/// assert_eq!(result.text, "5");
/// # }
/// ```
pub struct Registry<App> {
    tools: Arc<ToolTable<App>>,
}

impl<App> Clone for Registry<App> {
    fn clone(&self) -> Self {
        Registry { tools: self.tools.clone() }
    }
}

impl<App: Send + Sync + 'static> Registry<App> {
    /// Starts a registry.
    pub fn builder() -> RegistryBuilder<App> {
        RegistryBuilder { tools: Vec::new(), config: Config::default() }
    }

    /// The tools' definitions, in declaration order.
    pub fn definitions(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.tools.definitions()
    }

    /// The definitions of the tools declared with this `kind`, in
    /// declaration order.
    ///
    /// A kind is a declared grouping for registries and documentation, not
    /// an authorisation boundary: the author of a tool chooses it, and no
    /// call is allowed or refused by it. Decide access with `policy`.
    ///
    /// ```
    /// use tool_runtime::prelude::*;
    ///
    /// /// Read the status.
    /// #[tool(kind = "read")]
    /// async fn status() -> String { "ok".into() }
    ///
    /// /// Restart the service.
    /// #[tool(kind = "write")]
    /// async fn restart() -> String { "restarted".into() }
    ///
    /// let registry = Registry::<()>::builder().tools(tools![status, restart]).build().unwrap();
    /// let reads: Vec<&str> = registry.definitions_of_kind("read").map(|def| def.name.as_str()).collect();
    /// assert_eq!(reads, ["status"]);
    /// ```
    pub fn definitions_of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a ToolDefinition> + 'a {
        self.definitions().filter(move |def| def.kind.as_deref() == Some(kind))
    }

    /// The definitions of the tools of this [`Origin`] (typed, dynamic,
    /// provider-defined, external), in declaration order.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_runtime::prelude::*;
    /// use tool_runtime::Origin;
    ///
    /// /// Pick a date in the user's calendar.
    /// #[tool(external)]
    /// async fn pick_date(month: u32) -> String;
    ///
    /// let registry = Registry::<()>::builder()
    ///     .tools(tools![pick_date])
    ///     .tool(DynamicTool::external("pick_file", "Pick a file.", json!({"type": "object"})))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(registry.definitions_of_origin(Origin::External).count(), 2);
    /// assert_eq!(registry.definitions_of_origin(Origin::Typed).count(), 0);
    /// ```
    pub fn definitions_of_origin(&self, origin: Origin) -> impl Iterator<Item = &ToolDefinition> + '_ {
        self.definitions().filter(move |def| def.origin == origin)
    }

    /// The definition of one tool.
    pub fn definition(&self, name: &str) -> Option<&ToolDefinition> {
        self.tools.definition(name)
    }

    /// The tool names, in declaration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.names()
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.tools.entries.len()
    }

    /// Whether the registry has no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.entries.is_empty()
    }

    /// The limits every call's arguments are checked against.
    pub fn argument_limits(&self) -> ArgumentLimits {
        self.tools.config.limits
    }

    /// How long a pending call may wait for a human's approval (set with
    /// [`RegistryBuilder::approval_ttl`]). An approval given later does not
    /// run the call: [`approve`](Self::approve) and
    /// [`approve_with`](Self::approve_with) return a
    /// [`Rejected`](crate::ResultKind::Rejected) result with the code
    /// `APPROVAL_EXPIRED` instead.
    pub fn approval_ttl(&self) -> Duration {
        self.tools.approval_ttl()
    }

    /// Sets up a call of `name` with `args`; `.await` it for the outcome.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use tool_runtime::prelude::*;
    /// /// Echo.
    /// #[tool]
    /// async fn echo(text: String) -> String { text }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let registry = Registry::<()>::builder().tools(tools![echo]).build().unwrap();
    /// let outcome = registry
    ///     .call(&Arc::new(()), "echo", r#"{"text": "hi"}"#)
    ///     .user(UserContext::new("u-1"))
    ///     .call_id("toolu_01")
    ///     .await;
    /// assert_eq!(outcome.into_result().unwrap().text, "hi");
    /// # }
    /// ```
    ///
    /// The app state is borrowed for the call: a tool that takes a
    /// [`Ctx`](crate::Ctx) gets a clone of the `Arc`; one that does not
    /// costs no reference count.
    pub fn call<'a>(&'a self, app: &'a Arc<App>, name: &str, args: impl Into<Arguments<'a>>) -> Call<'a, App> {
        Call::new(&self.tools, app, name, args.into())
    }

    /// Calls `name` with `args` as an anonymous user and returns what the
    /// model reads. A call that needs approval is not run: its result says
    /// it is pending (use [`call`](Self::call) to approve it).
    ///
    /// The app state is borrowed for the call, as by [`call`](Self::call).
    /// The arguments are read when `invoke` is called (stages 1 to 3 need
    /// no waiting); the tool runs when the future is awaited.
    pub fn invoke<'a>(&'a self, app: &'a Arc<App>, name: &str, args: impl Into<Arguments<'a>>) -> impl Future<Output = CallResult> + 'a {
        crate::pipeline::invoke(&self.tools, app, name, args.into())
    }

    /// Runs a pending call as it is, since a human approved it.
    ///
    /// A call that waited longer than [`approval_ttl`](Self::approval_ttl)
    /// is not run: the result is [`Rejected`](crate::ResultKind::Rejected)
    /// with the code `APPROVAL_EXPIRED`.
    /// (A call that waits for the answers to its tool's questions is
    /// decided in its run, [`Run::approvals`](crate::Run::approvals); given
    /// here, it reads that it still waits.)
    pub async fn approve(&self, pending: PendingCall<App>) -> CallResult {
        if pending.asks() {
            return pending.pending_result();
        }
        waiting_read(crate::approval::approve(&self.tools, pending).await)
    }

    /// Runs a pending call with the input a human edited. The edited input
    /// goes through stages 1 to 4 again: a `Deny` refuses it;
    /// `NeedsApproval` runs it, since a human approved exactly that input.
    ///
    /// A call that waited longer than [`approval_ttl`](Self::approval_ttl)
    /// is not run, as by [`approve`](Self::approve).
    pub async fn approve_with(&self, pending: PendingCall<App>, edited: impl Into<Arguments<'_>>) -> CallResult {
        if pending.asks() {
            return pending.pending_result();
        }
        waiting_read(crate::approval::approve_with(&self.tools, pending, edited.into()).await)
    }

    /// Ends a pending call without running it; the model reads `text`, or
    /// the tool's rejection text, or a generic rejection.
    pub fn reject(&self, pending: PendingCall<App>, text: Option<&str>) -> CallResult {
        crate::approval::reject(&self.tools, pending, text)
    }

    /// The typed proposal of an external call (one a result of kind
    /// [`External`](crate::ResultKind::External) handed over, or one a
    /// run keeps in [`Run::external`](crate::Run::external)), as its tool's
    /// `resolve` converts its validated input: the value the host runs,
    /// rather than the input as JSON.
    ///
    /// The conversion runs again here, from the call's input, so that a
    /// call resumed from a journal (which keeps the input only) has its
    /// proposal too: keep `resolve` a pure function of the input.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tool_runtime::prelude::*;
    ///
    /// /// What the calendar app is asked to show.
    /// pub struct SlotRequest { pub day: String, pub minutes: u32 }
    ///
    /// fn to_request(input: &pick_slot) -> Result<SlotRequest, String> {
    ///     let minutes = input.hours.checked_mul(60).ok_or("Ask for fewer hours.")?;
    ///     Ok(SlotRequest { day: input.day.clone(), minutes })
    /// }
    ///
    /// /// Let the user pick a slot in their calendar app.
    /// #[tool(external, resolve = to_request)]
    /// async fn pick_slot(day: String, hours: u32) -> String;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let registry = Registry::<()>::builder().tools(tools![pick_slot]).build().unwrap();
    /// let handed = registry.invoke(&Arc::new(()), "pick_slot", r#"{"day": "Monday", "hours": 2}"#).await;
    /// let request: SlotRequest = registry.proposal(&handed.external_call().unwrap()).unwrap();
    /// assert_eq!((request.day.as_str(), request.minutes), ("Monday", 120));
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`ProposalError::NoResolve`] when the call's tool is not an external
    /// tool of this registry with a `resolve`; [`ProposalError::Refused`]
    /// when its input does not convert; [`ProposalError::OtherType`] when
    /// the proposal is not a `P`.
    pub fn proposal<P: 'static>(&self, call: &ExternalCall) -> Result<P, ProposalError> {
        crate::external::proposal(&self.tools, call)
    }

    /// This registry's tools and settings, plus `tools` (typed or dynamic),
    /// checked as [`build`](crate::RegistryBuilder::build) checks them: a
    /// name twice, a `requires` naming no tool, an unusable schema. This
    /// registry is unchanged. For tools of one run, see
    /// [`Run::with_tools`].
    ///
    /// Every tool's schema is compiled again: it costs what building the
    /// registry costs, so do it once per run, not per call.
    ///
    /// # Errors
    ///
    /// Every problem found, as [`build`](crate::RegistryBuilder::build)
    /// reports them.
    pub fn with_tools(&self, tools: impl IntoIterator<Item = BoxedTool<App>>) -> Result<Registry<App>, BuildError> {
        Ok(Registry { tools: Arc::new(self.tools.with_tools(tools)?) })
    }

    /// Starts a run over this registry's tools for `app`.
    pub fn run(&self, app: Arc<App>) -> Run<App> {
        Run::new(self.tools().clone(), app)
    }

    /// The intent classifier's call over this registry's tools.
    pub fn classifier(&self) -> Classifier {
        Classifier::new(self.definitions(), self.tools.config.intent_opt_in)
    }

    /// The tool table under this registry, for what works below it (a
    /// run, the MCP server, the approvals inbox).
    pub(crate) fn tools(&self) -> &Arc<ToolTable<App>> {
        &self.tools
    }
}

/// The result of a call a host approved outside any run: a tool that
/// asks stops at its question (where no one can be asked, it reads so), so
/// a call still waiting reads that it waits.
fn waiting_read<App>(outcome: CallOutcome<App>) -> CallResult {
    match outcome {
        CallOutcome::Done(result) => result,
        CallOutcome::NeedsApproval(pending) => pending.pending_result(),
    }
}

impl<App> fmt::Debug for Registry<App> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry").field("tools", &self.tools.entries.iter().map(|e| &e.def.name).collect::<Vec<_>>()).finish_non_exhaustive()
    }
}

/// Collects tools and settings; [`build`](Self::build) checks them.
pub struct RegistryBuilder<App> {
    pub(crate) tools: Vec<BoxedTool<App>>,
    pub(crate) config: Config,
}

impl<App: Send + Sync + 'static> RegistryBuilder<App> {
    /// Adds tools, usually `tools![a, b, c]`, keeping their order.
    pub fn tools(mut self, tools: impl IntoIterator<Item = BoxedTool<App>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Adds one tool, for example a [`DynamicTool`](crate::DynamicTool).
    pub fn tool(mut self, tool: impl Into<BoxedTool<App>>) -> Self {
        self.tools.push(tool.into());
        self
    }

    /// Largest accepted argument text, in bytes (default 1 MiB).
    pub fn max_argument_bytes(mut self, bytes: usize) -> Self {
        self.config.limits.max_bytes = bytes;
        self
    }

    /// Deepest accepted nesting of arguments (default 64, at most
    /// [`MAX_ARGUMENT_DEPTH`](crate::MAX_ARGUMENT_DEPTH): JSON text
    /// nested deeper does not parse, and [`build`](Self::build) refuses a
    /// larger setting).
    pub fn max_argument_depth(mut self, depth: usize) -> Self {
        self.config.limits.max_depth = depth;
        self
    }

    /// Most JSON values accepted in one call's arguments (default 32,768;
    /// see [`ArgumentLimits::max_values`]).
    pub fn max_argument_values(mut self, values: usize) -> Self {
        self.config.limits.max_values = values;
        self
    }

    /// Timeout of tools that set none (default 30 s).
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.config.default_timeout = timeout;
        self
    }

    /// Output limit, in characters, of tools that set none (default 20,000).
    pub fn default_max_output_chars(mut self, chars: usize) -> Self {
        self.config.default_max_output_chars = chars;
        self
    }

    /// Most bytes one content block of a result may carry (an image, an
    /// audio clip, an embedded resource; default 5 MiB). A result with a
    /// larger block fails with `CONTENT_TOO_LARGE`, a line the model reads;
    /// text blocks do not count (they are cut at `max_output_chars`).
    pub fn max_block_bytes(mut self, bytes: usize) -> Self {
        self.config.content_limits.per_block = bytes;
        self
    }

    /// Most bytes the content blocks of one result may carry in all
    /// (default 20 MiB), counted as [`max_block_bytes`](Self::max_block_bytes) counts.
    pub fn max_content_bytes(mut self, bytes: usize) -> Self {
        self.config.content_limits.per_result = bytes;
        self
    }

    /// Most content blocks in one result (default 100). A result with more
    /// fails with `CONTENT_TOO_LARGE`, a line the model reads.
    pub fn max_blocks(mut self, blocks: usize) -> Self {
        self.config.content_limits.blocks = blocks;
        self
    }

    /// Most characters of a resource link's uri, name or description, and
    /// of an embedded resource's uri (default 2,048). A longer one fails the
    /// call with `CONTENT_TOO_LARGE`, a line the model reads that does not
    /// quote it. (A block's MIME type is at most
    /// [`MAX_MIME_TYPE_BYTES`](crate::MAX_MIME_TYPE_BYTES).)
    pub fn max_link_chars(mut self, chars: usize) -> Self {
        self.config.content_limits.link_chars = chars;
        self
    }

    /// How long a call that needs approval may wait for the human (default
    /// [`DEFAULT_APPROVAL_TTL`](crate::DEFAULT_APPROVAL_TTL), 10 minutes), counted from the moment it
    /// was parked. Approving it later does not run it: the model reads that
    /// the approval expired and the call was not run. A waiting approval
    /// holds the call's input and context, so the limit also bounds what
    /// forgotten approvals keep in memory.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use tool_runtime::prelude::*;
    /// let registry = Registry::<()>::builder().approval_ttl(Duration::from_secs(120)).build().unwrap();
    /// assert_eq!(registry.approval_ttl(), Duration::from_secs(120));
    /// ```
    pub fn approval_ttl(mut self, ttl: Duration) -> Self {
        self.config.approval_ttl = ttl;
        self
    }

    /// Called with the full detail of every failed call: tool errors,
    /// internal errors, panics, timeouts and failing predicates. None of it
    /// reaches the model.
    pub fn on_tool_error(mut self, hook: impl Fn(&ErrorReport) + Send + Sync + 'static) -> Self {
        self.config.on_tool_error = Some(Arc::new(hook));
        self
    }

    /// Called with every outcome of every call ([`CallReport`]: the result,
    /// who called, when and how long it took): a success, a failure, a
    /// refusal (invalid arguments, a policy's or a human's, an unknown
    /// tool), a call parked for approval and its decision, an external
    /// call handed over and its result. For logging the sub-flows of a run;
    /// a tool's own hook (`#[tool(on_result = path)]`,
    /// [`DynamicTool::on_result`](crate::DynamicTool::on_result)) sees its
    /// calls' outcomes first.
    ///
    /// Hooks run off the call's path, on a blocking thread: the call's
    /// result does not wait for them, a hook that blocks or never returns
    /// holds no call, and one that panics is logged and changes nothing. So
    /// reports of calls close together may arrive in either order; each
    /// carries its own times. A registry without a hook, and a call of a
    /// tool without one, make no report.
    pub fn on_result(mut self, hook: impl Fn(&CallReport) + Send + Sync + 'static) -> Self {
        self.config.on_result = Some(Arc::new(hook));
        self
    }

    /// Runs the schema validator on every call, even for tools whose schema
    /// says nothing their input type does not check while it is parsed
    /// (by default those skip it on the happy path, and read text arguments
    /// straight into the input). Turn it on when an input type has a
    /// hand-written `Deserialize` that accepts more than its `JsonSchema`
    /// states.
    pub fn validate_every_call(mut self, always: bool) -> Self {
        self.config.validate_every_call = always;
        self
    }

    /// Checks each successful output against the tool's output schema (on
    /// by default in debug builds, off in release builds). An output that
    /// does not match is never passed on: the model reads the generic 500
    /// line, and the report (kind [`ErrorKind::Output`](crate::ErrorKind::Output))
    /// says which part of the output is wrong. It catches a `Serialize` that
    /// writes what the type's `JsonSchema` does not admit. A tool error's
    /// structured value (a typed failure) is checked the same way against
    /// the tool's [`failure_schema`](crate::ToolDefinition::failure_schema).
    pub fn validate_outputs(mut self, validate: bool) -> Self {
        self.config.validate_outputs = validate;
        self
    }

    /// How long a policy predicate may take (default 10 s). One that takes
    /// longer denies the call (fail closed, code `POLICY_TIMEOUT`) and is
    /// reported; a predicate whose call is cancelled meanwhile is dropped
    /// and the call reads as cancelled. A synchronous predicate runs on a
    /// blocking thread (`spawn_blocking`), raced against this limit: one
    /// still running at it cannot be stopped, so it finishes there and its
    /// verdict is dropped.
    pub fn policy_timeout(mut self, timeout: Duration) -> Self {
        self.config.policy_timeout = timeout;
        self
    }

    /// How many calls of one [`Run`](crate::Run) (or one MCP session) may
    /// wait for a human at once (default 16). A call that needs approval beyond that is not
    /// parked: the model reads that too many calls wait (code
    /// `TOO_MANY_PENDING`) and may try again once some are decided.
    pub fn max_pending_approvals(mut self, max: usize) -> Self {
        self.config.max_pending = max;
        self
    }

    /// How many calls of external tools one [`Run`](crate::Run) may have
    /// handed to the host and not yet had completed, counting those
    /// waiting for approval (default 64). A call beyond that is not handed
    /// over: the model reads that too many calls wait for the application
    /// (code `TOO_MANY_EXTERNAL`) and may try again once some are completed.
    pub fn max_external_calls(mut self, max: usize) -> Self {
        self.config.max_external = max;
        self
    }

    /// Lists to the intent classifier ([`Registry::classifier`],
    /// [`Run::classifier`](crate::Run::classifier)) only the tools that opt in with
    /// `#[tool(as_intent)]` ([`DynamicTool::as_intent`](crate::DynamicTool::as_intent)),
    /// rather than every tool but the `always_active` ones (the default).
    /// The classifier then chooses among a few entry points; a tool it does
    /// not list is offered in a turn only when it is `always_active` or
    /// required by one chosen. [`build`](Self::build) fails when no tool
    /// opts in.
    ///
    /// ```
    /// use tool_runtime::prelude::*;
    ///
    /// /// Handle a refund request.
    /// #[tool(as_intent, classification = "Refunds")]
    /// async fn refund_request(order_id: String) -> String { order_id }
    ///
    /// /// Look up an order.
    /// #[tool(read_only)]
    /// async fn lookup_order(order_id: String) -> String { order_id }
    ///
    /// let registry = Registry::<()>::builder().tools(tools![refund_request, lookup_order]).intent_opt_in(true).build().unwrap();
    /// let prompt = registry.classifier().prompt().to_owned();
    /// assert!(prompt.contains("- refund_request: Refunds"));
    /// assert!(!prompt.contains("lookup_order"));
    /// ```
    pub fn intent_opt_in(mut self, opt_in: bool) -> Self {
        self.config.intent_opt_in = opt_in;
        self
    }

    /// Builds every schema, compiles every validator and checks the tools
    /// together: unique names, names the providers accept, `requires` and
    /// `related` naming registered tools. Every problem is reported at once.
    ///
    /// # Errors
    ///
    /// Every problem found ([`BuildError`]).
    pub fn build(self) -> Result<Registry<App>, BuildError> {
        Ok(Registry { tools: Arc::new(ToolTable::build(self.tools, self.config)?) })
    }
}

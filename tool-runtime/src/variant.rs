//! Variants of a typed tool, made at registration: the same function and
//! input type under other keys (name, title, description, tags, policy,
//! approval, a narrowed input schema), for one registry, while the
//! `#[tool]` itself is unchanged. The keys are checked at build as the
//! macro checks its own (`contradictions`); a narrowed schema must only
//! narrow, as a scope's rebuilt schema must (`scope::widening`).

use std::any::Any;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::call_report::CallReport;
use crate::context::{CallState, Ctx, StepView};
use crate::policy::{PolicyKind, Verdict};
use crate::scope::ScopedTool;
use crate::tool::{
    BoxedTool, CallFuture, ErasedTool, Failure, ParsedFrom, PolicyCall, Proposal, Reconciled, TextCall, Tool, ToolDefinition, ToolOutput,
};
use crate::validation::Properties;

/// A typed predicate, erased: `None` when the input is not the tool's.
type Predicate<App> = Arc<dyn Fn(&(dyn Any + Send + Sync), &Ctx<App>) -> Option<Verdict> + Send + Sync>;
type Narrowing = Arc<dyn Fn(&mut Value) + Send + Sync>;

/// A variant of the typed tool `T` (a `#[tool]`), for one registry: the
/// same function, run as the tool runs, under keys of its own. What it
/// does not set is the tool's. The tool itself is unchanged: register both
/// (under different names) or either.
///
/// [`RegistryBuilder::build`](crate::RegistryBuilder::build) checks the
/// keys as the macro checks its own: a denied variant that also needs
/// approval, a list with an empty or repeated entry, and a narrowed input
/// schema that would accept an input the tool's own refuses (it may only
/// add or tighten constraints, as a scope's may: see
/// [intent](crate::guide::intent)) are each a
/// [`BuildProblem::Variant`](crate::BuildProblem::Variant).
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use tool_runtime::prelude::*;
/// use tool_runtime::{ResultKind, Variant};
///
/// /// Refund an order.
/// #[tool(tags("billing"))]
/// async fn refund(order_id: String, cents: u32) -> String { format!("refunded {cents} on {order_id}") }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// // For the self-service desk: small refunds only, each approved by a human.
/// let small_refund = Variant::of::<refund>()
///     .name("small_refund")
///     .description("Refund an order, up to 50.00.")
///     .narrow(|schema| schema["properties"]["cents"]["maximum"] = json!(5_000))
///     .needs_approval();
/// let registry = Registry::<()>::builder().tools(tools![refund]).tool(small_refund).build().unwrap();
/// let app = Arc::new(());
/// let too_much = registry.invoke(&app, "small_refund", r#"{"order_id": "A-1", "cents": 9000}"#).await;
/// assert_eq!(too_much.kind, ResultKind::InvalidArguments);
/// let waits = registry.invoke(&app, "small_refund", r#"{"order_id": "A-1", "cents": 500}"#).await;
/// assert_eq!(waits.kind, ResultKind::PendingApproval);
/// let original = registry.invoke(&app, "refund", r#"{"order_id": "A-1", "cents": 9000}"#).await;
/// assert_eq!(original.text, "refunded 9000 on A-1", "the tool itself is unchanged");
/// # }
/// ```
pub struct Variant<App, T> {
    name: Option<String>,
    title: Option<String>,
    description: Option<String>,
    tags: Option<Vec<String>>,
    policy: Option<PolicyKind>,
    predicate: Option<Predicate<App>>,
    raise: bool,
    narrow: Option<Narrowing>,
    tool: PhantomData<fn() -> T>,
}

impl<App: Send + Sync + 'static> Variant<App, ()> {
    /// A variant of the `#[tool]` `T` (the type `#[tool]` defines beside
    /// the function, as `tools![...]` lists it), with all of `T`'s keys
    /// until one is set.
    pub fn of<T: Tool<App>>() -> Variant<App, T> {
        Variant {
            name: None,
            title: None,
            description: None,
            tags: None,
            policy: None,
            predicate: None,
            raise: false,
            narrow: None,
            tool: PhantomData,
        }
    }
}

impl<App: Send + Sync + 'static, T: Tool<App>> Variant<App, T> {
    /// The name the model calls the variant (`name = "..."`), checked as
    /// any tool name is.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// A human-readable title (`title = "..."`).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// What the model reads about the variant (`description = "..."`).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The variant's tags, instead of the tool's (`tags(...)`): for
    /// filtering and for an [`ApprovalFloor`](crate::ApprovalFloor).
    pub fn tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.tags = Some(tags.into_iter().map(Into::into).collect());
        self
    }

    /// A static policy instead of the tool's (`policy = allow | deny |
    /// needs_approval`); [`PolicyKind::Deny`] keeps a variant registered
    /// that no call may run. For a predicate, see
    /// [`policy_fn`](Self::policy_fn).
    pub fn policy(mut self, policy: PolicyKind) -> Self {
        self.policy = Some(policy);
        self.predicate = None;
        self
    }

    /// A predicate instead of the tool's policy (`policy = path`), on the
    /// tool's own parsed input (the type `#[tool]` defines) and the call's
    /// context. It may block: it runs on a blocking thread under the
    /// registry's policy timeout, and fails closed, as the tool's would.
    pub fn policy_fn(mut self, predicate: impl Fn(&T::Input, &Ctx<App>) -> Verdict + Send + Sync + 'static) -> Self {
        self.policy = Some(PolicyKind::Predicate);
        self.predicate = Some(Arc::new(move |input, ctx| Some(predicate(input.downcast_ref::<T::Input>()?, ctx))));
        self
    }

    /// Raises the approval: every call the policy (the tool's or the
    /// variant's) allows waits for a human; a denied call stays denied, as
    /// under an [`ApprovalFloor`](crate::ApprovalFloor).
    pub fn needs_approval(mut self) -> Self {
        self.raise = true;
        self
    }

    /// Narrows the input schema: `narrowing` edits a copy of the tool's own
    /// (adds a `maximum`, removes `enum` values, requires a property...),
    /// and the variant's calls are validated against the result. It may
    /// only narrow: a schema that would accept an input the tool's own
    /// refuses fails the build, with the JSON pointer where it widens.
    pub fn narrow(mut self, narrowing: impl Fn(&mut Value) + Send + Sync + 'static) -> Self {
        self.narrow = Some(Arc::new(narrowing));
        self
    }
}

impl<App: Send + Sync + 'static, T: Tool<App>> From<Variant<App, T>> for BoxedTool<App> {
    fn from(variant: Variant<App, T>) -> Self {
        let Variant { name, title, description, tags, policy, predicate, raise, narrow, .. } = variant;
        let keys = Keys { name, title, description, tags, policy, raise, narrow };
        BoxedTool::dynamic(Arc::new(Erased { of: BoxedTool::of::<T>().inner, of_name: T::META.name, keys, predicate }))
    }
}

/// The keys a variant sets over its tool's.
struct Keys {
    name: Option<String>,
    title: Option<String>,
    description: Option<String>,
    tags: Option<Vec<String>>,
    policy: Option<PolicyKind>,
    raise: bool,
    narrow: Option<Narrowing>,
}

/// A variant as the registry runs it: its tool, erased, under its keys.
struct Erased<App> {
    of: Arc<dyn ErasedTool<App>>,
    of_name: &'static str,
    keys: Keys,
    predicate: Option<Predicate<App>>,
}

impl<App: Send + Sync + 'static> Erased<App> {
    /// The tool's input schema, narrowed; an error says why it cannot be.
    fn narrowed(&self, schema: &Value) -> Result<Option<Value>, String> {
        let Some(narrow) = &self.keys.narrow else { return Ok(None) };
        let mut narrowed = schema.clone();
        std::panic::catch_unwind(AssertUnwindSafe(|| narrow(&mut narrowed)))
            .map_err(|payload| format!("its narrowing function panicked: {}", crate::error_report::panic_message(payload.as_ref())))?;
        Ok(Some(narrowed))
    }
}

impl<App: Send + Sync + 'static> ErasedTool<App> for Erased<App> {
    fn definition(&self) -> Result<ToolDefinition, String> {
        let mut def = self.of.definition()?;
        let keys = &self.keys;
        if let Some(name) = &keys.name {
            def.name.clone_from(name);
        }
        if let Some(title) = &keys.title {
            def.title = Some(title.clone());
        }
        if let Some(description) = &keys.description {
            def.description.clone_from(description);
        }
        if let Some(tags) = &keys.tags {
            def.tags.clone_from(tags);
        }
        if let Some(policy) = keys.policy {
            def.policy = policy;
        }
        if keys.raise && def.policy == PolicyKind::Allow {
            def.policy = PolicyKind::NeedsApproval;
        }
        // A narrowing that panics is a contradiction, reported there.
        if let Ok(Some(narrowed)) = self.narrowed(&def.input_schema) {
            def.input_schema = Arc::new(narrowed);
        }
        Ok(def)
    }

    fn contradictions(&self) -> Vec<String> {
        let Ok(own) = self.of.definition() else { return Vec::new() };
        contradictions(&self.keys, &own, self.narrowed(&own.input_schema))
    }

    fn variant_of(&self) -> Option<&'static str> {
        Some(self.of_name)
    }

    fn parse(&self, args: &Map<String, Value>) -> Result<Box<dyn Any + Send + Sync>, serde_json::Error> {
        self.of.parse(args)
    }

    fn parse_text(&self, text: &str, properties: &Properties) -> Option<Box<dyn Any + Send + Sync>> {
        self.of.parse_text(text, properties)
    }

    fn run_text(&self, text: &str, properties: &Properties, call: &mut CallState<'_, App>, args: &ParsedFrom<'_>) -> Option<TextCall> {
        self.of.run_text(text, properties, call, args)
    }

    fn parses_types(&self) -> bool {
        self.of.parses_types()
    }

    fn verdict<'a>(&'a self, input: &'a (dyn Any + Send + Sync), ctx: &'a Ctx<App>) -> PolicyCall<'a> {
        let call = match &self.predicate {
            Some(predicate) => PolicyCall::Blocking(Box::new(move || predicate(input, ctx).ok_or_else(|| "policy input of the wrong type".into()))),
            None => self.of.verdict(input, ctx),
        };
        if !self.keys.raise {
            return call;
        }
        match call {
            PolicyCall::Blocking(judge) => PolicyCall::Blocking(Box::new(move || judge().map(|verdict| verdict.with_floor(true)))),
            PolicyCall::Async(judged) => PolicyCall::Async(Box::pin(async move { judged.await.map(|verdict| verdict.with_floor(true)) })),
        }
    }

    fn visible(&self, view: &StepView<'_, App>) -> bool {
        self.of.visible(view)
    }

    fn on_result(&self, report: &CallReport) {
        self.of.on_result(report);
    }

    fn parallel_safe(&self, args: &Value) -> Option<bool> {
        self.of.parallel_safe(args)
    }

    fn effect_key(&self, input: &(dyn Any + Send + Sync)) -> Option<String> {
        self.of.effect_key(input)
    }

    fn reconcile(&self, input: &(dyn Any + Send + Sync), ctx: &Ctx<App>) -> Reconciled<Result<ToolOutput, Failure>> {
        self.of.reconcile(input, ctx)
    }

    fn resolve(&self, input: &(dyn Any + Send + Sync)) -> Option<Result<Proposal, String>> {
        self.of.resolve(input)
    }

    fn scope(&self, scope: &Value, tool: &mut ScopedTool) -> Result<(), String> {
        self.of.scope(scope, tool)
    }

    fn call(&self, input: Box<dyn Any + Send + Sync>, call: &mut CallState<'_, App>, args: &ParsedFrom<'_>) -> CallFuture {
        self.of.call(input, call, args)
    }
}

/// The variant's keys that contradict each other or the tool (`own`, its
/// definition), each worded with what to do, as the macro words its own;
/// `narrowed` is the narrowed input schema, if the variant narrows it.
fn contradictions(keys: &Keys, own: &ToolDefinition, narrowed: Result<Option<Value>, String>) -> Vec<String> {
    let mut found = Vec::new();
    match keys.policy {
        Some(PolicyKind::Deny) if keys.raise => {
            found.push("`policy(Deny)` contradicts `needs_approval()`: a human is never asked about a call that is refused; keep one".to_owned())
        }
        Some(PolicyKind::NeedsApproval) if keys.raise => found.push(
            "`policy(NeedsApproval)` already asks a human about every call; `needs_approval()` raises an allowed call to that: keep one".to_owned(),
        ),
        _ => {}
    }
    if let Some(tags) = &keys.tags {
        for (at, tag) in tags.iter().enumerate() {
            if tag.trim().is_empty() {
                found.push("an entry of `tags` is empty; remove it".to_owned());
            } else if tags[..at].contains(tag) {
                found.push(format!("`tags` lists \"{tag}\" twice; remove the repeated entry"));
            }
        }
    }
    if keys.title.as_deref().is_some_and(|title| title.trim().is_empty()) {
        found.push("`title` is empty; give the variant a title, or leave the tool's".to_owned());
    }
    match narrowed {
        Err(reason) => found.push(reason),
        Ok(Some(narrowed)) => {
            if let Some(widens) = crate::scope::widening(&own.input_schema, &narrowed) {
                found.push(format!(
                    "its narrowed input schema would accept more than the tool's own ({widens}): a variant may only add or tighten \
                     constraints, so that it accepts no input the tool refuses"
                ));
            }
        }
        Ok(None) => {}
    }
    found
}

//! `DynamicTool` as the registry runs it: its `ErasedTool` implementation
//! (the arguments as its input, its predicates, its handler and recovery,
//! a streaming handler's items drained by `streamed::drain`).

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt;
use serde_json::{Map, Value};

use super::{DynamicTool, EndsRunFn, Handler, RecoverFn};
use crate::call_report::CallReport;
use crate::context::{CallState, Ctx, StepView};
use crate::error::ToolError;
use crate::policy::Verdict;
use crate::scope::ScopedTool;
use crate::tool::{
    BoxError, BoxFuture, CallFuture, EndsRun, ErasedTool, Failure, Output, ParsedFrom, PolicyCall, Proposal, Reconciled, ToolDefinition, ToolOutput,
};

impl<App: Send + Sync + 'static> ErasedTool<App> for DynamicTool<App> {
    fn definition(&self) -> Result<ToolDefinition, String> {
        if self.content_blocks && self.definition.output_schema.is_some() {
            return Err(
                "a dynamic tool with `content_blocks(true)` returns blocks, not a value, so it has no output schema: drop `output_schema`".to_owned()
            );
        }
        let schema = &self.definition.input_schema;
        match schema.get("type") {
            Some(Value::String(kind)) if kind == "object" => Ok(self.definition.clone()),
            _ => Err("a dynamic tool's input schema must have `\"type\": \"object\"` at the root".to_owned()),
        }
    }

    fn contradictions(&self) -> Vec<String> {
        super::checks::contradictions(self)
    }

    fn parse(&self, args: &Map<String, Value>) -> Result<Box<dyn Any + Send + Sync>, serde_json::Error> {
        Ok(Box::new(Value::Object(args.clone())))
    }

    fn parse_text(&self, _text: &str, _properties: &crate::validation::Properties) -> Option<Box<dyn Any + Send + Sync>> {
        // The schema is a dynamic tool's only check: always validated.
        None
    }

    fn parses_types(&self) -> bool {
        false
    }

    fn verdict<'a>(&'a self, input: &'a (dyn Any + Send + Sync), ctx: &'a Ctx<App>) -> PolicyCall<'a> {
        match (&self.policy, input.downcast_ref::<Value>()) {
            (Some(policy), Some(args)) => policy(args, ctx),
            _ => PolicyCall::Async(Box::pin(std::future::ready(Ok(Verdict::Allow)))),
        }
    }

    fn visible(&self, view: &StepView<'_, App>) -> bool {
        self.visible.as_ref().is_none_or(|visible| visible(view))
    }

    fn on_result(&self, report: &CallReport) {
        if let Some(hook) = &self.on_result {
            hook(report);
        }
    }

    fn parallel_safe(&self, args: &Value) -> Option<bool> {
        self.parallel.as_ref().map(|parallel| parallel(args))
    }

    fn reconcile(&self, input: &(dyn Any + Send + Sync), ctx: &Ctx<App>) -> Reconciled<Result<ToolOutput, Failure>> {
        let (Some(hook), Some(input)) = (&self.reconcile, input.downcast_ref::<Value>()) else { return Reconciled::Unknown };
        match hook(input, ctx) {
            Reconciled::Happened(output) => Reconciled::Happened(Ok(ToolOutput { output: Output::of_value(output), ends_run: false })),
            Reconciled::DidNotHappen => Reconciled::DidNotHappen,
            Reconciled::Unknown => Reconciled::Unknown,
        }
    }

    fn resolve(&self, input: &(dyn Any + Send + Sync)) -> Option<Result<Proposal, String>> {
        Some((self.resolve.as_ref()?)(input.downcast_ref::<Value>()?))
    }

    fn effect_key(&self, input: &(dyn Any + Send + Sync)) -> Option<String> {
        Some((self.effect_key.as_ref()?)(input.downcast_ref::<Value>()?))
    }

    fn scope(&self, scope: &Value, tool: &mut ScopedTool) -> Result<(), String> {
        let (Some(rebuild), Some(schema)) = (&self.scope, &self.definition.scope_schema) else { return Ok(()) };
        let validator = jsonschema::draft202012::new(schema).map_err(|err| format!("the scope schema does not compile: {err}"))?;
        match crate::validation::problems(&validator, scope).first() {
            Some(problem) => Err(problem.clone()),
            None => {
                let _: () = rebuild(scope, tool);
                Ok(())
            }
        }
    }

    fn call(&self, input: Box<dyn Any + Send + Sync>, call: &mut CallState<'_, App>, _args: &ParsedFrom<'_>) -> CallFuture {
        let args = input.downcast::<Value>().map(|args| *args).unwrap_or_default();
        // The predicate sees the arguments after the handler took them.
        let ends_run = self.ends_run.clone().map(|predicate| (predicate, args.clone()));
        let recover = self.recover.clone().map(|recovery| (recovery, args.clone()));
        let always = self.definition.ends_run == EndsRun::Always;
        let blocks = self.content_blocks;
        let returned = run(&self.handler, args, call, recover);
        Box::pin(async move {
            match returned.await {
                Ok(value) => {
                    let ends_run = always
                        || match ends_run {
                            Some((EndsRunFn::Sync(predicate), args)) => predicate(&args, &value),
                            Some((EndsRunFn::Async(predicate), args)) => predicate(args, value.clone()).await,
                            None => false,
                        };
                    if !blocks {
                        return Ok(ToolOutput { output: Output::of_value(value), ends_run });
                    }
                    match serde_json::from_value(value) {
                        Ok(content) => Ok(ToolOutput { output: Output::Blocks(content), ends_run }),
                        Err(err) => Err(Failure::Internal(format!("the handler's value is not a list of content blocks: {err}").into())),
                    }
                }
                Err(failure) => Err(failure),
            }
        })
    }
}

/// The handler's output: its value (or its recovery's), or a streaming
/// handler's last item, the items before it sent as preliminary results.
fn run<App: Send + Sync + 'static>(
    handler: &Handler<App>,
    args: Value,
    call: &mut CallState<'_, App>,
    recover: Option<(RecoverFn, Value)>,
) -> BoxFuture<'static, Result<Value, Failure>> {
    match handler {
        Handler::Value(handler) => {
            let future = handler(args, call.ctx().clone());
            Box::pin(async move {
                let returned = match (future.await, recover) {
                    (Err(error), Some((recovery, args))) => recovered(recovery, args, error).await,
                    (returned, _) => returned,
                };
                returned.map_err(Failure::from_error)
            })
        }
        Handler::Streamed(handler) => {
            // Taken before the handler runs, as a `#[tool]`'s is.
            let preliminary = crate::streamed::Preliminary::of(call);
            let future = handler(args, call.ctx().clone());
            Box::pin(async move { crate::streamed::drain(future.await, preliminary).await })
        }
    }
}

/// The recovery's output, or the handler's error when it declines or
/// panics.
async fn recovered(recovery: RecoverFn, args: Value, error: BoxError) -> Result<Value, BoxError> {
    match recovery {
        RecoverFn::Sync(recovery) => match std::panic::catch_unwind(AssertUnwindSafe(|| recovery(&args, &error))) {
            Ok(Some(value)) => Ok(value),
            _ => Err(error),
        },
        RecoverFn::Async(recovery) => {
            let shared = Arc::new(error);
            let recovered = match std::panic::catch_unwind(AssertUnwindSafe(|| recovery(args, shared.clone()))) {
                Ok(future) => AssertUnwindSafe(future).catch_unwind().await.ok().flatten(),
                Err(_) => None,
            };
            match recovered {
                Some(value) => Ok(value),
                None => Err(Arc::try_unwrap(shared).unwrap_or_else(|kept| match kept.downcast_ref::<ToolError>() {
                    // The recovery kept a handle on the error: the model
                    // still reads the tool's line.
                    Some(tool_error) => Box::new(tool_error.clone()),
                    None => Box::new(KeptError(kept)),
                })),
            }
        }
    }
}

/// A handler's error that its recovery kept a handle on.
#[derive(Debug)]
struct KeptError(Arc<BoxError>);

impl std::fmt::Display for KeptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for KeptError {}

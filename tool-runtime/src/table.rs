//! The tool table under a [`Registry`](crate::Registry): the registered
//! tools' entries (definition, compiled validators, what parsing checks),
//! checked together once at build time, and the limits and hooks every
//! call goes through. Everything below the registry's public face (the
//! pipeline's stages, a run, the MCP server) reads this table.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::call_report::{CallReport, ResultHook, Watch};
use crate::context::{CallInfo, UserContext};
use crate::error_report::{ErrorHook, ErrorReport, Escaped};
use crate::guard::ArgumentLimits;
use crate::result::CallResult;
use crate::tool::{BoxedTool, ErasedTool, ToolDefinition};

mod problems;

pub use problems::{BuildError, BuildProblem};

/// The registry's tool table: the entries of the registered tools, in
/// declaration order, their index by name, and the settings every call
/// goes through. Built and checked once ([`build`](Self::build)); the
/// pipeline's stages, a run and the MCP server read it, and the
/// [`Registry`](crate::Registry) is its public face.
pub(crate) struct ToolTable<App> {
    pub(crate) entries: Vec<Entry<App>>,
    pub(crate) index: HashMap<String, usize>,
    /// The names the model calls host-run provider built-ins by, where they
    /// differ from the registered name (Anthropic's `bash` for a tool
    /// registered as `shell`), and their entries. Looked at only for a name
    /// that is not registered.
    pub(crate) aliases: Vec<(String, usize)>,
    pub(crate) config: Config,
    /// Whether a tool's policy is a predicate: only then does a run show
    /// its calls their run ([`RunView`](crate::RunView)).
    pub(crate) predicates: bool,
}

pub(crate) struct Entry<App> {
    pub(crate) def: ToolDefinition,
    /// The tool's name as every result carries it (inline or shared).
    pub(crate) name: smol_str::SmolStr,
    pub(crate) tool: Arc<dyn ErasedTool<App>>,
    pub(crate) validator: jsonschema::Validator,
    /// Parsing checks everything the schema says: the validator runs only
    /// to word the model's error (see `validation`).
    pub(crate) parser_enforces: bool,
    /// Text arguments may be read straight into the input (see
    /// `validation::text_exact`).
    pub(crate) text_exact: bool,
    /// A result hook sees its calls: its own, or the registry's.
    pub(crate) observed: bool,
    /// The root schema's property names, and the constraints the text
    /// reader checks (`validation::Properties`).
    pub(crate) properties: crate::validation::Properties,
    /// The output schema's validator, where outputs are checked.
    pub(crate) output_validator: Option<jsonschema::Validator>,
    /// The failure schema's validator, where outputs are checked.
    pub(crate) failure_validator: Option<jsonschema::Validator>,
}

impl<App> Entry<App> {
    pub(crate) fn has_parameters(&self) -> bool {
        !self.properties.names().is_empty()
    }
}

/// How long a call waits for a human's approval by default: 10 minutes.
pub const DEFAULT_APPROVAL_TTL: Duration = Duration::from_secs(600);

#[derive(Clone)]
pub(crate) struct Config {
    pub(crate) limits: ArgumentLimits,
    pub(crate) default_timeout: Duration,
    pub(crate) default_max_output_chars: usize,
    pub(crate) content_limits: crate::content::ContentLimits,
    pub(crate) on_tool_error: Option<ErrorHook>,
    /// Sees every outcome of every call (`RegistryBuilder::on_result`).
    pub(crate) on_result: Option<ResultHook>,
    pub(crate) validate_every_call: bool,
    pub(crate) validate_outputs: bool,
    pub(crate) policy_timeout: Duration,
    pub(crate) max_pending: usize,
    pub(crate) max_external: usize,
    pub(crate) approval_ttl: Duration,
    /// The intent classifier lists only the tools written `as_intent`.
    pub(crate) intent_opt_in: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            limits: ArgumentLimits::default(),
            default_timeout: Duration::from_secs(30),
            default_max_output_chars: 20_000,
            content_limits: crate::content::ContentLimits::default(),
            on_tool_error: None,
            on_result: None,
            validate_every_call: false,
            validate_outputs: cfg!(debug_assertions),
            policy_timeout: Duration::from_secs(10),
            max_pending: 16,
            max_external: 64,
            approval_ttl: DEFAULT_APPROVAL_TTL,
            intent_opt_in: false,
        }
    }
}

impl<App: Send + Sync + 'static> ToolTable<App> {
    /// Builds every schema, compiles every validator and checks the tools
    /// together: unique names, names the providers accept, `requires` and
    /// `related` naming registered tools. Every problem is reported at once.
    pub(crate) fn build(tools: Vec<BoxedTool<App>>, config: Config) -> Result<Self, BuildError> {
        let mut problems = Vec::new();
        if config.limits.max_depth > crate::guard::MAX_ARGUMENT_DEPTH {
            problems.push(BuildProblem::DepthLimitTooHigh { depth: config.limits.max_depth, max: crate::guard::MAX_ARGUMENT_DEPTH });
        }
        let mut entries: Vec<Entry<App>> = Vec::with_capacity(tools.len());
        let mut index = HashMap::with_capacity(tools.len());
        for boxed in tools {
            if let Some(entry) = Self::built_entry(boxed, &config, &index, &mut problems) {
                index.insert(entry.def.name.clone(), entries.len());
                entries.push(entry);
            }
        }
        let aliases = provider_names(&entries, &index, &mut problems);
        for entry in &entries {
            problems.extend(references(entry, &index, &config));
        }
        if config.intent_opt_in && !entries.iter().any(|entry| entry.def.as_intent) {
            problems.push(BuildProblem::NoIntentTools);
        }
        if !problems.is_empty() {
            return Err(BuildError { problems });
        }
        let predicates = entries.iter().any(|entry| entry.def.policy == crate::policy::PolicyKind::Predicate);
        Ok(ToolTable { entries, index, aliases, config, predicates })
    }

    /// One tool's entry: its definition checked on its own (its name, its
    /// keys together, its description, a name not taken in `index`) and its
    /// validators compiled; `None`, with the problems pushed, when it cannot
    /// be built.
    fn built_entry(boxed: BoxedTool<App>, config: &Config, index: &HashMap<String, usize>, problems: &mut Vec<BuildProblem>) -> Option<Entry<App>> {
        let def = match boxed.inner.definition() {
            Ok(def) => def,
            Err(reason) => {
                problems.push(BuildProblem::InvalidSchema { tool: boxed.name.to_owned(), reason });
                return None;
            }
        };
        if !valid_name(&def.name) {
            problems.push(BuildProblem::InvalidName { tool: def.name.clone() });
        }
        for reason in boxed.inner.contradictions() {
            let tool = def.name.clone();
            problems.push(match boxed.inner.variant_of() {
                Some(of) => BuildProblem::Variant { tool, of: of.to_owned(), reason },
                None => BuildProblem::Contradiction { tool, reason },
            });
        }
        if def.description.trim().is_empty() {
            problems.push(BuildProblem::EmptyDescription { tool: def.name.clone() });
        }
        if index.contains_key(&def.name) {
            problems.push(BuildProblem::DuplicateName { tool: def.name.clone() });
            return None;
        }
        let validator = match jsonschema::draft202012::new(&def.input_schema) {
            Ok(validator) => validator,
            Err(err) => {
                problems.push(BuildProblem::InvalidSchema { tool: def.name.clone(), reason: err.to_string() });
                return None;
            }
        };
        let typed = !config.validate_every_call && boxed.inner.parses_types();
        let parser_enforces = typed && crate::validation::parser_enforces(&def.input_schema);
        let text_exact = typed && crate::validation::text_exact(&def.input_schema, config.limits.max_depth);
        let properties = crate::validation::Properties::of(&def.input_schema, text_exact);
        let checked = |schema: &Option<Arc<serde_json::Value>>, which: &str| match schema.as_deref().filter(|_| config.validate_outputs) {
            None => Ok(None),
            Some(schema) => jsonschema::draft202012::new(schema)
                .map(Some)
                .map_err(|err| BuildProblem::InvalidSchema { tool: def.name.clone(), reason: format!("{which} schema: {err}") }),
        };
        let (output_validator, failure_validator) = match (checked(&def.output_schema, "output"), checked(&def.failure_schema, "failure")) {
            (Ok(output), Ok(failure)) => (output, failure),
            (output, failure) => {
                problems.extend(output.err().into_iter().chain(failure.err()));
                return None;
            }
        };
        if let Some(scope) = &def.scope_schema
            && let Err(err) = jsonschema::draft202012::new(scope)
        {
            problems.push(BuildProblem::InvalidSchema { tool: def.name.clone(), reason: format!("scope schema: {err}") });
            return None;
        }
        let name = smol_str::SmolStr::new(&def.name);
        let observed = def.has_result_hook || config.on_result.is_some();
        let tool = boxed.inner;
        Some(Entry { name, def, tool, validator, parser_enforces, text_exact, observed, properties, output_validator, failure_validator })
    }

    /// This table's tools and settings, plus `tools`, checked as
    /// [`build`](Self::build) checks them; this table is unchanged.
    pub(crate) fn with_tools(&self, tools: impl IntoIterator<Item = BoxedTool<App>>) -> Result<Self, BuildError> {
        let own = self.entries.iter().map(|entry| BoxedTool::dynamic(entry.tool.clone()));
        Self::build(own.chain(tools).collect(), self.config.clone())
    }

    /// The definition of one tool.
    pub(crate) fn definition(&self, name: &str) -> Option<&ToolDefinition> {
        self.index.get(name).map(|&i| &self.entries[i].def)
    }

    /// The tools' definitions, in declaration order.
    pub(crate) fn definitions(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.entries.iter().map(|entry| &entry.def)
    }

    /// The tool names, in declaration order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|entry| entry.def.name.as_str())
    }

    /// How long a pending call may wait for a human's approval.
    pub(crate) fn approval_ttl(&self) -> Duration {
        self.config.approval_ttl
    }

    /// The tool called `name`, or the host-run built-in the provider calls so.
    pub(crate) fn entry(&self, name: &str) -> Option<&Entry<App>> {
        let entries = &self.entries;
        // A few names are found faster by comparing than by hashing (SipHash).
        let found = if entries.len() <= 8 { entries.iter().find(|entry| entry.def.name == name) } else { self.index.get(name).map(|&i| &entries[i]) };
        found.or_else(|| self.aliases.iter().find(|(alias, _)| alias == name).map(|&(_, i)| &entries[i]))
    }

    /// Hands `report` to the result hooks that see it (the tool's own, then
    /// the registry's), off the caller's path: on a blocking thread of the
    /// Tokio runtime, else a thread of its own, so a hook that blocks or
    /// never returns holds no call; one that panics is logged. Reports of
    /// calls close together may reach the hooks in either order.
    pub(crate) fn observe(&self, report: CallReport) {
        let own = self.entry(&report.result.tool).filter(|entry| entry.def.has_result_hook).map(|entry| entry.tool.clone());
        let registry = self.config.on_result.clone();
        if own.is_none() && registry.is_none() {
            return;
        }
        let hooks = move || {
            if let Some(tool) = own {
                guarded(&report, "the tool's `on_result`", || tool.on_result(&report));
            }
            if let Some(hook) = registry {
                guarded(&report, "the registry's `on_result`", || hook(&report));
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(hooks)),
            Err(_) => drop(std::thread::spawn(hooks)),
        }
    }

    /// Whether a call of `entry` (`None`: of no registered tool) is observed.
    #[inline]
    pub(crate) fn observes(&self, entry: Option<&Entry<App>>) -> bool {
        entry.map_or(self.config.on_result.is_some(), |entry| entry.observed)
    }

    /// A watch on an outcome of a call of `tool` by `info`'s caller, where
    /// a result hook sees it; `None` (and no clock read) elsewhere.
    pub(crate) fn watch(&self, tool: &str, info: &CallInfo) -> Option<Watch> {
        self.observes(self.entry(tool)).then(|| Watch::start(info))
    }

    /// [`watch`](Self::watch), for an outcome outside a call's own path
    /// (an external call's result): its caller given apart.
    pub(crate) fn watch_for(&self, tool: &str, user: Option<&Arc<UserContext>>, thread_id: Option<&Arc<str>>) -> Option<Watch> {
        self.observes(self.entry(tool)).then(|| Watch::start_for(user, thread_id))
    }

    /// Reports `result` to the result hooks, for a watched outcome.
    pub(crate) fn report_outcome(&self, watch: Option<Watch>, result: &CallResult) {
        if let Some(watch) = watch {
            self.observe(watch.report(result.clone()));
        }
    }

    /// Full detail to `tracing` and the hook; never to the model.
    pub(crate) fn report(&self, report: ErrorReport) {
        tracing::error!(
            tool = %Escaped(&report.tool),
            call_id = %Escaped(&report.call_id),
            kind = report.kind.as_str(),
            code = %Escaped(&report.code),
            error = %Escaped(&report.error),
            message = Escaped::optional(report.message.as_deref()),
            "tool call failed"
        );
        if let Some(hook) = &self.config.on_tool_error {
            hook(&report);
        }
    }
}

/// Runs one result hook, a panic in it logged, never passed on.
fn guarded(report: &CallReport, which: &str, hook: impl FnOnce()) {
    if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(hook)) {
        tracing::error!(
            tool = %Escaped(&report.result.tool),
            call_id = %Escaped(&report.result.call_id),
            hook = %Escaped(which),
            panic = %Escaped(&crate::error_report::panic_message(payload.as_ref())),
            "a result hook panicked; the call's result is unchanged"
        );
    }
}

/// The problems of `entry` that only the whole table shows: `requires`
/// and `related` naming tools it does not hold, `kind` and `failureSchema`
/// set twice, an interim text its timeout (or the table's default) leaves
/// no room for.
fn references<App>(entry: &Entry<App>, index: &HashMap<String, usize>, config: &Config) -> Vec<BuildProblem> {
    let (def, tool) = (&entry.def, || entry.def.name.clone());
    let mut problems = Vec::new();
    for required in def.requires.iter().filter(|required| !index.contains_key(*required)) {
        problems.push(BuildProblem::UnknownRequires { tool: tool(), requires: required.clone() });
    }
    for related in def.related.iter().filter(|related| !index.contains_key(*related)) {
        problems.push(BuildProblem::UnknownRelated { tool: tool(), related: related.clone() });
    }
    if def.kind.is_some() && def.meta.contains_key("kind") {
        problems.push(BuildProblem::KindInMeta { tool: tool() });
    }
    if def.failure_schema.is_some() && def.meta.contains_key("failureSchema") {
        problems.push(BuildProblem::FailureSchemaInMeta { tool: tool() });
    }
    if let Some(reason) = def.interim.as_ref().and_then(|interim| interim_problem(interim, def.timeout.unwrap_or(config.default_timeout))) {
        problems.push(BuildProblem::InvalidInterim { tool: tool(), reason });
    }
    problems
}

/// The provider's names of the registered built-ins that the model calls
/// by a name other than the registered one; a name that two tools would
/// answer to, and a built-in declared wrongly, are problems.
fn provider_names<App>(entries: &[Entry<App>], index: &HashMap<String, usize>, problems: &mut Vec<BuildProblem>) -> Vec<(String, usize)> {
    // Every provider name, and whether the model calls it (host-run).
    let mut aliases: Vec<(String, usize, bool)> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let Some(declared) = &entry.def.provider_defined else { continue };
        let tool = entry.def.name.clone();
        if let Some(reason) = &declared.problem {
            problems.push(BuildProblem::ProviderTool { tool: tool.clone(), reason: reason.clone() });
        }
        let Some(wire) = declared.wire_name.as_ref().filter(|wire| **wire != tool) else { continue };
        let other = index
            .get(wire)
            .map(|&j| &entries[j].def.name)
            .or_else(|| aliases.iter().find(|(alias, ..)| alias == wire).map(|&(_, j, _)| &entries[j].def.name));
        match other {
            Some(other) => problems.push(BuildProblem::ProviderNameTaken { tool, wire_name: wire.clone(), other: other.clone() }),
            None => aliases.push((wire.clone(), i, declared.runs == crate::definition::Runs::OnHost)),
        }
    }
    aliases.into_iter().filter(|&(.., called)| called).map(|(alias, i, _)| (alias, i)).collect()
}

/// `^[a-z][a-z0-9_]{0,63}$`, the names every provider accepts.
pub(crate) fn valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && bytes[0].is_ascii_lowercase()
        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
}

/// What is wrong with a tool's interim text, if anything: it must say
/// something, and come after a delay that is not zero and is shorter than
/// the tool's timeout (else it would never be sent).
fn interim_problem(interim: &crate::definition::Interim, timeout: Duration) -> Option<String> {
    if interim.text.trim().is_empty() {
        Some("its interim text is empty; write what the user reads while the call runs".to_owned())
    } else if interim.after.is_zero() {
        Some("its interim delay is zero, so every call that waits would show it; give a delay such as 2s".to_owned())
    } else if interim.after >= timeout {
        Some(format!(
            "its interim delay ({:?}) is not shorter than its timeout ({timeout:?}), so the text would never be sent; \
             shorten the delay or lengthen the timeout",
            interim.after
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names_follow_the_provider_rule() {
        assert!(valid_name("lookup_order"));
        assert!(valid_name("a"));
        assert!(valid_name(&format!("a{}", "b".repeat(63))));
        assert!(!valid_name(&format!("a{}", "b".repeat(64))));
        assert!(!valid_name("Lookup"));
        assert!(!valid_name("1tool"));
        assert!(!valid_name("look-up"));
        assert!(!valid_name(""));
    }
}

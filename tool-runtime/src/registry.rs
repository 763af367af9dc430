//! The registry: the tools of an app, checked once at build time.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::error_report::{ErrorHook, ErrorReport, Escaped};
use crate::guard::ArgumentLimits;
use crate::tool::{BoxedTool, ErasedTool, ToolDefinition};

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
    pub(crate) inner: Arc<Inner<App>>,
}

pub(crate) struct Inner<App> {
    pub(crate) entries: Vec<Entry<App>>,
    pub(crate) index: HashMap<String, usize>,
    /// The names the model calls host-run provider built-ins by, where they
    /// differ from the registered name (Anthropic's `bash` for a tool
    /// registered as `shell`), and their entries. Looked at only for a name
    /// that is not registered.
    pub(crate) aliases: Vec<(String, usize)>,
    pub(crate) config: Config,
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
    pub(crate) validate_every_call: bool,
    pub(crate) validate_outputs: bool,
    pub(crate) policy_timeout: Duration,
    pub(crate) max_pending: usize,
    pub(crate) max_external: usize,
    pub(crate) approval_ttl: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            limits: ArgumentLimits::default(),
            default_timeout: Duration::from_secs(30),
            default_max_output_chars: 20_000,
            content_limits: crate::content::ContentLimits::default(),
            on_tool_error: None,
            validate_every_call: false,
            validate_outputs: cfg!(debug_assertions),
            policy_timeout: Duration::from_secs(10),
            max_pending: 16,
            max_external: 64,
            approval_ttl: DEFAULT_APPROVAL_TTL,
        }
    }
}

impl<App> Clone for Registry<App> {
    fn clone(&self) -> Self {
        Registry { inner: self.inner.clone() }
    }
}

impl<App: Send + Sync + 'static> Registry<App> {
    /// Starts a registry.
    pub fn builder() -> RegistryBuilder<App> {
        RegistryBuilder { tools: Vec::new(), config: Config::default() }
    }

    /// The tools' definitions, in declaration order.
    pub fn definitions(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.inner.entries.iter().map(|entry| &entry.def)
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

    /// The definition of one tool.
    pub fn definition(&self, name: &str) -> Option<&ToolDefinition> {
        self.inner.index.get(name).map(|&i| &self.inner.entries[i].def)
    }

    /// The tool names, in declaration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.inner.entries.iter().map(|entry| entry.def.name.as_str())
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.inner.entries.len()
    }

    /// Whether the registry has no tools.
    pub fn is_empty(&self) -> bool {
        self.inner.entries.is_empty()
    }

    /// The limits every call's arguments are checked against.
    pub fn argument_limits(&self) -> ArgumentLimits {
        self.inner.config.limits
    }

    /// How long a pending call may wait for a human's approval (set with
    /// [`RegistryBuilder::approval_ttl`]). An approval given later does not
    /// run the call: [`approve`](Self::approve) and
    /// [`approve_with`](Self::approve_with) return a
    /// [`Rejected`](crate::ResultKind::Rejected) result with the code
    /// `APPROVAL_EXPIRED` instead.
    pub fn approval_ttl(&self) -> Duration {
        self.inner.config.approval_ttl
    }

    pub(crate) fn entry(&self, name: &str) -> Option<&Entry<App>> {
        let entries = &self.inner.entries;
        // A few names are found faster by comparing than by hashing (SipHash).
        let found =
            if entries.len() <= 8 { entries.iter().find(|entry| entry.def.name == name) } else { self.inner.index.get(name).map(|&i| &entries[i]) };
        found.or_else(|| self.inner.aliases.iter().find(|(alias, _)| alias == name).map(|&(_, i)| &entries[i]))
    }
}

impl<App> fmt::Debug for Registry<App> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry").field("tools", &self.inner.entries.iter().map(|e| &e.def.name).collect::<Vec<_>>()).finish_non_exhaustive()
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
    /// [`DEFAULT_APPROVAL_TTL`], 10 minutes), counted from the moment it
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

    /// Builds every schema, compiles every validator and checks the tools
    /// together: unique names, names the providers accept, `requires` and
    /// `related` naming registered tools. Every problem is reported at once.
    pub fn build(self) -> Result<Registry<App>, BuildError> {
        let mut problems = Vec::new();
        if self.config.limits.max_depth > crate::guard::MAX_ARGUMENT_DEPTH {
            problems.push(BuildProblem::DepthLimitTooHigh { depth: self.config.limits.max_depth, max: crate::guard::MAX_ARGUMENT_DEPTH });
        }
        let mut entries: Vec<Entry<App>> = Vec::with_capacity(self.tools.len());
        let mut index = HashMap::with_capacity(self.tools.len());
        for boxed in self.tools {
            let def = match boxed.inner.definition() {
                Ok(def) => def,
                Err(reason) => {
                    problems.push(BuildProblem::InvalidSchema { tool: boxed.name.to_owned(), reason });
                    continue;
                }
            };
            if !valid_name(&def.name) {
                problems.push(BuildProblem::InvalidName { tool: def.name.clone() });
            }
            for reason in boxed.inner.contradictions() {
                problems.push(BuildProblem::Contradiction { tool: def.name.clone(), reason });
            }
            if def.description.trim().is_empty() {
                problems.push(BuildProblem::EmptyDescription { tool: def.name.clone() });
            }
            if index.contains_key(&def.name) {
                problems.push(BuildProblem::DuplicateName { tool: def.name.clone() });
                continue;
            }
            let validator = match jsonschema::draft202012::new(&def.input_schema) {
                Ok(validator) => validator,
                Err(err) => {
                    problems.push(BuildProblem::InvalidSchema { tool: def.name.clone(), reason: err.to_string() });
                    continue;
                }
            };
            let typed = !self.config.validate_every_call && boxed.inner.parses_types();
            let parser_enforces = typed && crate::validation::parser_enforces(&def.input_schema);
            let text_exact = typed && crate::validation::text_exact(&def.input_schema, self.config.limits.max_depth);
            index.insert(def.name.clone(), entries.len());
            let properties = crate::validation::Properties::of(&def.input_schema, text_exact);
            let checked = |schema: &Option<Arc<serde_json::Value>>, which: &str| match schema.as_deref().filter(|_| self.config.validate_outputs) {
                None => Ok(None),
                Some(schema) => jsonschema::draft202012::new(schema)
                    .map(Some)
                    .map_err(|err| BuildProblem::InvalidSchema { tool: def.name.clone(), reason: format!("{which} schema: {err}") }),
            };
            let (output_validator, failure_validator) = match (checked(&def.output_schema, "output"), checked(&def.failure_schema, "failure")) {
                (Ok(output), Ok(failure)) => (output, failure),
                (output, failure) => {
                    problems.extend(output.err().into_iter().chain(failure.err()));
                    continue;
                }
            };
            if let Some(scope) = &def.scope_schema
                && let Err(err) = jsonschema::draft202012::new(scope)
            {
                problems.push(BuildProblem::InvalidSchema { tool: def.name.clone(), reason: format!("scope schema: {err}") });
                continue;
            }
            let name = smol_str::SmolStr::new(&def.name);
            let tool = boxed.inner;
            entries.push(Entry { name, def, tool, validator, parser_enforces, text_exact, properties, output_validator, failure_validator });
        }
        let aliases = provider_names(&entries, &index, &mut problems);
        for entry in &entries {
            for required in &entry.def.requires {
                if !index.contains_key(required) {
                    problems.push(BuildProblem::UnknownRequires { tool: entry.def.name.clone(), requires: required.clone() });
                }
            }
            for related in &entry.def.related {
                if !index.contains_key(related) {
                    problems.push(BuildProblem::UnknownRelated { tool: entry.def.name.clone(), related: related.clone() });
                }
            }
            if entry.def.kind.is_some() && entry.def.meta.contains_key("kind") {
                problems.push(BuildProblem::KindInMeta { tool: entry.def.name.clone() });
            }
            if entry.def.failure_schema.is_some() && entry.def.meta.contains_key("failureSchema") {
                problems.push(BuildProblem::FailureSchemaInMeta { tool: entry.def.name.clone() });
            }
            if let Some(interim) = &entry.def.interim {
                let timeout = entry.def.timeout.unwrap_or(self.config.default_timeout);
                if let Some(reason) = interim_problem(interim, timeout) {
                    problems.push(BuildProblem::InvalidInterim { tool: entry.def.name.clone(), reason });
                }
            }
        }
        if !problems.is_empty() {
            return Err(BuildError { problems });
        }
        Ok(Registry { inner: Arc::new(Inner { entries, index, aliases, config: self.config }) })
    }
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

mod problems;

pub use problems::{BuildError, BuildProblem};

impl<App> Registry<App> {
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
        if let Some(hook) = &self.inner.config.on_tool_error {
            hook(&report);
        }
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

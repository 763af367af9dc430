//! The `conformance_server` example judged by the official MCP conformance
//! suite (npm `@modelcontextprotocol/conformance`, pinned to
//! [`SUITE_VERSION`], on Node 22): what each revision requires
//! (`--requirements 2025-11-25`, `--requirements 2026-07-28`), every
//! scenario of each revision, pending ones included (`--suite all
//! --spec-version ...`), against the example keeping its tasks in its
//! process, and the ten scenarios of the tasks extension again against the
//! example keeping its tasks in a journal (Postgres when
//! `TOOL_RUNTIME_TEST_POSTGRES_URL` is set, else a SQLite file).
//!
//! With Postgres, the tasks and input-required scenarios run again against
//! the example on a Postgres journal behind a proxy that kills it and
//! starts it again after each result that creates a task or asks for
//! input (`support/restarting.rs`), so that a task is read, and a question
//! answered, on a server that did not create it.
//!
//! Every check of every scenario must pass: there is no list of checks
//! allowed to fail.
//!
//! ```text
//! npm install --prefix target/conformance node@22 @modelcontextprotocol/conformance@0.2.0-alpha.12
//! cargo test --features mcp --test slow mcp_conformance:: -- --nocapture
//! ```
//!
//! The suite is looked for in `MCP_CONFORMANCE_DIR`, else in
//! `target/conformance` (where `.ci/run` installs it). Without it the test
//! is skipped, saying so and recorded in the skip ledger (`tests/support/peers.rs`),
//! except under `CI=true`, where it fails.
#![cfg(feature = "mcp")]

#[cfg(feature = "postgres")]
use crate::restarting;
use crate::{examples, listening};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use listening::Listening;
use tool_workspace::peers;

/// The version of the suite the fixtures are judged by.
const SUITE_VERSION: &str = "0.2.0-alpha.12";

/// The scenarios of the tasks extension.
const TASKS: &[&str] = &[
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
];

/// The scenarios of results that ask for input (revision 2026-07-28).
#[cfg(feature = "postgres")]
const INPUT_REQUIRED: &[&str] = &[
    "input-required-result-basic-elicitation",
    "input-required-result-basic-sampling",
    "input-required-result-basic-list-roots",
    "input-required-result-request-state",
    "input-required-result-multiple-input-requests",
    "input-required-result-multi-round",
    "input-required-result-missing-input-response",
    "input-required-result-non-tool-request",
    "input-required-result-result-type",
    "input-required-result-unsupported-methods",
    "input-required-result-tampered-state",
    "input-required-result-capability-check",
    "input-required-result-ignore-extra-params",
    "input-required-result-validate-input",
];

/// The three judgements below at once, each on a thread named as its part
/// (a skip is recorded under that name): they wait on the suite's Node
/// processes and on the servers they start far more than on the CPU, and
/// libtest runs only as many tests at once as the machine has cores.
#[test]
fn the_conformance_suite_passes() {
    let parts: &[(&str, fn())] = &[
        ("the_conformance_suite_passes_at_both_revisions", the_conformance_suite_passes_at_both_revisions),
        ("the_tasks_scenarios_pass_with_a_journal", the_tasks_scenarios_pass_with_a_journal),
        #[cfg(feature = "postgres")]
        ("the_tasks_and_input_required_scenarios_pass_across_restarts", the_tasks_and_input_required_scenarios_pass_across_restarts),
    ];
    // A part that fails panics on its thread, saying why; the scope then
    // fails the test once every part ended.
    std::thread::scope(|scope| {
        for &(name, part) in parts {
            std::thread::Builder::new().name(name.to_owned()).spawn_scoped(scope, part).expect("a thread for each part");
        }
    });
}

/// Every scenario of each revision against the example keeping its tasks
/// in its process.
fn the_conformance_suite_passes_at_both_revisions() {
    let Some(suite) = Suite::find() else { return };
    let server = serve("plain", &[]);
    let mut failed = Vec::new();
    for revision in ["2025-11-25", "2026-07-28"] {
        // Every scenario, the tasks ones too (kept in the process here; on
        // a journal below).
        let judged = |_: &str| true;
        failed.extend(suite.run(&format!("requirements-{revision}"), &server.url, &["--requirements", revision], judged));
        failed.extend(suite.run(&format!("all-{revision}"), &server.url, &["--suite", "all", "--spec-version", revision], judged));
    }
    assert!(failed.is_empty(), "checks failed:\n{}", failed.join("\n"));
}

/// The tasks scenarios against the example keeping its tasks in a journal.
fn the_tasks_scenarios_pass_with_a_journal() {
    let Some(suite) = Suite::find() else { return };
    let journal = match std::env::var("TOOL_RUNTIME_TEST_POSTGRES_URL") {
        Ok(url) if cfg!(feature = "postgres") && !url.is_empty() => url,
        _ => {
            let path = std::env::temp_dir().join(format!("mcp-conformance-{}.db", std::process::id()));
            let _ = std::fs::remove_file(&path);
            format!("sqlite:{}", path.display())
        }
    };
    let server = serve("journal", &["--journal", &journal]);
    let mut failed = Vec::new();
    for scenario in TASKS {
        failed.extend(suite.run(scenario, &server.url, &["--scenario", scenario], |_| true));
    }
    assert!(failed.is_empty(), "checks failed:\n{}", failed.join("\n"));
}

/// The scenarios among [`TASKS`] and [`INPUT_REQUIRED`] that create no
/// task and ask for no input, so that nothing restarts the server.
#[cfg(feature = "postgres")]
const NOTHING_TO_COME_BACK_TO: &[&str] = &[
    // The suite skips it (sends nothing): its notifications move to
    // `subscriptions/listen`, which it does not read yet.
    "tasks-status-notifications",
    // A call refused with -32021 before any task exists.
    "tasks-required-task-error",
    // Lists tools and prompts, checking that neither asks for input.
    "input-required-result-unsupported-methods",
];

/// The tasks and input-required scenarios against the example on a
/// Postgres journal that is killed (SIGKILL) and started again after each
/// result that creates a task or asks for input, before the request that
/// reads the task or answers (`support/restarting.rs`): each such scenario
/// restarts it at least once, and every check passes.
#[cfg(feature = "postgres")]
fn the_tasks_and_input_required_scenarios_pass_across_restarts() {
    let Some(suite) = Suite::find() else { return };
    let Some(journal) = peers::postgres_url() else { return };
    // The key the sealed requestStates open with on each new instance.
    let key = "5a".repeat(32);
    let program = examples::build_example("conformance_server", &["mcp"]);
    let server = restarting::Restarting::start(move || start(&program, "restarted", &["--journal", &journal, "--key", &key]));
    let (mut failed, mut restarted) = (Vec::new(), Vec::new());
    for scenario in TASKS.iter().chain(INPUT_REQUIRED) {
        let before = server.restarts();
        failed.extend(suite.run(&format!("restarted-{scenario}"), &server.url, &["--scenario", scenario], |_| true));
        let restarts = server.restarts() - before;
        println!("{scenario}: the server restarted {restarts} times");
        restarted.push((*scenario, restarts));
    }
    println!("restarts in all: {}", server.restarts());
    assert!(failed.is_empty(), "checks failed:\n{}", failed.join("\n"));
    let asks = |scenario: &str| !NOTHING_TO_COME_BACK_TO.contains(&scenario);
    let never: Vec<&str> = restarted.iter().filter(|&&(scenario, restarts)| asks(scenario) && restarts == 0).map(|(scenario, _)| *scenario).collect();
    assert!(never.is_empty(), "scenarios that created a task or asked for input, yet never restarted the server: {never:?}");
}

/// The installed suite and the Node that runs it.
struct Suite {
    node: PathBuf,
    cli: PathBuf,
}

impl Suite {
    /// The pinned suite, or `None` (skipped, saying why) where it is not
    /// installed; in CI a missing suite fails.
    fn find() -> Option<Suite> {
        let dir =
            std::env::var_os("MCP_CONFORMANCE_DIR").map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/conformance"), PathBuf::from);
        let node = dir.join("node_modules/node/bin/node");
        let package = dir.join("node_modules/@modelcontextprotocol/conformance");
        let install = format!("npm install --prefix {} node@22 @modelcontextprotocol/conformance@{SUITE_VERSION}", dir.display());
        let why = format!("no Node 22 and MCP conformance suite in {}: set MCP_CONFORMANCE_DIR, or run `{install}`", dir.display());
        if !peers::installed(node.exists() && package.join("package.json").exists(), &why) {
            return None;
        }
        let manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(package.join("package.json")).expect("the suite's package.json reads"))
                .expect("the suite's package.json is JSON");
        assert_eq!(manifest["version"], SUITE_VERSION, "the conformance suite in {} is not the pinned one: run `{install}`", dir.display());
        Some(Suite { node, cli: package.join("dist/index.js") })
    }

    /// Runs the suite with `args` against the server at `url`; the failed checks of
    /// the scenarios `judged` keeps, each as a line.
    /// Prints the suite's summary lines.
    fn run(&self, label: &str, url: &str, args: &[&str], judged: impl Fn(&str) -> bool) -> Vec<String> {
        let results = std::env::temp_dir().join(format!("mcp-conformance-{}-{label}", std::process::id()));
        let _ = std::fs::remove_dir_all(&results);
        let output = Command::new(&self.node)
            .arg(&self.cli)
            .args(["server", "--url", url])
            .args(args)
            .arg("-o")
            .arg(&results)
            .stdin(Stdio::null())
            .output()
            .expect("node runs the conformance suite");
        let stdout = String::from_utf8_lossy(&output.stdout);
        println!("$ conformance server --url {url} {}", args.join(" "));
        for line in stdout.lines().filter(|line| line.starts_with(['✓', '✗']) || line.starts_with("Total") || line.starts_with("  ")) {
            println!("{line}");
        }
        let scenarios = scenarios(&results);
        assert!(!scenarios.is_empty(), "the suite ran no scenario ({label}):\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        let mut failed = Vec::new();
        for (scenario, checks) in scenarios.into_iter().filter(|(scenario, _)| judged(scenario)) {
            for check in checks.as_array().into_iter().flatten().filter(|check| check["status"] == "FAILURE") {
                let id = check["id"].as_str().unwrap_or_default();
                failed.push(format!("{label}: {scenario}: {id}: {}", check["errorMessage"].as_str().unwrap_or_default()));
            }
        }
        failed
    }
}

/// The checks of each scenario the suite wrote under `results`
/// (`server-<scenario>-<time>/checks.json`).
fn scenarios(results: &Path) -> Vec<(String, serde_json::Value)> {
    let Ok(entries) = std::fs::read_dir(results) else { return Vec::new() };
    let mut scenarios = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(scenario) = name.strip_prefix("server-").and_then(without_time) else { continue };
        let checks = std::fs::read_to_string(entry.path().join("checks.json")).expect("each scenario writes its checks");
        scenarios.push((scenario, serde_json::from_str(&checks).expect("checks.json is JSON")));
    }
    scenarios.sort_by(|a, b| a.0.cmp(&b.0));
    scenarios
}

/// `<scenario>-<YYYY-MM-DDT...>` without its time.
fn without_time(name: &str) -> Option<String> {
    let is_time = |at: usize| {
        let bytes = &name.as_bytes()[at..];
        bytes.len() > 11
            && bytes[0] == b'-'
            && bytes[1..5].iter().all(u8::is_ascii_digit)
            && bytes[5] == b'-'
            && bytes[8] == b'-'
            && bytes[11] == b'T'
    };
    (0..name.len()).find(|&at| is_time(at)).map(|at| name[..at].to_owned())
}

/// The example serving streamable HTTP on a free loopback port (given
/// `args` besides).
fn serve(label: &str, args: &[&str]) -> Listening {
    start(&examples::build_example("conformance_server", &["mcp"]), label, args)
}

/// The example built at `program` serving streamable HTTP on a free
/// loopback port (given `args` besides), its stderr in a log named by `label`.
fn start(program: &Path, label: &str, args: &[&str]) -> Listening {
    let mut command = Command::new(program);
    command.args(["--http", "127.0.0.1:0"]).args(args);
    let log = std::env::temp_dir().join(format!("conformance_server-{label}-{}.log", std::process::id()));
    Listening::start(command, &log, "conformance_server")
}

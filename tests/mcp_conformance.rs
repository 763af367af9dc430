//! The `conformance_server` example judged by the official MCP conformance
//! suite (npm `@modelcontextprotocol/conformance`, pinned to
//! [`SUITE_VERSION`], on Node 22): what each revision requires
//! (`--requirements 2025-11-25`, `--requirements 2026-07-28`), every
//! scenario of each revision, pending ones included (`--suite all
//! --spec-version ...`), and the ten scenarios of the tasks extension
//! against the example keeping its tasks in a journal (Postgres when
//! `TOOL_RUNTIME_TEST_POSTGRES_URL` is set, else a SQLite file).
//!
//! Every check of every scenario must pass, except those listed in
//! [`ASKING`]: checks of fixtures that ask which the example cannot pass
//! yet, each with why.
//!
//! ```text
//! npm install --prefix target/conformance node@22 @modelcontextprotocol/conformance@0.2.0-alpha.12
//! cargo test --features mcp --test mcp_conformance -- --nocapture
//! ```
//!
//! The suite is looked for in `MCP_CONFORMANCE_DIR`, else in
//! `target/conformance` (where `.ci/run` installs it). Without it the test
//! is skipped, saying so and recorded in the skip ledger (`tests/support/peers.rs`),
//! except under `CI=true`, where it fails.
#![cfg(feature = "mcp")]

#[path = "support/examples.rs"]
mod examples;
#[path = "support/listening.rs"]
mod listening;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use listening::Listening;
use tool_workspace::peers;

/// The version of the suite the fixtures are judged by.
const SUITE_VERSION: &str = "0.2.0-alpha.12";

/// The checks that may fail, by scenario and check id (`*`: every check of
/// the scenario): those the fixtures that ask cannot pass yet.
const ASKING: &[(&str, &str)] = &[
    // The suite expects the question's key `user_name`; a question's key
    // is its id (`<call id>#<n>`).
    ("input-required-result-basic-elicitation", "sep-2322-elicitation-incomplete"),
    // `test_tool_with_task` asks for a name, then becomes a task.
    ("tasks-mrtr-composition", "*"),
];

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

#[test]
fn the_conformance_suite_passes_at_both_revisions() {
    let Some(suite) = Suite::find() else { return };
    let server = serve("plain", &[]);
    let mut failed = Vec::new();
    for revision in ["2025-11-25", "2026-07-28"] {
        // The tasks scenarios need a journal: they are judged below.
        let judged = |scenario: &str| !TASKS.contains(&scenario);
        failed.extend(suite.run(&format!("requirements-{revision}"), &server, &["--requirements", revision], judged));
        failed.extend(suite.run(&format!("all-{revision}"), &server, &["--suite", "all", "--spec-version", revision], judged));
    }
    assert!(failed.is_empty(), "checks failed:\n{}", failed.join("\n"));
}

#[test]
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
        failed.extend(suite.run(scenario, &server, &["--scenario", scenario], |_| true));
    }
    assert!(failed.is_empty(), "checks failed:\n{}", failed.join("\n"));
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

    /// Runs the suite with `args` against `server`; the failed checks of
    /// the scenarios `judged` keeps, each as a line, but those of [`ASKING`].
    /// Prints the suite's summary lines.
    fn run(&self, label: &str, server: &Listening, args: &[&str], judged: impl Fn(&str) -> bool) -> Vec<String> {
        let results = std::env::temp_dir().join(format!("mcp-conformance-{}-{label}", std::process::id()));
        let _ = std::fs::remove_dir_all(&results);
        let output = Command::new(&self.node)
            .arg(&self.cli)
            .args(["server", "--url", &server.url])
            .args(args)
            .arg("-o")
            .arg(&results)
            .stdin(Stdio::null())
            .output()
            .expect("node runs the conformance suite");
        let stdout = String::from_utf8_lossy(&output.stdout);
        println!("$ conformance server --url {} {}", server.url, args.join(" "));
        for line in stdout.lines().filter(|line| line.starts_with(['✓', '✗']) || line.starts_with("Total") || line.starts_with("  ")) {
            println!("{line}");
        }
        let scenarios = scenarios(&results);
        assert!(!scenarios.is_empty(), "the suite ran no scenario ({label}):\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        let mut failed = Vec::new();
        for (scenario, checks) in scenarios.into_iter().filter(|(scenario, _)| judged(scenario)) {
            for check in checks.as_array().into_iter().flatten().filter(|check| check["status"] == "FAILURE") {
                let id = check["id"].as_str().unwrap_or_default();
                if !ASKING.iter().any(|&(asking, check)| asking == scenario && (check == "*" || check == id)) {
                    failed.push(format!("{label}: {scenario}: {id}: {}", check["errorMessage"].as_str().unwrap_or_default()));
                }
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
    let mut command = Command::new(examples::build_example("conformance_server", &["mcp"]));
    command.args(["--http", "127.0.0.1:0"]).args(args);
    let log = std::env::temp_dir().join(format!("conformance_server-{label}-{}.log", std::process::id()));
    Listening::start(command, &log, "conformance_server")
}

//! The peers some tests need from outside Rust (a Postgres server, a
//! Python package, Chromium, `faketime`), and what a test does without its
//! peer.
//!
//! Under `CI=true` a missing peer fails the test at once: `.ci/run`
//! installs and starts every peer first. Elsewhere the test skips, and
//! README's test command (`cargo test --workspace --features
//! mcp,postgres,inbox`) never ends `ok` over a test that did nothing:
//!
//! - The test says so where it runs, written straight to the process's
//!   stderr. Libtest captures what a passing test prints with `print!` and
//!   `eprint!` (and shows it only when the test fails), not what is written
//!   to `std::io::stderr()` itself; so the line stands right above the
//!   test's own `... ok`.
//! - It records itself in the skip ledger: a file per test under the
//!   checkout's `target/skipped-peers/`, holding its test binary, its name
//!   (its thread's, which libtest names after the test) and why. A test
//!   that finds its peer removes its own record.
//! - Cargo runs every test binary of every package first, then the
//!   doc-tests of each package, in the order of the packages' names. The
//!   root package, `tool-workspace`, sorts after `tool-macros` and
//!   `tool-runtime`, so the doc-test of its library (`src/lib.rs`), which
//!   calls [`none_skipped`], is the command's last test. It fails when the
//!   ledger holds a record, naming each test that could not run and why,
//!   grouped by the peer missing, and empties the ledger. A doc-test's
//!   output is shown only when it fails (rustdoc runs each in a process of
//!   its own and keeps what it prints otherwise, even written straight to
//!   stderr), so this is the one way the command's last lines can say it:
//!   a command that skipped a test ends `FAILED`, after every other test
//!   ran.
//!
//! Root tests use this module as `tool_workspace::peers`; the runtime's
//! tests include the file (`#[path]`) where they need Postgres.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;

/// The Postgres server's URL (`TOOL_RUNTIME_TEST_POSTGRES_URL`), or `None`
/// once the calling test is recorded as skipped (see the [module docs](self)).
pub fn postgres_url() -> Option<String> {
    match std::env::var("TOOL_RUNTIME_TEST_POSTGRES_URL").ok().filter(|url| !url.is_empty()) {
        Some(url) => {
            found();
            Some(url)
        }
        None => {
            missing("TOOL_RUNTIME_TEST_POSTGRES_URL is not set: start a server with `source .ci/postgres.sh && postgres_start`");
            None
        }
    }
}

/// Whether `python3 -c "<import>"` works; `package` is the pinned pip
/// requirement that provides it, for the message. `false` once the calling
/// test is recorded as skipped.
pub fn python_module(import: &str, package: &str) -> bool {
    let imported = std::process::Command::new("python3")
        .args(["-c", import])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    match imported {
        true => found(),
        false => missing(&format!("`python3 -c '{import}'` fails: install it with `python3 -m pip install '{package}'`")),
    }
    imported
}

/// The `faketime` command (libfaketime's wrapper, which runs a command
/// with a skewed clock; Debian's package, which `.ci/run` installs), or
/// `None` once the calling test is recorded as skipped.
pub fn faketime() -> Option<PathBuf> {
    let command = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("faketime"))
        .find(|candidate| candidate.is_file());
    match &command {
        Some(_) => found(),
        None => missing("faketime is not installed: install it with `apt-get install faketime`"),
    }
    command
}

/// Whether the browser and its driver are installed at these paths.
/// `false` once the calling test is recorded as skipped.
pub fn chromium(browser: &str, driver: &str) -> bool {
    let installed = std::path::Path::new(browser).exists() && std::path::Path::new(driver).exists();
    match installed {
        true => found(),
        false => missing(&format!("{browser} or {driver} is missing: install them with `apt-get install chromium chromium-driver`")),
    }
    installed
}

/// Whether a peer a test names is `installed` (a program, a package);
/// `why` says what is missing and how to install it. `false` once the
/// calling test is recorded as skipped.
pub fn installed(installed: bool, why: &str) -> bool {
    match installed {
        true => found(),
        false => missing(why),
    }
    installed
}

/// Empties the ledger and returns when it held no record; else writes
/// each test it held as skipped, and why, to stderr and exits the process
/// with status 1 (a failed doc-test). README's test command runs it last
/// (see the [module docs](self)).
pub fn none_skipped() {
    let records = std::fs::read_dir(ledger()).into_iter().flatten().flatten().map(|entry| entry.path()).collect::<Vec<_>>();
    let mut skipped: Vec<(String, String, String)> = records
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .filter_map(|record| {
            let mut fields = record.splitn(3, '\t');
            Some((fields.next()?.to_owned(), fields.next()?.to_owned(), fields.next()?.trim_end().to_owned()))
        })
        .map(|(binary, test, why)| (why, binary, test))
        .collect();
    let _ = std::fs::remove_dir_all(ledger());
    if skipped.is_empty() {
        return;
    }
    skipped.sort();
    let mut report = format!(
        "{} tests could not run: their peers are missing (each said so where it skipped). Under CI=true a missing peer fails at once.\n",
        skipped.len()
    );
    let mut last_why = "";
    for (why, binary, test) in &skipped {
        if why != last_why {
            report.push_str(&format!("{why}:\n"));
            last_why = why;
        }
        report.push_str(&format!("    {binary}: {test}\n"));
    }
    // Written whole and exited, not panicked: under RUST_BACKTRACE a
    // backtrace would stand between the list and the command's end.
    let _ = std::io::stderr().write_all(report.as_bytes());
    std::process::exit(1);
}

/// The ledger: `target/skipped-peers/` of the checkout (the folder of the
/// nearest `Cargo.lock` above the including package), whatever the target
/// directory, so that every package's tests find it.
fn ledger() -> PathBuf {
    let package = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let checkout = package.ancestors().find(|dir| dir.join("Cargo.lock").exists()).unwrap_or(package);
    checkout.join("target").join("skipped-peers")
}

/// The calling test: its binary (the executable's name less cargo's hash)
/// and its name.
fn this_test() -> (String, String) {
    let exe = std::env::current_exe().ok().and_then(|exe| exe.file_stem().map(|stem| stem.to_string_lossy().into_owned()));
    let exe = exe.unwrap_or_default();
    let binary = exe.rsplit_once('-').map_or(exe.as_str(), |(name, _hash)| name).to_owned();
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    (binary, test)
}

/// The calling test's record in the ledger.
fn record() -> PathBuf {
    let (binary, test) = this_test();
    let name: String = format!("{binary}--{test}").chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    ledger().join(name)
}

/// The calling test found its peer: it runs, and a record of an earlier
/// run that skipped goes.
fn found() {
    let _ = std::fs::remove_file(record());
}

/// The calling test's peer is missing: under `CI=true` the test fails;
/// elsewhere it says so on stderr and is recorded as skipped.
fn missing(why: &str) {
    assert!(
        std::env::var("CI").map_or(true, |ci| ci != "true"),
        "{why}; under CI=true a missing peer fails (.ci/run installs and starts every peer)"
    );
    let (binary, test) = this_test();
    // Straight to the file descriptor: libtest captures `eprintln!`.
    let _ = writeln!(std::io::stderr(), "skipped {binary} {test}: {why}");
    let written = std::fs::create_dir_all(ledger()).and_then(|()| std::fs::write(record(), format!("{binary}\t{test}\t{why}\n")));
    if let Err(error) = written {
        panic!("{why}; and its skip could not be recorded in {}: {error}", ledger().display());
    }
}

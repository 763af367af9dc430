//! The peers a durable-run test may need besides the test itself: the
//! Postgres server of `TOOL_RUNTIME_TEST_POSTGRES_URL` (`.ci/postgres.sh`
//! starts one) and `faketime` (Debian's package, which `.ci/run`
//! installs). Under `CI=true` a missing peer fails the test; locally the
//! test says it skips and why.

// Each test file that includes this uses a part of it.
#![allow(dead_code)]

use std::path::PathBuf;

/// Whether the tests run under CI, where no peer may be missing.
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|ci| ci == "true")
}

/// The Postgres server's URL; `None` (after saying so) without one,
/// outside CI.
pub fn postgres_url(test: &str) -> Option<String> {
    match std::env::var("TOOL_RUNTIME_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if in_ci() => panic!("TOOL_RUNTIME_TEST_POSTGRES_URL is not set under CI; .ci/run starts a server with .ci/postgres.sh"),
        _ => {
            eprintln!("skipping {test} on Postgres: set TOOL_RUNTIME_TEST_POSTGRES_URL (source .ci/postgres.sh; postgres_start)");
            None
        }
    }
}

/// The `faketime` command (libfaketime's wrapper, which runs a command
/// with a skewed clock); `None` (after saying so) without it, outside CI.
pub fn faketime(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("faketime"))
        .find(|candidate| candidate.is_file());
    if found.is_none() {
        assert!(!in_ci(), "faketime is not installed under CI; .ci/run installs it (apt-get install faketime)");
        eprintln!("skipping {test}: install faketime (apt-get install faketime)");
    }
    found
}

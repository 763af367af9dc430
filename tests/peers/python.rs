//! Whether the Python module a peer test needs is installed. When it is
//! not, the test is skipped with a message saying how to install it, or,
//! under CI (`CI` set), fails: CI installs every peer first.

use std::process::{Command, Stdio};

/// Whether `python3 -c "<import>"` works; `package` is the pinned pip
/// requirement that provides it, for the message.
pub fn module_available(import: &str, package: &str) -> bool {
    let imported =
        Command::new("python3").args(["-c", import]).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|status| status.success());
    if !imported {
        assert!(std::env::var_os("CI").is_none(), "`{import}` fails in CI: `python3 -m pip install '{package}'` must run first");
        eprintln!("skipped: `python3 -c '{import}'` failed; install it with `python3 -m pip install '{package}'`");
    }
    imported
}

//! The check of a test binary whose modules are the files of one folder
//! (`tests/quick/main.rs`, `tests/slow/main.rs`,
//! `tool-runtime/tests/suite.rs`): cargo finds only
//! the binary's own file there, so a file left out of its list of modules
//! would never be compiled, and its tests never run.

use std::path::Path;

/// The `.rs` files of `folder`, other than the binary's own file `main`,
/// that `main` does not declare (`mod name;` on a line of its own), sorted.
pub fn undeclared(folder: &Path, main: &str) -> Vec<String> {
    let declared = std::fs::read_to_string(folder.join(main)).unwrap();
    let mut left_out: Vec<String> = std::fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "rs") && path.file_name().is_some_and(|name| name != main))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|stem| !declared.lines().any(|line| line == format!("mod {stem};")))
        .collect();
    left_out.sort();
    left_out
}

//! The compile-pass cases of `#[tool]`, `#[tool_data]` and `tools!`: each
//! file under `tests/ui/pass/` is a small program that must compile and
//! whose `main` must run to its end (its asserts hold).
//!
//! They are compiled here, each into a module of this one test binary, and
//! not by trybuild (`tests/compile.rs`): a single pass case makes trybuild
//! build its whole dependency tree again in its own target directory, with
//! code, and build each case, pass or fail, in a cargo command of its own,
//! one after another; without one it only checks the compile-fail cases,
//! all in one `cargo check`. Here the cases share the dependencies the
//! workspace's tests are built with, and run in parallel.
//!
//! A case is included as it is written (`include!`), inside a module named
//! after its file, and its `main` is called by that module's test
//! (`collections::runs`, ...). So a case writes no inner attribute (`//!`),
//! and names its own items by relative paths, or from `crate::` through its
//! module. `every_case_runs` checks that each file of `tests/ui/pass/` is
//! listed here.

use std::path::Path;

/// A test that runs the `main` of `tests/ui/pass/<case>.rs`, in a module of
/// that name.
macro_rules! pass_cases {
    ($($case:ident)*) => {
        $(
            // As trybuild built them: a case's types need not read every
            // field.
            #[allow(dead_code)]
            mod $case {
                include!(concat!("ui/pass/", stringify!($case), ".rs"));

                #[test]
                fn runs() {
                    main();
                }
            }
        )*

        /// The cases listed, by file stem.
        const CASES: &[&str] = &[$(stringify!($case)),*];
    };
}

pass_cases! {
    collections
    crate_path
    ctx_and_params
    defaults
    ends_run
    enums
    every_key
    form
    input_wrapper
    nested_structs
    no_params
    option
    policy_predicates
    pub_crate_tool
    raw_identifiers
    replay_false_on_destructive
    returns
    scalars
    schemars_range
    serde_rename
    tool_data
    visible_when
}

/// A case added to `tests/ui/pass/` but not to the list above would never
/// run; one listed without its file would not compile.
#[test]
fn every_case_runs() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("ui").join("pass");
    let mut files: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "rs"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, CASES, "the files of {} and the cases listed in tests/pass.rs", folder.display());
}

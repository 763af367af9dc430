//! The root package's quick tests, as one test binary: each file of
//! `tests/quick/` is a module of it (`pipeline::`, `providers::`, ...).
//!
//! One binary, not one per file: each binary links the whole runtime, and
//! the 18 files were 18 links on every change. One file's tests, or one
//! test:
//!
//! ```text
//! cargo test --test quick pipeline::
//! cargo test --test quick -- --exact providers::every_exported_schema_is_valid_json_schema_2020_12
//! ```
//!
//! The slow tests, which wait on other processes, are the binary
//! `tests/slow/main.rs`. Those that measure the process itself (its
//! memory, its `tracing` subscriber, timings to tens of milliseconds) stay
//! binaries of their own in `tests/`.

#[path = "../support/modules.rs"]
mod modules;
#[path = "../../examples/common/shop.rs"]
#[allow(dead_code, reason = "the shop's tools these tests do not call")]
mod shop;

mod approval_ttl;
mod architecture;
mod content;
mod definitions;
mod external;
mod failures;
mod gemini_results;
mod intent;
mod interim;
mod log_fields;
mod pipeline;
mod provider_tools;
mod providers;
mod recovery;
mod result_hooks;
mod streams;
mod typed_output;
mod variants;

/// Cargo finds only `tests/quick/main.rs` in this folder: a file left out
/// of the list above would never be compiled, and its tests never run.
#[test]
fn every_file_of_the_folder_is_a_module_of_the_binary() {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/quick");
    let left_out = modules::undeclared(&folder, "main.rs");
    assert!(left_out.is_empty(), "files of {} that tests/quick/main.rs does not declare (`mod name;`): {left_out:?}", folder.display());
}

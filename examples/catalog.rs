//! The support-desk tools as one provider's payload: the JSON a request
//! carries in its `tools` field (an MCP `tools/list` result for `mcp`) on
//! stdout, and what the provider's dialect lost on stderr.
//!
//! ```text
//! cargo run --example catalog -- --provider openai
//! cargo run --example catalog -- --provider openai-responses --strict
//! cargo run --example catalog -- --provider anthropic
//! cargo run --example catalog -- --provider gemini
//! cargo run --example catalog -- --provider mcp
//! ```
//!
//! `--strict` forces OpenAI's strict mode on every tool (by default it is on
//! only where it loses no constraint), to show what it would lose.

// The catalog only lists the tools: the shop's demo data goes unused.
#[path = "common/shop.rs"]
#[allow(dead_code)]
mod shop;

use std::process::ExitCode;

use serde_json::{json, Value};
use tool_runtime::providers::{anthropic, gemini, mcp, openai, DialectError, Export, ExportOptions};
use tool_runtime::ToolDefinition;

const USAGE: &str = "usage: catalog --provider <openai|openai-responses|anthropic|gemini|mcp> [--strict]";

fn main() -> ExitCode {
    let mut provider = None;
    let mut options = ExportOptions::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--provider" => provider = args.next(),
            "--strict" => options = options.strict(true),
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("unknown argument `{other}`\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let registry = shop::registry();
    let defs: Vec<&ToolDefinition> = registry.definitions().collect();
    let exported: Result<Export, DialectError> = match provider.as_deref() {
        Some("openai") => openai::chat::tools(defs.iter().copied(), &options),
        Some("openai-responses") => openai::responses::tools(defs.iter().copied(), &options),
        Some("anthropic") => anthropic::tools(defs.iter().copied(), &options),
        Some("gemini") => gemini::tools(defs.iter().copied(), &options),
        Some("mcp") => {
            print_json(&mcp::tools_list(defs.iter().copied()));
            return ExitCode::SUCCESS;
        }
        Some(other) => {
            eprintln!("unknown provider `{other}`\n{USAGE}");
            return ExitCode::from(2);
        }
        None => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let export = match exported {
        Ok(export) => export,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };
    print_json(&json!({ "tools": export.tools }));
    for tool in &export.tools {
        let function = tool.get("function").unwrap_or(tool);
        if let (Some(name), Some(strict)) = (function["name"].as_str(), function["strict"].as_bool()) {
            eprintln!("{name}: strict mode {}", if strict { "on" } else { "off" });
        }
    }
    for loss in &export.losses {
        eprintln!("lost: {loss}");
    }
    ExitCode::SUCCESS
}

fn print_json(value: &Value) {
    println!("{}", serde_json::to_string_pretty(value).expect("JSON values serialise"));
}

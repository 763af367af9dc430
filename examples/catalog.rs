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
//! `--builtins` adds a provider-defined tool of each kind (OpenAI's web
//! search, file search and code interpreter, Anthropic's web search, bash
//! and text editor, Gemini's Google search and code execution): each
//! provider's payload carries its own, and the others are listed as lost.

// The catalog only lists the tools: the shop's demo data goes unused.
#[path = "common/shop.rs"]
#[allow(dead_code)]
mod shop;

use std::process::ExitCode;

use serde_json::{Value, json};
use tool_runtime::ToolDefinition;
use tool_runtime::prelude::*;
use tool_runtime::providers::builtin::{BashInput, ProviderTool, TextEditorCommand};
use tool_runtime::providers::{DialectError, Export, ExportOptions, anthropic, gemini, mcp, openai};

const USAGE: &str = "usage: catalog --provider <openai|openai-responses|anthropic|gemini|mcp> [--strict] [--builtins]";

fn main() -> ExitCode {
    let mut provider = None;
    let mut options = ExportOptions::new();
    let mut with_builtins = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--provider" => provider = args.next(),
            "--strict" => options = options.strict(true),
            "--builtins" => with_builtins = true,
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
    let builtins = if with_builtins { builtins() } else { Registry::builder().build().expect("an empty registry builds") };
    let defs: Vec<&ToolDefinition> = registry.definitions().chain(builtins.definitions()).collect();
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

/// One provider-defined tool of each kind, with some of their arguments.
/// The host-run ones (Anthropic's bash and text editor) only describe what
/// they would do: the catalog never runs a call.
fn builtins() -> Registry<()> {
    let bash = ProviderTool::anthropic_bash("shell")
        .handler(|input: BashInput, _ctx: Ctx<()>| async move { Ok::<_, ToolError>(format!("would run {:?}", input.command)) });
    let editor = ProviderTool::anthropic_text_editor("edit_file")
        .arg("max_characters", 20_000)
        .handler(|command: TextEditorCommand, _ctx: Ctx<()>| async move { Ok::<_, ToolError>(format!("would do {command:?}")) });
    Registry::builder()
        .tool(
            ProviderTool::openai_web_search("web")
                .arg("search_context_size", "low")
                .arg("user_location", json!({"type": "approximate", "city": "Amsterdam", "country": "NL"})),
        )
        .tool(ProviderTool::openai_file_search("manuals", ["vs_manuals"]).arg("max_num_results", 5))
        .tool(ProviderTool::openai_code_interpreter("python"))
        .tool(ProviderTool::anthropic_web_search("search").arg("max_uses", 3).arg("allowed_domains", json!(["docs.rs"])))
        .tool(bash.policy(PolicyKind::NeedsApproval))
        .tool(editor.policy(PolicyKind::NeedsApproval))
        .tool(ProviderTool::gemini_google_search("google"))
        .tool(ProviderTool::gemini_code_execution("sandbox"))
        .build()
        .expect("the built-ins are declared rightly")
}

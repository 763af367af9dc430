//! Provider-defined tools end to end: each built-in exported to its own
//! provider only (left out elsewhere, with a loss), the prepared payloads
//! agreeing with the dialects, the providers' runs read back from their
//! responses, and Anthropic's host-run bash and text editor going through
//! the whole pipeline (validation, policy, approval, timeout) under the
//! provider's name for them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tool_runtime::prelude::*;
use tool_runtime::providers::builtin::{BashInput, ItemKind, Provider, ProviderTool, Runs, TextEditorCommand};
use tool_runtime::providers::{Dialect, ExportOptions, Prepared, anthropic, gemini, mcp, openai};
use tool_runtime::{BuildProblem, ResultKind};

#[derive(Default)]
struct Host {
    /// The commands the bash handler ran.
    ran: Mutex<Vec<String>>,
}

/// Look up an order.
#[tool(read_only)]
async fn lookup(order_id: String) -> String {
    format!("order {order_id}")
}

fn bash() -> DynamicTool<Host> {
    ProviderTool::anthropic_bash("shell")
        .handler(|input: BashInput, ctx: Ctx<Host>| async move {
            let command = input.command.unwrap_or_default();
            if command.starts_with("sleep") {
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
            ctx.app().ran.lock().unwrap().push(command.clone());
            Ok::<_, ToolError>(format!("$ {command}"))
        })
        .policy_fn(|args, _ctx| match args["command"].as_str() {
            Some(command) if command.starts_with("rm") => Verdict::needs_approval(),
            _ => Verdict::Allow,
        })
        .timeout(Duration::from_millis(200))
}

fn editor() -> DynamicTool<Host> {
    ProviderTool::anthropic_text_editor("edit_file").arg("max_characters", 10_000).handler(|command: TextEditorCommand, _ctx: Ctx<Host>| async move {
        Ok::<_, ToolError>(match command {
            TextEditorCommand::View { path, .. } => format!("viewed {path}"),
            TextEditorCommand::Insert { path, insert_line, new_str } => format!("inserted {new_str:?} in {path} after {insert_line}"),
            other => format!("{other:?}"),
        })
    })
}

fn registry() -> Registry<Host> {
    Registry::builder()
        .tools(tools![lookup])
        .tool(ProviderTool::openai_web_search("web").arg("search_context_size", "low"))
        .tool(ProviderTool::openai_file_search("manuals", ["vs_1"]).arg("max_num_results", 5))
        .tool(ProviderTool::openai_code_interpreter("python"))
        .tool(ProviderTool::anthropic_web_search("search").arg("max_uses", 3))
        .tool(bash())
        .tool(editor())
        .tool(ProviderTool::gemini_google_search("google"))
        .tool(ProviderTool::gemini_code_execution("sandbox"))
        .build()
        .unwrap()
}

/// The tools a dialect left out (a loss of the keyword `provider`).
fn names(losses: &[tool_runtime::providers::Loss]) -> Vec<&str> {
    losses.iter().filter(|loss| loss.keyword == "provider").map(|loss| loss.tool.as_str()).collect()
}

#[test]
fn each_built_in_goes_to_its_own_provider_and_is_a_loss_elsewhere() {
    let registry = registry();
    let defs: Vec<_> = registry.definitions().collect();
    let options = ExportOptions::default();

    let responses = openai::responses::tools(defs.iter().copied(), &options).unwrap();
    assert_eq!(responses.tools[0]["name"], "lookup");
    assert_eq!(
        responses.tools[1..],
        [
            json!({"type": "web_search", "search_context_size": "low"}),
            json!({"type": "file_search", "vector_store_ids": ["vs_1"], "max_num_results": 5}),
            json!({"type": "code_interpreter", "container": {"type": "auto"}}),
        ]
    );
    assert_eq!(names(&responses.losses), ["search", "shell", "edit_file", "google", "sandbox"]);
    assert_eq!(
        responses.losses[1].to_string(),
        "shell (root): `provider` (information): `anthropic.bash_20250124` is a built-in tool of Anthropic; left out of the OpenAI Responses export"
    );

    let anthropic = anthropic::tools(defs.iter().copied(), &options).unwrap();
    assert_eq!(anthropic.tools[0]["name"], "lookup");
    assert_eq!(
        anthropic.tools[1..],
        [
            json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 3}),
            json!({"type": "bash_20250124", "name": "bash"}),
            json!({"type": "text_editor_20250728", "name": "str_replace_based_edit_tool", "max_characters": 10_000}),
        ]
    );
    assert_eq!(names(&anthropic.losses), ["web", "manuals", "python", "google", "sandbox"]);

    let gemini = gemini::tools(defs.iter().copied(), &options).unwrap();
    assert_eq!(gemini.tools.len(), 3);
    assert_eq!(gemini.tools[0]["functionDeclarations"][0]["name"], "lookup");
    assert_eq!(gemini.tools[0]["functionDeclarations"].as_array().unwrap().len(), 1);
    assert_eq!(gemini.tools[1..], [json!({"googleSearch": {}}), json!({"codeExecution": {}})]);
    assert_eq!(names(&gemini.losses), ["web", "manuals", "python", "search", "shell", "edit_file"]);

    let chat = openai::chat::tools(defs.iter().copied(), &options).unwrap();
    assert_eq!(chat.tools.len(), 1, "Chat Completions takes no built-in");
    assert_eq!(names(&chat.losses).len(), 8);

    let list = mcp::tools_list(defs.iter().copied());
    assert_eq!(list["tools"].as_array().unwrap().len(), 1, "no built-in is an MCP tool");
}

#[test]
fn a_prepared_payload_places_built_ins_as_the_dialect_does() {
    let registry = registry();
    let defs: Vec<_> = registry.definitions().cloned().collect();
    let options = ExportOptions::default();
    for dialect in [Dialect::OpenAiChat, Dialect::OpenAiResponses, Dialect::Anthropic, Dialect::Gemini, Dialect::Mcp] {
        let prepared = Prepared::new(dialect, &defs, &options).unwrap();
        for offered in [&defs[..], &defs[1..], &defs[7..], &defs[..1], &defs[4..6]] {
            let payload: Value = serde_json::from_str(&prepared.payload(offered)).unwrap();
            let expected = match dialect {
                Dialect::OpenAiChat => json!(openai::chat::tools(offered, &options).unwrap().tools),
                Dialect::OpenAiResponses => json!(openai::responses::tools(offered, &options).unwrap().tools),
                Dialect::Anthropic => json!(anthropic::tools(offered, &options).unwrap().tools),
                Dialect::Gemini => json!(gemini::tools(offered, &options).unwrap().tools),
                _ => mcp::tools_list(offered),
            };
            assert_eq!(payload, expected, "{dialect:?}, {} tools from {}", offered.len(), offered[0].name);
        }
    }
    let gemini = Prepared::new(Dialect::Gemini, &defs, &options).unwrap();
    assert_eq!(gemini.entry("google"), Some(r#"{"googleSearch":{}}"#));
    assert_eq!(gemini.entry("shell"), None);
    assert_eq!(names(gemini.losses()), ["web", "manuals", "python", "search", "shell", "edit_file"]);
}

#[test]
fn the_providers_runs_are_read_back_and_are_not_calls() {
    let registry = registry();
    let openai = json!({"output": [
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "rust"}},
        {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["warranty"], "results": null},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup", "arguments": "{\"order_id\":\"A-1\"}"}
    ]});
    let items = openai::responses::provider_items(&openai).unwrap();
    let seen: Vec<_> = items.iter().map(|item| (item.declared_in(registry.definitions()).unwrap().name.as_str(), item.id.as_deref())).collect();
    assert_eq!(seen, [("web", Some("ws_1")), ("manuals", Some("fs_1"))]);
    assert!(items.iter().all(|item| item.kind == ItemKind::CallAndOutcome && item.provider == Provider::OpenAi));
    let calls = openai::responses::parse_calls(&openai).unwrap();
    assert_eq!(calls.iter().map(|call| call.name.as_str()).collect::<Vec<_>>(), ["lookup"]);

    let anthropic = json!({"role": "assistant", "content": [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "rust"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
            {"type": "web_search_result", "url": "https://www.rust-lang.org", "title": "Rust", "encrypted_content": "x"}
        ]},
        {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}}
    ]});
    let items = anthropic::provider_items(&anthropic).unwrap();
    assert_eq!(items.iter().map(|item| item.kind).collect::<Vec<_>>(), [ItemKind::Call, ItemKind::Outcome]);
    assert_eq!(items[1].declared_in(registry.definitions()).unwrap().name, "search");
    assert_eq!(items[1].value["content"][0]["url"], "https://www.rust-lang.org");
    let calls = anthropic::parse_calls(&anthropic).unwrap();
    assert_eq!(calls.iter().map(|call| call.name.as_str()).collect::<Vec<_>>(), ["bash"], "only the host's call");

    let gemini = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"executableCode": {"id": "ex_1", "language": "PYTHON", "code": "print(2 + 2)"}},
        {"codeExecutionResult": {"id": "ex_1", "outcome": "OUTCOME_OK", "output": "4\n"}}
    ]}, "groundingMetadata": {"webSearchQueries": ["2 + 2"]}}]});
    let items = gemini::provider_items(&gemini).unwrap();
    let seen: Vec<_> = items.iter().map(|item| (item.declared_in(registry.definitions()).unwrap().name.as_str(), item.kind)).collect();
    assert_eq!(seen, [("sandbox", ItemKind::Call), ("sandbox", ItemKind::Outcome), ("google", ItemKind::Outcome)]);
    assert_eq!(items[1].id.as_deref(), Some("ex_1"));
    assert!(gemini::parse_calls(&gemini).unwrap().is_empty());

    let err = anthropic::provider_items(&json!({"content": [{"type": "server_tool_use", "name": "web_search"}]})).unwrap_err();
    assert_eq!(err.to_string(), "malformed anthropic payload at `/content/0`: missing `id`");
}

#[tokio::test]
async fn a_host_run_built_in_goes_through_the_pipeline_under_the_providers_name() {
    let host = Arc::new(Host::default());
    let registry = registry();
    assert_eq!(registry.definition("shell").unwrap().provider_defined.as_ref().unwrap().runs, Runs::OnHost);
    let mut run = registry.run(host.clone());
    let response = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls /tmp"}},
        {"type": "tool_use", "id": "t2", "name": "bash", "input": {"command": 3}},
        {"type": "tool_use", "id": "t3", "name": "bash", "input": {"command": "rm -rf /tmp/x"}},
        {"type": "tool_use", "id": "t4", "name": "bash", "input": {"command": "sleep 5"}},
        {"type": "tool_use", "id": "t5", "name": "str_replace_based_edit_tool",
         "input": {"command": "insert", "path": "/a.txt", "insert_line": 2, "insert_text": "hi"}}
    ]});
    let mut step = run.execute(anthropic::parse_calls(&response).unwrap()).await;
    let kinds: Vec<_> = step.results.iter().map(|result| (result.tool.as_str(), result.kind)).collect();
    assert_eq!(
        kinds,
        [
            ("shell", ResultKind::Success),
            ("shell", ResultKind::InvalidArguments),
            ("shell", ResultKind::PendingApproval),
            ("shell", ResultKind::TimedOut),
            ("edit_file", ResultKind::Success),
        ]
    );
    assert_eq!(step.results[0].text, "$ ls /tmp");
    assert_eq!(step.results[4].text, "inserted \"hi\" in /a.txt after 2");
    assert_eq!(host.ran.lock().unwrap().as_slice(), ["ls /tmp"], "the refused, parked and timed-out calls ran nothing");

    let approved = run.approvals().approve("t3").await.unwrap();
    assert_eq!(approved.text, "$ rm -rf /tmp/x");
    step.settle(approved);
    assert_eq!(host.ran.lock().unwrap().as_slice(), ["ls /tmp", "rm -rf /tmp/x"]);
    let reply = anthropic::results(&step.results);
    assert_eq!(reply[0]["content"][1]["tool_use_id"], "t2");
    assert_eq!(reply[0]["content"][1]["is_error"], true);
}

#[tokio::test]
async fn a_provider_run_built_in_is_never_run_here() {
    let registry = registry();
    let result = registry.invoke(&Arc::new(Host::default()), "web", "{}").await;
    assert_eq!(result.kind, ResultKind::ToolError);
    assert_eq!(
        result.text,
        "code: PROVIDER_TOOL, status: 400, userMessage: `web` is OpenAI's built-in tool, run by OpenAI; it cannot be called here. Do not retry this call."
    );
    // The provider's name of a provider-run tool is not a name of the registry.
    let unknown = registry.invoke(&Arc::new(Host::default()), "web_search", "{}").await;
    assert_eq!(unknown.kind, ResultKind::UnknownTool);
}

#[test]
fn built_ins_declared_wrongly_fail_the_build() {
    let problems = |builder: tool_runtime::RegistryBuilder<Host>| builder.build().unwrap_err().problems;
    let unhandled = problems(Registry::builder().tool(ProviderTool::anthropic_bash("shell")));
    assert_eq!(unhandled[0].to_string(), "tool `shell`: `anthropic.bash_20250124` runs on the host: give it a handler with `ProviderTool::handler`");
    let typed = problems(Registry::builder().tool(ProviderTool::openai_web_search("web").arg("type", "web_search_preview")));
    assert_eq!(typed[0].to_string(), "tool `web`: the key `type` of the entry is OpenAI's own; remove `.arg(\"type\", ...)`");
    /// A bash of our own.
    #[tool]
    async fn bash() -> String {
        String::new()
    }
    let taken = problems(Registry::builder().tools(tools![bash]).tool(self::bash()));
    assert!(
        matches!(&taken[0], BuildProblem::ProviderNameTaken { tool, wire_name, other } if tool == "shell" && wire_name == "bash" && other == "bash")
    );
    let twice = problems(Registry::builder().tool(ProviderTool::anthropic_web_search("a")).tool(ProviderTool::anthropic_web_search("b")));
    assert_eq!(twice[0].to_string(), "tool `b` is called `web_search` by its provider, and `a` answers to that name too; keep only one of them");
}

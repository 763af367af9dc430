//! Content blocks end to end: a `#[tool]` and a `DynamicTool` returning
//! images, audio and resources; the size limits (bytes, blocks, links, MIME
//! types); the output limit over all the text the model reads of them, in
//! every dialect; and each dialect's tool-result shape, with what it loses.

use std::sync::Arc;

use serde_json::{Value, json};
use tool_runtime::prelude::*;
use tool_runtime::providers::{Dialect, anthropic, gemini, openai, result_losses};
use tool_runtime::{Block, ResultKind};

const PNG: [u8; 4] = [0x89, b'P', b'N', b'G'];
const PDF: [u8; 4] = *b"%PDF";

/// Draw a chart of a quarter's sales.
#[tool(read_only, max_output_chars = 100)]
async fn chart(quarter: String, pixels: Option<usize>) -> Result<Vec<Block>, ToolError> {
    if quarter == "Q9" {
        return Err(ToolError::not_found("NO_QUARTER", "There is no Q9."));
    }
    let image = match pixels {
        Some(pixels) => vec![0; pixels],
        None => PNG.to_vec(),
    };
    Ok(vec![Block::text(format!("Sales of {quarter}.")), Block::image(image, "image/png")])
}

/// Everything a result can hold.
#[tool]
async fn everything() -> Vec<Block> {
    vec![
        Block::text("Report."),
        Block::image(PNG.to_vec(), "image/png"),
        Block::image(vec![1, 2], "image/bmp"),
        Block::audio(vec![3; 8], "audio/wav"),
        Block::resource_link("file:///data/q1.csv", "q1.csv").mime_type("text/csv").into(),
        Block::resource_text("file:///notes.md", "text/markdown", "# Notes"),
        Block::resource_blob("file:///reports/q1.pdf", "application/pdf", PDF.to_vec()),
    ]
}

/// Crumbs of text, one character a block.
#[tool(max_output_chars = 10)]
async fn crumbs(count: usize) -> Vec<Block> {
    vec![Block::text("x"); count]
}

/// Text, an image and a link, under a small output limit.
#[tool(max_output_chars = 100)]
async fn mixed(resource: bool) -> Vec<Block> {
    let text = match resource {
        true => Block::resource_text("file:///t.txt", "text/plain", "t".repeat(200)),
        false => Block::text("t".repeat(200)),
    };
    vec![text, Block::image(PNG.to_vec(), "image/png"), Block::resource_link("file:///data/q1.csv", "q1.csv").mime_type("text/csv").into()]
}

/// What a hostile tool can return.
#[tool(max_output_chars = 100)]
async fn hostile(case: String) -> Vec<Block> {
    let mib = 1024 * 1024;
    match case.as_str() {
        "crumbs" => vec![Block::text("x"); 200_000],
        "images" => vec![Block::image(Vec::new(), "image/png"); 200_000],
        "link" => vec![Block::resource_link(format!("file:///{}", "u".repeat(3 * mib)), "big").description("d".repeat(3 * mib)).into()],
        "mime" => vec![Block::image(PNG.to_vec(), format!("image/{}", "p".repeat(2 * mib)))],
        "resource" => vec![Block::resource_blob(format!("file:///{}", "r".repeat(3 * mib)), "application/pdf", PDF.to_vec())],
        _ => vec![],
    }
}

fn registry() -> Registry<()> {
    Registry::<()>::builder().tools(tools![chart, everything, crumbs, mixed, hostile]).build().unwrap()
}

/// The strings of an MCP content block list the model may read (all but
/// the base64 payloads and the block types).
fn mcp_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| mcp_strings(item, out)),
        Value::Object(map) => map.iter().filter(|(key, _)| !matches!(key.as_str(), "data" | "blob" | "type")).for_each(|(_, v)| mcp_strings(v, out)),
        _ => {}
    }
}

/// What the model reads of `result` in each dialect and over MCP: the text
/// of its rendering (the bytes of carried blocks left aside), and the size
/// of the whole rendering in bytes.
fn read_by_model(result: &CallResult) -> Vec<(&'static str, String, usize)> {
    let results = std::slice::from_ref(result);
    let texts = |items: &Value| match items {
        Value::String(text) => text.clone(),
        Value::Array(items) => items.iter().filter_map(|item| item["text"].as_str()).collect::<Vec<_>>().join("\n"),
        other => panic!("{other}"),
    };
    let anthropic = anthropic::results(results);
    let responses = openai::responses::results(results);
    let chat = openai::chat::results(results);
    let gemini = gemini::results(results);
    let gemini_text = gemini[0]["parts"][0]["functionResponse"]["response"].as_object().unwrap().values().map(texts).collect();
    let mcp = match result.content.is_empty() {
        true => json!([{"type": "text", "text": result.text}]),
        false => serde_json::to_value(&result.content).unwrap(),
    };
    let mut mcp_text = Vec::new();
    mcp_strings(&mcp, &mut mcp_text);
    let size = |value: &Value| value.to_string().len();
    vec![
        ("anthropic", texts(&anthropic[0]["content"][0]["content"]), size(&anthropic[0])),
        ("responses", texts(&responses[0]["output"]), size(&responses[0])),
        ("chat", texts(&chat[0]["content"]), size(&chat[0])),
        ("gemini", gemini_text, size(&gemini[0])),
        ("mcp", mcp_text.join("\n"), size(&mcp)),
    ]
}

/// `text` without its one truncation marker, and the marker; fails unless
/// there is exactly one.
fn one_marker(text: &str) -> (String, String) {
    assert_eq!(text.matches("[output truncated").count(), 1, "{text}");
    let at = text.find("[output truncated").unwrap();
    let end = at + text[at..].find(']').unwrap() + 1;
    (format!("{}{}", &text[..at], &text[end..]), text[at..end].to_owned())
}

async fn everything_result() -> CallResult {
    registry().call(&Arc::new(()), "everything", "{}").call_id("call_1").await.into_result().unwrap()
}

#[tokio::test]
async fn a_tool_returning_blocks_keeps_them_and_describes_them_in_text() {
    let result = everything_result().await;
    assert_eq!(result.kind, ResultKind::Success);
    assert_eq!(result.content.len(), 7);
    assert_eq!(result.content[1], Block::image(PNG.to_vec(), "image/png"));
    assert_eq!(result.content[3], Block::audio(vec![3; 8], "audio/wav"));
    assert_eq!(result.structured(), None, "blocks are not structured output");
    assert_eq!(
        result.text,
        "Report.\n\
         [an image (image/png, 4 bytes) that cannot be shown here]\n\
         [an image (image/bmp, 2 bytes) that cannot be shown here]\n\
         [an audio clip (audio/wav, 8 bytes) that cannot be shown here]\n\
         [resource link: q1.csv <file:///data/q1.csv>, text/csv]\n\
         [resource <file:///notes.md>]\n# Notes\n\
         [the resource <file:///reports/q1.pdf> (application/pdf, 4 bytes) that cannot be shown here]"
    );
    let def = registry().definition("everything").unwrap().clone();
    assert!(def.output_schema.is_none(), "a tool returning blocks advertises no output schema");
}

#[tokio::test]
async fn a_tool_error_of_a_blocks_tool_is_its_line() {
    let result = registry().invoke(&Arc::new(()), "chart", r#"{"quarter": "Q9"}"#).await;
    assert_eq!(result.kind, ResultKind::ToolError);
    assert!(result.content.is_empty());
    assert!(result.text.contains("NO_QUARTER"), "{}", result.text);
}

#[tokio::test]
async fn binary_over_the_limits_is_a_line_the_model_reads() {
    let registry = Registry::<()>::builder().tools(tools![chart, everything]).max_block_bytes(100).max_content_bytes(150).build().unwrap();
    let app = Arc::new(());
    let fits = registry.invoke(&app, "chart", r#"{"quarter": "Q1", "pixels": 100}"#).await;
    assert_eq!(fits.kind, ResultKind::Success, "{}", fits.text);
    let over = registry.invoke(&app, "chart", r#"{"quarter": "Q1", "pixels": 101}"#).await;
    assert_eq!((over.kind, over.error_code.as_deref(), over.status), (ResultKind::ToolError, Some("CONTENT_TOO_LARGE"), Some(413)));
    assert!(over.text.contains("an image (image/png) of 101 bytes; the limit is 100 bytes per block"), "{}", over.text);
    assert!(over.content.is_empty(), "nothing of an oversized result is sent");

    let registry = Registry::<()>::builder().tools(tools![everything]).max_content_bytes(20).build().unwrap();
    let over = registry.invoke(&app, "everything", "{}").await;
    assert!(over.text.contains("25 bytes of binary content; the limit is 20 bytes per result"), "{}", over.text);
}

#[tokio::test]
async fn the_default_limit_is_five_mib_a_block() {
    let registry = registry();
    let app = Arc::new(());
    let five_mib = 5 * 1024 * 1024;
    let fits = registry.invoke(&app, "chart", format!(r#"{{"quarter": "Q1", "pixels": {five_mib}}}"#)).await;
    assert_eq!(fits.kind, ResultKind::Success);
    let over = registry.invoke(&app, "chart", format!(r#"{{"quarter": "Q1", "pixels": {}}}"#, five_mib + 1)).await;
    assert_eq!(over.error_code.as_deref(), Some("CONTENT_TOO_LARGE"));
}

#[tokio::test]
async fn max_output_chars_cuts_text_blocks_and_never_an_image() {
    let long = "Q".repeat(100);
    let result = registry().invoke(&Arc::new(()), "chart", json!({"quarter": long, "pixels": 1000}).to_string()).await;
    assert_eq!(result.kind, ResultKind::Success);
    assert!(result.truncated);
    // 100 characters: the image's line takes 60 of them, the text the 40 left.
    let Block::Text(text) = &result.content[0] else { panic!("{:?}", result.content[0]) };
    assert!(text.starts_with(&format!("Sales of {}\n[output truncated: showing 100 of 170 characters;", "Q".repeat(31))), "{text}");
    assert_eq!(result.content[1], Block::image(vec![0; 1000], "image/png"), "the image is whole");
}

#[tokio::test]
async fn text_past_the_limit_is_cut_once_with_one_marker_in_every_dialect() {
    let result = registry().invoke(&Arc::new(()), "crumbs", r#"{"count": 90}"#).await;
    assert_eq!(result.kind, ResultKind::Success);
    assert!(result.truncated);
    assert_eq!(result.content.len(), 11, "ten blocks of one character, and the marker");
    assert!(result.content[..10].iter().all(|block| *block == Block::text("x")));
    let Block::Text(marker) = &result.content[10] else { panic!("{:?}", result.content[10]) };
    assert!(marker.starts_with("[output truncated: showing 10 of 90 characters, and 10 of 90 blocks; ask for less"), "{marker}");
    for (dialect, text, _) in read_by_model(&result) {
        let (rest, _) = one_marker(&text);
        assert_eq!(rest.replace('\n', ""), "x".repeat(10), "{dialect}: {text}");
    }
}

#[tokio::test]
async fn links_and_binary_blocks_are_kept_whole_or_left_out_and_text_has_the_rest() {
    let registry = registry();
    // 100 characters: the image's line takes 57, the link's (55) no longer
    // fits, and the text (or the text resource) has the 43 left.
    for (resource, kept) in [(false, 43), (true, 43 - "[resource <file:///t.txt>]\n".len())] {
        let result = registry.invoke(&Arc::new(()), "mixed", json!({"resource": resource}).to_string()).await;
        assert_eq!(result.content.len(), 2, "{:?}", result.content);
        assert_eq!(result.content[1], Block::image(PNG.to_vec(), "image/png"));
        let text = result.content[0].describe();
        let (rest, marker) = one_marker(&text);
        assert!(rest.trim_end().ends_with(&format!("\n{}", "t".repeat(kept))) || rest.trim_end() == "t".repeat(kept), "{text}");
        assert!(marker.contains(" of 3 blocks"), "{marker}");
        for (dialect, text, _) in read_by_model(&result) {
            let (rest, _) = one_marker(&text);
            assert!(rest.chars().filter(|c| *c != '\n').count() <= 100, "{dialect}: {text}");
            assert!(!text.contains("q1.csv"), "{dialect}: the link was left out: {text}");
        }
    }
}

#[tokio::test]
async fn hostile_blocks_are_refused_with_a_short_line_in_every_dialect() {
    let registry = registry();
    let cases = [
        ("crumbs", "200000 blocks; the limit is 100 blocks"),
        ("images", "200000 blocks; the limit is 100 blocks"),
        ("link", "a resource link whose uri is 3145736 characters; the limit is 2048 characters"),
        ("mime", "an image whose MIME type is 2097158 bytes; the limit is 255 bytes"),
        ("resource", "an embedded resource whose uri is 3145736 characters; the limit is 2048 characters"),
    ];
    for (case, says) in cases {
        let result = registry.invoke(&Arc::new(()), "hostile", json!({"case": case}).to_string()).await;
        assert_eq!((result.kind, result.error_code.as_deref()), (ResultKind::ToolError, Some("CONTENT_TOO_LARGE")), "{case}: {}", result.text.len());
        assert!(result.text.contains(says), "{case}: {}", result.text);
        for (dialect, text, size) in read_by_model(&result) {
            println!("{case}: {dialect} reads {} bytes of text ({size} bytes rendered)", text.len());
            assert!(text.len() < 400 && size < 1000, "{case}: {dialect} reads {} bytes ({size} rendered)", text.len());
        }
    }
}

#[tokio::test]
async fn the_block_link_and_mime_limits_are_the_registry_s() {
    let registry = Registry::<()>::builder().tools(tools![hostile, everything]).max_blocks(6).max_link_chars(18).build().unwrap();
    let app = Arc::new(());
    let over = registry.invoke(&app, "everything", "{}").await;
    assert!(over.text.contains("7 blocks; the limit is 6 blocks per result"), "{}", over.text);
    let registry = Registry::<()>::builder().tools(tools![everything]).max_link_chars(18).build().unwrap();
    let over = registry.invoke(&app, "everything", "{}").await;
    assert!(over.text.contains("a resource link whose uri is 19 characters; the limit is 18 characters"), "{}", over.text);
    let registry = Registry::<()>::builder().tools(tools![everything]).max_link_chars(19).build().unwrap();
    let over = registry.invoke(&app, "everything", "{}").await;
    assert!(over.text.contains("an embedded resource whose uri is 22 characters; the limit is 19 characters"), "{}", over.text);
    let registry = Registry::<()>::builder().tools(tools![everything]).max_link_chars(22).build().unwrap();
    assert_eq!(registry.invoke(&app, "everything", "{}").await.kind, ResultKind::Success);
}

#[tokio::test]
async fn a_dynamic_tool_returns_mcp_content_blocks() {
    let shot = DynamicTool::<()>::new("shot", "Take a screenshot.", json!({"type": "object"}), |_, _| async {
        Ok::<_, ToolError>(json!([{"type": "text", "text": "The screen."}, {"type": "image", "data": "iVBORw==", "mimeType": "image/png"}]))
    })
    .content_blocks(true);
    let broken = DynamicTool::<()>::new("broken", "Broken.", json!({"type": "object"}), |_, _| async {
        Ok::<_, ToolError>(json!([{"type": "image", "data": "not base64!", "mimeType": "image/png"}]))
    })
    .content_blocks(true);
    let plain = DynamicTool::<()>::new("plain", "Plain.", json!({"type": "object"}), |_, _| async {
        Ok::<_, ToolError>(json!([{"type": "text", "text": "a value"}]))
    });
    let reports = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = reports.clone();
    let registry = Registry::builder()
        .tool(shot)
        .tool(broken)
        .tool(plain)
        .on_tool_error(move |report| seen.lock().unwrap().push(report.error.clone()))
        .build()
        .unwrap();
    let app = Arc::new(());
    let result = registry.invoke(&app, "shot", "{}").await;
    assert_eq!(*result.content, [Block::text("The screen."), Block::image(vec![0x89, b'P', b'N', b'G'], "image/png")]);

    let result = registry.invoke(&app, "broken", "{}").await;
    assert_eq!(result.kind, ResultKind::Internal);
    assert!(reports.lock().unwrap()[0].contains("not a list of content blocks"), "{:?}", reports.lock().unwrap());

    let result = registry.invoke(&app, "plain", "{}").await;
    assert!(result.content.is_empty(), "without content_blocks the value is a value");
    assert_eq!(result.structured(), Some(&json!([{"type": "text", "text": "a value"}])));
}

#[test]
fn a_dynamic_tool_returning_blocks_cannot_declare_an_output_schema() {
    let tool = DynamicTool::<()>::new("shot", "Shot.", json!({"type": "object"}), |_, _| async { Ok::<_, ToolError>(json!([])) })
        .content_blocks(true)
        .output_schema(json!({"type": "object"}));
    let Err(error) = Registry::builder().tool(tool).build() else { panic!("built a tool with blocks and an output schema") };
    assert!(error.to_string().contains("returns blocks, not a value, so it has no output schema"), "{error}");
}

fn b64(data: &[u8]) -> String {
    // The few bytes of these tests, encoded by hand.
    match data {
        [0x89, b'P', b'N', b'G'] => "iVBORw==".to_owned(),
        b"%PDF" => "JVBERg==".to_owned(),
        other => panic!("no encoding for {other:?}"),
    }
}

#[tokio::test]
async fn anthropic_carries_images_and_pdfs_and_describes_the_rest() {
    let result = everything_result().await;
    let messages = anthropic::results(std::slice::from_ref(&result));
    let content = &messages[0]["content"][0]["content"];
    assert_eq!(
        content,
        &json!([
            {"type": "text", "text": "Report."},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(&PNG)}},
            {"type": "text", "text": "[an image (image/bmp, 2 bytes) that cannot be shown here]"},
            {"type": "text", "text": "[an audio clip (audio/wav, 8 bytes) that cannot be shown here]"},
            {"type": "text", "text": "[resource link: q1.csv <file:///data/q1.csv>, text/csv]"},
            {"type": "text", "text": "[resource <file:///notes.md>]\n# Notes"},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": b64(&PDF)}}
        ])
    );
    let losses = result_losses(Dialect::Anthropic, &[result]);
    let lost: Vec<(usize, &str)> = losses.iter().map(|loss| (loss.block, loss.what.as_str())).collect();
    assert_eq!(lost, [(2, "an image (image/bmp)"), (3, "an audio clip (audio/wav)")]);
    assert_eq!(
        losses[1].to_string(),
        "everything (call call_1), block 3: an audio clip (audio/wav) is not carried by Anthropic tool results; the model read a line describing it"
    );
}

#[tokio::test]
async fn openai_responses_carries_images_and_pdfs_as_input_items() {
    let result = everything_result().await;
    let items = openai::responses::results(std::slice::from_ref(&result));
    let output = items[0]["output"].as_array().unwrap();
    assert_eq!(output[0], json!({"type": "input_text", "text": "Report."}));
    assert_eq!(output[1], json!({"type": "input_image", "image_url": format!("data:image/png;base64,{}", b64(&PNG))}));
    assert_eq!(output[2]["type"], "input_text");
    assert_eq!(output[3]["text"], "[an audio clip (audio/wav, 8 bytes) that cannot be shown here]");
    assert_eq!(output[6], json!({"type": "input_file", "filename": "q1.pdf", "file_data": format!("data:application/pdf;base64,{}", b64(&PDF))}));
    let lost: Vec<usize> = result_losses(Dialect::OpenAiResponses, &[result]).iter().map(|loss| loss.block).collect();
    assert_eq!(lost, [2, 3]);
}

#[tokio::test]
async fn chat_completions_is_text_only_and_loses_every_binary_block() {
    let result = everything_result().await;
    let messages = openai::chat::results(std::slice::from_ref(&result));
    assert_eq!(messages[0]["content"], Value::String(result.text.clone()));
    let lost: Vec<usize> = result_losses(Dialect::OpenAiChat, &[result]).iter().map(|loss| loss.block).collect();
    assert_eq!(lost, [1, 2, 3, 6], "images, audio and the PDF; the link and the text resource are text");
}

#[tokio::test]
async fn gemini_sends_images_and_pdfs_as_parts_of_the_function_response() {
    let result = everything_result().await;
    let contents = gemini::results(std::slice::from_ref(&result));
    let response = &contents[0]["parts"][0]["functionResponse"];
    assert_eq!(
        response["parts"],
        json!([
            {"inlineData": {"mimeType": "image/png", "data": b64(&PNG)}},
            {"inlineData": {"mimeType": "application/pdf", "data": b64(&PDF)}}
        ])
    );
    let output = response["response"]["output"].as_str().unwrap();
    assert!(output.starts_with("Report.\n[an image (image/bmp, 2 bytes) that cannot be shown here]\n[an audio clip"), "{output}");
    assert!(!output.contains("image/png"), "a carried image is not described too: {output}");
    let lost: Vec<usize> = result_losses(Dialect::Gemini, &[result]).iter().map(|loss| loss.block).collect();
    assert_eq!(lost, [2, 3]);
}

#[tokio::test]
async fn plain_results_render_as_before_in_every_dialect() {
    let registry = registry();
    let error = registry.call(&Arc::new(()), "chart", r#"{"quarter": "Q9"}"#).call_id("c").await.into_result().unwrap();
    let text = Value::String(error.text.clone());
    assert_eq!(anthropic::results(std::slice::from_ref(&error))[0]["content"][0]["content"], text);
    assert_eq!(openai::responses::results(std::slice::from_ref(&error))[0]["output"], text);
    let gemini = gemini::results(std::slice::from_ref(&error));
    assert_eq!(gemini[0]["parts"][0]["functionResponse"]["response"]["error"], text);
    assert!(gemini[0]["parts"][0]["functionResponse"].get("parts").is_none());
    assert!(result_losses(Dialect::OpenAiChat, &[error]).is_empty());
}

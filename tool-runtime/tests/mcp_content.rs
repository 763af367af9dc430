//! Content blocks at the MCP wire: images, audio, resource links and
//! embedded resources as MCP content blocks, text cut and binary kept,
//! and a result over a limit (bytes, blocks, a link's size) as an error
//! result.
//!
//! ```text
//! cargo test -p tool-runtime --features mcp --test suite mcp_content::
//! ```
#![cfg(feature = "mcp")]

use crate::support;

use std::sync::Arc;

use serde_json::json;
use tool_runtime::Block;
use tool_runtime::mcp::McpServer;
use tool_runtime::prelude::*;

use support::*;

/// Take a snapshot of the shelf.
#[tool(read_only, max_output_chars = 330)]
async fn snapshot(caption: String, bytes: Option<usize>) -> Vec<Block> {
    vec![
        Block::text(caption),
        Block::image(vec![0x89, b'P', b'N', b'G'], "image/png"),
        Block::audio(vec![0; bytes.unwrap_or(3)], "audio/wav"),
        Block::resource_link("file:///shelf.csv", "shelf.csv").description("Every item.").mime_type("text/csv").into(),
        Block::resource_text("file:///notes.md", "text/markdown", "# Notes"),
        Block::resource_blob("file:///shelf.pdf", "application/pdf", b"%PDF".to_vec()),
    ]
}

/// Link to a resource whose uri is 3 MiB, or return 200,000 empty images.
#[tool(read_only, max_output_chars = 100)]
async fn flood(images: bool) -> Vec<Block> {
    match images {
        true => vec![Block::image(Vec::new(), "image/png"); 200_000],
        false => vec![Block::resource_link(format!("file:///{}", "u".repeat(3 << 20)), "big").description("d".repeat(3 << 20)).into()],
    }
}

fn content_server(max_block_bytes: usize) -> McpServer<Store> {
    let registry = Registry::<Store>::builder().tools(tools![snapshot, flood]).max_block_bytes(max_block_bytes).build().unwrap();
    McpServer::new(registry, Arc::new(Store::default()))
}

#[tokio::test]
async fn blocks_reach_the_client_as_mcp_content_blocks() {
    let server = content_server(1000);
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let tools = wire.request("tools/list", json!({})).await;
    assert!(tools["tools"][0].get("outputSchema").is_none(), "a tool returning blocks declares no output schema");

    let result = wire.call("snapshot", json!({"caption": "The shelf."})).await;
    assert_eq!(result["isError"], false);
    assert!(result.get("structuredContent").is_none(), "{result}");
    assert_eq!(
        result["content"],
        json!([
            {"type": "text", "text": "The shelf."},
            {"type": "image", "data": "iVBORw==", "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///shelf.csv", "name": "shelf.csv", "description": "Every item.", "mimeType": "text/csv"},
            {"type": "resource", "resource": {"uri": "file:///notes.md", "mimeType": "text/markdown", "text": "# Notes"}},
            {"type": "resource", "resource": {"uri": "file:///shelf.pdf", "mimeType": "application/pdf", "blob": "JVBERg=="}}
        ])
    );
}

#[tokio::test]
async fn text_blocks_are_cut_and_binary_blocks_kept_whole() {
    let server = content_server(1000);
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let long = "A very long caption indeed. ".repeat(3);
    let result = wire.call("snapshot", json!({"caption": long, "bytes": 900})).await;
    assert_eq!(result["isError"], false);
    // 330 characters: the lines of the blocks that cannot be cut take 277,
    // the caption has the 53 left, and the text resource is left out.
    let caption = result["content"][0]["text"].as_str().unwrap();
    let cut = format!("{}\n[output truncated: showing 330 of 398 characters, and 5 of 6 blocks;", &long[..53]);
    assert!(caption.starts_with(&cut), "{caption}");
    assert_eq!(result["content"].as_array().unwrap().len(), 5, "{result}");
    assert_eq!(result["content"][2]["data"].as_str().unwrap().len(), 1200, "900 bytes of audio, in base64, whole");
}

#[tokio::test]
async fn a_block_over_the_limit_is_an_error_result_the_model_reads() {
    let server = content_server(100);
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    let result = wire.call("snapshot", json!({"caption": "Big.", "bytes": 101})).await;
    assert_eq!(result["isError"], true);
    assert_eq!(result["content"].as_array().unwrap().len(), 1);
    let line = text(&result);
    assert!(line.starts_with("code: CONTENT_TOO_LARGE, status: 413"), "{line}");
    assert!(line.contains("an audio clip (audio/wav) of 101 bytes; the limit is 100 bytes per block"), "{line}");
}

#[tokio::test]
async fn too_many_blocks_or_a_huge_link_reach_the_client_as_one_short_line() {
    let server = content_server(1000);
    let mut wire = Wire::connect(&server, no_capabilities(), Human::Accept).await;
    for (images, says) in [(true, "200000 blocks; the limit is 100 blocks"), (false, "a resource link whose uri is 3145736 characters")] {
        let result = wire.call("flood", json!({"images": images})).await;
        assert_eq!(result["isError"], true);
        assert_eq!(result["content"].as_array().unwrap().len(), 1);
        let line = text(&result);
        assert!(line.starts_with("code: CONTENT_TOO_LARGE, status: 413") && line.contains(says), "{line}");
        assert!(result.to_string().len() < 500, "{} bytes", result.to_string().len());
    }
}

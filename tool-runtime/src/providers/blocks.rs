//! Content blocks ([`Block`]) in each dialect's tool-result shape, and what
//! a dialect loses of them.
//!
//! | dialect | carries | as |
//! |---|---|---|
//! | [`anthropic`](super::anthropic) | images (JPEG, PNG, GIF, WebP), PDF resources | `image` and `document` blocks with a base64 source, in the `tool_result`'s `content` |
//! | [`openai::responses`](super::openai::responses) | images (JPEG, PNG, GIF, WebP), PDF resources | `input_image` and `input_file` items (data URLs) in the `function_call_output`'s `output` list |
//! | [`gemini`](super::gemini) | images (JPEG, PNG, WebP), PDF resources | `inlineData` in the `functionResponse`'s `parts` (Gemini 3 models; earlier ones refuse them) |
//! | [`openai::chat`](super::openai::chat) | nothing: a tool message is text | |
//! | MCP | every block | its content blocks |
//!
//! Text blocks, resource links and text resources are text in every
//! dialect. A block with bytes that a dialect does not carry (audio
//! anywhere but MCP, an image of another type, a resource that is not a
//! PDF, anything in Chat Completions) is replaced by its
//! [`describe`](Block::describe) line, which tells the model it cannot be
//! shown, and is a [`ResultLoss`]: `results` writes each to `tracing` as a
//! warning, and [`result_losses`] lists them for the host.
//!
//! Every dialect renders the blocks stage 7 kept, and nothing else: the text
//! it shows is at most their lines (`CallResult::text`), which stage 7 held
//! to `max_output_chars` and one marker, and the block count, the MIME types
//! and the links' texts are within the registry's content limits.

use std::fmt;

use serde_json::{Map, Value, json};

use super::Dialect;
use crate::content::{Block, ResourceBody, base64, kind};
use crate::error_report::Escaped;
use crate::result::CallResult;

/// A content block that a dialect's tool-result shape cannot carry: the
/// model read a line describing it instead.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResultLoss {
    /// The tool that returned it.
    pub tool: String,
    /// The call.
    pub call_id: String,
    /// Its index among the result's blocks.
    pub block: usize,
    /// What it is: `an audio clip (audio/wav)`.
    pub what: String,
    /// The dialect that could not carry it.
    pub dialect: Dialect,
}

impl fmt::Display for ResultLoss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (call {}), block {}: {} is not carried by {:?} tool results; the model read a line describing it",
            self.tool, self.call_id, self.block, self.what, self.dialect
        )
    }
}

/// The blocks of `results` that `dialect`'s `results` function does not
/// carry, in order.
///
/// ```
/// # use std::sync::Arc;
/// use tool_runtime::prelude::*;
/// use tool_runtime::providers::{openai, result_losses, Dialect};
/// use tool_runtime::Block;
///
/// /// Record a greeting.
/// #[tool]
/// async fn greeting() -> Vec<Block> {
///     vec![Block::text("Hello."), Block::audio(vec![0; 16], "audio/wav")]
/// }
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// # let registry = Registry::<()>::builder().tools(tools![greeting]).build().unwrap();
/// let result = registry.invoke(&Arc::new(()), "greeting", "{}").await;
/// let messages = openai::chat::results(&[result.clone()]);
/// assert_eq!(messages[0]["content"], "Hello.\n[an audio clip (audio/wav, 16 bytes) that cannot be shown here]");
/// let losses = result_losses(Dialect::OpenAiChat, &[result.clone()]);
/// assert_eq!(losses[0].what, "an audio clip (audio/wav)");
/// assert!(result_losses(Dialect::Mcp, &[result]).is_empty());
/// # }
/// ```
pub fn result_losses(dialect: Dialect, results: &[CallResult]) -> Vec<ResultLoss> {
    results
        .iter()
        .flat_map(|result| {
            result.content.iter().enumerate().filter(move |(_, block)| lost(dialect, block)).map(|(i, block)| ResultLoss {
                tool: result.tool.to_string(),
                call_id: result.call_id.to_string(),
                block: i,
                what: kind(block),
                dialect,
            })
        })
        .collect()
}

/// Whether `dialect` carries the bytes of `block` in its own shape.
fn carries(dialect: Dialect, block: &Block) -> bool {
    const IMAGES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];
    const GEMINI_IMAGES: [&str; 3] = ["image/jpeg", "image/png", "image/webp"];
    let pdf = |block: &Block| matches!(block, Block::Resource(r) if r.mime_type.as_deref() == Some("application/pdf"));
    match (dialect, block) {
        (Dialect::Mcp, _) => true,
        (Dialect::Anthropic | Dialect::OpenAiResponses, Block::Image(image)) => IMAGES.contains(&image.mime_type.as_str()),
        (Dialect::Gemini, Block::Image(image)) => GEMINI_IMAGES.contains(&image.mime_type.as_str()),
        (Dialect::Anthropic | Dialect::OpenAiResponses | Dialect::Gemini, resource) => pdf(resource),
        _ => false,
    }
}

/// A block with bytes (binary data, a binary resource) that `dialect`
/// does not carry.
fn lost(dialect: Dialect, block: &Block) -> bool {
    let binary = match block {
        Block::Image(_) | Block::Audio(_) => true,
        Block::Resource(resource) => matches!(resource.body, ResourceBody::Blob(_)),
        Block::Text(_) | Block::ResourceLink(_) => false,
    };
    binary && !carries(dialect, block)
}

/// Writes the losses of one result to `tracing`, as warnings; the call id
/// (which the model chose) escaped.
fn warn_losses(dialect: Dialect, result: &CallResult) {
    for loss in result_losses(dialect, std::slice::from_ref(result)) {
        tracing::warn!(
            tool = %Escaped(&loss.tool),
            call_id = %Escaped(&loss.call_id),
            block = loss.block,
            what = %Escaped(&loss.what),
            dialect = ?loss.dialect,
            "a content block this dialect cannot carry in a tool result was replaced by a line describing it"
        );
    }
}

/// The bytes of a carried block, with their MIME type.
fn bytes(block: &Block) -> Option<(&[u8], &str)> {
    match block {
        Block::Image(image) => Some((&image.data, &image.mime_type)),
        Block::Resource(resource) => match &resource.body {
            ResourceBody::Blob(data) => Some((data, resource.mime_type.as_deref().unwrap_or("application/octet-stream"))),
            ResourceBody::Text(_) => None,
        },
        _ => None,
    }
}

/// The text of a block a dialect renders as text; `None` for an empty
/// text block (Anthropic refuses those, and it says nothing).
fn text(block: &Block) -> Option<String> {
    match block {
        Block::Text(text) if text.is_empty() => None,
        other => Some(other.describe()),
    }
}

/// The text a text-only dialect (Chat Completions) sends: the result's
/// text, which describes every block.
pub(super) fn text_only(dialect: Dialect, result: &CallResult) -> &str {
    warn_losses(dialect, result);
    &result.text
}

/// A `tool_result`'s `content`: the text, or one block per content block.
pub(super) fn anthropic(result: &CallResult) -> Value {
    if result.content.is_empty() {
        return result.text.clone().into();
    }
    warn_losses(Dialect::Anthropic, result);
    let blocks = result.content.iter().filter_map(|block| match bytes(block) {
        Some((data, mime)) if carries(Dialect::Anthropic, block) => {
            let kind = if matches!(block, Block::Image(_)) { "image" } else { "document" };
            Some(json!({"type": kind, "source": {"type": "base64", "media_type": mime, "data": base64(data)}}))
        }
        _ => text(block).map(|text| json!({"type": "text", "text": text})),
    });
    Value::Array(blocks.collect())
}

/// A `function_call_output`'s `output`: the text, or one input item per
/// content block.
pub(super) fn responses(result: &CallResult) -> Value {
    if result.content.is_empty() {
        return result.text.clone().into();
    }
    warn_losses(Dialect::OpenAiResponses, result);
    let items = result.content.iter().filter_map(|block| match (block, bytes(block)) {
        (Block::Image(_), Some((data, mime))) if carries(Dialect::OpenAiResponses, block) => {
            Some(json!({"type": "input_image", "image_url": data_url(mime, data)}))
        }
        (Block::Resource(resource), Some((data, mime))) if carries(Dialect::OpenAiResponses, block) => {
            let filename = resource.uri.rsplit('/').find(|part| !part.is_empty()).unwrap_or("file");
            Some(json!({"type": "input_file", "filename": filename, "file_data": data_url(mime, data)}))
        }
        _ => text(block).map(|text| json!({"type": "input_text", "text": text})),
    });
    Value::Array(items.collect())
}

fn data_url(mime: &str, data: &[u8]) -> String {
    format!("data:{mime};base64,{}", base64(data))
}

/// A `functionResponse`'s `response` (`{key: text}`, the text of every
/// block it does not carry) and, for blocks it carries, its `parts`.
pub(super) fn gemini(result: &CallResult, key: &str, response: &mut Map<String, Value>) {
    if result.content.is_empty() {
        response.insert("response".into(), json!({ key: result.text }));
        return;
    }
    warn_losses(Dialect::Gemini, result);
    let (mut lines, mut parts) = (Vec::new(), Vec::new());
    for block in &result.content {
        match bytes(block) {
            Some((data, mime)) if carries(Dialect::Gemini, block) => {
                parts.push(json!({"inlineData": {"mimeType": mime, "data": base64(data)}}));
            }
            _ => lines.extend(text(block)),
        }
    }
    response.insert("response".into(), json!({ key: lines.join("\n") }));
    if !parts.is_empty() {
        response.insert("parts".into(), Value::Array(parts));
    }
}

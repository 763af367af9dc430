//! Content blocks: what a tool returns when its result is more than text
//! (an image, an audio clip, a link to a resource, a resource itself).
//!
//! A tool returns `Vec<Block>` (or `Result<Vec<Block>, E>`); no attribute
//! is needed. Such a tool has no output schema and no structured output.
//! The registry checks the blocks' sizes (bytes of binary data and of
//! embedded resources, per block and per result: over a limit, the call
//! fails with a line the model reads), cuts the text blocks at
//! `max_output_chars` (never a binary block), and keeps the blocks in
//! [`CallResult::content`](crate::CallResult::content). Each dialect renders
//! them in its own tool-result shape where it has one; where it has none,
//! the model reads a line describing the block instead, and the dialect
//! records the loss ([`providers::result_losses`](crate::providers::result_losses)).
//!
//! Blocks serialise as MCP content blocks (binary data as base64), which is
//! also what a [`DynamicTool`](crate::DynamicTool) with
//! [`content_blocks`](crate::DynamicTool::content_blocks) returns.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::error::ToolError;

/// One block of a tool's result.
///
/// ```
/// use tool_runtime::prelude::*;
/// use tool_runtime::Block;
///
/// /// Draw the sales chart of a quarter.
/// #[tool(read_only)]
/// async fn sales_chart(quarter: String) -> Result<Vec<Block>, ToolError> {
///     let png: Vec<u8> = vec![0x89, b'P', b'N', b'G'];
///     Ok(vec![Block::text(format!("Sales of {quarter}, by region.")), Block::image(png, "image/png")])
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "wire::Block", try_from = "wire::Block")]
#[non_exhaustive]
pub enum Block {
    /// Text; the only block cut at `max_output_chars`.
    Text(String),
    /// An image's bytes (PNG, JPEG, GIF, WebP...).
    Image(Binary),
    /// An audio clip's bytes (WAV, MP3...).
    Audio(Binary),
    /// A link to a resource the client may read; the model reads the link.
    ResourceLink(ResourceLink),
    /// A resource, embedded whole.
    Resource(Resource),
}

/// Binary data with its MIME type.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Binary {
    /// The bytes (not base64: each dialect encodes them as it needs).
    pub data: Vec<u8>,
    /// The MIME type, such as `image/png`.
    pub mime_type: String,
}

/// A link to a resource.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// What it is, for the model.
    pub description: Option<String>,
    /// Its MIME type, when known.
    pub mime_type: Option<String>,
}

/// A resource embedded in a result.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Resource {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type, when known.
    pub mime_type: Option<String>,
    /// What it holds.
    pub body: ResourceBody,
}

/// What an embedded resource holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceBody {
    /// Text (it counts towards the binary limits, and is not cut).
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

impl Block {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Block::Text(text.into())
    }

    /// An image: its bytes and MIME type (`image/png`).
    pub fn image(data: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        Block::Image(Binary { data: data.into(), mime_type: mime_type.into() })
    }

    /// An audio clip: its bytes and MIME type (`audio/wav`).
    pub fn audio(data: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        Block::Audio(Binary { data: data.into(), mime_type: mime_type.into() })
    }

    /// A link to a resource, by URI and name; add a description or a MIME
    /// type with [`ResourceLink::description`] and [`ResourceLink::mime_type`].
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> ResourceLink {
        ResourceLink { uri: uri.into(), name: name.into(), description: None, mime_type: None }
    }

    /// A text resource, embedded.
    pub fn resource_text(uri: impl Into<String>, mime_type: impl Into<String>, text: impl Into<String>) -> Self {
        Block::Resource(Resource { uri: uri.into(), mime_type: Some(mime_type.into()), body: ResourceBody::Text(text.into()) })
    }

    /// A binary resource, embedded (a PDF, a spreadsheet...).
    pub fn resource_blob(uri: impl Into<String>, mime_type: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        Block::Resource(Resource { uri: uri.into(), mime_type: Some(mime_type.into()), body: ResourceBody::Blob(data.into()) })
    }

    /// The bytes the block carries besides text blocks: binary data, and
    /// an embedded resource's text or bytes. What the size limits count.
    pub fn bytes(&self) -> usize {
        match self {
            Block::Text(_) | Block::ResourceLink(_) => 0,
            Block::Image(binary) | Block::Audio(binary) => binary.data.len(),
            Block::Resource(resource) => match &resource.body {
                ResourceBody::Text(text) => text.len(),
                ResourceBody::Blob(data) => data.len(),
            },
        }
    }

    /// The line that stands for the block where it cannot be carried: text
    /// as it is, a link or a text resource as text, binary data described
    /// (`[an image (image/png, 5120 bytes) that cannot be shown here]`).
    pub fn describe(&self) -> String {
        match self {
            Block::Text(text) => text.clone(),
            Block::Image(binary) => unshown("an image", &binary.mime_type, binary.data.len()),
            Block::Audio(binary) => unshown("an audio clip", &binary.mime_type, binary.data.len()),
            Block::ResourceLink(link) => {
                let mime = link.mime_type.as_deref().map(|mime| format!(", {mime}")).unwrap_or_default();
                let about = link.description.as_deref().map(|text| format!(": {text}")).unwrap_or_default();
                format!("[resource link: {} <{}>{mime}{about}]", link.name, link.uri)
            }
            Block::Resource(resource) => match &resource.body {
                ResourceBody::Text(text) => format!("[resource <{}>]\n{text}", resource.uri),
                ResourceBody::Blob(data) => {
                    let mime = resource.mime_type.as_deref().unwrap_or("application/octet-stream");
                    unshown(&format!("the resource <{}>", resource.uri), mime, data.len())
                }
            },
        }
    }
}

fn unshown(what: &str, mime_type: &str, bytes: usize) -> String {
    format!("[{what} ({mime_type}, {bytes} bytes) that cannot be shown here]")
}

impl ResourceLink {
    /// What the resource is, for the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Its MIME type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

impl From<ResourceLink> for Block {
    fn from(link: ResourceLink) -> Self {
        Block::ResourceLink(link)
    }
}

/// The limits on the bytes of a result's blocks (see [`Block::bytes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ContentLimits {
    pub(crate) per_block: usize,
    pub(crate) per_result: usize,
}

impl Default for ContentLimits {
    fn default() -> Self {
        ContentLimits { per_block: 5 * 1024 * 1024, per_result: 20 * 1024 * 1024 }
    }
}

/// A result's blocks as the model gets them: checked against the limits,
/// the text blocks cut at `max_chars` characters in all (a block past the
/// limit keeps only the marker); with the text that stands for them all
/// ([`Block::describe`], one block a line) and whether text was cut.
pub(crate) fn render(mut blocks: Vec<Block>, max_chars: usize, limits: ContentLimits) -> Result<(Vec<Block>, String, bool), ToolError> {
    let mut total = 0usize;
    for block in &blocks {
        let bytes = block.bytes();
        if bytes > limits.per_block {
            return Err(too_large(&format!("{} of {bytes} bytes", kind(block)), limits.per_block, "per block"));
        }
        total = total.saturating_add(bytes);
    }
    if total > limits.per_result {
        return Err(too_large(&format!("{total} bytes of binary content"), limits.per_result, "per result"));
    }
    let mut left = max_chars;
    let mut truncated = false;
    for block in &mut blocks {
        if let Block::Text(text) = block {
            let (kept, cut) = crate::output::truncate(std::mem::take(text), left);
            left = left.saturating_sub(if cut { left } else { kept.chars().count() });
            truncated |= cut;
            *text = kept;
        }
    }
    let text = blocks.iter().map(Block::describe).collect::<Vec<_>>().join("\n");
    Ok((blocks, text, truncated))
}

/// What a block is, for messages: `an image (image/png)`.
pub(crate) fn kind(block: &Block) -> String {
    match block {
        Block::Text(_) => "a text block".to_owned(),
        Block::Image(binary) => format!("an image ({})", binary.mime_type),
        Block::Audio(binary) => format!("an audio clip ({})", binary.mime_type),
        Block::ResourceLink(link) => format!("a link to <{}>", link.uri),
        Block::Resource(resource) => format!("the resource <{}>", resource.uri),
    }
}

fn too_large(what: &str, limit: usize, per: &str) -> ToolError {
    ToolError::new(
        413,
        "CONTENT_TOO_LARGE",
        format!(
            "The tool's result holds {what}; the limit is {limit} bytes {per}, so it was not sent. \
             Ask for less (a smaller image, a shorter clip, fewer items), or tell the user it cannot be shown."
        ),
    )
}

/// Base64 (standard alphabet, padded), as every dialect and MCP want it.
pub(crate) fn base64(data: &[u8]) -> String {
    STANDARD.encode(data)
}

/// Blocks as MCP writes them; what `Block` serialises to and reads from.
mod wire {
    use serde::{Deserialize, Serialize};

    use super::{Binary, ResourceBody, STANDARD};
    use base64::Engine as _;

    #[derive(Serialize, Deserialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    pub(super) enum Block {
        Text { text: String },
        Image(Data),
        Audio(Data),
        #[serde(rename_all = "camelCase")]
        ResourceLink {
            uri: String,
            name: String,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            description: Option<String>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            mime_type: Option<String>,
        },
        Resource { resource: Resource },
    }

    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Data {
        data: String,
        mime_type: String,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Resource {
        uri: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blob: Option<String>,
    }

    fn decode(data: &str, at: &str) -> Result<Vec<u8>, String> {
        STANDARD.decode(data).map_err(|err| format!("the {at} is not base64 ({err})"))
    }

    impl From<super::Block> for Block {
        fn from(block: super::Block) -> Self {
            let data = |binary: Binary| Data { data: super::base64(&binary.data), mime_type: binary.mime_type };
            match block {
                super::Block::Text(text) => Block::Text { text },
                super::Block::Image(binary) => Block::Image(data(binary)),
                super::Block::Audio(binary) => Block::Audio(data(binary)),
                super::Block::ResourceLink(link) => Block::ResourceLink {
                    uri: link.uri,
                    name: link.name,
                    description: link.description,
                    mime_type: link.mime_type,
                },
                super::Block::Resource(resource) => {
                    let (text, blob) = match resource.body {
                        ResourceBody::Text(text) => (Some(text), None),
                        ResourceBody::Blob(data) => (None, Some(super::base64(&data))),
                    };
                    Block::Resource { resource: Resource { uri: resource.uri, mime_type: resource.mime_type, text, blob } }
                }
            }
        }
    }

    impl TryFrom<Block> for super::Block {
        type Error = String;

        fn try_from(block: Block) -> Result<Self, String> {
            Ok(match block {
                Block::Text { text } => super::Block::Text(text),
                Block::Image(image) => super::Block::image(decode(&image.data, "image's data")?, image.mime_type),
                Block::Audio(audio) => super::Block::audio(decode(&audio.data, "audio's data")?, audio.mime_type),
                Block::ResourceLink { uri, name, description, mime_type } => {
                    super::Block::ResourceLink(super::ResourceLink { uri, name, description, mime_type })
                }
                Block::Resource { resource } => {
                    let body = match (resource.text, resource.blob) {
                        (Some(text), None) => ResourceBody::Text(text),
                        (None, Some(blob)) => ResourceBody::Blob(decode(&blob, "resource's blob")?),
                        _ => return Err(format!("the resource <{}> needs exactly one of `text` and `blob`", resource.uri)),
                    };
                    super::Block::Resource(super::Resource { uri: resource.uri, mime_type: resource.mime_type, body })
                }
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn blocks_serialise_as_mcp_content_and_read_back() {
        let blocks = vec![
            Block::text("hi"),
            Block::image(vec![1, 2, 3], "image/png"),
            Block::audio(vec![4], "audio/wav"),
            Block::resource_link("file:///a.csv", "a.csv").mime_type("text/csv").into(),
            Block::resource_text("file:///n.md", "text/markdown", "# N"),
            Block::resource_blob("file:///r.pdf", "application/pdf", vec![5, 6]),
        ];
        let value = serde_json::to_value(&blocks).unwrap();
        assert_eq!(
            value,
            json!([
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "AQID", "mimeType": "image/png"},
                {"type": "audio", "data": "BA==", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///a.csv", "name": "a.csv", "mimeType": "text/csv"},
                {"type": "resource", "resource": {"uri": "file:///n.md", "mimeType": "text/markdown", "text": "# N"}},
                {"type": "resource", "resource": {"uri": "file:///r.pdf", "mimeType": "application/pdf", "blob": "BQY="}}
            ])
        );
        assert_eq!(serde_json::from_value::<Vec<Block>>(value).unwrap(), blocks);
    }

    #[test]
    fn malformed_blocks_say_what_is_wrong() {
        let err = serde_json::from_value::<Block>(json!({"type": "image", "data": "!!", "mimeType": "image/png"})).unwrap_err();
        assert!(err.to_string().contains("the image's data is not base64"), "{err}");
        let err = serde_json::from_value::<Block>(json!({"type": "resource", "resource": {"uri": "u"}})).unwrap_err();
        assert!(err.to_string().contains("needs exactly one of `text` and `blob`"), "{err}");
    }

    #[test]
    fn limits_count_binary_bytes_per_block_and_per_result() {
        let limits = ContentLimits { per_block: 10, per_result: 15 };
        let text = Block::text("x".repeat(100));
        assert!(render(vec![text.clone(), Block::image(vec![0; 10], "image/png")], 1000, limits).is_ok(), "text does not count");
        let err = render(vec![Block::image(vec![0; 11], "image/png")], 1000, limits).unwrap_err();
        assert_eq!((err.code(), err.status()), ("CONTENT_TOO_LARGE", 413));
        assert!(err.model_line().contains("an image (image/png) of 11 bytes; the limit is 10 bytes per block"), "{}", err.model_line());
        let err = render(vec![Block::audio(vec![0; 8], "audio/wav"), Block::resource_text("u", "text/plain", "y".repeat(8))], 1000, limits).unwrap_err();
        assert!(err.model_line().contains("16 bytes of binary content; the limit is 15 bytes per result"), "{}", err.model_line());
    }

    #[test]
    fn truncation_cuts_text_blocks_only_across_the_result() {
        let image = Block::image(vec![7; 50], "image/png");
        let blocks = vec![Block::text("abcdef"), image.clone(), Block::text("ghij"), Block::text("klm")];
        let (blocks, text, cut) = render(blocks, 8, ContentLimits::default()).unwrap();
        assert!(cut);
        assert_eq!(blocks[0], Block::text("abcdef"));
        assert_eq!(blocks[1], image, "binary blocks are never cut");
        let Block::Text(second) = &blocks[2] else { panic!() };
        assert!(second.starts_with("gh\n[output truncated: showing the first 2 of 4"), "{second}");
        let Block::Text(third) = &blocks[3] else { panic!() };
        assert!(third.starts_with("\n[output truncated: showing the first 0 of 3"), "{third}");
        assert!(text.starts_with("abcdef\n[an image (image/png, 50 bytes) that cannot be shown here]\ngh\n"), "{text}");
        let (_, _, cut) = render(vec![Block::text("abc"), Block::text("def")], 6, ContentLimits::default()).unwrap();
        assert!(!cut);
    }
}

//! Content blocks: what a tool returns when its result is more than text
//! (an image, an audio clip, a link to a resource, a resource itself).
//!
//! A tool returns `Vec<Block>` (or `Result<Vec<Block>, E>`); no attribute
//! is needed. Such a tool has no output schema and no structured output.
//! The registry keeps the blocks in
//! [`CallResult::content`](crate::CallResult::content) after two steps:
//!
//! - **Limits.** The number of blocks (`max_blocks`), each MIME type
//!   ([`MAX_MIME_TYPE_BYTES`]), each text of a link (uri, name,
//!   description) and each embedded resource's uri (`max_link_chars`), and
//!   the bytes of binary data and embedded resources, per block and per
//!   result (`max_block_bytes`, `max_content_bytes`). Over any of them the
//!   call fails with `CONTENT_TOO_LARGE`, a line the model reads that
//!   quotes none of the oversized text, and nothing of the result is sent.
//! - **The output limit.** Each block stands for a line of text, its
//!   [`describe`](Block::describe) line, which is what a dialect that cannot
//!   carry the block shows the model instead (every dialect shows at most
//!   these lines, and MCP sends the blocks themselves). These lines hold at
//!   most `max_output_chars` characters in all (the newlines between them
//!   aside), plus one marker that says what was cut or left out. Blocks that cannot be cut (images, audio, binary
//!   resources, links) are kept first, in order, each whole while its line
//!   fits in what is left, else left out; text blocks and text resources
//!   share the rest in order: the first that does not fit is cut, and the
//!   ones after it are left out. The marker stands where the first cut or
//!   left-out block stood (appended to a cut text).
//!
//! Each dialect renders the blocks in its own tool-result shape where it
//! has one; where it has none, the model reads the block's line instead,
//! and the dialect records the loss ([`providers::result_losses`](crate::providers::result_losses)).
//!
//! Blocks serialise as MCP content blocks (binary data as base64), which is
//! also what a [`DynamicTool`](crate::DynamicTool) with
//! [`content_blocks`](crate::DynamicTool::content_blocks) returns.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

mod limits;

pub use limits::MAX_MIME_TYPE_BYTES;
pub(crate) use limits::{ContentLimits, render};

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
    /// Text; cut at `max_output_chars`, as a text resource is.
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
    /// Text (it counts towards the byte limits, and is cut at
    /// `max_output_chars` as a text block is).
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
                ResourceBody::Text(text) => format!("{}{text}", resource_header(&resource.uri)),
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

/// The first line of a text resource's [`describe`](Block::describe) line.
fn resource_header(uri: &str) -> String {
    format!("[resource <{uri}>]\n")
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
        Text {
            text: String,
        },
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
        Resource {
            resource: Resource,
        },
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
                super::Block::ResourceLink(link) => {
                    Block::ResourceLink { uri: link.uri, name: link.name, description: link.description, mime_type: link.mime_type }
                }
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
}

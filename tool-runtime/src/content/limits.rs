//! What a result's blocks are held to before the model reads them: the
//! limits (block count, MIME types, links' texts, bytes), then the output
//! limit over their lines, by the rule of the [module docs](super).

use super::{Block, Resource, ResourceBody, kind, resource_header};
use crate::error::ToolError;

/// Most bytes of a block's MIME type: 255, as RFC 6838 allows 127 for
/// each of the type and the subtype, which leaves room for parameters
/// (`; charset=utf-8`). A block with a longer one fails the call with
/// `CONTENT_TOO_LARGE`.
pub const MAX_MIME_TYPE_BYTES: usize = 255;

/// The limits on a result's blocks (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ContentLimits {
    /// Bytes of one block ([`Block::bytes`]).
    pub(crate) per_block: usize,
    /// Bytes of all the blocks of a result.
    pub(crate) per_result: usize,
    /// Blocks of a result.
    pub(crate) blocks: usize,
    /// Characters of a link's uri, name or description, or of an embedded
    /// resource's uri.
    pub(crate) link_chars: usize,
}

impl Default for ContentLimits {
    fn default() -> Self {
        ContentLimits { per_block: 5 * 1024 * 1024, per_result: 20 * 1024 * 1024, blocks: 100, link_chars: 2048 }
    }
}

/// A result's blocks as the model gets them: checked against the limits,
/// then held to `max_chars` characters of lines and one marker (see the
/// module docs); with the text that stands for them all ([`Block::describe`],
/// one block a line) and whether anything was cut or left out.
pub(crate) fn render(blocks: Vec<Block>, max_chars: usize, limits: ContentLimits) -> Result<(Vec<Block>, String, bool), ToolError> {
    check(&blocks, limits)?;
    let (blocks, truncated) = fit(blocks, max_chars);
    let text = blocks.iter().map(Block::describe).collect::<Vec<_>>().join("\n");
    Ok((blocks, text, truncated))
}

/// The limits of the module docs, the number of blocks first (so that the
/// others walk at most that many).
fn check(blocks: &[Block], limits: ContentLimits) -> Result<(), ToolError> {
    if blocks.len() > limits.blocks {
        return Err(too_large(&format!("{} blocks", blocks.len()), &format!("{} blocks per result", limits.blocks)));
    }
    blocks.iter().try_for_each(|block| check_texts(block, limits.link_chars))?;
    let mut total = 0usize;
    for block in blocks {
        let bytes = block.bytes();
        if bytes > limits.per_block {
            return Err(too_large(&format!("{} of {bytes} bytes", kind(block)), &format!("{} bytes per block", limits.per_block)));
        }
        total = total.saturating_add(bytes);
    }
    if total > limits.per_result {
        return Err(too_large(&format!("{total} bytes of binary content"), &format!("{} bytes per result", limits.per_result)));
    }
    Ok(())
}

/// A block's MIME type, and the uri, name and description of a link or the
/// uri of a resource, against their limits. The error quotes none of them.
fn check_texts(block: &Block, link_chars: usize) -> Result<(), ToolError> {
    let (what, mime_type, texts) = match block {
        Block::Text(_) => return Ok(()),
        Block::Image(binary) => ("an image", Some(&binary.mime_type), [None, None, None]),
        Block::Audio(binary) => ("an audio clip", Some(&binary.mime_type), [None, None, None]),
        Block::ResourceLink(link) => (
            "a resource link",
            link.mime_type.as_ref(),
            [Some(("uri", &link.uri)), Some(("name", &link.name)), link.description.as_ref().map(|text| ("description", text))],
        ),
        Block::Resource(resource) => ("an embedded resource", resource.mime_type.as_ref(), [Some(("uri", &resource.uri)), None, None]),
    };
    if let Some(mime_type) = mime_type
        && mime_type.len() > MAX_MIME_TYPE_BYTES
    {
        let holds = format!("{what} whose MIME type is {} bytes", mime_type.len());
        return Err(too_large(&holds, &format!("{MAX_MIME_TYPE_BYTES} bytes for a MIME type")));
    }
    for (field, text) in texts.into_iter().flatten() {
        // No more bytes than the limit: no more characters either.
        let chars = if text.len() <= link_chars { continue } else { text.chars().count() };
        if chars > link_chars {
            let limit = format!("{link_chars} characters for a uri, a name or a description");
            return Err(too_large(&format!("{what} whose {field} is {chars} characters"), &limit));
        }
    }
    Ok(())
}

/// What becomes of a block held to the output limit.
#[derive(Clone, Copy)]
enum Fate {
    Whole,
    /// A text block, or a text resource, of which so many characters of
    /// its text are kept.
    Cut(usize),
    Out,
}

/// Whether the block's text may be cut: a text block's, a text resource's.
fn cuttable(block: &Block) -> bool {
    matches!(block, Block::Text(_)) || matches!(block, Block::Resource(r) if matches!(r.body, ResourceBody::Text(_)))
}

/// The characters of a block's [`describe`](Block::describe) line, without
/// copying a text; and of the part of it that is not the block's own text.
fn line_chars(block: &Block) -> (usize, usize) {
    match block {
        Block::Text(text) => (text.chars().count(), 0),
        Block::Resource(Resource { uri, body: ResourceBody::Text(text), .. }) => {
            let header = resource_header(uri).chars().count();
            (header + text.chars().count(), header)
        }
        other => (other.describe().chars().count(), 0),
    }
}

/// The blocks held to `max_chars` characters of lines and one marker, by
/// the rule of the module docs; and whether anything was cut or left out.
fn fit(blocks: Vec<Block>, max_chars: usize) -> (Vec<Block>, bool) {
    let lines: Vec<(usize, usize)> = blocks.iter().map(line_chars).collect();
    let total = lines.iter().fold(0usize, |sum, (line, _)| sum.saturating_add(*line));
    if total <= max_chars {
        return (blocks, false);
    }
    let mut left = max_chars;
    // The blocks that cannot be cut first: each whole while it fits.
    let mut fates: Vec<Option<Fate>> = (blocks.iter().zip(&lines))
        .map(|(block, &(line, _))| (!cuttable(block)).then(|| if take(line, &mut left) { Fate::Whole } else { Fate::Out }))
        .collect();
    // Then text, in order, in what is left; after the first that does not
    // fit, nothing.
    for (fate, &(line, header)) in fates.iter_mut().zip(&lines).filter(|(fate, _)| fate.is_none()) {
        let whole = take(line, &mut left);
        let cut = !whole && left > header;
        *fate = Some(match (whole, cut) {
            (true, _) => Fate::Whole,
            (false, true) => Fate::Cut(left - header),
            (false, false) => Fate::Out,
        });
        if !whole {
            left = 0;
        }
    }
    let fates: Vec<Fate> = fates.into_iter().map(|fate| fate.unwrap_or(Fate::Out)).collect();
    let kept = fates.iter().filter(|fate| !matches!(fate, Fate::Out)).count();
    let shown: usize = (fates.iter().zip(&lines))
        .map(|(fate, &(line, header))| match *fate {
            Fate::Whole => line,
            Fate::Cut(chars) => header + chars,
            Fate::Out => 0,
        })
        .sum();
    let mut marker = Some(format!(
        "[output truncated: showing {shown} of {total} characters{}; ask for less (a narrower query, fewer items) to see the rest]",
        if kept < blocks.len() { format!(", and {kept} of {} blocks", blocks.len()) } else { String::new() }
    ));
    let mut out = Vec::with_capacity(kept + 1);
    for (block, fate) in blocks.into_iter().zip(fates) {
        match fate {
            Fate::Whole => out.push(block),
            Fate::Cut(chars) => out.push(cut(block, chars, marker.take())),
            Fate::Out => out.extend(marker.take().map(Block::Text)),
        }
    }
    (out, true)
}

/// Takes `line` characters out of `left`, if it has them.
fn take(line: usize, left: &mut usize) -> bool {
    let fits = line <= *left;
    if fits {
        *left -= line;
    }
    fits
}

/// A text block or a text resource with the first `chars` characters of its
/// text, and the marker after them.
fn cut(mut block: Block, chars: usize, marker: Option<String>) -> Block {
    let (Block::Text(text) | Block::Resource(Resource { body: ResourceBody::Text(text), .. })) = &mut block else { return block };
    let end = text.char_indices().nth(chars).map_or(text.len(), |(at, _)| at);
    let marker = marker.map(|marker| format!("\n{marker}")).unwrap_or_default();
    // A string of its own size: a 100 MB text is not kept for its first characters.
    let mut kept = String::with_capacity(end + marker.len());
    kept.push_str(&text[..end]);
    kept.push_str(&marker);
    *text = kept;
    block
}

fn too_large(what: &str, limit: &str) -> ToolError {
    ToolError::new(
        413,
        "CONTENT_TOO_LARGE",
        format!(
            "The tool's result holds {what}; the limit is {limit}, so it was not sent. \
             Ask for less (a smaller image, a shorter clip, fewer items), or tell the user it cannot be shown."
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_count_binary_bytes_per_block_and_per_result() {
        let limits = ContentLimits { per_block: 10, per_result: 15, ..ContentLimits::default() };
        let text = Block::text("x".repeat(100));
        assert!(render(vec![text.clone(), Block::image(vec![0; 10], "image/png")], 1000, limits).is_ok(), "text does not count");
        let err = render(vec![Block::image(vec![0; 11], "image/png")], 1000, limits).unwrap_err();
        assert_eq!((err.code(), err.status()), ("CONTENT_TOO_LARGE", 413));
        assert!(err.model_line().contains("an image (image/png) of 11 bytes; the limit is 10 bytes per block"), "{}", err.model_line());
        let err =
            render(vec![Block::audio(vec![0; 8], "audio/wav"), Block::resource_text("u", "text/plain", "y".repeat(8))], 1000, limits).unwrap_err();
        assert!(err.model_line().contains("16 bytes of binary content; the limit is 15 bytes per result"), "{}", err.model_line());
    }

    #[test]
    fn the_output_limit_keeps_what_cannot_be_cut_first_and_cuts_text_once() {
        // The image's line is 58 characters: 12 are left for the text.
        let image = Block::image(vec![7; 50], "image/png");
        let blocks = vec![Block::text("abcdef"), image.clone(), Block::text("ghij"), Block::text("klm"), Block::text("no")];
        let (blocks, text, cut) = render(blocks, 70, ContentLimits::default()).unwrap();
        assert!(cut);
        assert_eq!(blocks.len(), 4, "{blocks:?}");
        assert_eq!(blocks[..3], [Block::text("abcdef"), image, Block::text("ghij")], "the image is kept whole");
        let Block::Text(third) = &blocks[3] else { panic!() };
        assert_eq!(
            third,
            "kl\n[output truncated: showing 70 of 73 characters, and 4 of 5 blocks; ask for less (a narrower query, fewer items) to see the rest]"
        );
        assert!(text.starts_with("abcdef\n[an image (image/png, 50 bytes) that cannot be shown here]\nghij\nkl\n[output truncated"), "{text}");
        let (_, _, cut) = render(vec![Block::text("abc"), Block::text("def")], 6, ContentLimits::default()).unwrap();
        assert!(!cut, "the lines' separators do not count");
    }

    #[test]
    fn a_block_that_does_not_fit_is_left_out_and_the_marker_stands_in_its_place() {
        let link: Block = Block::resource_link("file:///a.csv", "a.csv").into();
        let blocks = vec![Block::text("first"), link.clone(), Block::resource_text("file:///n.md", "text/markdown", "# Notes, long")];
        // The link's line is 38 characters, the resource's header 26: at 43
        // the link and the first text are kept, and the resource's text
        // cannot start.
        let (blocks, _, cut) = render(blocks, 43, ContentLimits::default()).unwrap();
        assert!(cut);
        assert_eq!(blocks[..2], [Block::text("first"), link.clone()]);
        let Block::Text(marker) = &blocks[2] else { panic!("{blocks:?}") };
        assert!(marker.starts_with("[output truncated: showing 43 of 82 characters, and 2 of 3 blocks;"), "{marker}");
        // At 35, the link is left out (the marker stands in its place), the
        // first text kept and the resource cut.
        let blocks = vec![Block::text("first"), link, Block::resource_text("file:///n.md", "text/markdown", "# Notes, long")];
        let (blocks, _, _) = render(blocks, 35, ContentLimits::default()).unwrap();
        assert_eq!(blocks.len(), 3, "{blocks:?}");
        assert!(blocks[1].describe().starts_with("[output truncated: showing 35 of 82 characters, and 2 of 3 blocks;"), "{blocks:?}");
        let Block::Resource(Resource { body: ResourceBody::Text(notes), .. }) = &blocks[2] else { panic!("{blocks:?}") };
        assert_eq!(notes, "# No", "4 characters: the first text took 5, the header 26");
    }

    #[test]
    fn links_and_mime_types_are_limited_without_being_quoted() {
        let limits = ContentLimits { link_chars: 8, ..ContentLimits::default() };
        let link = |uri: &str, name: &str| Block::from(Block::resource_link(uri, name));
        assert!(render(vec![link("file:///", "é".repeat(8).as_str())], 1000, limits).is_ok(), "characters, not bytes");
        let err = render(vec![link("file:///x", "x")], 1000, limits).unwrap_err();
        assert!(err.model_line().contains("a resource link whose uri is 9 characters; the limit is 8 characters"), "{}", err.model_line());
        assert!(!err.model_line().contains("file:///x"));
        let described = Block::from(Block::resource_link("u", "n").description("d".repeat(9)));
        assert!(render(vec![described], 1000, limits).unwrap_err().model_line().contains("whose description is 9 characters"));
        let mime = "a/".to_owned() + &"b".repeat(MAX_MIME_TYPE_BYTES - 2);
        assert!(render(vec![Block::audio(vec![1], mime.clone())], 1000, limits).is_ok());
        let err = render(vec![Block::audio(vec![1], mime + "b")], 1000, limits).unwrap_err();
        assert!(err.model_line().contains("an audio clip whose MIME type is 256 bytes; the limit is 255 bytes"), "{}", err.model_line());
        let limits = ContentLimits { blocks: 2, ..ContentLimits::default() };
        let err = render(vec![Block::text("a"); 3], 1000, limits).unwrap_err();
        assert!(err.model_line().contains("3 blocks; the limit is 2 blocks per result"), "{}", err.model_line());
    }
}

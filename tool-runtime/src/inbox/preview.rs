//! How much of a value a list shows: at most [`PREVIEW_BYTES`] of it, cut
//! on a character boundary, and how much was left out. A list is rendered
//! for every open page each time the journal changes, so it must not
//! cost what the calls' arguments cost: a value is written out only up to
//! the preview, never whole.

use std::io;

use serde_json::Value;

/// The most of one value a list shows, in bytes.
pub(crate) const PREVIEW_BYTES: usize = 1000;

/// A value's text as shown, and how many bytes of it were left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Preview {
    pub(crate) text: String,
    /// Bytes not shown; `None` when the text is whole.
    pub(crate) left_out: Option<usize>,
}

/// The preview of `text`.
pub(crate) fn text(text: &str) -> Preview {
    let cut = floor_char_boundary(text, PREVIEW_BYTES);
    Preview { text: text[..cut].to_owned(), left_out: (cut < text.len()).then(|| text.len() - cut) }
}

/// The preview of `value` as a field shows it: a string as written,
/// anything else as JSON, written only as far as the preview goes (the
/// rest is counted, not kept).
pub(crate) fn value(value: &Value) -> Preview {
    if let Value::String(string) = value {
        return text(string);
    }
    let mut written = Bounded { kept: Vec::with_capacity(64), total: 0 };
    serde_json::to_writer(&mut written, value).expect("writing JSON to memory does not fail");
    // JSON is UTF-8, and its text was cut at a byte: keep whole characters.
    let whole = match std::str::from_utf8(&written.kept) {
        Ok(kept) => kept.len(),
        Err(error) => error.valid_up_to(),
    };
    written.kept.truncate(whole);
    let shown = String::from_utf8(written.kept).expect("cut at a character boundary");
    let left_out = (written.total > shown.len()).then(|| written.total - shown.len());
    Preview { text: shown, left_out }
}

/// The largest char boundary of `text` at or before `at`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    (0..=at).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0)
}

/// Keeps the first [`PREVIEW_BYTES`] bytes written to it, and counts all.
struct Bounded {
    kept: Vec<u8>,
    total: usize,
}

impl io::Write for Bounded {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let room = PREVIEW_BYTES.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.total += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_short_value_is_shown_whole() {
        assert_eq!(value(&json!("A-1002")), Preview { text: "A-1002".into(), left_out: None });
        assert_eq!(value(&json!([1, 2])), Preview { text: "[1,2]".into(), left_out: None });
    }

    #[test]
    fn a_long_value_is_cut_on_a_character_and_says_how_much_was_left_out() {
        let long = "é".repeat(1000); // 2,000 bytes
        let shown = value(&json!(long));
        assert_eq!(shown.text.len(), 1000);
        assert_eq!(shown.left_out, Some(1000));
        let numbers: Vec<u32> = (0..100_000).collect();
        let whole = serde_json::to_string(&numbers).unwrap();
        let shown = value(&json!(numbers));
        assert_eq!(shown.text, whole[..1000]);
        assert_eq!(shown.left_out, Some(whole.len() - 1000));
        let accents = json!(["é".repeat(600)]); // the cut falls inside a character
        let shown = value(&accents);
        assert!(shown.text.len() <= 1000 && shown.text.starts_with("[\"é"), "{shown:?}");
        assert_eq!(shown.text.len() + shown.left_out.unwrap(), accents.to_string().len());
    }
}

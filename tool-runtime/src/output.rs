//! A tool's output as the model reads it.

use serde_json::Value;

/// The text for the model: a JSON string as is, anything else as compact
/// JSON; cut at `max_chars` characters (on a char boundary) with a marker
/// that tells the model it was cut. Returns the text, the structured output
/// (the value, unless it is a string the text holds whole) and whether the
/// text was cut.
pub(crate) fn render(value: Value, max_chars: usize) -> (String, Option<Box<Value>>, bool) {
    match value {
        Value::String(text) => render_text(text, max_chars),
        other => render_value(Box::new(other), max_chars),
    }
}

/// [`render`] for a string.
#[inline]
pub(crate) fn render_text(text: String, max_chars: usize) -> (String, Option<Box<Value>>, bool) {
    // Cut from the borrowed text: a 100 MB string is not copied whole.
    match cut(&text, max_chars) {
        Some(cut) => (cut, Some(Box::new(Value::String(text))), true),
        None => (text, None, false),
    }
}

/// [`render`] for any other value.
pub(crate) fn render_value(value: Box<Value>, max_chars: usize) -> (String, Option<Box<Value>>, bool) {
    let (text, truncated) = truncate(value.to_string(), max_chars);
    (text, Some(value), truncated)
}

pub(crate) fn truncate(text: String, max_chars: usize) -> (String, bool) {
    match cut(&text, max_chars) {
        Some(cut) => (cut, true),
        None => (text, false),
    }
}

/// The first `max_chars` characters of `text` and the marker, in a string
/// of their own size, or `None` when `text` is not longer than that.
fn cut(text: &str, max_chars: usize) -> Option<String> {
    // No more bytes than the limit: no more characters either.
    if text.len() <= max_chars {
        return None;
    }
    let (cut, _) = text.char_indices().nth(max_chars)?;
    let total = max_chars + text[cut..].chars().count();
    let marker = format!(
        "\n[output truncated: showing the first {max_chars} of {total} characters; ask for less (a narrower query, fewer items) to see the rest]"
    );
    let mut out = String::with_capacity(cut + marker.len());
    out.push_str(&text[..cut]);
    out.push_str(&marker);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_are_passed_as_is_and_values_as_json() {
        assert_eq!(render(json!("hi \"there\""), 100), ("hi \"there\"".to_owned(), None, false));
        assert_eq!(render(json!({"a": [1, 2]}), 100), (r#"{"a":[1,2]}"#.to_owned(), Some(Box::new(json!({"a": [1, 2]}))), false));
    }

    #[test]
    fn cuts_on_a_char_boundary_with_a_marker() {
        let (text, whole, cut) = render(json!("ééééé"), 3);
        assert!(cut);
        assert_eq!(whole.as_deref(), Some(&json!("ééééé")), "the whole string is kept beside the cut text");
        assert!(text.starts_with("ééé\n[output truncated: showing the first 3 of 5 characters"), "{text}");
    }

    #[test]
    fn a_cut_text_keeps_only_what_the_model_reads() {
        let (text, _, cut) = render(Value::String("y".repeat(1_000_000)), 10);
        assert!(cut);
        assert!(text.capacity() < 200, "{} bytes kept", text.capacity());
        let (text, cut) = truncate("z".repeat(1_000_000), 10);
        assert!(cut && text.capacity() < 200);
    }

    #[test]
    fn text_at_the_limit_is_not_cut() {
        assert_eq!(truncate("abc".into(), 3), ("abc".to_owned(), false));
    }
}

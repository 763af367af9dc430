//! A tool's output as the model reads it.

use serde_json::Value;

/// The text for the model: a JSON string as is, anything else as compact
/// JSON; cut at `max_chars` characters (on a char boundary) with a marker
/// that tells the model it was cut. Returns the text and whether it was cut.
pub(crate) fn render(value: &Value, max_chars: usize) -> (String, bool) {
    let text = match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    truncate(text, max_chars)
}

pub(crate) fn truncate(mut text: String, max_chars: usize) -> (String, bool) {
    let Some((cut, _)) = text.char_indices().nth(max_chars) else {
        return (text, false);
    };
    let total = max_chars + text[cut..].chars().count();
    text.truncate(cut);
    text.push_str(&format!(
        "\n[output truncated: showing the first {max_chars} of {total} characters; ask for less (a narrower query, fewer items) to see the rest]"
    ));
    (text, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_are_passed_as_is_and_values_as_json() {
        assert_eq!(render(&json!("hi \"there\""), 100), ("hi \"there\"".to_owned(), false));
        assert_eq!(render(&json!({"a": [1, 2]}), 100), (r#"{"a":[1,2]}"#.to_owned(), false));
    }

    #[test]
    fn cuts_on_a_char_boundary_with_a_marker() {
        let (text, cut) = render(&json!("ééééé"), 3);
        assert!(cut);
        assert!(text.starts_with("ééé\n[output truncated: showing the first 3 of 5 characters"), "{text}");
    }

    #[test]
    fn text_at_the_limit_is_not_cut() {
        assert_eq!(truncate("abc".into(), 3), ("abc".to_owned(), false));
    }
}

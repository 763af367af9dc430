//! The first stage of a call: arguments too large or too deeply nested are
//! refused before anything parses them.

use serde_json::Value;

/// The largest [`ArgumentLimits::max_depth`] a registry accepts: JSON text
/// nested deeper does not parse (serde_json's own recursion limit), and
/// every stage after the guard may recurse once per level.
pub const MAX_ARGUMENT_DEPTH: usize = 128;

/// Limits on the raw arguments of one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgumentLimits {
    /// Largest accepted argument text, in bytes (default 1 MiB).
    pub max_bytes: usize,
    /// Deepest accepted nesting of arrays and objects (default 64).
    pub max_depth: usize,
    /// Most JSON values accepted in one call's arguments: every scalar,
    /// array and object, the root included; object keys are not values
    /// (default 32,768). Parsed arguments cost about 72 bytes a value, so
    /// this bounds what a call costs however its bytes are spent: 1 MiB of
    /// `[{},{},...]` would be 350,000 values.
    pub max_values: usize,
}

impl Default for ArgumentLimits {
    fn default() -> Self {
        ArgumentLimits { max_bytes: 1024 * 1024, max_depth: 64, max_values: 32 * 1024 }
    }
}

/// Why the guard refused the arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(clippy::enum_variant_names, reason = "each limit the arguments went past: too large, too deep, too many values")]
pub(crate) enum GuardError {
    /// `bytes` is the exact size when known (text); a parsed value is
    /// measured only up to the limit.
    TooLarge {
        bytes: Option<usize>,
        max: usize,
    },
    TooDeep {
        max: usize,
    },
    TooManyValues {
        max: usize,
    },
}

/// Scans the raw text once, without parsing: its size, the nesting of
/// brackets outside strings, and how many values it holds.
///
/// Values are counted as they start: an array or an object, a string that
/// is not a key (every string, less one for each `:`), and each run of the
/// characters of numbers and literals. Exact for valid JSON; for text that
/// is not, it is refused when parsed anyway.
///
/// Text too short to break the depth and value limits is not scanned:
/// nesting `d` levels takes at least `d` bytes, and `n` values at least
/// `2n - 1`. (The arguments of most calls are that short.)
pub(crate) fn check_text(raw: &str, limits: &ArgumentLimits) -> Result<(), GuardError> {
    if raw.len() > limits.max_bytes {
        return Err(GuardError::TooLarge { bytes: Some(raw.len()), max: limits.max_bytes });
    }
    if raw.len() <= limits.max_depth && raw.len() < limits.max_values.saturating_mul(2) {
        return Ok(());
    }
    let mut depth = 0usize;
    let mut values = 0usize;
    let mut in_string = false;
    let mut in_scalar = false;
    let mut escaped = false;
    let bytes = raw.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        at += 1;
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                // Nothing in a string matters until its next quote or
                // escape: skip to it.
                _ => at = memchr::memchr2(b'"', b'\\', &bytes[at..]).map_or(bytes.len(), |next| at + next),
            }
            continue;
        }
        let scalar = byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'+' | b'.');
        if scalar && !in_scalar {
            values += 1;
        }
        in_scalar = scalar;
        match byte {
            b'"' => {
                in_string = true;
                values += 1;
            }
            // The string before it was a key.
            b':' => values = values.saturating_sub(1),
            b'[' | b'{' => {
                depth += 1;
                values += 1;
                if depth > limits.max_depth {
                    return Err(GuardError::TooDeep { max: limits.max_depth });
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        // One more while a key waits for its `:`.
        if values > limits.max_values.saturating_add(1) {
            return Err(GuardError::TooManyValues { max: limits.max_values });
        }
    }
    if values > limits.max_values {
        return Err(GuardError::TooManyValues { max: limits.max_values });
    }
    Ok(())
}

/// At least the length of `value` serialised compactly (escapes can only
/// add to it), counted until it passes `max`.
fn serialized_at_least(value: &Value, max: usize) -> usize {
    fn add(value: &Value, max: usize, total: &mut usize) {
        if *total > max {
            return;
        }
        match value {
            Value::Null | Value::Bool(true) => *total += 4,
            Value::Bool(false) => *total += 5,
            Value::Number(_) => *total += 1,
            Value::String(text) => *total += text.len() + 2,
            Value::Array(items) => {
                *total += 2 + items.len().saturating_sub(1);
                items.iter().for_each(|item| add(item, max, total));
            }
            Value::Object(map) => {
                *total += 2 + map.len().saturating_sub(1);
                for (key, item) in map {
                    *total += key.len() + 3;
                    add(item, max, total);
                }
            }
        }
    }
    let mut total = 0;
    add(value, max, &mut total);
    total
}

/// Drops a value of any depth without recursion. `serde_json::Value`'s own
/// drop recurses once per level, so a value nested thousands deep (which
/// the guard refuses) would overflow the stack where it is dropped.
pub(crate) fn dismantle(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, item)| item)),
            _ => {}
        }
    }
}

/// The same limits for arguments that arrive already parsed (MCP, provider
/// payloads): depth by walking the value, size by its serialised length.
pub(crate) fn check_value(value: &Value, limits: &ArgumentLimits) -> Result<(), GuardError> {
    // Iterative: a value may be nested far deeper than the stack allows.
    // Depth is checked first, whatever the count: a value too deep is
    // refused as such.
    let mut stack = vec![(value, 0usize)];
    let mut values = 0usize;
    let mut too_many = false;
    while let Some((value, depth)) = stack.pop() {
        values += 1;
        too_many |= values > limits.max_values;
        let children: &mut dyn Iterator<Item = &Value> = match value {
            Value::Array(items) => &mut items.iter(),
            Value::Object(map) => &mut map.values(),
            _ => continue,
        };
        if depth == limits.max_depth {
            return Err(GuardError::TooDeep { max: limits.max_depth });
        }
        stack.extend(children.map(|child| (child, depth + 1)));
    }
    if too_many {
        return Err(GuardError::TooManyValues { max: limits.max_values });
    }
    // A lower bound first, which stops as soon as it passes the limit: the
    // exact count below escapes every string, which for one string of
    // 100 MB means scanning all of it.
    if serialized_at_least(value, limits.max_bytes) > limits.max_bytes {
        return Err(GuardError::TooLarge { bytes: None, max: limits.max_bytes });
    }
    let mut counter = ByteCounter { bytes: 0, max: limits.max_bytes };
    if serde_json::to_writer(&mut counter, value).is_err() {
        return Err(GuardError::TooLarge { bytes: None, max: limits.max_bytes });
    }
    Ok(())
}

/// Counts serialised bytes and stops the serialiser past the limit.
struct ByteCounter {
    bytes: usize,
    max: usize,
}

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes += buf.len();
        if self.bytes > self.max {
            return Err(std::io::Error::other("too large"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_bytes: usize, max_depth: usize) -> ArgumentLimits {
        ArgumentLimits { max_bytes, max_depth, max_values: usize::MAX }
    }

    /// Arrays in arrays, `levels` deep.
    fn nested(levels: usize) -> Value {
        (0..levels).fold(Value::Array(Vec::new()), |inner, _| Value::Array(vec![inner]))
    }

    fn counted(text: &str) -> usize {
        // The smallest limit that accepts the text is its count.
        let value_limits = |max_values| ArgumentLimits { max_bytes: usize::MAX, max_depth: 64, max_values };
        (0..).find(|&max| check_text(text, &value_limits(max)).is_ok()).unwrap()
    }

    #[test]
    fn text_too_short_to_break_a_limit_passes_and_longer_text_is_scanned() {
        let value_limits = |max_values| ArgumentLimits { max_bytes: 100, max_depth: 4, max_values };
        // Four bytes cannot nest five deep, nor hold five values.
        assert_eq!(check_text("[[[[", &value_limits(5)), Ok(()));
        // Five bytes can: scanned.
        assert_eq!(check_text("[[[[[", &value_limits(5)), Err(GuardError::TooDeep { max: 4 }));
        assert_eq!(check_text("1,2,3", &value_limits(2)), Err(GuardError::TooManyValues { max: 2 }));
        assert_eq!(check_text(&"1".repeat(101), &value_limits(8)), Err(GuardError::TooLarge { bytes: Some(101), max: 100 }));
        // The bound the shortcut relies on: `n` values take `2n - 1` bytes.
        for text in ["0", "[0]", "[0,0,0]", "{}", r#"{"a":0}"#, "[[],[]]"] {
            assert!(counted(text) * 2 - 1 <= text.len(), "{text}");
        }
    }

    #[test]
    fn values_are_counted_as_a_parser_would_count_them() {
        for (text, values) in [
            ("{}", 1),
            (r#"{"a": 1}"#, 2),
            (r#"{"a": "x", "b": [true, null, -1.5e3, "y:z"], "c": {}}"#, 8),
            (r#"[{},{},{}]"#, 4),
            (r#"{"k\":\"": "v"}"#, 2),
            ("  [ 12 , 3 ]  ", 3),
        ] {
            assert_eq!(counted(text), values, "{text}");
            let value: Value = serde_json::from_str(text).unwrap();
            let value_limits = |max_values| ArgumentLimits { max_bytes: usize::MAX, max_depth: 64, max_values };
            assert_eq!(check_value(&value, &value_limits(values)), Ok(()), "{text}");
            assert_eq!(check_value(&value, &value_limits(values - 1)), Err(GuardError::TooManyValues { max: values - 1 }), "{text}");
        }
    }

    #[test]
    fn text_over_the_size_limit_is_refused() {
        assert_eq!(check_text("{\"a\":1}", &limits(3, 64)), Err(GuardError::TooLarge { bytes: Some(7), max: 3 }));
    }

    #[test]
    fn nesting_is_counted_outside_strings_only() {
        let deep = format!("{}{}", "[".repeat(5), "]".repeat(5));
        assert_eq!(check_text(&deep, &limits(100, 4)), Err(GuardError::TooDeep { max: 4 }));
        assert_eq!(check_text(&deep, &limits(100, 5)), Ok(()));
        assert_eq!(check_text(r#"{"a":"[[[[[[\"[[["}"#, &limits(100, 1)), Ok(()));
    }

    #[test]
    fn a_value_nested_100_000_deep_is_dropped_without_overflowing_the_stack() {
        let value = nested(100_000);
        assert_eq!(check_value(&value, &limits(usize::MAX, 64)), Err(GuardError::TooDeep { max: 64 }));
        dismantle(value);
    }

    #[test]
    fn the_lower_bound_of_a_value_never_exceeds_its_serialised_length() {
        let value: Value = serde_json::from_str(r#"{"a": [1, true, false, null, "x\"y", {"b": -12.5e3}], "c": {}}"#).unwrap();
        assert!(serialized_at_least(&value, usize::MAX) <= value.to_string().len());
        let big = Value::String("x".repeat(10_000));
        assert_eq!(check_value(&big, &limits(100, 64)), Err(GuardError::TooLarge { bytes: None, max: 100 }));
        // Escapes count: under the bound, over the exact length.
        let escaped = Value::String("\"".repeat(60));
        assert_eq!(check_value(&escaped, &limits(100, 64)), Err(GuardError::TooLarge { bytes: None, max: 100 }));
    }

    #[test]
    fn a_deep_value_is_measured_without_recursion_whatever_the_limit() {
        let value = nested(200_000);
        // Limits as deep as the value: it is walked to the bottom.
        assert_eq!(check_value(&value, &limits(usize::MAX, 200_000)), Err(GuardError::TooDeep { max: 200_000 }));
        assert_eq!(check_value(&value, &limits(usize::MAX, 199_999)), Err(GuardError::TooDeep { max: 199_999 }));
        dismantle(value);
    }

    #[test]
    fn parsed_values_are_checked_alike() {
        let value: Value = serde_json::from_str("[[[1]]]").unwrap();
        assert_eq!(check_value(&value, &limits(100, 2)), Err(GuardError::TooDeep { max: 2 }));
        assert_eq!(check_value(&value, &limits(100, 3)), Ok(()));
        assert!(matches!(check_value(&value, &limits(3, 3)), Err(GuardError::TooLarge { .. })));
    }
}

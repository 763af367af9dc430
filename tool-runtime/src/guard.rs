//! The first stage of a call: arguments too large or too deeply nested are
//! refused before anything parses them.

use serde_json::Value;

/// Limits on the raw arguments of one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgumentLimits {
    /// Largest accepted argument text, in bytes (default 1 MiB).
    pub max_bytes: usize,
    /// Deepest accepted nesting of arrays and objects (default 64).
    pub max_depth: usize,
}

impl Default for ArgumentLimits {
    fn default() -> Self {
        ArgumentLimits { max_bytes: 1024 * 1024, max_depth: 64 }
    }
}

/// Why the guard refused the arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum GuardError {
    TooLarge { bytes: usize, max: usize },
    TooDeep { max: usize },
}

/// Scans the raw text once, without parsing: its size, and the nesting of
/// brackets outside strings.
pub(crate) fn check_text(raw: &str, limits: &ArgumentLimits) -> Result<(), GuardError> {
    if raw.len() > limits.max_bytes {
        return Err(GuardError::TooLarge { bytes: raw.len(), max: limits.max_bytes });
    }
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for byte in raw.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limits.max_depth {
                    return Err(GuardError::TooDeep { max: limits.max_depth });
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// The same limits for arguments that arrive already parsed (MCP, provider
/// payloads): depth by walking the value, size by its serialised length.
pub(crate) fn check_value(value: &Value, limits: &ArgumentLimits) -> Result<(), GuardError> {
    fn depth_exceeds(value: &Value, remaining: usize) -> bool {
        match value {
            Value::Array(items) => remaining == 0 || items.iter().any(|item| depth_exceeds(item, remaining - 1)),
            Value::Object(map) => remaining == 0 || map.values().any(|item| depth_exceeds(item, remaining - 1)),
            _ => false,
        }
    }
    if depth_exceeds(value, limits.max_depth) {
        return Err(GuardError::TooDeep { max: limits.max_depth });
    }
    let mut counter = ByteCounter { bytes: 0, max: limits.max_bytes };
    if serde_json::to_writer(&mut counter, value).is_err() {
        return Err(GuardError::TooLarge { bytes: counter.bytes, max: limits.max_bytes });
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
        ArgumentLimits { max_bytes, max_depth }
    }

    #[test]
    fn text_over_the_size_limit_is_refused() {
        assert_eq!(check_text("{\"a\":1}", &limits(3, 64)), Err(GuardError::TooLarge { bytes: 7, max: 3 }));
    }

    #[test]
    fn nesting_is_counted_outside_strings_only() {
        let deep = format!("{}{}", "[".repeat(5), "]".repeat(5));
        assert_eq!(check_text(&deep, &limits(100, 4)), Err(GuardError::TooDeep { max: 4 }));
        assert_eq!(check_text(&deep, &limits(100, 5)), Ok(()));
        assert_eq!(check_text(r#"{"a":"[[[[[[\"[[["}"#, &limits(100, 1)), Ok(()));
    }

    #[test]
    fn parsed_values_are_checked_alike() {
        let value: Value = serde_json::from_str("[[[1]]]").unwrap();
        assert_eq!(check_value(&value, &limits(100, 2)), Err(GuardError::TooDeep { max: 2 }));
        assert_eq!(check_value(&value, &limits(100, 3)), Ok(()));
        assert!(matches!(check_value(&value, &limits(3, 3)), Err(GuardError::TooLarge { .. })));
    }
}

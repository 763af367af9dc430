//! Stage 3: the arguments against the tool's own schema (and, for stage 2,
//! which text may be read straight into a tool's input: [`text_exact`]).
//!
//! Every constraint a schema advertises is enforced, but not every schema
//! needs the validator on every call. When a `#[tool]`'s schema says nothing
//! beyond what its Rust input type already checks while it is parsed (the
//! JSON types of scalars, lists and maps, required properties, the natural
//! range of an integer type, annotations) plus the closed root that
//! [`unknown_property`] checks, parsing *is* the validation: the validator
//! then runs only when parsing fails, to tell the model which field is wrong
//! and why, in the same words as always. Which path a tool takes is decided
//! once, when the registry is built ([`parser_enforces`]).
//!
//! Anything else sends every call through the validator first: ranges,
//! lengths, patterns, `enum`s (serde also reads a unit variant from a
//! one-key object), structs nested below the root (serde also reads a struct
//! from an array), unions, `const`, closed nested objects, and every dynamic
//! tool, whose input is plain JSON. Text arguments need no whole value for
//! the constraints of a scalar parameter (a range, a length, a pattern, an
//! `enum` of strings): stage 2 reads such a value straight from the text and
//! checks it alone against its property's schema ([`Properties`]). The fast path assumes what every
//! `derive(Deserialize, JsonSchema)` and std type gives: a type's
//! `Deserialize` is at least as strict as the JSON types its `JsonSchema`
//! states. A type with a hand-written, more lenient `Deserialize` breaks
//! that; [`RegistryBuilder::validate_every_call`](crate::RegistryBuilder::validate_every_call)
//! turns the fast path off.

use serde_json::{Map, Value};

/// At most this many problems are listed for the model.
const MAX_PROBLEMS: usize = 10;

/// Keywords that only inform (JSON Schema annotations; `format` is one in
/// 2020-12, and the validator is not told to assert it).
const ANNOTATIONS: &[&str] =
    &["$schema", "$comment", "description", "title", "default", "examples", "deprecated", "readOnly", "writeOnly", "format", "$defs"];

/// Whether the schema of a tool whose input is a Rust type says nothing
/// that parsing into that type does not check (see the module docs).
pub(crate) fn parser_enforces(schema: &Value) -> bool {
    let Value::Object(root) = schema else {
        return false;
    };
    root.iter().all(|(key, value)| match key.as_str() {
        "type" => value == "object",
        "required" => value.is_array(),
        "additionalProperties" => value == &Value::Bool(false),
        "properties" => value.as_object().is_some_and(|properties| properties.values().all(|property| plain(property, schema, 0))),
        other => ANNOTATIONS.contains(&other),
    })
}

/// A property's schema, below the root: only what serde checks too.
fn plain(schema: &Value, root: &Value, depth: usize) -> bool {
    if depth > crate::schema::MAX_SCHEMA_DEPTH {
        return false;
    }
    let map = match schema {
        Value::Bool(accepts) => return *accepts,
        Value::Object(map) => map,
        _ => return false,
    };
    // A nested struct: serde also reads it from an array.
    if map.contains_key("properties") {
        return false;
    }
    map.iter().all(|(key, value)| match key.as_str() {
        "type" => plain_type(value),
        "items" => value.is_object() && plain(value, root, depth + 1),
        // A map's values (`HashMap<String, T>`); `false` would close it.
        "additionalProperties" => value == &Value::Bool(true) || (value.is_object() && plain(value, root, depth + 1)),
        "$ref" => value
            .as_str()
            .and_then(|reference| reference.strip_prefix('#'))
            .and_then(|pointer| root.pointer(pointer))
            .is_some_and(|target| plain(target, root, depth + 1)),
        "minimum" | "maximum" => natural_bound(map, key, value),
        other => ANNOTATIONS.contains(&other),
    })
}

/// One JSON type, or one and `null` (an `Option`).
fn plain_type(value: &Value) -> bool {
    const TYPES: &[&str] = &["string", "boolean", "integer", "number", "array", "object", "null"];
    match value {
        Value::String(kind) => TYPES.contains(&kind.as_str()),
        Value::Array(kinds) => {
            kinds.len() == 2
                && kinds.iter().any(|kind| kind == "null")
                && kinds.iter().all(|kind| kind.as_str().is_some_and(|kind| TYPES.contains(&kind)))
        }
        _ => false,
    }
}

/// The bound of an integer type's own range (`crate::schema::integer_range`:
/// `minimum: 0` of a `u32`, `maximum: 255` of a `u8`), which the type itself
/// enforces.
///
/// Not the bounds of `u128` and `i128` (`crate::schema::WIDE_INTEGER_RANGE`):
/// a parsed value holds integers only up to 64 bits, so the schema of a
/// 128-bit integer states that range, which the type does not enforce when
/// it is read from text. Such tools are validated on every call.
fn natural_bound(map: &Map<String, Value>, key: &str, value: &Value) -> bool {
    let Some(format) = map.get("format").and_then(Value::as_str).filter(|format| !matches!(*format, "uint128" | "int128")) else {
        return false;
    };
    let Some((min, max)) = crate::schema::integer_range(format) else {
        return false;
    };
    let bound = value.as_i64().map(i128::from).or_else(|| value.as_u64().map(i128::from));
    bound == Some(if key == "minimum" { min } else { max })
}

/// Whether a tool's text arguments may be read straight into its input, with
/// no `Value` on the way (stage 2 of the call path, in `pipeline`): where
/// the root is as [`parser_enforces`] requires, each property is either
/// checked by parsing alone ([`plain`]) or a scalar whose own constraints
/// the reader checks on its value's text ([`Properties::admits`]), every
/// value the schema admits has a JSON type stated (no "any JSON" property,
/// whose value the full path would hand over with its nulls and integral
/// floats rewritten), and none is more than `max_depth` deep (so that a
/// successful parse also passes the guard).
///
/// For such a schema the input types read only what the full path would
/// read the same: a `null` only where the schema accepts it (an `Option`),
/// a float only into a float, and nothing nested deeper than the types.
pub(crate) fn text_exact(schema: &Value, max_depth: usize) -> bool {
    let Value::Object(root) = schema else {
        return false;
    };
    let Some(properties) = root.get("properties").and_then(Value::as_object) else {
        return false;
    };
    let root_plain = root.iter().all(|(key, value)| match key.as_str() {
        "type" => value == "object",
        "required" => value.is_array(),
        "additionalProperties" => value == &Value::Bool(false),
        "properties" => true,
        other => ANNOTATIONS.contains(&other),
    });
    let mut deepest = 0;
    for property in properties.values() {
        if !plain(property, schema, 0) && !checked_scalar(property) {
            return false;
        }
        match typed_depth(property, schema, 0) {
            Some(depth) => deepest = deepest.max(depth),
            None => return false,
        }
    }
    // The root object is one level.
    root_plain && deepest < max_depth
}

/// Keywords a scalar's schema may state that parsing does not check, and
/// that the validator of that schema alone checks on the value.
const SCALAR_CONSTRAINTS: &[&str] =
    &["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "pattern", "enum", "const"];

/// A property's schema that states a scalar type (a string, a number, an
/// integer or a boolean, perhaps or `null`) and constraints on it, and
/// nothing that refers elsewhere: its own validator checks it alone.
///
/// Not a 128-bit integer: its value's text is checked as a parsed value,
/// which holds integers only up to 64 bits (see [`natural_bound`]).
fn checked_scalar(schema: &Value) -> bool {
    const SCALARS: &[&str] = &["string", "boolean", "integer", "number", "null"];
    let Value::Object(map) = schema else {
        return false;
    };
    if map.get("format").is_some_and(|format| format == "int128" || format == "uint128") {
        return false;
    }
    let scalar = match map.get("type") {
        Some(Value::String(kind)) => SCALARS.contains(&kind.as_str()),
        Some(Value::Array(kinds)) => kinds.iter().all(|kind| kind.as_str().is_some_and(|kind| SCALARS.contains(&kind))),
        _ => false,
    };
    scalar && map.keys().all(|key| key == "type" || SCALAR_CONSTRAINTS.contains(&key.as_str()) || ANNOTATIONS.contains(&key.as_str()))
}

/// The root schema's properties, as the text reader checks them: their
/// names, and for each property whose schema states constraints parsing
/// does not check (a range, a length, a pattern, an `enum` of scalars), the
/// validator of that property's schema alone (the same validator, so the
/// same rules, as the whole schema's).
pub(crate) struct Properties {
    names: Box<[Box<str>]>,
    /// By the index of the name; `None` where parsing checks it all.
    checks: Box<[Option<jsonschema::Validator>]>,
    any_checked: bool,
}

impl Properties {
    /// The properties of `schema`, with a check for each constrained scalar
    /// when `checked` (a tool whose text is read straight into its input).
    pub(crate) fn of(schema: &Value, checked: bool) -> Self {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return Properties { names: Box::default(), checks: Box::default(), any_checked: false };
        };
        // A property's schema that does not compile alone (the whole one
        // did) refuses every text, which sends its calls down the value path.
        let check = |property: &Value| {
            (checked && !plain(property, schema, 0) && checked_scalar(property)).then(|| {
                jsonschema::draft202012::new(property)
                    .or_else(|_| jsonschema::draft202012::new(&Value::Bool(false)))
                    .expect("the schema `false` compiles")
            })
        };
        let checks: Box<[_]> = properties.values().map(check).collect();
        let any_checked = checks.iter().any(Option::is_some);
        Properties { names: properties.keys().map(|name| name.as_str().into()).collect(), checks, any_checked }
    }

    /// The names, in the schema's order.
    pub(crate) fn names(&self) -> &[Box<str>] {
        &self.names
    }

    /// Whether any property is checked on its text.
    pub(crate) fn any_checked(&self) -> bool {
        self.any_checked
    }

    /// The names of the properties checked on their text.
    pub(crate) fn checked_names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().zip(&self.checks).filter(|(_, check)| check.is_some()).map(|(name, _)| &**name)
    }

    /// Whether `raw`, the text of the value of `name`, meets the constraints
    /// of its property's schema (always, for a property without any). Text
    /// that does not parse is not admitted: the value path words it.
    pub(crate) fn admits(&self, name: &str, raw: &str) -> bool {
        let Some(at) = self.names.iter().position(|known| &**known == name) else {
            return true;
        };
        match &self.checks[at] {
            None => true,
            Some(validator) => match plain_scalar(raw) {
                Some(Plain::Str(text)) => as_scratch_string(text, |value| validator.is_valid(value)),
                Some(Plain::Other(value)) => validator.is_valid(&value),
                None => serde_json::from_str::<Value>(raw).is_ok_and(|value| validator.is_valid(&value)),
            },
        }
    }
}

/// A plain JSON scalar's value (see [`plain_scalar`]).
#[derive(Debug, PartialEq)]
enum Plain<'a> {
    /// A string's characters, between its quotes.
    Str(&'a str),
    /// Any other scalar.
    Other(Value),
}

/// The value of `raw` when it is a plain JSON scalar: a string without
/// escapes or control characters, an integer of at most 18 digits, `true`,
/// `false`. `None` for any other text, which `serde_json` reads (or
/// refuses). Made directly, the value costs a tenth of a parse.
fn plain_scalar(raw: &str) -> Option<Plain<'_>> {
    let bytes = raw.as_bytes();
    match bytes {
        // Whole characters: the quotes are ASCII, so `raw` is cut on char
        // boundaries.
        [b'"', inner @ .., b'"'] if inner.iter().all(|&b| b >= 0x20 && b != b'"' && b != b'\\') => Some(Plain::Str(&raw[1..raw.len() - 1])),
        b"true" => Some(Plain::Other(Value::Bool(true))),
        b"false" => Some(Plain::Other(Value::Bool(false))),
        _ => {
            let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
            // JSON allows no leading zero (`0` itself aside).
            let plain = matches!(digits, [b'1'..=b'9', ..] | [b'0']) && digits.len() <= 18 && digits.iter().all(u8::is_ascii_digit);
            // At most 18 digits: always an `i64`.
            plain.then(|| Plain::Other(Value::from(raw.parse::<i64>().expect("at most 18 digits"))))
        }
    }
}

/// The longest string kept in a thread's scratch value between checks.
const SCRATCH_KEPT: usize = 4096;

thread_local! {
    /// The buffer each check of a string property writes its text into,
    /// so that checking costs no allocation.
    static SCRATCH: std::cell::Cell<String> = const { std::cell::Cell::new(String::new()) };
}

/// `check` on `text` as a JSON string, written into this thread's scratch
/// buffer, which is kept for the next check unless it grew over
/// [`SCRATCH_KEPT`].
fn as_scratch_string(text: &str, check: impl Fn(&Value) -> bool) -> bool {
    let mut buffer = SCRATCH.take();
    buffer.clear();
    buffer.push_str(text);
    let value = Value::String(buffer);
    let admitted = check(&value);
    if let Value::String(buffer) = value
        && buffer.capacity() <= SCRATCH_KEPT
    {
        SCRATCH.set(buffer);
    }
    admitted
}

/// How deep the values a property's schema admits nest (0 for a scalar),
/// when every part of it states a JSON type; `None` otherwise.
fn typed_depth(schema: &Value, root: &Value, depth: usize) -> Option<usize> {
    if depth > crate::schema::MAX_SCHEMA_DEPTH {
        return None;
    }
    let map = schema.as_object()?;
    if map.contains_key("$ref") {
        return typed_depth(crate::schema::ref_target(map, root)?, root, depth + 1);
    }
    let types: Vec<&str> = match map.get("type")? {
        Value::String(kind) => vec![kind.as_str()],
        Value::Array(kinds) => kinds.iter().map(Value::as_str).collect::<Option<_>>()?,
        _ => return None,
    };
    let mut deepest = 0;
    for kind in types {
        let below = match kind {
            "array" => map.get("items")?,
            "object" => map.get("additionalProperties")?,
            _ => continue,
        };
        deepest = deepest.max(1 + typed_depth(below, root, depth + 1)?);
    }
    Some(deepest)
}

/// The first key of `args` that is not one of `properties` (the names of
/// a closed root: `additionalProperties: false`). Compared, not hashed: a
/// tool has few parameters, and the map's hasher is SipHash.
pub(crate) fn unknown_property<'a>(args: &'a Map<String, Value>, properties: &[Box<str>]) -> Option<&'a str> {
    args.keys().map(String::as_str).find(|key| !properties.iter().any(|name| &**name == *key))
}

/// Values of at most this many nodes have all their errors listed (up to
/// [`MAX_PROBLEMS`]); larger ones only their first.
const LISTED_NODES: usize = 1_000;

/// What the validator finds wrong with `value`, as `pointer: reason` lines
/// for the model (at most ten); empty when it is valid.
///
/// The validator's error iterator builds every error before it yields the
/// first (one per item of a list of 300,000 wrong items: hundreds of
/// megabytes), so it is used only on values small enough that all their
/// errors are few; a larger value is worded by its first error, which the
/// validator finds without going further.
pub(crate) fn problems(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
    if validator.is_valid(value) {
        return Vec::new();
    }
    let errors: Vec<jsonschema::ValidationError<'_>> = if nodes_at_most(value, LISTED_NODES) {
        validator.iter_errors(value).take(MAX_PROBLEMS).collect()
    } else {
        validator.validate(value).err().into_iter().collect()
    };
    errors
        .into_iter()
        .map(|err| {
            let path = err.instance_path().as_str().to_owned();
            let path = if path.is_empty() { "(root)".to_owned() } else { path };
            format!("{path}: {}", crate::result::lines::shorten(&err.to_string(), 200))
        })
        .collect()
}

/// Whether `value` has at most `max` nodes (itself, items, members),
/// counted without recursion and only until `max` is passed.
fn nodes_at_most(value: &Value, max: usize) -> bool {
    let mut stack = vec![value];
    let mut seen = 0;
    while let Some(value) = stack.pop() {
        seen += 1;
        if seen > max {
            return false;
        }
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn root(properties: Value) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": properties,
            "required": [],
            "additionalProperties": false
        })
    }

    #[test]
    fn a_plain_scalar_is_the_value_serde_json_reads() {
        let plain = [r#""EUR""#, r#""""#, r#""é ü""#, "0", "500", "-42", "999999999999999999", "true", "false"];
        for raw in plain {
            let value = match plain_scalar(raw) {
                Some(Plain::Str(text)) => Value::String(text.to_owned()),
                Some(Plain::Other(value)) => value,
                None => panic!("{raw} is a plain scalar"),
            };
            assert_eq!(value, serde_json::from_str::<Value>(raw).unwrap(), "{raw}");
        }
        // Anything else is left to serde_json, which reads or refuses it.
        let other = [r#""a\"b""#, "\"tab\there\"", r#""x"#, "007", "1.5", "1e3", "-", "", "null", "[1]", "9999999999999999999", " 1"];
        for raw in other {
            assert_eq!(plain_scalar(raw), None, "{raw}");
        }
    }

    #[test]
    fn scalars_options_lists_and_maps_are_checked_by_the_parser() {
        let schema = root(json!({
            "order_id": {"type": "string", "description": "The order."},
            "with_items": {"type": "boolean", "default": false},
            "limit": {"type": "integer", "format": "uint32", "minimum": 0},
            "small": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255},
            "page": {"type": ["integer", "null"], "format": "int64"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "counts": {"type": "object", "additionalProperties": {"type": "integer", "format": "uint32", "minimum": 0}},
            "anything": true
        }));
        assert!(parser_enforces(&schema));
        // The ranges the canonical schema states for each integer type.
        let schema = root(json!({
            "limit": {"type": "integer", "format": "uint32", "minimum": 0, "maximum": u32::MAX},
            "page": {"type": ["integer", "null"], "format": "int64", "minimum": i64::MIN, "maximum": i64::MAX},
            "cents": {"type": "integer", "format": "uint64", "minimum": 0, "maximum": u64::MAX},
            "index": {"type": "integer", "format": "uint", "minimum": 0, "maximum": usize::MAX}
        }));
        assert!(parser_enforces(&schema));
        let wide = root(json!({"big": {"type": "integer", "format": "uint128", "minimum": 0, "maximum": u64::MAX}}));
        assert!(!parser_enforces(&wide), "a 128-bit integer's stated range is not its type's");
    }

    #[test]
    fn constraints_serde_does_not_check_need_the_validator() {
        for property in [
            json!({"type": "integer", "format": "uint32", "minimum": 1}),
            json!({"type": "integer", "format": "uint8", "minimum": 0, "maximum": 100}),
            json!({"type": "integer", "format": "uint32", "minimum": 0, "maximum": 4_294_967_294u32}),
            json!({"type": "integer", "minimum": 0}),
            json!({"type": "string", "pattern": "^A-"}),
            json!({"type": "string", "minLength": 10}),
            json!({"type": "string", "enum": ["instant", "standard"]}),
            json!({"type": "object", "properties": {"street": {"type": "string"}}}),
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
            json!({"type": "array", "prefixItems": [{"type": "string"}]}),
            json!({"type": "object", "additionalProperties": false}),
            json!({"type": ["string", "integer"]}),
            json!({"$ref": "#/$defs/Missing"}),
            json!(false),
        ] {
            assert!(!parser_enforces(&root(json!({ "x": property.clone() }))), "{property}");
        }
    }

    #[test]
    fn references_are_followed() {
        let mut schema = root(json!({"ids": {"type": "array", "items": {"$ref": "#/$defs/Id"}}}));
        schema["$defs"] = json!({"Id": {"type": "string"}});
        assert!(parser_enforces(&schema));
        schema["$defs"] = json!({"Id": {"type": "string", "enum": ["a"]}});
        assert!(!parser_enforces(&schema));
        schema["$defs"] = json!({"Id": {"$ref": "#/$defs/Id"}});
        assert!(!parser_enforces(&schema), "a cycle is not followed forever");
    }

    #[test]
    fn text_is_exact_where_every_value_has_a_type_and_a_bounded_depth() {
        let schema = root(json!({
            "order_id": {"type": "string"},
            "limit": {"type": ["integer", "null"], "format": "uint32", "minimum": 0},
            "tags": {"type": "array", "items": {"type": "array", "items": {"$ref": "#/$defs/Id"}}},
            "counts": {"type": "object", "additionalProperties": {"type": "number"}}
        }));
        let mut schema = schema;
        schema["$defs"] = json!({"Id": {"type": "string"}});
        assert!(text_exact(&schema, 3), "root, list, list");
        assert!(!text_exact(&schema, 2), "deeper than the limit");
        assert!(text_exact(&root(json!({})), 1));
        for property in
            [json!(true), json!({"description": "anything"}), json!({"type": "array"}), json!({"type": "object", "additionalProperties": true})]
        {
            assert!(!text_exact(&root(json!({ "x": property.clone() })), 64), "{property}");
        }
    }

    #[test]
    fn constrained_scalars_are_read_as_text_and_checked_on_their_own() {
        let schema = root(json!({
            "amount": {"type": "integer", "format": "uint32", "minimum": 1, "maximum": 10000},
            "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "note": {"type": ["string", "null"], "maxLength": 4},
            "plain": {"type": "boolean"}
        }));
        assert!(!parser_enforces(&schema), "the value path still needs the validator");
        assert!(text_exact(&schema, 2));
        let properties = Properties::of(&schema, true);
        assert!(properties.any_checked());
        assert!(properties.admits("amount", "500") && !properties.admits("amount", "0") && !properties.admits("amount", "10001"));
        assert!(properties.admits("currency", r#""EUR""#) && !properties.admits("currency", r#""eur""#));
        assert!(properties.admits("currency", r#""\u0045UR""#), "an escape is read as the value path reads it");
        assert!(properties.admits("note", "null") && properties.admits("note", r#""ab""#) && !properties.admits("note", r#""abcde""#));
        assert!(properties.admits("plain", "true") && properties.admits("unknown", "1"));
        assert!(!properties.admits("amount", "5x"), "text that does not parse is left to the value path");
        assert!(!Properties::of(&schema, false).any_checked(), "no checks where the text is not read");
    }

    #[test]
    fn a_long_string_is_checked_whole_and_not_kept_in_the_scratch_value() {
        let schema = root(json!({"note": {"type": "string", "maxLength": 5000}}));
        let properties = Properties::of(&schema, true);
        let long = format!("\"{}\"", "x".repeat(5000));
        let longer = format!("\"{}\"", "x".repeat(5001));
        assert!(properties.admits("note", &long) && !properties.admits("note", &longer));
        assert!(properties.admits("note", r#""short""#), "the scratch value holds only the text checked");
        let kept = SCRATCH.take();
        assert_eq!(kept, "short");
        SCRATCH.set(kept);
        properties.admits("note", &long);
        assert_eq!(SCRATCH.take().capacity(), 0, "a buffer over {SCRATCH_KEPT} bytes is not kept");
    }

    #[test]
    fn only_scalars_with_their_own_constraints_are_checked_on_their_text() {
        for property in [
            json!({"type": "integer", "format": "int128", "minimum": -9_223_372_036_854_775_808i64, "maximum": u64::MAX}),
            json!({"type": "array", "items": {"type": "string"}, "minItems": 1}),
            json!({"type": "string", "enum": ["a"], "$ref": "#/$defs/Kind"}),
            json!({"enum": ["instant", "standard"]}),
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
            json!({"type": "object", "properties": {"street": {"type": "string"}}}),
        ] {
            assert!(!text_exact(&root(json!({ "x": property.clone() })), 64), "{property}");
        }
        assert!(text_exact(&root(json!({"x": {"type": "string", "enum": ["instant", "standard"]}})), 64));
    }

    #[test]
    fn an_open_root_needs_the_validator() {
        let mut schema = root(json!({}));
        schema["additionalProperties"] = json!({"type": "string"});
        assert!(!parser_enforces(&schema));
    }

    #[test]
    fn unknown_properties_are_found() {
        let properties = Properties::of(&root(json!({"a": {"type": "string"}})), false);
        let names = properties.names();
        let args = json!({"a": "x", "b": 1});
        assert_eq!(unknown_property(args.as_object().unwrap(), names), Some("b"));
        assert_eq!(unknown_property(json!({"a": "x"}).as_object().unwrap(), names), None);
    }

    #[test]
    fn a_large_invalid_value_is_worded_by_its_first_problem_and_a_small_one_by_up_to_ten() {
        let schema = root(json!({"ids": {"type": "array", "items": {"type": "integer"}}}));
        let validator = jsonschema::validator_for(&schema).unwrap();
        let small = json!({"ids": vec![json!({}); 50]});
        let found = problems(&validator, &small);
        assert_eq!(found.len(), MAX_PROBLEMS, "{found:?}");
        assert!(found[0].starts_with("/ids/0: "), "{found:?}");
        let large = json!({"ids": vec![json!({}); 300_000]});
        let found = problems(&validator, &large);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("/ids/0: "), "{found:?}");
        assert!(problems(&validator, &json!({"ids": vec![1; 300_000]})).is_empty());
        assert!(nodes_at_most(&json!([1, [2, 3]]), 5) && !nodes_at_most(&json!([1, [2, 3]]), 4));
    }
}

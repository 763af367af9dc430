//! The canonical input and output schemas: JSON Schema 2020-12, built once
//! when the registry is built.
//!
//! schemars names each number's Rust type in a `format` (`uint32`, `int64`,
//! `double`, ...). The canonical schema keeps these names, since they tell
//! the registry which bounds the Rust type enforces itself
//! (`validation::parser_enforces`), and states every integer type's range as
//! `minimum` and `maximum` (a `u32` accepts `0..=4294967295`). No export
//! carries them: they are not formats of JSON Schema, and validators (the
//! MCP TypeScript client's) warn on each. Every dialect exports the schemas
//! of [`standard_formats_only`], whose ranges still say what the type does.

use std::cmp::Ordering;

use schemars::generate::SchemaSettings;
use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value};

/// How far a walk over a schema (or over arguments beside it) follows
/// `$ref` chains and nesting before it gives up and takes the cautious
/// answer: as deep as the guard ever lets arguments be.
pub(crate) const MAX_SCHEMA_DEPTH: usize = crate::guard::MAX_ARGUMENT_DEPTH;

/// Whether `schema` admits `null` alone (`"type": "null"`).
pub(crate) fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// The JSON Schema dialect (2020-12) that every canonical schema declares in
/// its `$schema`: the input and output schemas of a [`ToolDefinition`](crate::ToolDefinition).
pub const SCHEMA_DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// What a local `$ref` points to (`#/$defs/Name`, or any JSON pointer
/// into `root`), with the name of its last segment. A reference outside the
/// document resolves to nothing.
pub(crate) fn resolve<'s>(root: &'s Value, reference: &str) -> Option<(&'s Value, String)> {
    let pointer = reference.strip_prefix('#')?;
    let target = root.pointer(pointer)?;
    let name = pointer.rsplit('/').next().unwrap_or_default().replace("~1", "/").replace("~0", "~");
    Some((target, name))
}

/// What the `$ref` of a schema object points to, when it has one that
/// resolves.
pub(crate) fn ref_target<'s>(schema: &Map<String, Value>, root: &'s Value) -> Option<&'s Value> {
    let reference = schema.get("$ref")?.as_str()?;
    resolve(root, reference).map(|(target, _)| target)
}

/// A generator for one tool's schema, so each schema carries its own `$defs`.
pub(crate) fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12().for_deserialize().into_generator()
}

/// A generator for output schemas (what the tool serialises).
pub(crate) fn output_generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12().for_serialize().into_generator()
}

/// Brings an input schema to the canonical shape: `$schema` first, an
/// object at the root, `properties` and `required` always present,
/// `additionalProperties: false` unless the type already says what extra
/// properties may be, and the definitions it refers to under `$defs`.
pub(crate) fn normalize_input(schema: Schema, generator: &mut SchemaGenerator) -> Result<Value, String> {
    let Value::Object(mut root) = schema.to_value() else {
        return Err("the input schema is not an object schema; a tool's input must be a struct or named parameters".into());
    };
    match root.get("type") {
        Some(Value::String(kind)) if kind == "object" => {}
        None if root.contains_key("properties") => {}
        other => {
            return Err(format!(
                "the input schema has `type: {}` at the root, but a tool's input must be an object (a struct with named fields)",
                other.map_or("<none>".to_owned(), Value::to_string)
            ));
        }
    }
    root.remove("title");
    root.remove("$schema");
    let mut out = Map::new();
    out.insert("$schema".into(), SCHEMA_DIALECT.into());
    out.insert("type".into(), "object".into());
    root.remove("type");
    // The tool's description says what the input is for; a struct's own
    // doc comment would repeat it.
    root.remove("description");
    out.insert("properties".into(), root.remove("properties").unwrap_or_else(|| Value::Object(Map::new())));
    out.insert("required".into(), root.remove("required").unwrap_or_else(|| Value::Array(Vec::new())));
    let extra = root.remove("additionalProperties").unwrap_or(Value::Bool(false));
    out.insert("additionalProperties".into(), extra);
    let defs = root.remove("$defs");
    out.extend(root);
    attach_definitions(&mut out, defs, generator);
    let mut schema = Value::Object(out);
    bound_integers(&mut schema);
    Ok(schema)
}

/// The lowest and highest integer a 128-bit integer parameter accepts.
///
/// Arguments may arrive already parsed (MCP hands over a `serde_json`
/// value), and a parsed value holds integers exactly only as far as `i64`
/// and `u64` reach: beyond, it holds the nearest float. So a `u128` or an
/// `i128` accepts `i64::MIN..=u64::MAX` on every path, and its schema says
/// so.
pub(crate) const WIDE_INTEGER_RANGE: (i64, u64) = (i64::MIN, u64::MAX);

/// The range of each integer `format` schemars writes, as the Rust type
/// reads it (`uint32`: `0..=u32::MAX`); `uint128` and `int128` are read in
/// [`WIDE_INTEGER_RANGE`]. `None` for any other format.
pub(crate) fn integer_range(format: &str) -> Option<(i128, i128)> {
    let (low, high) = WIDE_INTEGER_RANGE;
    Some(match format {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "int64" => (i64::MIN.into(), i64::MAX.into()),
        "int" => (isize::MIN as i128, isize::MAX as i128),
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        "uint64" => (0, u64::MAX.into()),
        "uint" => (0, usize::MAX as i128),
        "uint128" => (0, high.into()),
        "int128" => (low.into(), high.into()),
        _ => return None,
    })
}

/// States the range of [`integer_range`] on the schema of every integer
/// (by its `format`), at any depth, in `$defs` too. A narrower bound the
/// type states (`#[schemars(range(...))]`, a `NonZeroU32`) is kept.
fn bound_integers(schema: &mut Value) {
    each_schema(schema, &mut |map| {
        if let Some((low, high)) = map.get("format").and_then(Value::as_str).and_then(integer_range) {
            tighten(map, "minimum", low, Ordering::is_ge, "format");
            tighten(map, "maximum", high, Ordering::is_le, "minimum");
        }
    });
}

/// Calls `visit` on every schema object in `schema`, outermost first: not
/// on the values it holds (`default`, `examples`, `const`, `enum`).
fn each_schema(schema: &mut Value, visit: &mut dyn FnMut(&mut Map<String, Value>)) {
    match schema {
        Value::Object(map) => {
            visit(map);
            for (key, value) in map.iter_mut() {
                if !matches!(key.as_str(), "default" | "examples" | "const" | "enum") {
                    each_schema(value, visit);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| each_schema(item, visit)),
        _ => {}
    }
}

/// The formats of JSON Schema 2020-12 (its format vocabulary): the only
/// `format` values an export carries.
pub(crate) const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// `schema` without the `format`s that are not JSON Schema's (schemars'
/// names of Rust types: `uint32`, `int64`, `double`, `ip`, ...), or `None`
/// when it has none. An integer's range stays, as `minimum` and `maximum`.
pub(crate) fn standard_formats_only(schema: &Value) -> Option<Value> {
    let mut schema = schema.clone();
    let mut dropped = false;
    each_schema(&mut schema, &mut |map| {
        if map.get("format").and_then(Value::as_str).is_some_and(|format| !STANDARD_FORMATS.contains(&format)) {
            map.shift_remove("format");
            dropped = true;
        }
    });
    dropped.then_some(schema)
}

/// Sets `key` to `ours` unless it holds a number that `keep` accepts
/// (compared to `ours`); a new key goes right after `after` (a bound
/// beside the `format` it comes from, as schemars writes a `u8`'s).
fn tighten(map: &mut Map<String, Value>, key: &str, ours: i128, keep: fn(Ordering) -> bool, after: &str) {
    let theirs = map.get(key).and_then(Value::as_number).and_then(|theirs| match (theirs.as_i64(), theirs.as_u64()) {
        (Some(theirs), _) => Some(i128::from(theirs).cmp(&ours)),
        (_, Some(theirs)) => Some(i128::from(theirs).cmp(&ours)),
        _ => theirs.as_f64()?.partial_cmp(&(ours as f64)),
    });
    if !theirs.is_some_and(keep) {
        let value = i64::try_from(ours).map(Value::from).unwrap_or_else(|_| Value::from(ours as u64));
        match map.keys().position(|existing| existing == after) {
            Some(index) if !map.contains_key(key) => {
                map.shift_insert(index + 1, key.to_owned(), value);
            }
            _ => {
                map.insert(key.to_owned(), value);
            }
        }
    }
}

/// An output schema as a root schema with its `$defs`.
pub(crate) fn with_definitions(schema: Schema, generator: &mut SchemaGenerator) -> Value {
    let mut out = Map::new();
    out.insert("$schema".into(), SCHEMA_DIALECT.into());
    match schema.to_value() {
        Value::Object(map) => out.extend(map.into_iter().filter(|(key, _)| key != "$schema")),
        Value::Bool(true) => {}
        // `false` accepts nothing; keep it as the equivalent `not: {}`.
        _ => {
            out.insert("not".into(), Value::Object(Map::new()));
        }
    }
    let defs = out.remove("$defs");
    attach_definitions(&mut out, defs, generator);
    let mut schema = Value::Object(out);
    bound_integers(&mut schema);
    schema
}

fn attach_definitions(out: &mut Map<String, Value>, existing: Option<Value>, generator: &mut SchemaGenerator) {
    let mut defs = match existing {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    defs.extend(generator.take_definitions(true));
    if !defs.is_empty() {
        out.insert("$defs".into(), Value::Object(defs));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn normalized(value: Value) -> Result<Value, String> {
        normalize_input(Schema::try_from(value).unwrap(), &mut generator())
    }

    #[test]
    fn required_and_additional_properties_are_always_present() {
        let schema = normalized(json!({"type": "object", "properties": {}})).unwrap();
        assert_eq!(schema, json!({"$schema": SCHEMA_DIALECT, "type": "object", "properties": {}, "required": [], "additionalProperties": false}));
    }

    #[test]
    fn the_root_title_is_dropped_and_key_order_is_canonical() {
        let schema = normalized(json!({"title": "X", "required": ["a"], "properties": {"a": {}}, "type": "object"})).unwrap();
        let keys: Vec<_> = schema.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["$schema", "type", "properties", "required", "additionalProperties"]);
    }

    #[test]
    fn an_explicit_additional_properties_schema_is_kept() {
        let schema = normalized(json!({"type": "object", "additionalProperties": {"type": "string"}})).unwrap();
        assert_eq!(schema["additionalProperties"], json!({"type": "string"}));
    }

    #[test]
    fn wide_integers_state_the_range_they_are_read_in() {
        let schema = normalized(json!({
            "type": "object",
            "properties": {
                "big": {"type": "integer", "format": "uint128", "minimum": 0},
                "signed": {"type": ["integer", "null"], "format": "int128"},
                "narrow": {"type": "integer", "format": "int128", "minimum": -5, "maximum": 1e30},
                "list": {"type": "array", "items": {"$ref": "#/$defs/Inner"}},
                "plain": {"type": "integer", "format": "int64", "default": {"format": "uint128"}}
            },
            "$defs": {"Inner": {"type": "object", "properties": {"n": {"type": "integer", "format": "uint128", "maximum": 10}}}}
        }))
        .unwrap();
        let properties = &schema["properties"];
        assert_eq!(properties["big"], json!({"type": "integer", "format": "uint128", "minimum": 0, "maximum": u64::MAX}));
        assert_eq!(properties["signed"]["minimum"], json!(i64::MIN));
        assert_eq!(properties["signed"]["maximum"], json!(u64::MAX));
        assert_eq!((&properties["narrow"]["minimum"], &properties["narrow"]["maximum"]), (&json!(-5), &json!(u64::MAX)), "a narrower bound is kept");
        assert_eq!(schema["$defs"]["Inner"]["properties"]["n"], json!({"type": "integer", "format": "uint128", "maximum": 10, "minimum": 0}));
        assert_eq!(
            properties["plain"],
            json!({"type": "integer", "format": "int64", "default": {"format": "uint128"}, "minimum": i64::MIN, "maximum": i64::MAX}),
            "values are not schemas"
        );
    }

    #[test]
    fn every_integer_states_its_type_s_range() {
        let schema = normalized(json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "format": "uint32", "minimum": 0},
                "tiny": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255},
                "signed": {"type": "integer", "format": "int32"},
                "rating": {"type": "integer", "format": "uint32", "minimum": 1, "maximum": 5},
                "index": {"type": "integer", "format": "uint", "minimum": 0},
                "ratio": {"type": "number", "format": "double"}
            }
        }))
        .unwrap();
        let range = |name: &str| (schema["properties"][name]["minimum"].clone(), schema["properties"][name]["maximum"].clone());
        assert_eq!(range("count"), (json!(0), json!(u32::MAX)));
        assert_eq!(range("tiny"), (json!(0), json!(255)));
        assert_eq!(range("signed"), (json!(i32::MIN), json!(i32::MAX)));
        assert_eq!(range("rating"), (json!(1), json!(5)));
        assert_eq!(range("index"), (json!(0), json!(usize::MAX)));
        assert_eq!(schema["properties"]["ratio"], json!({"type": "number", "format": "double"}));
    }

    #[test]
    fn exports_keep_only_the_formats_of_json_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "format": "uint32", "minimum": 0, "maximum": 4_294_967_295u32},
                "at": {"type": "string", "format": "date-time"},
                "host": {"type": "string", "format": "ip"},
                "format": {"type": "string", "default": "pdf"},
                "note": {"type": "string", "const": {"format": "uint8"}}
            },
            "$defs": {"Money": {"type": "number", "format": "double"}}
        });
        let exported = standard_formats_only(&schema).unwrap();
        let properties = &exported["properties"];
        assert_eq!(properties["count"], json!({"type": "integer", "minimum": 0, "maximum": 4_294_967_295u32}));
        assert_eq!(properties["at"]["format"], "date-time");
        assert_eq!(properties["host"], json!({"type": "string"}));
        assert_eq!(properties["format"], json!({"type": "string", "default": "pdf"}), "a property named `format` stays");
        assert_eq!(properties["note"]["const"], json!({"format": "uint8"}), "values are not schemas");
        assert_eq!(exported["$defs"]["Money"], json!({"type": "number"}));
        assert_eq!(standard_formats_only(&json!({"type": "string", "format": "email"})), None, "nothing to drop");
    }

    #[test]
    fn a_non_object_root_is_an_error() {
        let err = normalized(json!({"type": "string"})).unwrap_err();
        assert!(err.contains("must be an object"), "{err}");
        assert!(normalized(json!({"oneOf": [{"type": "object"}]})).is_err());
    }

    #[test]
    fn references_resolve_with_their_name() {
        let root = json!({"$defs": {"a/b": {"type": "string"}}});
        let (target, name) = resolve(&root, "#/$defs/a~1b").unwrap();
        assert_eq!(target, &json!({"type": "string"}));
        assert_eq!(name, "a/b");
        assert!(resolve(&root, "https://example.com/schema").is_none());
        let object = json!({"$ref": "#/$defs/a~1b"});
        assert_eq!(ref_target(object.as_object().unwrap(), &root), Some(&json!({"type": "string"})));
    }
}

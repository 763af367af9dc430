//! OpenAI: Chat Completions ([`chat`]) and Responses ([`responses`]).
//!
//! Both take the same function schema. Without strict mode it is the
//! canonical schema (without `$schema`). In strict mode the model's
//! arguments are constrained to the schema, which must then be in the subset
//! OpenAI documents: every object closed (`additionalProperties: false`),
//! every property required (the optional ones nullable; the runtime reads a
//! `null` for them as "use the default"), and only the supported keywords.
//! The others are moved into the description, so the model still reads
//! them, and stay enforced by the runtime's validation.
//!
//! Strict mode is turned on for a tool only where that loses no constraint
//! (moving a `default`, `title`, `examples` or `format` is no loss), unless
//! the tool's `strict = bool` or [`ExportOptions::strict`] decides.

use serde_json::{Map, Value, json};

use super::{DialectError, ExportOptions, Losses, Moved, check_name, discriminated, pointer, rename, show, show_all};
use crate::schema::resolve;
use crate::tool::ToolDefinition;

const PROVIDER: &str = "openai";

/// Keywords strict mode accepts, from OpenAI's "Supported schemas" for
/// Structured Outputs and strict function calling
/// (<https://platform.openai.com/docs/guides/structured-outputs#supported-schemas>):
/// the types, `enum`, `anyOf`, `$defs`/`$ref` (recursion included),
/// `description`; for strings `pattern` and `format` (the formats below);
/// for numbers `multipleOf`, `maximum`, `exclusiveMaximum`, `minimum`,
/// `exclusiveMinimum`; for arrays `minItems`, `maxItems`. Not supported:
/// `minLength`, `maxLength`, `patternProperties`, `unevaluatedProperties`,
/// `propertyNames`, `minProperties`, `maxProperties`, `unevaluatedItems`,
/// `contains`, `minContains`, `maxContains`, `uniqueItems`, and the
/// composition keywords `allOf`, `oneOf`, `not`, `if`/`then`/`else`.
const SUPPORTED: &[&str] = &[
    "type",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "enum",
    "$ref",
    "$defs",
    "pattern",
    "format",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "minItems",
    "maxItems",
];

/// The string formats strict mode supports.
const STRING_FORMATS: &[&str] = &["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];

/// Keywords that only inform: losing them loses no constraint. (`format` is
/// an annotation in JSON Schema 2020-12, and the runtime's validation does
/// not assert it either.)
const INFORMATIONAL: &[&str] = &[
    "default",
    "examples",
    "title",
    "format",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "$id",
    "$anchor",
    "contentEncoding",
    "contentMediaType",
];

/// The rule OpenAI documents for function names.
const NAME_RULE: &str = "^[a-zA-Z0-9_-]{1,64}$";

fn check(def: &ToolDefinition) -> Result<(), DialectError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    check_name(PROVIDER, &def.name, NAME_RULE, allowed, allowed, 64)
}

/// One function in the shape both APIs share.
struct Function {
    parameters: Value,
    strict: bool,
}

fn function(def: &ToolDefinition, options: &ExportOptions, losses: &mut Vec<super::Loss>) -> Result<Function, DialectError> {
    check(def)?;
    let exported = super::exported(def);
    let def = &*exported;
    let plain = || {
        let mut schema = (*def.input_schema).clone();
        if let Value::Object(map) = &mut schema {
            map.shift_remove("$schema");
        }
        schema
    };
    let forced = def.strict.or(options.strict);
    if forced == Some(false) {
        return Ok(Function { parameters: plain(), strict: false });
    }
    let (parameters, lost) = strict_schema(def);
    let strict = forced.unwrap_or(!lost.has_constraints());
    if !strict {
        return Ok(Function { parameters: plain(), strict: false });
    }
    losses.extend(lost.into_vec());
    Ok(Function { parameters, strict: true })
}

/// The tool's input schema as strict mode needs it, and what that lost.
fn strict_schema(def: &ToolDefinition) -> (Value, Losses) {
    let mut strict = Strict { root: &def.input_schema, losses: Losses::new(&def.name), inlining: Vec::new() };
    let schema = strict.schema(&def.input_schema, "");
    (schema, strict.losses)
}

struct Strict<'a> {
    root: &'a Value,
    losses: Losses,
    /// The definitions being inlined, outermost first, so a recursive type
    /// is referred to rather than inlined forever.
    inlining: Vec<String>,
}

impl Strict<'_> {
    fn schema(&mut self, node: &Value, at: &str) -> Value {
        let mut map = match node {
            Value::Object(map) => map.clone(),
            Value::Bool(_) => {
                self.losses.constraint(at, "type", "strict mode needs a type for every value; this schema is a boolean");
                return node.clone();
            }
            other => return other.clone(),
        };
        let inlined = self.flatten(&mut map, at);
        let mut out = Map::new();
        let mut moved = Moved::default();
        let kind = primary_type(&map);
        if let Some(constant) = map.get("const").filter(|_| !map.contains_key("enum")).cloned() {
            rename(&mut map, "const", "enum", Value::Array(vec![constant]));
        }
        if let Some(alternatives) = map.get("oneOf").filter(|_| !map.contains_key("anyOf")).cloned() {
            let list = alternatives.as_array().cloned().unwrap_or_default();
            if !discriminated(&list, self.root) {
                self.losses.constraint(at, "oneOf", "became anyOf, since strict mode has no oneOf; validation still requires exactly one match");
            }
            rename(&mut map, "oneOf", "anyOf", alternatives);
        }
        for (key, value) in map {
            match key.as_str() {
                "$schema" => {}
                "properties" => {
                    let properties = value
                        .as_object()
                        .map(|properties| {
                            properties
                                .iter()
                                .map(|(name, schema)| (name.clone(), self.schema(schema, &pointer(&pointer(at, "properties"), name))))
                                .collect()
                        })
                        .unwrap_or_default();
                    out.insert(key, Value::Object(properties));
                }
                "items" if !value.is_array() => {
                    let items = self.schema(&value, &pointer(at, "items"));
                    out.insert(key, items);
                }
                "anyOf" => {
                    let alternatives = value
                        .as_array()
                        .map(|list| {
                            list.iter().enumerate().map(|(i, alt)| self.schema(alt, &pointer(&pointer(at, "anyOf"), &i.to_string()))).collect()
                        })
                        .unwrap_or_default();
                    out.insert(key, Value::Array(alternatives));
                }
                "$defs" => {
                    let defs = value
                        .as_object()
                        .map(|defs| {
                            defs.iter().map(|(name, schema)| (name.clone(), self.schema(schema, &pointer(&pointer(at, "$defs"), name)))).collect()
                        })
                        .unwrap_or_default();
                    out.insert(key, Value::Object(defs));
                }
                "additionalProperties" => {
                    if value != Value::Bool(false) {
                        self.losses.constraint(
                            at,
                            "additionalProperties",
                            "strict mode closes every object, so the model can send only the listed properties; the allowed extra properties are described instead",
                        );
                        moved.constraint("additionalProperties", &value);
                    }
                    // Kept in its place; `close` sets it on every object.
                    out.insert(key, Value::Bool(false));
                }
                "format" if kind == Some("string") && value.as_str().is_some_and(|f| STRING_FORMATS.contains(&f)) => {
                    out.insert(key, value);
                }
                "format" => {
                    self.losses.information(at, "format", "moved into the description: strict mode does not support this format");
                    moved.sentence(format!("Format: {}.", value.as_str().map_or_else(|| value.to_string(), str::to_owned)));
                }
                "default" => {
                    // A null default says nothing a nullable type does not.
                    if !value.is_null() {
                        self.losses.information(at, "default", "moved into the description: strict mode has no defaults");
                        moved.sentence(format!("Default: {}.", show(&value)));
                    }
                }
                "examples" => {
                    self.losses.information(at, "examples", "moved into the description: strict mode has no examples");
                    let examples = value.as_array().cloned().unwrap_or_else(|| vec![value.clone()]);
                    moved.sentence(format!("Examples: {}.", show_all(&examples)));
                }
                _ if SUPPORTED.contains(&key.as_str()) => {
                    out.insert(key, value);
                }
                _ if INFORMATIONAL.contains(&key.as_str()) => {
                    self.losses.information(at, &key, "dropped: strict mode does not support it");
                }
                _ => {
                    self.losses.constraint(at, &key, "moved into the description: strict mode does not support it; validation still enforces it");
                    moved.constraint(&key, &value);
                }
            }
        }
        if kind == Some("object") || out.contains_key("properties") {
            close(&mut out);
        }
        moved.apply(&mut out);
        if let Some(name) = inlined {
            self.inlining.retain(|inlining| *inlining != name);
        }
        Value::Object(out)
    }

    /// Merges what strict mode cannot have beside other keywords into the
    /// node: a one-member `allOf`, and a `$ref` with siblings (OpenAI
    /// rejects those; the definition is inlined, the siblings winning).
    /// Returns the definition inlined, if any.
    fn flatten(&mut self, map: &mut Map<String, Value>, at: &str) -> Option<String> {
        let mut inlined = None;
        if let Some(Value::Array(members)) = map.get("allOf")
            && let [member] = members.as_slice()
            && let Some(member) = member.as_object().cloned()
        {
            map.shift_remove("allOf");
            for (key, value) in member {
                map.entry(key).or_insert(value);
            }
        }
        if map.len() > 1
            && let Some(reference) = map.get("$ref").and_then(Value::as_str).map(str::to_owned)
            && let Some((Value::Object(target), name)) = resolve(self.root, &reference)
        {
            if self.inlining.contains(&name) {
                // A recursive type: keep the plain reference.
                for key in map.keys().filter(|key| *key != "$ref").cloned().collect::<Vec<_>>() {
                    self.losses.information(at, &key, "dropped: it stood beside a reference to a recursive type");
                }
                map.retain(|key, _| key == "$ref");
            } else {
                let mut merged = target.clone();
                for (key, value) in std::mem::take(map) {
                    if key != "$ref" {
                        merged.insert(key, value);
                    }
                }
                *map = merged;
                self.inlining.push(name.clone());
                inlined = Some(name);
            }
        }
        inlined
    }
}

/// The first non-null type of a schema node.
fn primary_type(map: &Map<String, Value>) -> Option<&'static str> {
    let kind = match map.get("type") {
        Some(Value::String(kind)) => Some(kind.as_str()),
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).find(|kind| *kind != "null"),
        _ => None,
    };
    ["object", "array", "string", "number", "integer", "boolean"].into_iter().find(|known| Some(*known) == kind)
}

/// Closes an object the strict way: every property required, the optional
/// ones nullable, no other properties.
fn close(object: &mut Map<String, Value>) {
    let required: Vec<Value> = object.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
    let properties = object.entry("properties").or_insert_with(|| Value::Object(Map::new()));
    let mut all = Vec::new();
    if let Value::Object(properties) = properties {
        for (name, schema) in properties.iter_mut() {
            if !required.iter().any(|r| r == name) {
                make_nullable(schema);
            }
            all.push(Value::String(name.clone()));
        }
    }
    object.insert("required".into(), Value::Array(all));
    object.insert("additionalProperties".into(), Value::Bool(false));
}

/// Lets a schema accept `null` as well: a scalar type gains `"null"`,
/// anything else becomes `anyOf` with `{"type": "null"}`.
fn make_nullable(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    let null = Value::String("null".into());
    match map.get_mut("type") {
        Some(Value::Array(kinds)) if kinds.contains(&null) => return,
        Some(Value::String(kind)) if kind == "null" => return,
        _ => {}
    }
    if let Some(Value::Array(alternatives)) = map.get_mut("anyOf") {
        if !alternatives.iter().any(|alt| alt.get("type").and_then(Value::as_str) == Some("null")) {
            alternatives.push(json!({"type": "null"}));
        }
        return;
    }
    let scalar = |kind: &Value| matches!(kind.as_str(), Some("string" | "number" | "integer" | "boolean"));
    if !map.contains_key("enum") {
        match map.get_mut("type") {
            Some(kind @ Value::String(_)) if scalar(kind) => {
                *kind = Value::Array(vec![kind.clone(), null]);
                return;
            }
            Some(Value::Array(kinds)) if kinds.iter().all(scalar) => {
                kinds.push(null);
                return;
            }
            _ => {}
        }
    }
    if !map.contains_key("type") && !map.contains_key("$ref") && !map.contains_key("enum") {
        // No type at all: it already accepts null.
        return;
    }
    let description = map.shift_remove("description");
    let inner = Value::Object(std::mem::take(map));
    map.insert("anyOf".into(), json!([inner, {"type": "null"}]));
    if let Some(description) = description {
        map.insert("description".into(), description);
    }
}

pub mod chat;
pub mod responses;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn strict(schema: Value) -> (Value, Vec<super::super::Loss>) {
        let def = ToolDefinition::new("t", "T.", schema);
        let (schema, losses) = strict_schema(&def);
        (schema, losses.into_vec())
    }

    #[test]
    fn optional_properties_become_required_and_nullable() {
        let (schema, losses) = strict(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "page": {"type": ["integer", "null"], "minimum": 0},
                "loud": {"type": "boolean", "default": false},
                "status": {"$ref": "#/$defs/Status"},
                "address": {"$ref": "#/$defs/Address", "description": "Where."}
            },
            "required": ["id"],
            "additionalProperties": false,
            "$defs": {
                "Status": {"type": "string", "enum": ["open", "shut"]},
                "Address": {"type": "object", "properties": {"street": {"type": "string"}}, "required": ["street"]}
            }
        }));
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "page": {"type": ["integer", "null"], "minimum": 0},
                    "loud": {"type": ["boolean", "null"], "description": "Default: false."},
                    "status": {"anyOf": [{"$ref": "#/$defs/Status"}, {"type": "null"}]},
                    "address": {
                        "anyOf": [
                            {
                                "type": "object",
                                "properties": {"street": {"type": "string"}},
                                "required": ["street"],
                                "additionalProperties": false
                            },
                            {"type": "null"}
                        ],
                        "description": "Where."
                    }
                },
                "required": ["id", "page", "loud", "status", "address"],
                "additionalProperties": false,
                "$defs": {
                    "Status": {"type": "string", "enum": ["open", "shut"]},
                    "Address": {
                        "type": "object",
                        "properties": {"street": {"type": "string"}},
                        "required": ["street"],
                        "additionalProperties": false
                    }
                }
            })
        );
        assert!(losses.iter().all(|loss| !loss.constraint), "{losses:?}");
    }

    #[test]
    fn unsupported_constraints_move_into_the_description() {
        let (schema, losses) = strict(json!({
            "type": "object",
            "properties": {"summary": {"type": "string", "description": "Two lines", "minLength": 10, "maxLength": 600}},
            "required": ["summary"],
            "additionalProperties": false
        }));
        assert_eq!(schema["properties"]["summary"], json!({"type": "string", "description": "Two lines. Constraints: minLength 10, maxLength 600."}));
        let keywords: Vec<(&str, bool)> = losses.iter().map(|loss| (loss.keyword.as_str(), loss.constraint)).collect();
        assert_eq!(keywords, [("minLength", true), ("maxLength", true)]);
        assert_eq!(losses[0].pointer, "/properties/summary");
    }

    #[test]
    fn tagged_one_of_becomes_any_of_without_loss() {
        let (schema, losses) = strict(json!({
            "type": "object",
            "properties": {"subject": {"oneOf": [
                {"type": "object", "properties": {"kind": {"type": "string", "const": "order"}}, "required": ["kind"]},
                {"type": "object", "properties": {"kind": {"type": "string", "const": "account"}}, "required": ["kind"]}
            ]}},
            "required": ["subject"]
        }));
        let alternatives = &schema["properties"]["subject"]["anyOf"];
        assert_eq!(alternatives[0]["properties"]["kind"], json!({"type": "string", "enum": ["order"]}));
        assert_eq!(alternatives[1]["additionalProperties"], false);
        assert!(losses.is_empty(), "{losses:?}");
    }

    #[test]
    fn maps_cannot_be_strict() {
        let (schema, losses) = strict(json!({
            "type": "object",
            "properties": {"counts": {"type": "object", "additionalProperties": {"type": "integer"}}},
            "required": ["counts"]
        }));
        assert_eq!(schema["properties"]["counts"]["additionalProperties"], false);
        assert!(losses.iter().any(|loss| loss.keyword == "additionalProperties" && loss.constraint));
    }

    #[test]
    fn recursive_references_with_siblings_end() {
        let (schema, _) = strict(json!({
            "type": "object",
            "properties": {"tree": {"$ref": "#/$defs/Node", "description": "The root."}},
            "required": ["tree"],
            "$defs": {"Node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node", "description": "A child."}}},
                "required": ["children"]
            }}
        }));
        assert_eq!(schema["properties"]["tree"]["description"], "The root.");
        assert_eq!(schema["properties"]["tree"]["properties"]["children"]["items"], json!({"$ref": "#/$defs/Node"}));
    }

    #[test]
    fn names_follow_openai_rule() {
        let def = ToolDefinition::new("look up", "T.", json!({"type": "object"}));
        let err = chat::tools([&def], &ExportOptions::default()).unwrap_err();
        assert!(err.to_string().contains("does not match"), "{err}");
    }

    #[test]
    fn malformed_payloads_say_where() {
        let err = chat::parse_calls(&json!({"choices": [{"message": {"tool_calls": [{"id": "c", "function": {"name": 3}}]}}]})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "malformed openai chat payload at `/choices/0/message/tool_calls/0/function/name`: expected a string, found a number"
        );
        let err = chat::parse_calls(&json!({"choices": []})).unwrap_err();
        assert!(err.to_string().contains("at least one choice"), "{err}");
        let err = chat::parse_calls(&json!("text")).unwrap_err();
        assert!(err.to_string().contains("expected an object"), "{err}");
        let err = responses::parse_calls(&json!({"output": [{"type": "function_call", "name": "x", "arguments": "{}"}]})).unwrap_err();
        assert_eq!(err.to_string(), "malformed openai responses payload at `/output/0`: missing `call_id`");
    }
}

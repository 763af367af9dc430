//! Strict mode's schema: the canonical one rewritten into the subset
//! OpenAI documents (the rules are in the module docs of `openai`), one
//! node at a time: what cannot stand beside other keywords merged first,
//! then each keyword kept, rewritten or moved into the description, then
//! the object closed; every change recorded as a loss.

use serde_json::{Map, Value, json};

use crate::providers::{Losses, Moved, discriminated, pointer, rename, show, show_all};
use crate::schema::resolve;
use crate::tool::ToolDefinition;

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

/// The tool's input schema as strict mode needs it, and what that lost.
pub(super) fn strict_schema(def: &ToolDefinition) -> (Value, Losses) {
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
    /// Rewrites one node; `at` is where it is in the schema.
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
        let mut out = Map::new();
        let mut moved = Moved::default();
        for (key, value) in map {
            self.keyword(key, value, kind, at, &mut out, &mut moved);
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

    /// One keyword of a node: its subschemas rewritten, a supported keyword
    /// kept, any other described (see [`Self::describe`]).
    fn keyword(&mut self, key: String, value: Value, kind: Option<&str>, at: &str, out: &mut Map<String, Value>, moved: &mut Moved) {
        match key.as_str() {
            "$schema" => {}
            "properties" | "$defs" => {
                let members = self.members(&value, &pointer(at, &key));
                out.insert(key, Value::Object(members));
            }
            "items" if !value.is_array() => {
                let items = self.schema(&value, &pointer(at, "items"));
                out.insert(key, items);
            }
            "anyOf" => {
                let alternatives = value
                    .as_array()
                    .map(|list| list.iter().enumerate().map(|(i, alt)| self.schema(alt, &pointer(&pointer(at, "anyOf"), &i.to_string()))).collect())
                    .unwrap_or_default();
                out.insert(key, Value::Array(alternatives));
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
            "format" | "default" | "examples" => self.describe(&key, &value, at, moved),
            _ if SUPPORTED.contains(&key.as_str()) => {
                out.insert(key, value);
            }
            _ => self.describe(&key, &value, at, moved),
        }
    }

    /// The schemas of `properties` or `$defs` (at `at`), each rewritten.
    fn members(&mut self, value: &Value, at: &str) -> Map<String, Value> {
        value
            .as_object()
            .map(|members| members.iter().map(|(name, schema)| (name.clone(), self.schema(schema, &pointer(at, name)))).collect())
            .unwrap_or_default()
    }

    /// A keyword strict mode does not have: moved into the description (an
    /// unsupported `format`, a `default`, `examples`, and any constraint,
    /// which validation still enforces) or dropped (one that only informs).
    fn describe(&mut self, key: &str, value: &Value, at: &str, moved: &mut Moved) {
        match key {
            "format" => {
                self.losses.information(at, "format", "moved into the description: strict mode does not support this format");
                moved.sentence(format!("Format: {}.", value.as_str().map_or_else(|| value.to_string(), str::to_owned)));
            }
            "default" => {
                // A null default says nothing a nullable type does not.
                if !value.is_null() {
                    self.losses.information(at, "default", "moved into the description: strict mode has no defaults");
                    moved.sentence(format!("Default: {}.", show(value)));
                }
            }
            "examples" => {
                self.losses.information(at, "examples", "moved into the description: strict mode has no examples");
                let examples = value.as_array().cloned().unwrap_or_else(|| vec![value.clone()]);
                moved.sentence(format!("Examples: {}.", show_all(&examples)));
            }
            _ if INFORMATIONAL.contains(&key) => {
                self.losses.information(at, key, "dropped: strict mode does not support it");
            }
            _ => {
                self.losses.constraint(at, key, "moved into the description: strict mode does not support it; validation still enforces it");
                moved.constraint(key, value);
            }
        }
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

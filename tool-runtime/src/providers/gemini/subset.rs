//! The canonical schema rewritten into the OpenAPI subset Gemini's
//! `Schema` holds (the rules are in the module docs of `gemini`), one node
//! at a time: its references and alternatives first, then its type and
//! enum, then each keyword, every change recorded as a loss.

use serde_json::{Map, Value, json};

use super::PROVIDER;
use crate::providers::{DialectError, Losses, Moved, discriminated, pointer, rename, show, show_all};
use crate::schema::resolve;
use crate::tool::ToolDefinition;

/// Keywords Gemini's `Schema` keeps as they are.
const KEPT: &[&str] = &[
    "title",
    "description",
    "default",
    "required",
    "minProperties",
    "maxProperties",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
];

/// Keywords that only inform the model.
const INFORMATIONAL: &[&str] = &["deprecated", "readOnly", "writeOnly", "$comment", "$id", "$anchor", "contentEncoding", "contentMediaType"];

/// The formats Gemini documents, per type.
fn format_supported(kind: Option<&str>, format: &str) -> bool {
    match kind {
        Some("STRING") => matches!(format, "enum" | "date-time"),
        Some("NUMBER") => matches!(format, "float" | "double"),
        Some("INTEGER") => matches!(format, "int32" | "int64"),
        _ => false,
    }
}

/// One tool's rewrite: what it lost, and the definitions being inlined.
pub(super) struct Subset<'a> {
    def: &'a ToolDefinition,
    pub(super) losses: Losses,
    /// The definitions being inlined, outermost first.
    stack: Vec<String>,
}

/// A node after its `anyOf` / `oneOf` were read: either one alternative
/// was left, already rewritten, or the node goes on, with whether `null`
/// was one of its alternatives.
enum Alternatives {
    Collapsed(Value),
    Node { map: Map<String, Value>, nullable: bool },
}

impl<'a> Subset<'a> {
    pub(super) fn new(def: &'a ToolDefinition) -> Self {
        Subset { def, losses: Losses::new(&def.name), stack: Vec::new() }
    }

    /// Rewrites one node. `at` is where it lands in the exported schema,
    /// `source` where it is in the canonical one.
    pub(super) fn schema(&mut self, node: &Value, at: &str, source: &str) -> Result<Value, DialectError> {
        let map = match node {
            Value::Object(map) => map.clone(),
            Value::Bool(true) => return Ok(json!({})),
            Value::Bool(false) => {
                self.losses.constraint(at, "false", "a schema that accepts nothing cannot be expressed; dropped");
                return Ok(json!({}));
            }
            other => return Ok(other.clone()),
        };
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            return self.inline(&map, reference, at, source);
        }
        if let Some(merged) = single_all_of(&map) {
            return self.schema(&Value::Object(merged), at, source);
        }
        match self.alternatives(map, at, source)? {
            Alternatives::Collapsed(out) => Ok(out),
            Alternatives::Node { map, nullable } => self.node(map, nullable, at, source),
        }
    }

    /// Reads `anyOf` and `oneOf`: `null` alternatives make the node
    /// nullable, a single alternative left takes the node's place (with
    /// the node's own keywords, its description, winning), and `oneOf`
    /// becomes `anyOf`.
    fn alternatives(&mut self, mut map: Map<String, Value>, at: &str, source: &str) -> Result<Alternatives, DialectError> {
        let mut nullable = false;
        for key in ["anyOf", "oneOf"] {
            let Some(Value::Array(alternatives)) = map.get(key).cloned() else { continue };
            let (nulls, rest): (Vec<Value>, Vec<Value>) = alternatives.into_iter().partition(crate::schema::is_null_schema);
            nullable |= !nulls.is_empty();
            if key == "oneOf" && rest.len() > 1 && !discriminated(&rest, &self.def.input_schema) {
                self.losses.constraint(at, "oneOf", "became anyOf: Gemini has no oneOf; validation still requires exactly one match");
            }
            map.shift_remove(key);
            if let [only] = rest.as_slice() {
                // `Option<T>`: the one alternative, with this node's own
                // keywords (its description) winning.
                let mut merged = only.as_object().cloned().unwrap_or_default();
                for (key, value) in map {
                    merged.insert(key, value);
                }
                let mut out = self.schema(&Value::Object(merged), at, source)?;
                if nullable && let Value::Object(out) = &mut out {
                    out.insert("nullable".into(), true.into());
                }
                return Ok(Alternatives::Collapsed(out));
            }
            if !rest.is_empty() {
                map.insert("anyOf".into(), Value::Array(rest));
            }
        }
        Ok(Alternatives::Node { map, nullable })
    }

    /// Rewrites a node without references or a single alternative: its
    /// type, its enum, then each keyword; what Gemini cannot hold is moved
    /// into the description.
    fn node(&mut self, mut map: Map<String, Value>, mut nullable: bool, at: &str, source: &str) -> Result<Value, DialectError> {
        let mut out = Map::new();
        let mut moved = Moved::default();
        let mut kind = kind(&mut map, &mut nullable);
        if let Some(constant) = map.get("const").filter(|_| !map.contains_key("enum")).cloned() {
            rename(&mut map, "const", "enum", Value::Array(vec![constant]));
        }
        self.enumeration(&mut map, &mut kind, &mut nullable, &mut moved, at);
        if let Some(kind) = &kind {
            out.insert("type".into(), kind.clone().into());
        }
        for (key, value) in map {
            self.keyword(key, value, kind.as_deref(), at, source, &mut out, &mut moved)?;
        }
        let no_properties = out.get("properties").and_then(Value::as_object).is_none_or(Map::is_empty);
        if kind.as_deref() == Some("OBJECT") && no_properties && !at.is_empty() {
            // Gemini answers 400 ("should be non-empty for OBJECT type").
            return Err(DialectError::Unsupported {
                provider: PROVIDER,
                tool: self.def.name.clone(),
                what: "an object without properties (a map, or a struct without fields) cannot be declared to Gemini".into(),
                pointer: source.to_owned(),
            });
        }
        if nullable {
            out.insert("nullable".into(), true.into());
        }
        moved.apply(&mut out);
        Ok(Value::Object(out))
    }

    /// `enum` (a `const` already made one): Gemini's enums hold strings
    /// (and make the type `STRING`); a `null` value makes the node
    /// nullable; any other value moves the whole enum into the description.
    fn enumeration(&mut self, map: &mut Map<String, Value>, kind: &mut Option<String>, nullable: &mut bool, moved: &mut Moved, at: &str) {
        let Some(Value::Array(values)) = map.get("enum").cloned() else { return };
        let (nulls, values): (Vec<Value>, Vec<Value>) = values.into_iter().partition(Value::is_null);
        *nullable |= !nulls.is_empty();
        if values.iter().all(Value::is_string) {
            kind.get_or_insert_with(|| "STRING".to_owned());
            map.insert("enum".into(), Value::Array(values));
        } else {
            map.shift_remove("enum");
            self.losses.constraint(at, "enum", "moved into the description: Gemini enums hold strings only; validation still enforces it");
            let sentence = match values.as_slice() {
                [one] => format!("Allowed value: {}.", show(one)),
                _ => format!("Allowed values: {}.", show_all(&values)),
            };
            moved.sentence(sentence);
        }
    }

    /// One keyword of a node (its type and enum already read): kept,
    /// rewritten, moved into the description or dropped, with its loss.
    #[allow(clippy::too_many_arguments, reason = "the node's state, passed whole rather than bundled for one call site")]
    fn keyword(
        &mut self,
        key: String,
        value: Value,
        kind: Option<&str>,
        at: &str,
        source: &str,
        out: &mut Map<String, Value>,
        moved: &mut Moved,
    ) -> Result<(), DialectError> {
        match key.as_str() {
            "type" | "$schema" | "$defs" => {}
            "enum" => {
                out.insert(key, value);
            }
            "properties" => self.properties(&value, at, source, out)?,
            "items" if value.is_object() || value.is_boolean() => {
                let items = self.schema(&value, &pointer(at, "items"), &pointer(source, "items"))?;
                out.insert(key, items);
            }
            "anyOf" => {
                let mut alternatives = Vec::new();
                for (i, alternative) in value.as_array().into_iter().flatten().enumerate() {
                    let at = pointer(&pointer(at, "anyOf"), &i.to_string());
                    let source = pointer(&pointer(source, "anyOf"), &i.to_string());
                    alternatives.push(self.schema(alternative, &at, &source)?);
                }
                out.insert(key, Value::Array(alternatives));
            }
            "additionalProperties" => {
                let note = if value == Value::Bool(false) {
                    "dropped: Gemini has no additionalProperties, so it is not told that other properties are refused; validation refuses them"
                } else {
                    "moved into the description: Gemini has no additionalProperties; validation still enforces it"
                };
                self.losses.constraint(at, "additionalProperties", note);
                if value != Value::Bool(false) {
                    moved.constraint("additionalProperties", &value);
                }
            }
            "format" => self.format(key, value, kind, at, out, moved),
            "examples" => self.examples(&value, at, out, moved),
            _ if KEPT.contains(&key.as_str()) => {
                out.insert(key, value);
            }
            _ if INFORMATIONAL.contains(&key.as_str()) => {
                self.losses.information(at, &key, "dropped: Gemini does not support it");
            }
            _ => {
                self.losses.constraint(at, &key, "moved into the description: Gemini does not support it; validation still enforces it");
                moved.constraint(&key, &value);
            }
        }
        Ok(())
    }

    /// `properties`, each rewritten, and `propertyOrdering` when there are
    /// several, so that Gemini keeps the declaration order.
    fn properties(&mut self, value: &Value, at: &str, source: &str, out: &mut Map<String, Value>) -> Result<(), DialectError> {
        let mut properties = Map::new();
        if let Value::Object(source_properties) = value {
            for (name, schema) in source_properties {
                let at = pointer(&pointer(at, "properties"), name);
                let source = pointer(&pointer(source, "properties"), name);
                properties.insert(name.clone(), self.schema(schema, &at, &source)?);
            }
        }
        if properties.len() > 1 {
            let order: Vec<Value> = properties.keys().cloned().map(Value::String).collect();
            out.insert("properties".into(), Value::Object(properties));
            out.insert("propertyOrdering".into(), Value::Array(order));
        } else {
            out.insert("properties".into(), Value::Object(properties));
        }
        Ok(())
    }

    /// `format`: kept where Gemini documents it for the type, else moved
    /// into the description.
    fn format(&mut self, key: String, value: Value, kind: Option<&str>, at: &str, out: &mut Map<String, Value>, moved: &mut Moved) {
        let format = value.as_str().unwrap_or_default();
        if format_supported(kind, format) {
            out.insert(key, value);
        } else {
            self.losses.information(at, "format", "moved into the description: Gemini does not support this format");
            moved.sentence(format!("Format: {}.", value.as_str().map_or_else(|| value.to_string(), str::to_owned)));
        }
    }

    /// `examples`: Gemini keeps one `example`; the others are moved into
    /// the description.
    fn examples(&mut self, value: &Value, at: &str, out: &mut Map<String, Value>, moved: &mut Moved) {
        let examples = value.as_array().cloned().unwrap_or_else(|| vec![value.clone()]);
        if let Some(first) = examples.first() {
            out.insert("example".into(), first.clone());
        }
        if examples.len() > 1 {
            self.losses.information(at, "examples", "Gemini keeps one example; the others were moved into the description");
            moved.sentence(format!("Examples: {}.", show_all(&examples)));
        }
    }

    /// Inlines a `$ref`, the node's own keywords winning; a type that is
    /// already being inlined contains itself.
    fn inline(&mut self, map: &Map<String, Value>, reference: &str, at: &str, source: &str) -> Result<Value, DialectError> {
        let Some((Value::Object(target), name)) = resolve(&self.def.input_schema, reference) else {
            return Err(DialectError::Reference {
                provider: PROVIDER,
                tool: self.def.name.clone(),
                reference: reference.to_owned(),
                pointer: source.to_owned(),
            });
        };
        if self.stack.contains(&name) {
            return Err(DialectError::Recursive { provider: PROVIDER, tool: self.def.name.clone(), type_name: name, pointer: source.to_owned() });
        }
        let mut merged = target.clone();
        for (key, value) in map {
            if key != "$ref" {
                merged.insert(key.clone(), value.clone());
            }
        }
        self.stack.push(name);
        let out = self.schema(&Value::Object(merged), at, reference.trim_start_matches('#'));
        self.stack.pop();
        out
    }
}

/// A node written `allOf: [one]` (how schemars attaches a description to a
/// reference): the member, with the node's own keywords winning.
fn single_all_of(map: &Map<String, Value>) -> Option<Map<String, Value>> {
    let Some(Value::Array(members)) = map.get("allOf") else { return None };
    let [member] = members.as_slice() else { return None };
    let mut merged = member.as_object()?.clone();
    for (key, value) in map {
        if key != "allOf" {
            merged.insert(key.clone(), value.clone());
        }
    }
    Some(merged)
}

/// The node's `type`, upper case, without `null` (which makes it
/// nullable); a type array of several types becomes an `anyOf` of each.
fn kind(map: &mut Map<String, Value>, nullable: &mut bool) -> Option<String> {
    match map.get("type") {
        Some(Value::String(kind)) => {
            *nullable |= kind == "null";
            (kind != "null").then(|| kind.to_uppercase())
        }
        Some(Value::Array(kinds)) => {
            let non_null: Vec<&str> = kinds.iter().filter_map(Value::as_str).filter(|kind| *kind != "null").collect();
            *nullable |= non_null.len() < kinds.len();
            match non_null.as_slice() {
                [one] => Some(one.to_uppercase()),
                [] => None,
                several => {
                    let alternatives = several.iter().map(|kind| json!({"type": kind})).collect();
                    map.insert("anyOf".into(), Value::Array(alternatives));
                    None
                }
            }
        }
        _ => None,
    }
}

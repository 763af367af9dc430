//! A tool scoped for one turn: what a `scope = path` function rebuilds (its
//! description and input schema), and the check that the rebuilt schema
//! accepts no input the original refuses.
//!
//! Whether one JSON Schema accepts a subset of what another accepts is
//! undecidable in general, so the check is structural and conservative: the
//! rebuilt schema must be the original with constraints added or
//! tightened, keyword by keyword. Anything else (a changed `$ref`, a new
//! property, a looser bound, an edited `oneOf` or `not`) is refused with the
//! JSON pointer where it happens, even where it would in fact narrow.
//!
//! Added constraints are conjuncts, so they only refuse more, with one
//! exception: `unevaluatedProperties` and `unevaluatedItems` apply to what
//! no neighbouring keyword evaluated, so a keyword that evaluates more (a
//! new `allOf` with a property in it, an `additionalProperties` schema, an
//! `items`) shrinks what they refuse. Where the original has either of
//! them anywhere, no keyword that can evaluate properties or items (nor an
//! `allOf`, `anyOf` or `oneOf` holding one, nor a `$ref`) may be added
//! anywhere. `$id` and `$schema` may not change, since they change what a
//! `$ref` resolves to.

use serde_json::Value;

/// A tool as a `scope = path` function rebuilds it for one turn, from the
/// scope value the intent classifier chose. It starts as the tool's own
/// description and input schema; the function edits them.
///
/// The rebuilt schema may only narrow the original: add constraints
/// (`enum`, `const`, `pattern`, `required`, ...) or tighten them (a smaller
/// `maximum`, an `enum` with fewer values). A schema that would accept an
/// input the original refuses is not used: the tool keeps its own
/// definition for the turn and the problem is reported
/// ([`Run::select`](crate::Run::select)).
///
/// ```
/// use serde_json::json;
/// use tool_runtime::ScopedTool;
///
/// fn one_region(region: &String, tool: &mut ScopedTool) {
///     tool.description = format!("Search the orders of region {region}.");
///     tool.input_schema["properties"]["region"]["enum"] = json!([region]);
/// }
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ScopedTool {
    /// What the model reads in this turn.
    pub description: String,
    /// The input schema for this turn; calls in the turn are validated
    /// against it.
    pub input_schema: Value,
}

impl ScopedTool {
    pub(crate) fn new(description: String, input_schema: Value) -> Self {
        ScopedTool { description, input_schema }
    }
}

/// Keywords that only describe: they may be added, changed or removed.
const ANNOTATIONS: &[&str] = &["title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment"];

/// Keywords that evaluate properties or items, or may hold or reach one
/// that does: what `unevaluatedProperties` and `unevaluatedItems` look at.
const EVALUATING: &[&str] = &[
    "properties",
    "patternProperties",
    "additionalProperties",
    "unevaluatedProperties",
    "dependentSchemas",
    "prefixItems",
    "items",
    "contains",
    "unevaluatedItems",
    "allOf",
    "anyOf",
    "oneOf",
    "if",
    "then",
    "else",
    "$ref",
    "$dynamicRef",
];

/// Keywords whose values are data, not schemas: never searched for keywords.
const DATA: &[&str] = &["enum", "const", "default", "examples"];

/// Keywords that, added where the original has none, only refuse more.
const ADDABLE: &[&str] = &[
    "type",
    "enum",
    "const",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "required",
    "dependentRequired",
    "additionalProperties",
    "unevaluatedProperties",
    "items",
    "propertyNames",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "$ref",
];

/// Where `rebuilt` may accept an input that `original` refuses: the JSON
/// pointer and why; `None` when it only narrows.
pub(crate) fn widening(original: &Value, rebuilt: &Value) -> Option<String> {
    let guard = find_keyword(original, &["unevaluatedProperties", "unevaluatedItems"]);
    Check { guard }.narrows(original, rebuilt, "").err()
}

/// The first of `keywords` that `schema` uses, at any depth (outside data).
fn find_keyword(schema: &Value, keywords: &[&'static str]) -> Option<&'static str> {
    let mut stack = vec![schema];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                if let Some(found) = keywords.iter().find(|keyword| map.contains_key(**keyword)) {
                    return Some(found);
                }
                stack.extend(map.iter().filter(|(key, _)| !DATA.contains(&key.as_str())).map(|(_, value)| value));
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    None
}

/// One check of a rebuilt schema against its original.
struct Check {
    /// `unevaluatedProperties` or `unevaluatedItems`, when the original
    /// uses either: then nothing that evaluates more may be added.
    guard: Option<&'static str>,
}

impl Check {
    /// Whether `added`, a keyword and its value new at `at`, could make a
    /// guarded `unevaluated*` keyword refuse less.
    fn evaluates_more(&self, key: &str, added: &Value, at: &str) -> Result<(), String> {
        let Some(guard) = self.guard else { return Ok(()) };
        let refuse = |why: String| Err(format!("{}: `{key}` may not be added beside `{guard}`{why}", shown(at)));
        match key {
            "allOf" | "anyOf" | "oneOf" => match find_keyword(added, EVALUATING) {
                Some(inner) => refuse(format!(": its `{inner}` can evaluate what `{guard}` refuses")),
                None => Ok(()),
            },
            _ if EVALUATING.contains(&key) => refuse(format!("; it can evaluate what `{guard}` refuses")),
            _ => Ok(()),
        }
    }

    fn narrows(&self, original: &Value, rebuilt: &Value, at: &str) -> Result<(), String> {
        let (original, rebuilt) = match (original, rebuilt) {
            (Value::Object(original), Value::Object(rebuilt)) => (original, rebuilt),
            // `false` refuses everything: anything narrows `true`, only `false` narrows `false`.
            (_, Value::Bool(false)) => return Ok(()),
            (Value::Bool(true), Value::Object(rebuilt)) => {
                return rebuilt.iter().try_for_each(|(key, value)| self.evaluates_more(key, value, &format!("{at}/{}", escape(key))));
            }
            (Value::Bool(true), _) => return Ok(()),
            (Value::Object(original), Value::Bool(true)) if original.keys().all(|key| ANNOTATIONS.contains(&key.as_str())) => return Ok(()),
            _ => return Err(format!("{}: the schema is replaced by one that accepts more", shown(at))),
        };
        for (key, value) in original {
            let here = format!("{at}/{}", escape(key));
            if ANNOTATIONS.contains(&key.as_str()) {
                continue;
            }
            let Some(new) = rebuilt.get(key) else {
                return Err(format!("{}: the constraint is removed", shown(&here)));
            };
            self.keyword(key, value, new, &here)?;
        }
        for (key, value) in rebuilt.iter().filter(|(key, _)| !original.contains_key(*key)) {
            let name = key.as_str();
            let here = format!("{at}/{}", escape(key));
            if !ANNOTATIONS.contains(&name) && !ADDABLE.contains(&name) {
                return Err(format!("{}: `{name}` may not be added; it can accept more", shown(&here)));
            }
            self.evaluates_more(name, value, &here)?;
        }
        Ok(())
    }

    fn keyword(&self, key: &str, original: &Value, new: &Value, at: &str) -> Result<(), String> {
        let refuse = |why: &str| Err(format!("{}: {why}", shown(at)));
        match key {
            // Subschemas that narrowing inside narrows the whole.
            "items" | "additionalProperties" | "unevaluatedProperties" | "propertyNames" | "contains" | "then" | "else" => {
                self.narrows(original, new, at)
            }
            "properties" | "patternProperties" | "dependentSchemas" | "$defs" | "definitions" => {
                let (Value::Object(original), Value::Object(new)) = (original, new) else { return refuse("not an object") };
                for (name, schema) in original {
                    let Some(narrowed) = new.get(name) else { return refuse(&format!("`{name}` is removed")) };
                    self.narrows(schema, narrowed, &format!("{at}/{}", escape(name)))?;
                }
                // A new definition is harmless (only a `$ref`, kept as it was,
                // reaches one); a new property escapes `additionalProperties`.
                match new.keys().find(|name| !original.contains_key(*name)) {
                    Some(name) if key != "$defs" && key != "definitions" => refuse(&format!("`{name}` is added; it can accept more")),
                    _ => Ok(()),
                }
            }
            "prefixItems" | "allOf" | "anyOf" => {
                let (Value::Array(original), Value::Array(new)) = (original, new) else { return refuse("not an array") };
                match key {
                    // `allOf` may gain schemas; `anyOf` and `prefixItems` may not.
                    "allOf" if new.len() >= original.len() => {}
                    _ if new.len() == original.len() => {}
                    _ => return refuse("the number of schemas changed"),
                }
                if self.guard.is_some() && new.len() > original.len() {
                    self.evaluates_more(key, &Value::Array(new[original.len()..].to_vec()), at)?;
                }
                original.iter().zip(new).enumerate().try_for_each(|(i, (schema, narrowed))| self.narrows(schema, narrowed, &format!("{at}/{i}")))
            }
            "enum" => {
                let (Value::Array(original), Value::Array(new)) = (original, new) else { return refuse("not an array") };
                match new.iter().find(|value| !original.contains(value)) {
                    Some(value) => refuse(&format!("{value} is not one of the original values")),
                    None => Ok(()),
                }
            }
            "type" => {
                let types = |value: &Value| -> Vec<String> {
                    match value {
                        Value::String(name) => vec![name.clone()],
                        Value::Array(names) => names.iter().filter_map(|name| name.as_str().map(str::to_owned)).collect(),
                        _ => Vec::new(),
                    }
                };
                let allowed = types(original);
                // An integer is a number, so `number` narrows to `integer`.
                let fits = |name: &String| allowed.contains(name) || (name == "integer" && allowed.iter().any(|a| a == "number"));
                match types(new).iter().find(|name| !fits(name)) {
                    Some(name) => refuse(&format!("type `{name}` is added")),
                    None => Ok(()),
                }
            }
            "required" => {
                let (Value::Array(original), Value::Array(new)) = (original, new) else { return refuse("not an array") };
                match original.iter().find(|name| !new.contains(name)) {
                    Some(name) => refuse(&format!("{name} is no longer required")),
                    None => Ok(()),
                }
            }
            "minimum" | "exclusiveMinimum" | "minLength" | "minItems" | "minProperties" | "minContains" => bound(original, new, at, true),
            "maximum" | "exclusiveMaximum" | "maxLength" | "maxItems" | "maxProperties" | "maxContains" => bound(original, new, at, false),
            "uniqueItems" if original == &Value::Bool(false) => Ok(()),
            _ if original == new => Ok(()),
            _ => refuse(&format!("`{key}` is changed; only narrowing keywords may change")),
        }
    }
}

/// A lower bound may rise and an upper bound fall.
fn bound(original: &Value, new: &Value, at: &str, lower: bool) -> Result<(), String> {
    match (original.as_f64(), new.as_f64()) {
        (Some(original), Some(new)) if (lower && new >= original) || (!lower && new <= original) => Ok(()),
        _ => Err(format!("{}: the bound {original} is loosened to {new}", shown(at))),
    }
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn shown(at: &str) -> &str {
    if at.is_empty() { "(root)" } else { at }
}

#[cfg(test)]
mod tests {
    /// A change to a schema, and the start of what `widening` says of it.
    type Change = (fn(&mut serde_json::Value), &'static str);

    use serde_json::json;

    use super::widening;

    fn original() -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "enum": ["eu", "us", "apac"]},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                "query": {"type": "string"}
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    #[test]
    fn added_and_tightened_constraints_narrow() {
        let mut rebuilt = original();
        rebuilt["properties"]["region"]["enum"] = json!(["eu"]);
        rebuilt["properties"]["limit"]["maximum"] = json!(10);
        rebuilt["properties"]["query"]["pattern"] = json!("^A-");
        rebuilt["properties"]["query"]["description"] = json!("An order number of region eu.");
        rebuilt["required"] = json!(["query", "region"]);
        assert_eq!(widening(&original(), &rebuilt), None);
    }

    #[test]
    fn each_way_to_accept_more_is_refused_with_its_pointer() {
        let cases: Vec<Change> = vec![
            (|s| s["properties"]["region"]["enum"] = json!(["eu", "mars"]), "/properties/region/enum: \"mars\" is not one of"),
            (|s| s["properties"]["limit"]["maximum"] = json!(500), "/properties/limit/maximum: the bound 50 is loosened to 500"),
            (|s| s["properties"]["limit"]["minimum"] = json!(0), "/properties/limit/minimum: the bound 1 is loosened"),
            (|s| s["required"] = json!([]), "/required: \"query\" is no longer required"),
            (|s| s["additionalProperties"] = json!(true), "/additionalProperties: the schema is replaced"),
            (|s| s["properties"]["extra"] = json!({}), "/properties: `extra` is added"),
            (|s| s["properties"]["query"]["type"] = json!(["string", "null"]), "/properties/query/type: type `null` is added"),
            (|s| s["properties"]["limit"] = json!(true), "/properties/limit: the schema is replaced"),
            (|s| s.as_object_mut().unwrap().remove("additionalProperties").map(drop).unwrap(), "/additionalProperties: the constraint is removed"),
            (|s| s["patternProperties"] = json!({"^x": {}}), "/patternProperties: `patternProperties` may not be added"),
        ];
        for (change, expected) in cases {
            let mut rebuilt = original();
            change(&mut rebuilt);
            let found = widening(&original(), &rebuilt).unwrap_or_default();
            assert!(found.starts_with(expected), "expected {expected:?}, found {found:?}");
        }
    }

    #[test]
    fn nothing_that_evaluates_more_is_added_beside_unevaluated_keywords() {
        let guarded = json!({
            "type": "object",
            "properties": {"query": {"type": "string"}, "tags": {"type": "array", "prefixItems": [{"type": "string"}], "unevaluatedItems": false}},
            "allOf": [true, {"required": ["query"]}],
            "$defs": {"Query": {"type": "string"}},
            "unevaluatedProperties": false
        });
        let cases: Vec<Change> = vec![
            (|s| s["anyOf"] = json!([{"properties": {"admin": {}}}]), "/anyOf: `anyOf` may not be added beside `unevaluated"),
            (
                |s| s["allOf"].as_array_mut().unwrap().push(json!({"properties": {"admin": {}}})),
                "/allOf: `allOf` may not be added beside `unevaluated",
            ),
            (|s| s["allOf"][0] = json!({"patternProperties": {"^a": {}}}), "/allOf/0/patternProperties: `patternProperties` may not"),
            (|s| s["allOf"][1]["additionalProperties"] = json!({"type": "string"}), "/allOf/1/additionalProperties: `additionalProperties` may"),
            (|s| s["additionalProperties"] = json!({"type": "boolean"}), "/additionalProperties: `additionalProperties` may not be added"),
            (|s| s["properties"]["tags"]["items"] = json!({"type": "string"}), "/properties/tags/items: `items` may not be added"),
            (|s| s["$ref"] = json!("#/$defs/Query"), "/$ref: `$ref` may not be added"),
            (|s| s["$defs"]["Query"]["unevaluatedProperties"] = json!({}), "/$defs/Query/unevaluatedProperties: `unevaluatedProperties`"),
            (|s| s["$id"] = json!("urn:elsewhere"), "/$id: `$id` may not be added"),
        ];
        for (change, expected) in cases {
            let mut rebuilt = guarded.clone();
            change(&mut rebuilt);
            let found = widening(&guarded, &rebuilt).unwrap_or_default();
            assert!(found.starts_with(expected), "expected {expected:?}, found {found:?}");
        }
        // What evaluates nothing more still narrows.
        let mut rebuilt = guarded.clone();
        rebuilt["allOf"].as_array_mut().unwrap().push(json!({"required": ["tags"], "not": {"required": ["admin"]}}));
        rebuilt["properties"]["query"]["enum"] = json!(["late"]);
        rebuilt["allOf"][0] = json!({"maxProperties": 2});
        assert_eq!(widening(&guarded, &rebuilt), None);
        // Without `unevaluated*`, an added `allOf` is a conjunct: it narrows.
        let mut plain = guarded.clone();
        plain.as_object_mut().unwrap().remove("unevaluatedProperties");
        plain["properties"]["tags"].as_object_mut().unwrap().remove("unevaluatedItems");
        let mut rebuilt = plain.clone();
        rebuilt["allOf"].as_array_mut().unwrap().push(json!({"properties": {"query": {"maxLength": 20}}}));
        assert_eq!(widening(&plain, &rebuilt), None);
    }

    #[test]
    fn an_integer_narrows_a_number_and_false_narrows_anything() {
        let number = json!({"type": "number"});
        assert_eq!(widening(&number, &json!({"type": "integer"})), None);
        assert!(widening(&json!({"type": "integer"}), &number).is_some());
        assert_eq!(widening(&json!({"type": "string", "maxLength": 3}), &json!(false)), None);
        assert_eq!(widening(&json!(true), &json!({"type": "string"})), None);
    }
}

//! The arguments brought to what the tool's input means, before validation:
//! two rewrites of the parsed value, each applied only when one pass over it
//! ([`scan`]) found something to rewrite.
//!
//! **A `null` for an optional property means "use the default".** OpenAI's
//! strict mode makes every property required and the optional ones
//! nullable, so a model in strict mode sends `"with_items": null` where it
//! would otherwise leave the property out. Such nulls are dropped, so the
//! tool's default applies exactly as if the property were absent. Only
//! properties that are not required and whose own schema does not accept
//! `null` are touched: for an `Option<T>` the null stays and means `None`,
//! and a null for a required property is still a validation error.
//!
//! **An integral float is an integer.** JSON Schema counts `5.0` as an
//! integer; serde reads it into no integer type. For a `#[tool]`'s input,
//! such numbers are rewritten as the integers they are
//! ([`integers_from_integral_floats`]).

use serde_json::{Map, Value};

/// Drops the `null` values of optional, non-nullable properties from `args`,
/// at the top level and in nested objects reached through `properties`,
/// `items`, `$ref`s into the schema's `$defs`, `allOf`, and the one
/// alternative of an `anyOf`/`oneOf` that fits (the non-null one of an
/// `Option`, or the variant whose `const` tag the value carries).
pub(crate) fn drop_defaulted_nulls(args: &mut Value, schema: &Value) {
    visit(args, schema, schema, 0);
}

fn visit(value: &mut Value, schema: &Value, root: &Value, depth: usize) {
    if depth > crate::schema::MAX_SCHEMA_DEPTH {
        return;
    }
    let mut objects = Vec::new();
    applicable(schema, value, root, depth, &mut objects);
    for object in objects {
        match value {
            Value::Object(map) => visit_object(map, object, root, depth),
            Value::Array(items) => {
                if let Some(item_schema) = object.get("items").filter(|items| items.is_object()) {
                    for item in items {
                        visit(item, item_schema, root, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }
}

fn visit_object(map: &mut Map<String, Value>, schema: &Map<String, Value>, root: &Value, depth: usize) {
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return;
    };
    let required = |name: &str| schema.get("required").and_then(Value::as_array).is_some_and(|names| names.iter().any(|n| n == name));
    for (name, property) in properties {
        match map.get_mut(name) {
            Some(Value::Null) if !required(name) && !accepts_null(property, root, depth) => {
                map.shift_remove(name);
            }
            Some(child) => visit(child, property, root, depth + 1),
            None => {}
        }
    }
}

/// The schema objects that apply to `value` at this node: the node itself,
/// what its `$ref` points to, every `allOf` member, and the fitting
/// alternative of an `anyOf`/`oneOf`.
fn applicable<'s>(schema: &'s Value, value: &Value, root: &'s Value, depth: usize, out: &mut Vec<&'s Map<String, Value>>) {
    if depth > crate::schema::MAX_SCHEMA_DEPTH {
        return;
    }
    let Value::Object(map) = schema else {
        return;
    };
    out.push(map);
    if let Some(target) = crate::schema::ref_target(map, root) {
        applicable(target, value, root, depth + 1, out);
    }
    if let Some(Value::Array(members)) = map.get("allOf") {
        for member in members {
            applicable(member, value, root, depth + 1, out);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alternatives)) = map.get(key)
            && let Some(alternative) = fitting_alternative(alternatives, value, root)
        {
            applicable(alternative, value, root, depth + 1, out);
        }
    }
}

/// For a non-null value: the only alternative that does not accept just
/// `null`, or else the only one whose `const` properties the value matches.
/// `None` when that is ambiguous: then nothing below is touched.
fn fitting_alternative<'s>(alternatives: &'s [Value], value: &Value, root: &'s Value) -> Option<&'s Value> {
    if value.is_null() {
        return None;
    }
    let non_null: Vec<&Value> = alternatives.iter().filter(|alt| !crate::schema::is_null_schema(alt)).collect();
    if let [only] = non_null.as_slice() {
        return Some(only);
    }
    let Value::Object(fields) = value else {
        return None;
    };
    let tagged: Vec<&Value> = non_null
        .into_iter()
        .filter(|alt| {
            let alt = follow(alt, root);
            let Some(Value::Object(properties)) = alt.get("properties") else {
                return false;
            };
            let tags: Vec<(&String, &Value)> = properties.iter().filter_map(|(name, p)| follow(p, root).get("const").map(|c| (name, c))).collect();
            !tags.is_empty() && tags.iter().all(|(name, tag)| fields.get(*name) == Some(*tag))
        })
        .collect();
    match tagged.as_slice() {
        [only] => Some(only),
        _ => None,
    }
}

/// Whether `schema` accepts `null`. When unsure (an unresolvable `$ref`, a
/// `not`), it answers yes, so the null is left for validation to judge.
fn accepts_null(schema: &Value, root: &Value, depth: usize) -> bool {
    if depth > crate::schema::MAX_SCHEMA_DEPTH {
        return true;
    }
    let map = match schema {
        Value::Bool(accepts) => return *accepts,
        Value::Object(map) => map,
        _ => return true,
    };
    let type_ok = match map.get("type") {
        Some(Value::String(kind)) => kind == "null",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "null"),
        _ => true,
    };
    let enum_ok = match map.get("enum") {
        Some(Value::Array(values)) => values.iter().any(Value::is_null),
        _ => true,
    };
    let const_ok = map.get("const").is_none_or(Value::is_null);
    let ref_ok = match crate::schema::ref_target(map, root) {
        Some(target) => accepts_null(target, root, depth + 1),
        None => true,
    };
    let any = |key: &str| match map.get(key) {
        Some(Value::Array(alternatives)) => alternatives.iter().any(|alt| accepts_null(alt, root, depth + 1)),
        _ => true,
    };
    let all_ok = match map.get("allOf") {
        Some(Value::Array(members)) => members.iter().all(|member| accepts_null(member, root, depth + 1)),
        _ => true,
    };
    type_ok && enum_ok && const_ok && ref_ok && any("anyOf") && any("oneOf") && all_ok
}

/// The schema a pure `$ref` points to, or the schema itself.
fn follow<'s>(schema: &'s Value, root: &'s Value) -> &'s Value {
    match schema.as_object().and_then(|map| crate::schema::ref_target(map, root)) {
        Some(target) => target,
        None => schema,
    }
}

/// What one pass over the arguments found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Scan {
    /// A `null` somewhere: only then can the null rule of
    /// [`drop_defaulted_nulls`] change the arguments.
    pub(crate) nulls: bool,
    /// A number written with a fraction that is an integer (`5.0`).
    pub(crate) integral_floats: bool,
}

pub(crate) fn scan(value: &Value) -> Scan {
    let mut found = Scan::default();
    scan_into(value, &mut found);
    found
}

fn scan_into(value: &Value, found: &mut Scan) {
    match value {
        Value::Null => found.nulls = true,
        Value::Number(number) => found.integral_floats |= integer_of(number).is_some(),
        Value::Array(items) => items.iter().for_each(|item| scan_into(item, found)),
        Value::Object(map) => map.values().for_each(|item| scan_into(item, found)),
        _ => {}
    }
}

/// Rewrites every integral float (`5.0`, `1e3`) as the integer it is,
/// except `-0.0`.
///
/// JSON Schema counts `5.0` as an integer, so the schema of a `u32`
/// accepts it; serde reads a float into no integer type. A `#[tool]`'s
/// input is therefore read with such numbers as integers, and the parser
/// accepts what the schema does (found by tests/slow/agreement.rs). Only for
/// typed tools: a dynamic tool receives the arguments exactly as sent.
///
/// `-0.0` stays a float: as an integer it would lose its sign, which a
/// float parameter keeps. Where an integer is expected, the input's reader
/// (`__private`'s `Exact`) reads it, and every other integral float, through
/// [`integer_of`], so that a `-0` sent to an integer parameter is `0`.
pub(crate) fn integers_from_integral_floats(value: &mut Value) {
    match value {
        Value::Number(number) => {
            if let Some(integer) = integer_of(number).filter(|_| !is_negative_zero(number)) {
                *number = integer;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integers_from_integral_floats),
        Value::Object(map) => map.values_mut().for_each(integers_from_integral_floats),
        _ => {}
    }
}

/// Whether a number is the float `-0.0` (which `-0` parses to as well).
fn is_negative_zero(number: &serde_json::Number) -> bool {
    number.is_f64() && number.as_f64().is_some_and(|float| float == 0.0 && float.is_sign_negative())
}

/// The integer a float stands for, when it has no fraction and it is
/// strictly between -2^63 and 2^64.
///
/// A parsed value holds an integer written without a fraction exactly when
/// it fits an `i64` or a `u64`; beyond, serde_json keeps the nearest float,
/// which stands for many integers. So the two floats at the edges are
/// refused: 2^64 (`18446744073709551616`, above `u64::MAX`) and -2^63,
/// which `-9223372036854775809` rounds to as well (an `i64::MIN` written as
/// an integer is read as one, and never gets here). Every integer parameter
/// refuses what lies beyond, on every path.
pub(crate) fn integer_of(number: &serde_json::Number) -> Option<serde_json::Number> {
    if !number.is_f64() {
        return None;
    }
    let float = number.as_f64()?;
    if float.fract() != 0.0 || !float.is_finite() {
        return None;
    }
    // `as` saturates; -2^63 and 2^64 are exact as floats.
    if float < 0.0 {
        (float > -9_223_372_036_854_775_808.0).then(|| (float as i64).into())
    } else {
        (float < 18_446_744_073_709_551_616.0).then(|| (float as u64).into())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cleaned(schema: Value, args: Value) -> Value {
        let mut args = args;
        drop_defaulted_nulls(&mut args, &schema);
        args
    }

    fn shop_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "order_id": {"type": "string"},
                "with_items": {"type": "boolean", "default": false},
                "note": {"type": ["string", "null"]},
                "status": {"anyOf": [{"$ref": "#/$defs/Status"}, {"type": "null"}]},
                "priority": {"$ref": "#/$defs/Status", "default": "open"},
                "address": {"$ref": "#/$defs/Address"},
                "billing": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]},
                "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}},
                "subject": {"$ref": "#/$defs/Subject"},
                "anything": {}
            },
            "required": ["order_id", "address"],
            "additionalProperties": false,
            "$defs": {
                "Status": {"type": "string", "enum": ["open", "shipped"]},
                "Address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "floor": {"type": "integer", "default": 0}},
                    "required": ["street"]
                },
                "Line": {
                    "type": "object",
                    "properties": {"sku": {"type": "string"}, "quantity": {"type": "integer", "default": 1}},
                    "required": ["sku"]
                },
                "Subject": {
                    "oneOf": [
                        {"type": "object", "properties": {"kind": {"type": "string", "const": "order"}, "urgent": {"type": "boolean", "default": false}}, "required": ["kind"]},
                        {"type": "object", "properties": {"kind": {"type": "string", "const": "account"}, "email": {"type": "string", "default": ""}}, "required": ["kind"]}
                    ]
                }
            }
        })
    }

    #[test]
    fn a_null_for_an_optional_non_nullable_property_is_dropped() {
        let args = cleaned(shop_schema(), json!({"order_id": "A-1", "with_items": null, "address": {"street": "Main"}}));
        assert_eq!(args, json!({"order_id": "A-1", "address": {"street": "Main"}}));
    }

    #[test]
    fn nulls_that_mean_none_or_that_are_required_stay() {
        let args = json!({"order_id": null, "note": null, "status": null, "anything": null, "address": null});
        assert_eq!(cleaned(shop_schema(), args.clone()), args);
    }

    #[test]
    fn a_ref_to_a_non_nullable_definition_is_dropped() {
        let args = cleaned(shop_schema(), json!({"priority": null}));
        assert_eq!(args, json!({}));
    }

    #[test]
    fn nested_objects_through_refs_options_and_arrays() {
        let args = cleaned(
            shop_schema(),
            json!({
                "address": {"street": "Main", "floor": null},
                "billing": {"street": "Side", "floor": null},
                "lines": [{"sku": "K-1", "quantity": null}, {"sku": "K-2", "quantity": 3}]
            }),
        );
        assert_eq!(
            args,
            json!({
                "address": {"street": "Main"},
                "billing": {"street": "Side"},
                "lines": [{"sku": "K-1"}, {"sku": "K-2", "quantity": 3}]
            })
        );
    }

    #[test]
    fn the_tagged_variant_of_a_union_is_followed() {
        let args = cleaned(shop_schema(), json!({"subject": {"kind": "account", "email": null}}));
        assert_eq!(args, json!({"subject": {"kind": "account"}}));
        // Without a matching tag nothing is touched.
        let untagged = json!({"subject": {"kind": "other", "email": null}});
        assert_eq!(cleaned(shop_schema(), untagged.clone()), untagged);
    }

    #[test]
    fn recursive_schemas_end() {
        let schema = json!({
            "type": "object",
            "properties": {"tree": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {
                "type": "object",
                "properties": {"label": {"type": "string", "default": ""}, "child": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}}
            }}
        });
        let args = cleaned(schema, json!({"tree": {"label": null, "child": {"label": null, "child": null}}}));
        assert_eq!(args, json!({"tree": {"child": {"child": null}}}));
        let cyclic = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"$ref": "#/$defs/A"}}});
        assert_eq!(cleaned(cyclic, json!({"a": null})), json!({"a": null}));
    }

    #[test]
    fn nulls_and_integral_floats_are_found_at_any_depth() {
        assert_eq!(scan(&json!({"a": [1, {"b": "c", "d": 1.5}]})), Scan::default());
        assert!(scan(&json!({"a": [1, {"b": null}]})).nulls);
        assert!(scan(&json!({"a": [1, {"b": 2.0}]})).integral_floats);
    }

    #[test]
    fn integral_floats_become_integers() {
        let mut value = json!({"a": 5.0, "b": [-3.0, 1.5, 1e3], "c": -0.0, "d": 1e20, "e": 7});
        integers_from_integral_floats(&mut value);
        assert_eq!(value, json!({"a": 5, "b": [-3, 1.5, 1000], "c": -0.0, "d": 1e20, "e": 7}));
        assert!(value["a"].is_u64() && value["b"][0].is_i64() && value["d"].is_f64());
        assert!(value["c"].as_f64().unwrap().is_sign_negative(), "-0.0 keeps its sign: {}", value["c"]);
    }

    #[test]
    fn floats_at_the_edges_of_64_bits_stand_for_no_integer() {
        let integer = |text: &str| integer_of(&serde_json::from_str(text).unwrap());
        assert_eq!(integer("-0.0"), Some(0u64.into()), "where an integer is expected, -0 is 0");
        assert_eq!(integer("-9223372036854774784.0"), Some((-9_223_372_036_854_774_784i64).into()));
        assert_eq!(integer("18446744073709549568.0"), Some(18_446_744_073_709_549_568u64.into()));
        // Both are floats after parsing: -2^63 and 2^64.
        assert_eq!(integer("-9223372036854775809"), None, "below i64::MIN, not clamped to it");
        assert_eq!(integer("-9223372036854775808.0"), None);
        assert_eq!(integer("18446744073709551616"), None);
        assert_eq!(integer("1.5"), None);
        assert_eq!(integer("7"), None, "already an integer");
    }
}

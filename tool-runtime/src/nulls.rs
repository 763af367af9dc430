//! A `null` from the model for an optional property means "use the default".
//!
//! OpenAI's strict mode makes every property required and the optional ones
//! nullable, so a model in strict mode sends `"with_items": null` where it
//! would otherwise leave the property out. Before validation, such nulls are
//! dropped, so the tool's default applies exactly as if the property were
//! absent. Only properties that are not required and whose own schema does
//! not accept `null` are touched: for an `Option<T>` the null stays and means
//! `None`, and a null for a required property is still a validation error.

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
    let required = |name: &str| {
        schema.get("required").and_then(Value::as_array).is_some_and(|names| names.iter().any(|n| n == name))
    };
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
    if let Some(target) = map.get("$ref").and_then(Value::as_str).and_then(|reference| resolve(root, reference)) {
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
            let tags: Vec<(&String, &Value)> =
                properties.iter().filter_map(|(name, p)| follow(p, root).get("const").map(|c| (name, c))).collect();
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
    let ref_ok = match map.get("$ref").and_then(Value::as_str).and_then(|reference| resolve(root, reference)) {
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

/// A local `$ref` (`#/$defs/Name` or any JSON pointer into the schema).
fn resolve<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    reference.strip_prefix('#').and_then(|pointer| root.pointer(pointer))
}

/// The schema a pure `$ref` points to, or the schema itself.
fn follow<'s>(schema: &'s Value, root: &'s Value) -> &'s Value {
    match schema.get("$ref").and_then(Value::as_str).and_then(|reference| resolve(root, reference)) {
        Some(target) => target,
        None => schema,
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
}

use super::*;

fn parameters(schema: Value) -> Result<(Value, Vec<super::super::Loss>), DialectError> {
    let def = ToolDefinition::new("t", "T.", schema);
    declaration(&def).map(|(declaration, losses)| (declaration["parameters"].clone(), losses))
}

#[test]
fn definitions_are_inlined_and_nulls_become_nullable() {
    let (schema, losses) = parameters(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "customer": {"$ref": "#/$defs/Customer", "description": "Who."},
            "note": {"type": ["string", "null"]},
            "billing": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]}
        },
        "required": ["customer"],
        "additionalProperties": false,
        "$defs": {
            "Customer": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/Address"}},
                "required": ["name", "address"],
                "description": "A customer."
            },
            "Address": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        }
    }))
    .unwrap();
    assert_eq!(
        schema,
        json!({
            "type": "OBJECT",
            "properties": {
                "customer": {
                    "type": "OBJECT",
                    "properties": {
                        "name": {"type": "STRING"},
                        "address": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}, "required": ["city"]}
                    },
                    "propertyOrdering": ["name", "address"],
                    "required": ["name", "address"],
                    "description": "Who."
                },
                "note": {"type": "STRING", "nullable": true},
                "billing": {
                    "type": "OBJECT",
                    "properties": {"city": {"type": "STRING"}},
                    "required": ["city"],
                    "nullable": true
                }
            },
            "propertyOrdering": ["customer", "note", "billing"],
            "required": ["customer"]
        })
    );
    let keywords: Vec<&str> = losses.iter().map(|loss| loss.keyword.as_str()).collect();
    assert_eq!(keywords, ["additionalProperties"]);
}

#[test]
fn recursion_is_an_error_naming_the_tool_and_the_type() {
    let err = parameters(json!({
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}
    }))
    .unwrap_err();
    assert!(matches!(&err, DialectError::Recursive { tool, type_name, .. } if tool == "t" && type_name == "Node"), "{err:?}");
    assert!(err.to_string().contains("contains itself"), "{err}");
}

#[test]
fn non_string_enums_and_formats_move_into_the_description() {
    let (schema, losses) = parameters(json!({
        "type": "object",
        "properties": {
            "level": {"type": "integer", "enum": [1, 2, 3], "format": "uint8"},
            "kind": {"type": "string", "const": "order"},
            "size": {"type": "integer", "format": "int64", "exclusiveMinimum": 0},
            "contact": {"type": "string", "format": "email"},
            "at": {"type": "string", "format": "date-time"}
        }
    }))
    .unwrap();
    // schemars' names of number types are not exported at all.
    assert_eq!(schema["properties"]["level"], json!({"type": "INTEGER", "description": "Allowed values: 1, 2, 3."}));
    assert_eq!(schema["properties"]["kind"], json!({"type": "STRING", "enum": ["order"]}));
    assert_eq!(schema["properties"]["size"], json!({"type": "INTEGER", "description": "Constraints: exclusiveMinimum 0."}));
    assert_eq!(schema["properties"]["contact"], json!({"type": "STRING", "description": "Format: email."}));
    assert_eq!(schema["properties"]["at"], json!({"type": "STRING", "format": "date-time"}));
    assert!(losses.iter().any(|loss| loss.keyword == "enum" && loss.constraint));
    assert!(losses.iter().any(|loss| loss.keyword == "format" && loss.pointer == "/properties/contact" && !loss.constraint));
    assert!(!losses.iter().any(|loss| loss.keyword == "format" && loss.pointer != "/properties/contact"), "{losses:?}");
}

#[test]
fn one_of_becomes_any_of() {
    let (schema, losses) = parameters(json!({
        "type": "object",
        "properties": {"id": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}
    }))
    .unwrap();
    assert_eq!(schema["properties"]["id"], json!({"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]}));
    assert!(losses.iter().any(|loss| loss.keyword == "oneOf"));
}

#[test]
fn a_tool_without_parameters_has_none() {
    let def = ToolDefinition::new("now", "Tell the time.", json!({"type": "object", "properties": {}, "required": []}));
    let (declaration, _) = declaration(&def).unwrap();
    assert_eq!(declaration, json!({"name": "now", "description": "Tell the time."}));
}

#[test]
fn calls_without_ids_get_local_ones_that_are_not_sent_back() {
    let calls = parse_calls(&json!({"role": "model", "parts": [{"functionCall": {"name": "now"}}]})).unwrap();
    assert!(calls[0].id.starts_with(LOCAL_ID_PREFIX));
    assert_eq!(calls[0].arguments, Arguments::Value(json!({})));
    let err = parse_calls(&json!({"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}]}}]})).unwrap_err();
    assert_eq!(err.to_string(), "malformed gemini payload at `/candidates/0/content/parts/0/functionCall`: missing `name`");
}

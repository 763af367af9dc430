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

use serde_json::Value;

use super::{DialectError, ExportOptions, check_name};
use crate::tool::ToolDefinition;
use strict::strict_schema;

const PROVIDER: &str = "openai";

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

pub mod chat;
pub mod responses;
mod strict;

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

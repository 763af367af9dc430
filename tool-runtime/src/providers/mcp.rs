//! MCP `tools/list` entries.
//!
//! The shape of a `Tool` follows the MCP specification as rmcp models it
//! (`rmcp::model::Tool`): `name`, `title`, `description`, `inputSchema`,
//! `outputSchema`, `annotations`, `_meta`, in that order, absent fields left
//! out.
//! The input schema is the canonical one, `$schema` included: MCP clients
//! read JSON Schema 2020-12 and accept the keyword. Its formats are JSON
//! Schema's only (`super::exported`): a client's validator warns on
//! schemars' `uint32`.

use serde_json::{Map, Value};

use crate::tool::ToolDefinition;

/// One entry of an MCP `tools/list` result.
///
/// `outputSchema` is only sent when the output schema is an object schema
/// (`"type": "object"` at its root), since MCP clients require that of it;
/// a tool returning a string or a list has none. `annotations` carries the
/// title and the effect hints the tool declared, and is left out when there
/// are none. `_meta` carries the tool's `meta(...)` entries, its `kind`
/// (under the key `kind`) and its failure schema (under `failureSchema`:
/// MCP has no field for the schema of a failure's `structuredContent`), and
/// is left out when it has none of them.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::providers::mcp;
/// use tool_runtime::ToolDefinition;
///
/// let def = ToolDefinition::new("echo", "Echo the text.", json!({
///     "type": "object",
///     "properties": {"text": {"type": "string"}},
///     "required": ["text"],
///     "additionalProperties": false
/// }));
/// let entry = mcp::tool(&def);
/// assert_eq!(entry["name"], "echo");
/// assert_eq!(entry["inputSchema"]["required"], json!(["text"]));
/// assert!(entry.get("outputSchema").is_none());
/// ```
pub fn tool(def: &ToolDefinition) -> Value {
    let exported = super::exported(def);
    let def = &*exported;
    let mut entry = Map::new();
    entry.insert("name".into(), def.name.clone().into());
    if let Some(title) = &def.title {
        entry.insert("title".into(), title.clone().into());
    }
    entry.insert("description".into(), def.description.clone().into());
    entry.insert("inputSchema".into(), (*def.input_schema).clone());
    if let Some(output) = def.output_schema.as_deref().filter(|schema| is_object_schema(schema)) {
        entry.insert("outputSchema".into(), output.clone());
    }
    let annotations = annotations(def);
    if !annotations.is_empty() {
        entry.insert("annotations".into(), Value::Object(annotations));
    }
    if !def.meta.is_empty() || def.kind.is_some() || def.failure_schema.is_some() {
        let mut meta = def.meta.clone();
        if let Some(kind) = &def.kind {
            meta.insert("kind".into(), kind.clone().into());
        }
        if let Some(failure) = &def.failure_schema {
            meta.insert("failureSchema".into(), (**failure).clone());
        }
        entry.insert("_meta".into(), Value::Object(meta));
    }
    Value::Object(entry)
}

/// A whole `tools/list` result, `{"tools": [...]}`, for the given tools
/// (usually those offered in the current step), in their order. A
/// provider's built-in tool is left out: it is that provider's.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::providers::mcp;
/// use tool_runtime::ToolDefinition;
///
/// let def = ToolDefinition::new("now", "Tell the time.", json!({"type": "object", "properties": {}}));
/// let list = mcp::tools_list([&def]);
/// assert_eq!(list["tools"][0]["name"], "now");
/// ```
pub fn tools_list<'a>(defs: impl IntoIterator<Item = &'a ToolDefinition>) -> Value {
    let tools: Vec<Value> = defs.into_iter().filter(|def| def.provider_defined.is_none()).map(tool).collect();
    let mut list = Map::new();
    list.insert("tools".into(), Value::Array(tools));
    Value::Object(list)
}

pub(crate) fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

fn annotations(def: &ToolDefinition) -> Map<String, Value> {
    let mut annotations = Map::new();
    if let Some(title) = &def.title {
        annotations.insert("title".into(), title.clone().into());
    }
    // The hints serialise as `Annotations` itself does, so there is one
    // spelling of them in the crate.
    if let Ok(Value::Object(hints)) = serde_json::to_value(def.annotations) {
        annotations.extend(hints);
    }
    annotations
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::tool::Annotations;

    fn definition() -> ToolDefinition {
        ToolDefinition::new(
            "lookup_order",
            "Look up one order.",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
                "additionalProperties": false
            }),
        )
    }

    #[test]
    fn a_full_entry_has_the_mcp_field_names_in_order() {
        let mut def = definition();
        def.title = Some("Look up an order".into());
        def.annotations = Annotations { read_only: Some(true), destructive: None, idempotent: Some(true), open_world: Some(false) };
        def.output_schema = Some(Arc::new(json!({"type": "object", "properties": {"id": {"type": "string"}}})));
        let entry = tool(&def);
        assert_eq!(
            serde_json::to_string(&entry).unwrap(),
            serde_json::to_string(&json!({
                "name": "lookup_order",
                "title": "Look up an order",
                "description": "Look up one order.",
                "inputSchema": *def.input_schema,
                "outputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
                "annotations": {
                    "title": "Look up an order",
                    "readOnlyHint": true,
                    "idempotentHint": true,
                    "openWorldHint": false
                }
            }))
            .unwrap()
        );
    }

    #[test]
    fn meta_and_kind_are_exported_as_meta() {
        let mut def = definition();
        def.meta.insert("owner".into(), json!("billing"));
        def.meta.insert("cost".into(), json!(2));
        let entry = tool(&def);
        assert_eq!(entry["_meta"], json!({"owner": "billing", "cost": 2}));
        def.kind = Some("read".into());
        let entry = tool(&def);
        assert_eq!(entry["_meta"], json!({"owner": "billing", "cost": 2, "kind": "read"}));
        let keys: Vec<&str> = entry.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys.last(), Some(&"_meta"));
        def.meta.clear();
        assert_eq!(tool(&def)["_meta"], json!({"kind": "read"}));
    }

    #[test]
    fn a_failure_schema_is_exported_in_meta_after_kind() {
        let mut def = definition();
        def.failure_schema = Some(Arc::new(json!({"type": "object", "properties": {"kind": {"const": "gone"}}})));
        assert_eq!(tool(&def)["_meta"], json!({"failureSchema": *def.failure_schema.clone().unwrap()}));
        def.kind = Some("read".into());
        let entry = tool(&def);
        let keys: Vec<&str> = entry["_meta"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["kind", "failureSchema"]);
        assert!(entry.get("outputSchema").is_none(), "a failure schema is not an output schema");
    }

    #[test]
    fn a_bare_tool_has_no_title_output_schema_or_annotations() {
        let entry = tool(&definition());
        let keys: Vec<&str> = entry.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["name", "description", "inputSchema"]);
    }

    #[test]
    fn only_object_output_schemas_are_sent() {
        let mut def = definition();
        def.output_schema = Some(Arc::new(json!({"type": "string"})));
        assert!(tool(&def).get("outputSchema").is_none());
        def.output_schema = Some(Arc::new(json!({"type": "array", "items": {"type": "string"}})));
        assert!(tool(&def).get("outputSchema").is_none());
        def.output_schema = Some(Arc::new(json!({"anyOf": [{"type": "object"}, {"type": "null"}]})));
        assert!(tool(&def).get("outputSchema").is_none());
    }

    #[test]
    fn tools_list_keeps_the_order() {
        let mut second = definition();
        second.name = "refund".into();
        let list = tools_list([&definition(), &second]);
        let names: Vec<&str> = list["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["lookup_order", "refund"]);
    }
}

//! The inputs of Anthropic's host-run built-ins, as the model sends them,
//! and the schemas their calls are validated against.
//!
//! The schemas are open (unknown keys pass) since Anthropic, not this
//! crate, defines the tools: a field added in a later version must not turn
//! the model's calls into errors.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A call of Anthropic's bash tool: a command to run in the session, or a
/// restart of the session.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BashInput {
    /// The command to run.
    #[serde(default)]
    pub command: Option<String>,
    /// Restart the bash session (no command is given then).
    #[serde(default)]
    pub restart: bool,
}

/// A call of Anthropic's text editor (`text_editor_20250728`), one variant
/// per command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TextEditorCommand {
    /// Show a file (with line numbers) or list a directory.
    View {
        /// The file or directory.
        path: String,
        /// The first and last lines to show, from 1; `-1` as the last means
        /// the end of the file.
        #[serde(default)]
        view_range: Option<[i64; 2]>,
    },
    /// Create a file with the given text.
    Create {
        /// The new file.
        path: String,
        /// Its text.
        file_text: String,
    },
    /// Replace the one occurrence of `old_str` by `new_str`.
    StrReplace {
        /// The file.
        path: String,
        /// The text to replace, which must occur exactly once.
        old_str: String,
        /// The replacement (empty: delete `old_str`).
        #[serde(default)]
        new_str: String,
    },
    /// Insert text after a line (0: at the start).
    Insert {
        /// The file.
        path: String,
        /// The line after which to insert.
        insert_line: u64,
        /// The text to insert (`insert_text` in some versions of the tool).
        #[serde(alias = "insert_text")]
        new_str: String,
    },
}

/// The input schema of `bash_20250124`.
pub(super) fn bash_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The bash command to run."},
            "restart": {"type": "boolean", "description": "Restart the bash session."}
        },
        "anyOf": [{"required": ["command"]}, {"required": ["restart"]}]
    })
}

/// The input schema of `text_editor_20250728`: one alternative per command.
pub(super) fn text_editor_schema() -> Value {
    let command = |name: &str, properties: Value, required: &[&str]| {
        let mut properties = properties;
        properties["command"] = json!({"const": name});
        properties["path"] = json!({"type": "string"});
        let mut all = vec!["command", "path"];
        all.extend_from_slice(required);
        json!({"properties": properties, "required": all})
    };
    json!({
        "type": "object",
        "properties": {"command": {"enum": ["view", "create", "str_replace", "insert"]}, "path": {"type": "string"}},
        "required": ["command", "path"],
        "oneOf": [
            command("view", json!({"view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}}), &[]),
            command("create", json!({"file_text": {"type": "string"}}), &["file_text"]),
            command("str_replace", json!({"old_str": {"type": "string"}, "new_str": {"type": "string"}}), &["old_str"]),
            {
                "properties": {
                    "command": {"const": "insert"},
                    "insert_line": {"type": "integer", "minimum": 0},
                    "new_str": {"type": "string"},
                    "insert_text": {"type": "string"}
                },
                "required": ["command", "path", "insert_line"],
                "anyOf": [{"required": ["new_str"]}, {"required": ["insert_text"]}]
            }
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schemas_accept_what_the_types_read_and_refuse_the_rest() {
        let editor = jsonschema::draft202012::new(&text_editor_schema()).unwrap();
        for good in [
            json!({"command": "view", "path": "/a", "view_range": [1, -1]}),
            json!({"command": "create", "path": "/a", "file_text": "x"}),
            json!({"command": "str_replace", "path": "/a", "old_str": "x", "new_str": "y"}),
            json!({"command": "insert", "path": "/a", "insert_line": 0, "insert_text": "y"}),
        ] {
            assert!(editor.is_valid(&good), "{good}");
            serde_json::from_value::<TextEditorCommand>(good.clone()).unwrap_or_else(|e| panic!("{good}: {e}"));
        }
        for bad in [
            json!({"command": "create", "path": "/a"}),
            json!({"command": "insert", "path": "/a", "insert_line": 3}),
            json!({"command": "undo_edit", "path": "/a"}),
            json!({"command": "view"}),
        ] {
            assert!(!editor.is_valid(&bad), "{bad}");
        }
        let bash = jsonschema::draft202012::new(&bash_schema()).unwrap();
        assert!(bash.is_valid(&json!({"command": "ls"})));
        assert!(bash.is_valid(&json!({"restart": true})));
        assert!(!bash.is_valid(&json!({})));
        assert!(!bash.is_valid(&json!({"command": 3})));
    }
}

//! A tool's input schema as a form, and a submitted form back into the
//! input: one field per property of the root object, in the schema's
//! order, labelled by the property's description (its parameter docs).
//!
//! The field's kind follows the property: a string is a text box (a date
//! box for `format: date`), an integer or a number a number box, a boolean
//! a checkbox, an enum a choice of its values as written, and anything
//! else (objects, arrays, unions) a JSON text area. The constraints the
//! browser can check (`required`, `min`, `max`, `minlength`, `maxlength`,
//! an anchored `pattern`) are written on the field, so the browser refuses
//! a bad value before it is sent; the server checks the whole input again
//! against the schema and the policy (`recheck`), whatever the browser did.
//!
//! JSON the approver wrote (a JSON field) passes the guard before it is
//! parsed, as a model's arguments do: its size, depth and values within
//! the registry's [`ArgumentLimits`].

use serde_json::{Map, Number, Value};

use super::markup::Doc;
use crate::guard::{self, ArgumentLimits, GuardError};

/// One property of a tool's input, as a form field.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Field {
    /// The property's name: the field is named `arg.<name>`.
    pub(crate) name: String,
    /// The property's description, else its name.
    pub(crate) label: String,
    /// `text`, `date`, `integer`, `number`, `boolean`, `choice` or `json`.
    pub(crate) kind: &'static str,
    /// Whether the schema requires it.
    pub(crate) required: bool,
    /// The value to show, as text (a string as written, anything else as JSON).
    pub(crate) value: String,
    /// For a checkbox: whether it is ticked.
    pub(crate) checked: bool,
    /// For a choice: each value as written, and whether it is chosen.
    pub(crate) options: Vec<(String, bool)>,
    /// Constraints the browser checks.
    pub(crate) min: Option<String>,
    pub(crate) max: Option<String>,
    pub(crate) min_length: Option<u64>,
    pub(crate) max_length: Option<u64>,
    pub(crate) pattern: Option<String>,
}

impl Field {
    /// The label as doc text, its code spans apart.
    pub(crate) fn label_doc(&self) -> Doc {
        Doc::new(&self.label)
    }
}

/// The fields of `schema` (a tool's input schema), filled from `input`;
/// properties of `input` that the schema does not name come last, as JSON.
pub(crate) fn fields(schema: &Value, input: &Value) -> Vec<Field> {
    let empty = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let mut fields: Vec<Field> =
        properties.iter().map(|(name, property)| field(schema, name, property, required.contains(&name.as_str()), input.get(name))).collect();
    if let Some(input) = input.as_object() {
        for (name, value) in input.iter().filter(|(name, _)| !properties.contains_key(*name)) {
            fields.push(field(schema, name, &Value::Bool(true), false, Some(value)));
        }
    }
    fields
}

fn field(root: &Value, name: &str, property: &Value, required: bool, value: Option<&Value>) -> Field {
    let label = property.get("description").and_then(Value::as_str).filter(|d| !d.trim().is_empty()).unwrap_or(name).trim().to_owned();
    let resolved = resolve(root, property);
    let mut field = Field {
        name: name.to_owned(),
        label,
        kind: "json",
        required,
        value: value.map(shown).unwrap_or_default(),
        checked: false,
        options: Vec::new(),
        min: None,
        max: None,
        min_length: None,
        max_length: None,
        pattern: None,
    };
    if let Some(choices) = choices(root, resolved) {
        field.kind = "choice";
        let current = value.map(shown);
        field.options = choices.iter().map(|choice| (shown(choice), current.as_deref() == Some(shown(choice).as_str()))).collect();
        return field;
    }
    let number = |key| resolved.get(key).filter(|v| v.is_number()).map(Value::to_string);
    match single_type(resolved) {
        Some("string") => {
            field.kind = if resolved.get("format").and_then(Value::as_str) == Some("date") { "date" } else { "text" };
            field.min_length = resolved.get("minLength").and_then(Value::as_u64);
            field.max_length = resolved.get("maxLength").and_then(Value::as_u64);
            // The browser anchors a pattern; JSON Schema does not. Only an
            // anchored one means the same to both.
            field.pattern = resolved.get("pattern").and_then(Value::as_str).filter(|p| p.starts_with('^') && p.ends_with('$')).map(str::to_owned);
        }
        Some(kind @ ("integer" | "number")) => {
            field.kind = if kind == "integer" { "integer" } else { "number" };
            field.min = number("minimum");
            field.max = number("maximum");
        }
        Some("boolean") => {
            field.kind = "boolean";
            field.checked = value == Some(&Value::Bool(true));
        }
        _ => field.value = value.map(|v| serde_json::to_string_pretty(v).unwrap_or_default()).unwrap_or_default(),
    }
    field
}

/// A property with its `$ref` followed and an optional's `null` branch
/// dropped (`type: ["string", "null"]`, `anyOf: [{...}, {type: null}]`).
fn resolve<'a>(root: &'a Value, property: &'a Value) -> &'a Value {
    if let Some(target) = property.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#')).and_then(|pointer| root.pointer(pointer)) {
        return resolve(root, target);
    }
    let branches = property.get("anyOf").or_else(|| property.get("oneOf")).and_then(Value::as_array);
    if let Some(branches) = branches {
        let not_null: Vec<&Value> = branches.iter().filter(|b| b.get("type").and_then(Value::as_str) != Some("null")).collect();
        if let [only] = not_null.as_slice()
            && not_null.len() < branches.len()
        {
            return resolve(root, only);
        }
    }
    property
}

/// The one type of a property, a `null` in a type list aside.
fn single_type(property: &Value) -> Option<&str> {
    match property.get("type")? {
        Value::String(kind) => Some(kind),
        Value::Array(kinds) => {
            let kinds: Vec<&str> = kinds.iter().filter_map(Value::as_str).filter(|k| *k != "null").collect();
            if let [kind] = kinds.as_slice() { Some(kind) } else { None }
        }
        _ => None,
    }
}

/// The values of an enum: `enum`, or a `oneOf` of `const`s (schemars
/// writes a documented enum so).
fn choices<'a>(root: &'a Value, property: &'a Value) -> Option<Vec<&'a Value>> {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        return Some(values.iter().filter(|v| !v.is_null()).collect());
    }
    let branches = property.get("oneOf").or_else(|| property.get("anyOf"))?.as_array()?;
    branches.iter().map(|branch| resolve(root, branch).get("const")).collect()
}

/// A value as a field shows it: a string as written, anything else as JSON.
pub(crate) fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A field the server could not read, and why (the person reads it).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Problem {
    pub(crate) field: String,
    pub(crate) message: String,
}

/// The input a submitted form describes: each field of `fields` read from
/// `submitted` (`arg.<name>` pairs) as its kind says, a JSON field only
/// once it passed the guard under `limits`; an empty optional field is
/// left out, so the tool's default applies.
pub(crate) fn read(fields: &[Field], submitted: &[(String, String)], limits: &ArgumentLimits) -> Result<Value, Vec<Problem>> {
    let mut input = Map::new();
    let mut problems = Vec::new();
    for field in fields {
        let key = format!("arg.{}", field.name);
        let text = submitted.iter().find(|(name, _)| *name == key).map(|(_, value)| value.as_str());
        match read_one(field, text, limits) {
            Ok(Some(value)) => {
                input.insert(field.name.clone(), value);
            }
            Ok(None) => {}
            Err(message) => problems.push(Problem { field: field.name.clone(), message }),
        }
    }
    if problems.is_empty() { Ok(Value::Object(input)) } else { Err(problems) }
}

fn read_one(field: &Field, text: Option<&str>, limits: &ArgumentLimits) -> Result<Option<Value>, String> {
    if field.kind == "boolean" {
        return Ok(Some(Value::Bool(text.is_some())));
    }
    let text = text.unwrap_or_default();
    if text.trim().is_empty() && !field.required {
        return Ok(None);
    }
    match field.kind {
        "text" | "date" => Ok(Some(Value::String(text.to_owned()))),
        "choice" => Ok(Some(
            field
                .options
                .iter()
                .find(|(option, _)| option == text)
                .map(|_| json_or_string(text))
                .ok_or_else(|| format!("{}: choose one of the listed values", field.label))?,
        )),
        "integer" => {
            let text = text.trim();
            let number = text.parse::<i64>().map(Number::from).or_else(|_| text.parse::<u64>().map(Number::from));
            number.map(|n| Some(Value::Number(n))).map_err(|_| format!("{}: write a whole number, such as 42", field.label))
        }
        "number" => {
            let text = text.trim();
            if let Ok(whole) = text.parse::<i64>() {
                return Ok(Some(Value::Number(whole.into())));
            }
            text.parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(|n| Some(Value::Number(n)))
                .ok_or_else(|| format!("{}: write a number, such as 12.5", field.label))
        }
        _ => {
            guard::check_text(text, limits).map_err(|error| format!("{}: {}", field.label, too_much(&error)))?;
            serde_json::from_str(text).map(Some).map_err(|error| format!("{}: this is not valid JSON ({error})", field.label))
        }
    }
}

/// Why the guard refused a JSON field, for the approver.
fn too_much(error: &GuardError) -> String {
    match error {
        GuardError::TooLarge { bytes, max } => {
            format!("this JSON is {} bytes; the tool takes at most {max}. Shorten it.", bytes.unwrap_or(max + 1))
        }
        GuardError::TooDeep { max } => format!("this JSON is nested more than {max} levels deep; the tool takes no deeper. Flatten it."),
        GuardError::TooManyValues { max } => format!("this JSON holds more than {max} values; the tool takes no more. Remove some."),
    }
}

/// A choice's value: the value as written was a string unless it reads as
/// another JSON value that the schema listed (a number, `true`).
fn json_or_string(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(value) if !value.is_string() => value,
        _ => Value::String(text.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "order_id": {"type": "string", "description": "The order to refund.", "pattern": "^A-\\d{4}$"},
                "amount_cents": {"type": "integer", "minimum": 1, "description": "How much, in cents."},
                "currency": {"$ref": "#/$defs/Currency"},
                "note": {"type": ["string", "null"]},
                "express": {"type": "boolean"},
                "lines": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["order_id", "amount_cents", "currency", "express", "lines"],
            "$defs": {"Currency": {"type": "string", "enum": ["EUR", "USD"]}}
        })
    }

    #[test]
    fn each_property_is_a_field_of_its_kind_labelled_by_its_docs() {
        let input = json!({"order_id": "A-1002", "amount_cents": 18990, "currency": "USD", "express": true, "lines": ["a"]});
        let fields = fields(&schema(), &input);
        let kinds: Vec<(&str, &str, bool)> = fields.iter().map(|f| (f.name.as_str(), f.kind, f.required)).collect();
        assert_eq!(
            kinds,
            [
                ("order_id", "text", true),
                ("amount_cents", "integer", true),
                ("currency", "choice", true),
                ("note", "text", false),
                ("express", "boolean", true),
                ("lines", "json", true)
            ]
        );
        assert_eq!(fields[0].label, "The order to refund.");
        assert_eq!(fields[0].pattern.as_deref(), Some("^A-\\d{4}$"));
        assert_eq!(fields[1].value, "18990", "money as written");
        assert_eq!(fields[1].min.as_deref(), Some("1"));
        assert_eq!(fields[2].options, [("EUR".to_owned(), false), ("USD".to_owned(), true)]);
        assert!(fields[4].checked);
    }

    #[test]
    fn a_form_reads_back_into_the_input_and_says_what_it_cannot_read() {
        let input = json!({"order_id": "A-1002", "amount_cents": 1, "currency": "EUR", "express": false, "lines": []});
        let fields = fields(&schema(), &input);
        let pairs = |list: &[(&str, &str)]| list.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect::<Vec<_>>();
        let limits = ArgumentLimits::default();
        let read_back = read(
            &fields,
            &pairs(&[("arg.order_id", "A-1003"), ("arg.amount_cents", "2500"), ("arg.currency", "USD"), ("arg.note", ""), ("arg.lines", "[\"x\"]")]),
            &limits,
        );
        assert_eq!(read_back, Ok(json!({"order_id": "A-1003", "amount_cents": 2500, "currency": "USD", "express": false, "lines": ["x"]})));
        let problems =
            read(&fields, &pairs(&[("arg.order_id", "A-1"), ("arg.amount_cents", "ten"), ("arg.currency", "GBP"), ("arg.lines", "[")]), &limits)
                .unwrap_err();
        let names: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(names, ["amount_cents", "currency", "lines"]);
        assert!(problems[0].message.starts_with("How much, in cents.: write a whole number"), "{problems:?}");
    }

    #[test]
    fn a_json_field_past_the_guard_is_refused_before_it_is_parsed() {
        let input = json!({"order_id": "A-1002", "amount_cents": 1, "currency": "EUR", "express": false, "lines": []});
        let fields = fields(&schema(), &input);
        let limits = ArgumentLimits { max_bytes: 1 << 20, max_depth: 8, max_values: 100 };
        let submit = |lines: &str| {
            let pairs = [("arg.order_id", "A-1002"), ("arg.amount_cents", "1"), ("arg.currency", "EUR"), ("arg.lines", lines)];
            read(&fields, &pairs.map(|(a, b)| (a.to_owned(), b.to_owned())), &limits)
        };
        let many = format!("[{}]", vec!["\"x\""; 200].join(","));
        let deep = format!("{}{}", "[".repeat(9), "]".repeat(9));
        for (lines, why) in [(many.as_str(), "holds more than 100 values"), (deep.as_str(), "nested more than 8 levels deep")] {
            let problems = submit(lines).unwrap_err();
            assert_eq!(problems.len(), 1, "{problems:?}");
            assert_eq!(problems[0].field, "lines");
            assert!(problems[0].message.contains(why), "{problems:?}");
        }
        assert!(submit("[\"a\", \"b\"]").is_ok(), "within the limits");
    }
}

//! A form a tool asks its user to fill in ([`Ctx::elicit`](crate::Ctx::elicit)):
//! a struct that MCP's elicitation forms can carry, refused at compile time
//! otherwise, and its schema as the requested schema of such a form.
//!
//! MCP's forms are flat: an object whose properties are strings (with
//! `minLength`, `maxLength` and the formats `email`, `uri`, `date`,
//! `date-time`), numbers and integers (`minimum`, `maximum`), booleans, and
//! enums of strings (one choice, or several: an array of them), each with
//! its title, description and default. `#[derive(Form)]` checks each field
//! of a struct against [`FormField`] (a trait bound written at the field's
//! type, so the error points at the field) and makes a unit enum a choice
//! ([`FormChoice`]); the runtime then writes the schema schemars derives
//! for the struct, inlined, in that restricted shape ([`requested_schema`]),
//! and checks every answer against it before it is recorded
//! ([`check_answer`]).

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// A struct a tool asks its user to fill in as a form: derive it.
///
/// ```
/// use tool_runtime::prelude::*;
/// use tool_runtime::Form;
///
/// /// How the refund goes back.
/// #[tool_data(Deserialize, JsonSchema)]
/// #[derive(Form)]
/// enum Method { Card, Voucher }
///
/// #[tool_data(Deserialize, JsonSchema)]
/// #[derive(Form)]
/// struct Confirm {
///     /// Go ahead with the refund.
///     go_ahead: bool,
///     /// Where the money goes.
///     method: Method,
///     /// A note for the customer.
///     #[serde(default)]
///     note: Option<String>,
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be asked as a form",
    label = "not a form",
    note = "derive it: `#[derive(Deserialize, JsonSchema, tool_runtime::Form)]` on a struct with named fields, each a string, \
            a number, a boolean or an enum of strings"
)]
pub trait Form: DeserializeOwned + JsonSchema + Send + 'static {}

/// A field MCP's forms can carry: `String`, `bool`, an integer or a float,
/// an enum of unit variants with `#[derive(Form)]` (one choice), a `Vec`
/// of such an enum (several choices), or an `Option` of any of these. What
/// `#[derive(Form)]` asks of each field of a struct.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a field a form can carry",
    label = "not a flat field",
    note = "a form is flat: each field is a `String`, a `bool`, an integer, a float, an enum of unit variants with \
            `#[derive(Form)]`, a `Vec` of such an enum (several choices), or an `Option` of one of these; ask for \
            anything nested in several questions, or as a string"
)]
pub trait FormField {}

/// An enum of unit variants a form offers as choices: what
/// `#[derive(Form)]` makes of such an enum.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an enum of choices",
    label = "not a choice",
    note = "derive `Form` on an enum of unit variants to offer its variants as choices"
)]
pub trait FormChoice {}

macro_rules! form_fields {
    ($($ty:ty),*) => { $(impl FormField for $ty {})* };
}
form_fields!(String, bool, i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, f32, f64);

impl<T: FormField> FormField for Option<T> {}
impl<T: FormChoice> FormField for Vec<T> {}

/// The formats of strings MCP's forms know; schemars' others are left out.
const STRING_FORMATS: [&str; 4] = ["email", "uri", "date", "date-time"];

/// The requested schema of a form of `T`: schemars' schema of it, inlined,
/// in the restricted shape of MCP's forms (see the [module docs](self)).
///
/// # Errors
///
/// What in the schema a form cannot carry, where `T`'s `JsonSchema` says
/// more than its fields' types (a `#[schemars(...)]` that nests).
pub(crate) fn requested_schema<T: Form>() -> Result<Value, String> {
    let mut settings = SchemaSettings::draft2020_12().for_deserialize();
    settings.inline_subschemas = true;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    restricted(&schema.to_value())
}

/// A struct's schema in the shape of a form.
fn restricted(root: &Value) -> Result<Value, String> {
    let properties = root.get("properties").and_then(Value::as_object).ok_or("a form is a struct with named fields")?;
    let mut out = Map::new();
    for (name, property) in properties {
        out.insert(name.clone(), field(name, property)?);
    }
    let required = root.get("required").cloned().unwrap_or_else(|| Value::Array(Vec::new()));
    Ok(serde_json::json!({"type": "object", "properties": out, "required": required}))
}

/// One property, its `null` alternative dropped (an `Option`).
fn field(name: &str, property: &Value) -> Result<Value, String> {
    let not_flat = || format!("the field `{name}` is not one a form can carry (a string, a number, a boolean or a choice)");
    let schema = without_null(property).ok_or_else(not_flat)?;
    let mut out = Map::new();
    for key in ["title", "description", "default"] {
        if let Some(value) = property.get(key).or_else(|| schema.get(key)) {
            out.insert(key.to_owned(), value.clone());
        }
    }
    if let Some(choices) = choices(schema) {
        out.insert("type".into(), "string".into());
        out.extend(choices);
        return Ok(Value::Object(out));
    }
    let keep = |out: &mut Map<String, Value>, keys: &[&str]| {
        for key in keys {
            if let Some(value) = schema.get(*key) {
                out.insert((*key).to_owned(), value.clone());
            }
        }
    };
    match kind(schema) {
        Some("string") => {
            out.insert("type".into(), "string".into());
            keep(&mut out, &["minLength", "maxLength"]);
            if let Some(format) = schema.get("format").and_then(Value::as_str).filter(|format| STRING_FORMATS.contains(format)) {
                out.insert("format".into(), format.into());
            }
        }
        Some(kind @ ("integer" | "number")) => {
            out.insert("type".into(), kind.into());
            keep(&mut out, &["minimum", "maximum"]);
        }
        Some("boolean") => {
            out.insert("type".into(), "boolean".into());
        }
        Some("array") => {
            let items = schema.get("items").and_then(choices).ok_or_else(not_flat)?;
            let items = match items.get("oneOf") {
                // Several choices with titles are `anyOf` in a form.
                Some(titled) => Map::from_iter([("anyOf".to_owned(), titled.clone())]),
                None => {
                    let mut plain = items;
                    plain.insert("type".into(), "string".into());
                    plain
                }
            };
            out.insert("type".into(), "array".into());
            out.insert("items".into(), Value::Object(items));
            keep(&mut out, &["minItems", "maxItems"]);
        }
        _ => return Err(not_flat()),
    }
    Ok(Value::Object(out))
}

/// The one type a schema names besides `null` (`type: "T"` or
/// `type: ["T", "null"]`, an `Option`'s).
fn kind(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(kind) => Some(kind),
        Value::Array(kinds) => {
            let mut named = kinds.iter().filter_map(Value::as_str).filter(|kind| *kind != "null");
            let (Some(only), None) = (named.next(), named.next()) else { return None };
            Some(only)
        }
        _ => None,
    }
}

/// A schema without the `null` that makes it optional where that is a
/// branch of its own: `anyOf: [S, {type: null}]` (`kind` reads a
/// `type: [T, "null"]`).
fn without_null(schema: &Value) -> Option<&Value> {
    if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
        let mut rest = branches.iter().filter(|branch| !crate::schema::is_null_schema(branch));
        let (Some(only), None) = (rest.next(), rest.next()) else { return None };
        return Some(only);
    }
    Some(schema)
}

/// The choices of an enum of strings: `enum` as it is (with the titles of
/// its values in `enumNames`, MCP's older way, where the schema gives them
/// one for each: `#[schemars(extend("enumNames" = [...]))]`), or, where the
/// variants have titles or descriptions, `oneOf` of `const` and `title`.
fn choices(schema: &Value) -> Option<Map<String, Value>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array)
        && values.iter().all(Value::is_string)
    {
        let mut choices = Map::from_iter([("enum".to_owned(), Value::Array(values.clone()))]);
        let names = schema.get("enumNames").and_then(Value::as_array);
        if let Some(names) = names.filter(|names| names.len() == values.len() && names.iter().all(Value::is_string)) {
            choices.insert("enumNames".to_owned(), Value::Array(names.clone()));
        }
        return Some(choices);
    }
    let branches = schema.get("oneOf").and_then(Value::as_array)?;
    let titled = branches.iter().map(|branch| {
        let value = branch.get("const").filter(|value| value.is_string()).or_else(|| {
            let values = branch.get("enum")?.as_array()?;
            (values.len() == 1).then(|| &values[0]).filter(|value| value.is_string())
        })?;
        let title = branch.get("title").or_else(|| branch.get("description")).unwrap_or(value);
        Some(serde_json::json!({"const": value, "title": title}))
    });
    Some(Map::from_iter([("oneOf".to_owned(), Value::Array(titled.collect::<Option<Vec<_>>>()?))]))
}

/// Whether `answer` fits the requested `schema` of a form: the problems,
/// worded as the model reads a schema's, when it does not.
pub(crate) fn check_answer(schema: &Value, answer: &Value) -> Result<(), String> {
    let validator = jsonschema::draft202012::new(schema).map_err(|error| format!("the form's schema does not compile: {error}"))?;
    match crate::validation::problems(&validator, answer) {
        problems if problems.is_empty() => Ok(()),
        problems => Err(problems.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    /// A colour.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code, reason = "only its schema is read")]
    enum Colour {
        Red,
        Green,
    }
    impl FormChoice for Colour {}
    impl FormField for Colour {}

    /// A size.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code, reason = "only its schema is read")]
    enum Size {
        /// Small
        S,
        /// Large
        L,
    }

    fn default_name() -> String {
        "John Doe".into()
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code, reason = "only its schema is read")]
    struct Profile {
        /// Your name.
        #[serde(default = "default_name")]
        name: String,
        /// Your email.
        #[schemars(email, length(max = 100))]
        email: String,
        /// Your age.
        age: Option<u8>,
        /// Subscribed.
        #[serde(default)]
        subscribed: bool,
        colour: Colour,
        size: Size,
        #[schemars(length(min = 1))]
        favourites: Vec<Colour>,
    }
    impl Form for Profile {}

    #[test]
    fn a_struct_s_schema_is_written_in_the_shape_of_a_form() {
        let schema = requested_schema::<Profile>().unwrap();
        let properties = &schema["properties"];
        assert_eq!(properties["name"], json!({"description": "Your name.", "default": "John Doe", "type": "string"}));
        assert_eq!(properties["email"], json!({"description": "Your email.", "type": "string", "maxLength": 100, "format": "email"}));
        assert_eq!(properties["age"]["type"], "integer");
        assert_eq!((properties["age"]["minimum"].clone(), properties["age"]["maximum"].clone()), (json!(0), json!(255)));
        assert_eq!(properties["subscribed"], json!({"description": "Subscribed.", "default": false, "type": "boolean"}));
        assert_eq!(properties["colour"], json!({"description": "A colour.", "type": "string", "enum": ["Red", "Green"]}));
        assert_eq!(properties["size"]["oneOf"], json!([{"const": "S", "title": "Small"}, {"const": "L", "title": "Large"}]));
        assert_eq!(properties["favourites"], json!({"type": "array", "items": {"enum": ["Red", "Green"], "type": "string"}, "minItems": 1}));
        assert_eq!(schema["required"], json!(["email", "colour", "size", "favourites"]));
    }

    #[test]
    fn an_answer_is_checked_against_the_form() {
        let schema = requested_schema::<Profile>().unwrap();
        let good = json!({"email": "a@b.c", "colour": "Red", "size": "S", "favourites": ["Green"]});
        assert_eq!(check_answer(&schema, &good), Ok(()));
        let bad = json!({"email": "a@b.c", "colour": "Blue", "size": "S", "favourites": []});
        let problems = check_answer(&schema, &bad).unwrap_err();
        assert!(problems.contains("/colour") && problems.contains("/favourites"), "{problems}");
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code, reason = "only its schema is read")]
    struct Legacy {
        #[schemars(extend("enumNames" = ["Rouge", "Vert"]))]
        colour: Colour,
        #[schemars(extend("enumNames" = ["Only one"]))]
        miscounted: Colour,
    }
    impl Form for Legacy {}

    #[test]
    fn the_titles_of_a_plain_enum_are_kept_as_enum_names_where_there_is_one_for_each_value() {
        let schema = requested_schema::<Legacy>().unwrap();
        assert_eq!(
            schema["properties"]["colour"],
            json!({"description": "A colour.", "type": "string", "enum": ["Red", "Green"], "enumNames": ["Rouge", "Vert"]})
        );
        assert_eq!(schema["properties"]["miscounted"].get("enumNames"), None);
    }

    #[test]
    fn a_nested_field_is_not_a_form() {
        let nested = json!({"properties": {"address": {"type": "object", "properties": {"street": {"type": "string"}}}}});
        assert!(restricted(&nested).unwrap_err().contains("`address`"));
    }
}

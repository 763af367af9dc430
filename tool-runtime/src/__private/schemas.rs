//! The schemas generated code builds: a tool's input from its parameters,
//! a whole input struct's, the output's from the return type, and a typed
//! failure's from the error type.

use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde_json::{Map, Value};

/// The input schema of a tool that takes its parameters one by one.
pub struct InputSchema {
    tool_doc: &'static str,
    properties: Map<String, Value>,
    required: Vec<Value>,
}

impl InputSchema {
    pub fn new(tool_doc: &'static str) -> Self {
        InputSchema { tool_doc, properties: Map::new(), required: Vec::new() }
    }

    /// Adds a property as schemars' derive would for a struct field.
    pub fn param<T: JsonSchema>(&mut self, generator: &mut SchemaGenerator, name: &'static str, doc: &'static str, default: Option<Option<Value>>) {
        let mut schema = generator.subschema_for::<T>();
        let description = param_description(self.tool_doc, name, doc);
        if !description.is_empty() {
            schema.insert("description".to_owned(), description.into());
        }
        if let Some(Some(value)) = &default {
            schema.insert("default".to_owned(), value.clone());
        }
        // schemars' own test for `Option`, so an alias of `Option` reads the same.
        if default.is_none() && !T::_schemars_private_is_option() {
            self.required.push(name.into());
        }
        self.properties.insert(name.to_owned(), schema.into());
    }

    pub fn finish(self) -> Schema {
        let mut map = Map::new();
        map.insert("type".to_owned(), "object".into());
        map.insert("properties".to_owned(), Value::Object(self.properties));
        map.insert("required".to_owned(), Value::Array(self.required));
        Schema::from(map)
    }
}

/// The description of a parameter: its own doc comment, else its entry in
/// the tool's `# Arguments` section.
pub fn param_description(tool_doc: &str, name: &str, doc: &str) -> String {
    let own = crate::docs::description(doc);
    if own.is_empty() { crate::docs::argument(tool_doc, name).unwrap_or_default() } else { own }
}

/// The schema of a whole input struct.
pub fn struct_schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    T::json_schema(generator)
}

/// `MaybeJson(&value).to_json()`: the default value for the schema when the
/// type is `Serialize`, nothing otherwise (the trick schemars uses).
pub struct MaybeJson<'a, T>(pub &'a T);

impl<T: Serialize> MaybeJson<'_, T> {
    pub fn to_json(&self) -> Option<Value> {
        serde_json::to_value(self.0).ok()
    }
}

pub trait NotJson {
    fn to_json(&self) -> Option<Value> {
        None
    }
}
impl<T> NotJson for MaybeJson<'_, T> {}

/// `(&OutputSchema::<R>::new()).get(generator)`: the schema of the success
/// type of `R` (`T` of a `Result<T, E>`), when it has one.
pub struct OutputSchema<R>(PhantomData<fn() -> R>);

impl<R> OutputSchema<R> {
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        OutputSchema(PhantomData)
    }
}

impl<T: JsonSchema, E> OutputSchema<Result<T, E>> {
    pub fn get(&self, generator: &mut SchemaGenerator) -> Option<Schema> {
        Some(T::json_schema(generator))
    }
}

pub trait PlainOutputSchema {
    fn get(&self, generator: &mut SchemaGenerator) -> Option<Schema>;
}
impl<T: JsonSchema> PlainOutputSchema for OutputSchema<T> {
    fn get(&self, generator: &mut SchemaGenerator) -> Option<Schema> {
        Some(T::json_schema(generator))
    }
}

pub trait NoOutputSchema {
    fn get(&self, generator: &mut SchemaGenerator) -> Option<Schema> {
        let _ = generator;
        None
    }
}
impl<T> NoOutputSchema for &OutputSchema<T> {}

/// `(&FailureSchema::<E>::new()).get(generator)`: the schema of the error
/// type `E` of a tool written `Result<T, E>`, when `E` is a typed failure
/// (the bounds of `FailureProbe`'s inherent method, so that a tool
/// advertises a schema exactly when its failures carry a value).
pub struct FailureSchema<E>(PhantomData<fn() -> E>);

impl<E> FailureSchema<E> {
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        FailureSchema(PhantomData)
    }
}

impl<E: JsonSchema + Serialize + Into<crate::ToolError>> FailureSchema<E> {
    pub fn get(&self, generator: &mut SchemaGenerator) -> Option<Schema> {
        Some(E::json_schema(generator))
    }
}

pub trait NoFailureSchema {
    fn get(&self, generator: &mut SchemaGenerator) -> Option<Schema> {
        let _ = generator;
        None
    }
}
impl<E> NoFailureSchema for &FailureSchema<E> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_schema_probe_sees_through_result() {
        let mut generator = SchemaGenerator::default();
        let schema = OutputSchema::<Result<String, std::io::Error>>::new().get(&mut generator);
        assert_eq!(schema.unwrap().as_value()["type"], "string");
        struct NoSchema;
        assert!((&OutputSchema::<NoSchema>::new()).get(&mut generator).is_none());
        assert!((&OutputSchema::<Result<NoSchema, String>>::new()).get(&mut generator).is_none());
        assert!(OutputSchema::<u8>::new().get(&mut generator).is_some());
    }
    #[test]
    fn failure_schema_probe_only_for_typed_failures() {
        #[derive(Serialize, JsonSchema)]
        #[allow(dead_code)]
        enum Typed {
            Gone,
        }
        impl From<Typed> for crate::ToolError {
            fn from(_: Typed) -> Self {
                crate::ToolError::not_found("GONE", "Gone.")
            }
        }
        #[derive(Serialize, JsonSchema)]
        struct NotToolError;
        let mut generator = SchemaGenerator::default();
        let schema = FailureSchema::<Typed>::new().get(&mut generator).unwrap();
        assert_eq!(schema.as_value()["enum"], serde_json::json!(["Gone"]));
        assert!((&FailureSchema::<NotToolError>::new()).get(&mut generator).is_none());
        assert!((&FailureSchema::<std::io::Error>::new()).get(&mut generator).is_none());
        assert!((&FailureSchema::<crate::ToolError>::new()).get(&mut generator).is_none());
    }

    #[test]
    fn maybe_json_only_for_serialize() {
        struct Opaque;
        assert_eq!(MaybeJson(&3u8).to_json(), Some(Value::from(3)));
        assert_eq!(MaybeJson(&Opaque).to_json(), None);
    }
}

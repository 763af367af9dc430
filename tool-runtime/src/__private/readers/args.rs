//! Reading a parsed argument object: one parameter at a time (`Args`), or
//! a whole input struct (`parse_struct`).

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde_json::{Map, Value};

use super::exact::{Exact, ExactObject};

/// The arguments of a call, read one parameter at a time. Borrowed: the
/// registry keeps the map (for an `ends_run` predicate and approvals)
/// without copying it.
pub struct Args<'a>(&'a Map<String, Value>);

impl<'a> Args<'a> {
    pub fn new(args: &'a Map<String, Value>) -> Self {
        Args(args)
    }

    /// A parameter without a default: `Option` reads a missing one as
    /// `None`, as serde does for struct fields.
    pub fn take<T: DeserializeOwned>(&mut self, name: &'static str) -> Result<T, serde_json::Error> {
        match self.get(name) {
            Some(value) => T::deserialize(Exact(value)).map_err(|err| at_field(name, err)),
            None => T::deserialize(MissingField(name)),
        }
    }

    /// A parameter with a default.
    pub fn take_or_else<T: DeserializeOwned>(
        &mut self,
        name: &'static str,
        default: impl FnOnce() -> T,
    ) -> Result<T, serde_json::Error> {
        match self.get(name) {
            Some(value) => T::deserialize(Exact(value)).map_err(|err| at_field(name, err)),
            None => Ok(default()),
        }
    }
}

impl Args<'_> {
    /// A tool's few arguments are found faster by comparing names than by
    /// hashing them (the map's hasher is SipHash).
    fn get(&self, name: &str) -> Option<&Value> {
        if self.0.len() <= 8 {
            self.0.iter().rev().find_map(|(key, value)| (key == name).then_some(value))
        } else {
            self.0.get(name)
        }
    }
}

fn at_field(name: &str, err: serde_json::Error) -> serde_json::Error {
    de::Error::custom(format_args!("{name}: {err}"))
}

/// Deserialises a missing field: `None` for options, an error otherwise.
pub(crate) struct MissingField(pub(crate) &'static str);

impl<'de> Deserializer<'de> for MissingField {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::missing_field(self.0))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_none()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// Deserialises a whole input struct.
pub fn parse_struct<T: DeserializeOwned>(args: &Map<String, Value>) -> Result<T, serde_json::Error> {
    T::deserialize(ExactObject(args)).map_err(|err| {
        // Parsed again, tracking the path, only to say where it failed: the
        // model reads `amount: invalid value...` as for a parameter.
        match serde_path_to_error::deserialize::<_, T>(ExactObject(args)) {
            Err(tracked) if !tracked.path().to_string().is_empty() && tracked.path().to_string() != "." => {
                de::Error::custom(format_args!("{}: {}", tracked.path(), tracked.inner()))
            }
            _ => err,
        }
    })
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[test]
    fn a_wrong_value_deep_in_a_derived_struct_names_its_path() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Input {
            address: Address,
        }
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Address {
            floors: Vec<u8>,
        }
        let value: Value = serde_json::from_str(r#"{"address":{"floors":[1,2.0,-0.0,256.0]}}"#).unwrap();
        let err = parse_struct::<Input>(value.as_object().unwrap()).unwrap_err();
        assert_eq!(err.to_string(), "address.floors[3]: invalid value: integer `256`, expected u8");
    }

    #[test]
    fn a_missing_option_is_none_and_a_missing_value_is_an_error() {
        let empty = Map::new();
        let mut args = Args::new(&empty);
        assert_eq!(args.take::<Option<String>>("a").unwrap(), None);
        let err = args.take::<String>("b").unwrap_err();
        assert!(err.to_string().contains("missing field `b`"), "{err}");
    }

    #[test]
    fn a_default_fills_a_missing_parameter() {
        let empty = Map::new();
        let mut args = Args::new(&empty);
        assert_eq!(args.take_or_else("n", || 7u32).unwrap(), 7);
    }

    #[test]
    fn a_wrong_value_in_a_derived_struct_names_the_field() {
        #[derive(Debug, serde::Deserialize)]
        struct Input {
            #[allow(dead_code)]
            amount: u32,
        }
        let mut map = Map::new();
        map.insert("amount".into(), Value::from(4_294_967_296u64));
        let err = parse_struct::<Input>(&map).unwrap_err();
        assert!(err.to_string().starts_with("amount: invalid value: integer `4294967296`"), "{err}");
    }

    #[test]
    fn a_wrong_type_names_the_parameter() {
        let mut map = Map::new();
        map.insert("n".into(), "seven".into());
        let err = Args::new(&map).take::<u32>("n").unwrap_err();
        assert!(err.to_string().starts_with("n: invalid type"), "{err}");
    }
}

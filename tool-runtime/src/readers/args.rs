//! A tool's input, read one parameter at a time from either source of
//! arguments (`Args`), or as a whole input struct.

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde_json::{Map, Value};

use super::exact::{Exact, ExactObject};
use super::fields::{Cursor, TextFields, parse_struct_text, read_raw};
use crate::validation::Properties;

/// The arguments of a call, read one parameter at a time: the one reader
/// of a `#[tool]`'s input, over either source. Borrowed: the registry keeps
/// what they came from (for an `ends_run` predicate and approvals).
///
/// - The model's text (`Args::text`), for tools whose schema makes text
///   exact: read a key at a time while the keys come in the parameters'
///   order, else split into its fields and looked up. A value that does not
///   read gives an error the registry does not show: it reads the arguments
///   again as a parsed value, which words the error.
/// - The validated object ([`Args::new`]): numbers read exactly (integral
///   floats as integers), errors naming the parameter.
pub struct Args<'a>(Source<'a>);

enum Source<'a> {
    Object(&'a Map<String, Value>),
    Text(Text<'a>),
}

/// Text arguments, as far as they were read.
struct Text<'a> {
    text: &'a str,
    /// The schema's properties: the keys a whole struct may have, and the
    /// constraints a value's text must meet.
    properties: Option<&'a Properties>,
    /// Reading in order: where the next key is. `None` once a key came out
    /// of order, and the fields were split.
    cursor: Option<Cursor<'a>>,
    /// Boxed: made only for keys out of order, and it keeps `Args` small.
    fields: Option<Box<TextFields<'a>>>,
    /// How many keys the parameters found.
    read: usize,
    /// Read whole, as one input struct.
    whole: bool,
}

impl<'a> Args<'a> {
    /// The arguments as a validated object.
    pub fn new(args: &'a Map<String, Value>) -> Self {
        Args(Source::Object(args))
    }

    /// The arguments as text; `None` when it is not an object. Read it with
    /// [`read_whole`](Self::read_whole).
    #[inline]
    pub(crate) fn text(text: &'a str, properties: Option<&'a Properties>) -> Option<Self> {
        let cursor = Cursor::open(text)?;
        Some(Args(Source::Text(Text { text, properties, cursor: Some(cursor), fields: None, read: 0, whole: false })))
    }

    /// `parse` applied to these arguments, when it read every key of the
    /// text: a key twice, or a key that is no parameter, is left unread, and
    /// the input to the value path (which words the error).
    #[inline]
    pub(crate) fn read_whole<T>(mut self, parse: impl FnOnce(&mut Self) -> Result<T, serde_json::Error>) -> Option<T> {
        let input = parse(&mut self).ok()?;
        match &mut self.0 {
            Source::Object(_) => Some(input),
            Source::Text(text) => text.all_read().then_some(input),
        }
    }

    /// A parameter without a default: `Option` reads a missing one as
    /// `None`, as serde does for struct fields. `name` is the parameter's
    /// name as `#[tool]` writes it: a Rust identifier, which holds nothing
    /// a JSON key would escape (the text reader relies on it).
    pub fn take<T: DeserializeOwned>(&mut self, name: &'static str) -> Result<T, serde_json::Error> {
        match &mut self.0 {
            Source::Object(map) => match get(map, name) {
                Some(value) => T::deserialize(Exact(value)).map_err(|err| at_field(name, err)),
                None => T::deserialize(MissingField(name)),
            },
            Source::Text(text) => match text.take(name)? {
                Some(value) => Ok(value),
                None => T::deserialize(MissingField(name)),
            },
        }
    }

    /// A parameter with a default.
    pub fn take_or_else<T: DeserializeOwned>(&mut self, name: &'static str, default: impl FnOnce() -> T) -> Result<T, serde_json::Error> {
        match &mut self.0 {
            Source::Object(map) => match get(map, name) {
                Some(value) => T::deserialize(Exact(value)).map_err(|err| at_field(name, err)),
                None => Ok(default()),
            },
            Source::Text(text) => Ok(text.take(name)?.unwrap_or_else(default)),
        }
    }

    /// The whole input struct (a derived one, or `Input<T>`'s `T`).
    pub fn parse_struct<T: DeserializeOwned>(&mut self) -> Result<T, serde_json::Error> {
        match &mut self.0 {
            Source::Object(map) => parse_struct(map),
            Source::Text(text) => {
                // Checked whole, against the properties: their names, then
                // the constraints of each value's text.
                text.whole = true;
                if let Some(checked) = checked(text.properties) {
                    let fields = TextFields::split(text.text).ok_or_else(unread)?;
                    for name in checked.checked_names() {
                        if let Some(raw) = fields.get(name) {
                            admitted(checked, name, raw)?;
                        }
                    }
                }
                parse_struct_text(text.text, text.properties.map(Properties::names)).ok_or_else(unread)
            }
        }
    }
}

impl<'a> Text<'a> {
    /// The value of `name`, `None` when the text has no such key. A value
    /// its property's constraints refuse is left to the value path.
    fn take<T: DeserializeOwned>(&mut self, name: &str) -> Result<Option<T>, serde_json::Error> {
        if let Some(cursor) = &mut self.cursor {
            let mut next = *cursor;
            match next.next_key_is(name) {
                Ok(Some(true)) => {
                    let before = next;
                    let value = next.value::<T>().ok_or_else(unread)?;
                    if let Some(checked) = checked(self.properties) {
                        admitted(checked, name, before.read_up_to(&next))?;
                    }
                    (*cursor, self.read) = (next, self.read + 1);
                    return Ok(Some(value));
                }
                // Past the last key: the parameter is missing.
                Ok(None) => return Ok(None),
                Ok(Some(false)) => {}
                Err(()) => return Err(unread()),
            }
        }
        // A key out of order: the rest is looked up in the split fields.
        self.cursor = None;
        let fields = match &mut self.fields {
            Some(fields) => fields,
            empty => empty.insert(Box::new(TextFields::split(self.text).ok_or_else(unread)?)),
        };
        match fields.get(name) {
            Some(raw) => {
                self.read += 1;
                let value = read_raw(raw).ok_or_else(unread)?;
                if let Some(checked) = checked(self.properties) {
                    admitted(checked, name, raw)?;
                }
                Ok(Some(value))
            }
            None => Ok(None),
        }
    }

    /// Whether the parameters read every key.
    fn all_read(&mut self) -> bool {
        match (&mut self.cursor, &self.fields) {
            _ if self.whole => true,
            (Some(cursor), _) => matches!(cursor.next_key(), Ok(None)),
            (None, Some(fields)) => self.read == fields.len(),
            (None, None) => false,
        }
    }
}

/// A tool's few arguments are found faster by comparing names than by
/// hashing them (the map's hasher is SipHash).
fn get<'m>(map: &'m Map<String, Value>, name: &str) -> Option<&'m Value> {
    if map.len() <= 8 { map.iter().rev().find_map(|(key, value)| (key == name).then_some(value)) } else { map.get(name) }
}

/// `properties`, where some value's text must meet its property's
/// constraints (`None` for most tools: nothing to check).
fn checked(properties: Option<&Properties>) -> Option<&Properties> {
    properties.filter(|properties| properties.any_checked())
}

/// `raw`, the text of `name`'s value, against its property's constraints:
/// a value they refuse is left to the value path, which words why.
fn admitted(checked: &Properties, name: &str, raw: &str) -> Result<(), serde_json::Error> {
    if checked.admits(name, raw) { Ok(()) } else { Err(unread()) }
}

/// Text the reader leaves to the value path (never shown to the model).
fn unread() -> serde_json::Error {
    de::Error::custom("left to the value path")
}

fn at_field(name: &str, err: serde_json::Error) -> serde_json::Error {
    de::Error::custom(format_args!("{name}: {err}"))
}

/// Deserialises a missing field: `None` for options, an error otherwise.
struct MissingField(&'static str);

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

/// Deserialises a whole input struct from a validated object.
pub(crate) fn parse_struct<T: DeserializeOwned>(args: &Map<String, Value>) -> Result<T, serde_json::Error> {
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
        let text = Args::text("{}", None).unwrap();
        assert_eq!(text.read_whole(|args| args.take_or_else("n", || 7u32)), Some(7));
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

//! Reading a parsed value as serde_json does, except that an integral
//! float is read as the integer it is where the type wants an integer.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

/// A parsed argument value, read as serde_json reads a `&Value` except
/// where an integer is expected: there an integral float is read as the
/// integer it is (`normalize::integer_of`), `-0.0` as `0` included, and
/// one at or beyond the edges of 64 bits is refused as out of range. Where
/// a float is expected, or any value, the number is read as it is, so
/// `-0.0` keeps its sign.
///
/// The registry rewrites integral floats in the arguments beforehand
/// (`normalize::integers_from_integral_floats`), for types that read any
/// value, but not `-0.0`: only the type says whether it wants an integer
/// or a float there. Nested values are read through serde_json's own
/// `SeqAccess` and `MapAccess` (so keys, lengths and errors are its own),
/// with each element or value read as an `Exact` in their place.
#[derive(Clone, Copy)]
pub(super) struct Exact<'de>(pub(super) &'de Value);

/// An integral float at or beyond the edges of 64 bits.
const BEYOND_64_BITS: de::Unexpected<'static> =
    de::Unexpected::Other("an integer beyond what arguments hold exactly (-9223372036854775808 to 18446744073709551615)");

/// `Exact`'s integer methods, one per integer type.
macro_rules! exact_integers {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
                match self.0 {
                    Value::Number(number) if number.is_f64() => match crate::normalize::integer_of(number) {
                        Some(integer) => Value::Number(integer).$method(visitor),
                        None if number.as_f64().is_some_and(|float| float.fract() == 0.0) => {
                            Err(de::Error::invalid_value(BEYOND_64_BITS, &visitor))
                        }
                        None => self.0.$method(visitor),
                    },
                    other => other.$method(visitor),
                }
            }
        )*
    };
}

/// `Exact`'s methods that read the value as serde_json does.
macro_rules! exact_as_is {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
                self.0.$method(visitor)
            }
        )*
    };
}

/// `Exact`'s methods that hand `visitor` on wrapped in `Nested`, one per
/// method, with the method's arguments before the visitor.
macro_rules! exact_nested {
    ($($method:ident($($arg:ident: $ty:ty),*))*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, serde_json::Error> {
                self.0.$method($($arg,)* Nested::new(self.0, visitor))
            }
        )*
    };
}

impl<'de> Deserializer<'de> for Exact<'de> {
    type Error = serde_json::Error;

    // Containers, any value, and bytes (which serde_json reads from a list
    // too): serde_json's own, with each element read as an `Exact`.
    exact_nested! {
        deserialize_any() deserialize_seq() deserialize_tuple(len: usize)
        deserialize_tuple_struct(name: &'static str, len: usize) deserialize_map()
        deserialize_struct(name: &'static str, fields: &'static [&'static str])
        deserialize_enum(name: &'static str, variants: &'static [&'static str])
        deserialize_bytes() deserialize_byte_buf()
    }

    exact_integers! {
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, serde_json::Error> {
        visitor.visit_newtype_struct(self)
    }

    // Scalars other than integers, read as serde_json reads them.
    exact_as_is! {
        deserialize_bool deserialize_f32 deserialize_f64 deserialize_char deserialize_str deserialize_string
        deserialize_unit deserialize_identifier deserialize_ignored_any
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_unit_struct(name, visitor)
    }
}

/// The root object of the arguments, read as an [`Exact`] object (as
/// serde_json reads a `&Map`: as a map, whatever is asked).
pub(super) struct ExactObject<'de>(pub(super) &'de Map<String, Value>);

impl<'de> Deserializer<'de> for ExactObject<'de> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_any(Nested { values: NestedValues::Object(self.0), visitor })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_enum(name, variants, Nested { values: NestedValues::Object(self.0), visitor })
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_ignored_any(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct identifier
    }
}

/// The array or object a [`Nested`] visitor reads from, walked beside
/// serde_json's own access to it.
#[derive(Clone, Copy)]
enum NestedValues<'de> {
    Array(&'de [Value]),
    Object(&'de Map<String, Value>),
    Other,
}

/// The visitor of an [`Exact`] value's container: forwards every visit,
/// and hands the visitor serde_json's access to the elements, entries or
/// enum payload with each value read as an [`Exact`].
struct Nested<'de, V> {
    values: NestedValues<'de>,
    visitor: V,
}

impl<'de, V> Nested<'de, V> {
    fn new(value: &'de Value, visitor: V) -> Self {
        let values = match value {
            Value::Array(items) => NestedValues::Array(items),
            Value::Object(map) => NestedValues::Object(map),
            _ => NestedValues::Other,
        };
        Nested { values, visitor }
    }
}

/// Forwards `Visitor` methods to the wrapped visitor.
macro_rules! forward_visits {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            fn $method<E: de::Error>(self, $($arg: $ty),*) -> Result<Self::Value, E> {
                self.visitor.$method($($arg),*)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Nested<'de, V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.visitor.expecting(formatter)
    }

    forward_visits! {
        visit_bool(v: bool);
        visit_i64(v: i64);
        visit_i128(v: i128);
        visit_u64(v: u64);
        visit_u128(v: u128);
        visit_f64(v: f64);
        visit_str(v: &str);
        visit_borrowed_str(v: &'de str);
        visit_string(v: String);
        visit_bytes(v: &[u8]);
        visit_borrowed_bytes(v: &'de [u8]);
        visit_byte_buf(v: Vec<u8>);
        visit_unit();
        visit_none();
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.visitor.visit_some(deserializer)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.visitor.visit_newtype_struct(deserializer)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        let items = match self.values {
            NestedValues::Array(items) => items.iter(),
            _ => [].iter(),
        };
        self.visitor.visit_seq(NestedSeq { seq, items })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let entries = match self.values {
            NestedValues::Object(object) => Some(object.values()),
            _ => None,
        };
        self.visitor.visit_map(NestedMap { map, entries, value: None })
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        // An enum is a variant's name, or an object of one key: its payload.
        let payload = match self.values {
            NestedValues::Object(object) if object.len() == 1 => object.values().next(),
            _ => None,
        };
        self.visitor.visit_enum(NestedEnum { data, payload })
    }
}

/// The error of an [`Exact`] read, as the access's own.
fn relay<E: de::Error>(err: serde_json::Error) -> E {
    E::custom(err)
}

/// serde_json's access to an array, each element read as an [`Exact`].
struct NestedSeq<'de, A> {
    seq: A,
    items: std::slice::Iter<'de, Value>,
}

impl<'de, A: de::SeqAccess<'de>> de::SeqAccess<'de> for NestedSeq<'de, A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, A::Error> {
        // Both walk the same array; serde_json's skips what this one reads.
        match (self.seq.next_element::<de::IgnoredAny>()?, self.items.next()) {
            (Some(_), Some(item)) => seed.deserialize(Exact(item)).map(Some).map_err(relay),
            _ => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.seq.size_hint()
    }
}

/// serde_json's access to an object (its keys read by serde_json, which
/// also reads numbers from keys), each value read as an [`Exact`].
struct NestedMap<'de, A> {
    map: A,
    entries: Option<serde_json::map::Values<'de>>,
    value: Option<&'de Value>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for NestedMap<'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        self.value = self.entries.as_mut().and_then(Iterator::next);
        self.map.next_key_seed(seed)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        match self.value.take() {
            // serde_json's access skips the value this one reads.
            Some(value) => {
                self.map.next_value::<de::IgnoredAny>()?;
                seed.deserialize(Exact(value)).map_err(relay)
            }
            None => self.map.next_value_seed(seed),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// serde_json's access to an enum, a newtype, tuple or struct variant's
/// payload read as an [`Exact`].
struct NestedEnum<'de, A> {
    data: A,
    payload: Option<&'de Value>,
}

impl<'de, A: de::EnumAccess<'de>> de::EnumAccess<'de> for NestedEnum<'de, A> {
    type Error = A::Error;
    type Variant = NestedVariant<'de, A::Variant>;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self::Variant), A::Error> {
        let (value, variant) = self.data.variant_seed(seed)?;
        Ok((value, NestedVariant { variant, payload: self.payload }))
    }
}

struct NestedVariant<'de, A> {
    variant: A,
    payload: Option<&'de Value>,
}

impl<'de, A: de::VariantAccess<'de>> de::VariantAccess<'de> for NestedVariant<'de, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.variant.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        match self.payload {
            Some(payload) => seed.deserialize(Exact(payload)).map_err(relay),
            None => self.variant.newtype_variant_seed(seed),
        }
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        match self.payload {
            // serde_json reads `[]` as a unit: nothing in it to read exactly.
            Some(payload @ Value::Array(items)) if !items.is_empty() => Exact(payload).deserialize_seq(visitor).map_err(relay),
            _ => self.variant.tuple_variant(len, visitor),
        }
    }

    fn struct_variant<V: Visitor<'de>>(self, fields: &'static [&'static str], visitor: V) -> Result<V::Value, A::Error> {
        match self.payload {
            Some(payload @ Value::Object(_)) => Exact(payload).deserialize_map(visitor).map_err(relay),
            _ => self.variant.struct_variant(fields, visitor),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde::de::DeserializeOwned;

    use super::*;
    use crate::__private::Args;
    use crate::readers::args::parse_struct;

    /// What `T` reads from `value` on the full path, and what serde_json
    /// reads from it, as results with the error's text.
    fn exact_and_plain<T: DeserializeOwned>(value: &Value) -> (Result<T, String>, Result<T, String>) {
        (T::deserialize(Exact(value)).map_err(|err| err.to_string()), T::deserialize(value).map_err(|err| err.to_string()))
    }

    #[test]
    fn minus_zero_is_a_float_where_a_float_is_expected_and_zero_where_an_integer_is() {
        #[derive(Debug, Deserialize, PartialEq)]
        struct Both {
            ratio: f64,
            count: i64,
            counts: Vec<u8>,
            by_key: std::collections::BTreeMap<u32, i32>,
            wide: Option<i128>,
        }
        let value: Value = serde_json::from_str(r#"{"ratio":-0.0,"count":-0,"counts":[-0.0,2.0],"by_key":{"7":-0.0},"wide":-0}"#).unwrap();
        let both = Both::deserialize(Exact(&value)).unwrap();
        assert!(both.ratio == 0.0 && both.ratio.is_sign_negative(), "{both:?}");
        assert_eq!((both.count, both.counts, both.wide), (0, vec![0, 2], Some(0)));
        assert_eq!(both.by_key.into_iter().collect::<Vec<_>>(), [(7, 0)], "keys are read as serde_json reads them");
        let parsed = parse_struct::<Both>(value.as_object().unwrap()).unwrap();
        assert!(parsed.ratio.is_sign_negative() && parsed.count == 0, "{parsed:?}");
        let mut args = Args::new(value.as_object().unwrap());
        assert!(args.take::<f64>("ratio").unwrap().is_sign_negative());
        assert_eq!(args.take::<u32>("count").unwrap(), 0);

        #[derive(Debug, Deserialize, PartialEq)]
        enum Shape {
            Side(u8),
            Pair(u8, f32),
            Box { side: u16, skew: f64 },
        }
        for (text, expected) in [
            (r#"{"Side":-0.0}"#, Shape::Side(0)),
            (r#"{"Pair":[4.0,-0.0]}"#, Shape::Pair(4, -0.0)),
            (r#"{"Box":{"side":-0,"skew":-0.0}}"#, Shape::Box { side: 0, skew: -0.0 }),
        ] {
            let shape = Shape::deserialize(Exact(&serde_json::from_str(text).unwrap())).unwrap();
            assert_eq!(shape, expected, "{text}");
            assert_eq!(format!("{shape:?}"), format!("{expected:?}"), "{text}: the sign of -0.0");
        }
    }

    #[test]
    fn integral_floats_beyond_64_bits_are_out_of_range_for_every_integer() {
        for text in ["-9223372036854775809", "-9223372036854775808.0", "18446744073709551616", "1e20"] {
            let value: Value = serde_json::from_str(text).unwrap();
            let err = i64::deserialize(Exact(&value)).unwrap_err().to_string();
            assert!(err.starts_with("invalid value: an integer beyond what arguments hold exactly"), "{text}: {err}");
            assert!(i128::deserialize(Exact(&value)).is_err() && u128::deserialize(Exact(&value)).is_err(), "{text}");
            assert!(f64::deserialize(Exact(&value)).is_ok(), "{text} is a float to a float");
        }
        let edge = |text: &str| serde_json::from_str::<Value>(text).unwrap();
        assert_eq!(i128::deserialize(Exact(&edge("-9223372036854775808"))).unwrap(), i128::from(i64::MIN));
        assert_eq!(u128::deserialize(Exact(&edge("18446744073709551615"))).unwrap(), u128::from(u64::MAX));
        assert_eq!(i64::deserialize(Exact(&edge("-9223372036854774784.0"))).unwrap(), -9_223_372_036_854_774_784);
        assert_eq!(u8::deserialize(Exact(&edge("300.0"))).unwrap_err().to_string(), "invalid value: integer `300`, expected u8");
    }

    #[test]
    fn the_full_path_reader_reads_everything_else_as_serde_json_does() {
        #[derive(Debug, Deserialize, PartialEq)]
        #[serde(deny_unknown_fields)]
        struct Inner {
            name: String,
            #[serde(default)]
            tags: Vec<String>,
        }
        #[derive(Debug, Deserialize, PartialEq)]
        enum Kind {
            Unit,
            New(Inner),
            Tuple(u8, u8),
        }
        for text in [
            r#"{"name":"a","tags":["x"]}"#,
            r#"{"name":"a","other":1}"#,
            r#"{"name":1}"#,
            r#"["a",["x","y"]]"#,
            r#"["a",["x"],3]"#,
            r#"[]"#,
            r#""x""#,
            "null",
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            let (exact, plain) = exact_and_plain::<Inner>(&value);
            assert_eq!(exact, plain, "{text}");
            let (exact, plain) = exact_and_plain::<Option<Inner>>(&value);
            assert_eq!(exact, plain, "{text}");
        }
        for text in [
            r#""Unit""#,
            r#"{"Unit":null}"#,
            r#""Nope""#,
            r#"{"New":{"name":"a"}}"#,
            r#"{"New":{"name":"a"},"Unit":null}"#,
            r#"{}"#,
            r#"{"Tuple":[1,2]}"#,
            r#"{"Tuple":[1]}"#,
            r#"{"Tuple":[]}"#,
            r#"{"Tuple":7}"#,
            r#""Tuple""#,
            "3",
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            let (exact, plain) = exact_and_plain::<Kind>(&value);
            assert_eq!(exact, plain, "{text}");
        }
        for text in [r#"{"a":1,"b":[true,null,"x",2.5,-3]}"#, "-0.0", "5.0", r#"[1.0,{"x":-0}]"#] {
            let value: Value = serde_json::from_str(text).unwrap();
            let (exact, plain) = exact_and_plain::<Value>(&value);
            assert_eq!(exact, plain, "{text}: any JSON is read as it is");
        }
        let value: Value = serde_json::from_str(r#"{"1":true,"x":false}"#).unwrap();
        let (exact, plain) = exact_and_plain::<std::collections::BTreeMap<u32, bool>>(&value);
        assert_eq!(exact, plain);
        assert!(exact.is_err());
    }
}

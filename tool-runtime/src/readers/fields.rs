//! Reading the argument text directly, without a parsed value: a key at a
//! time in the text's order (`Cursor`), or the object split into its keys
//! and the raw text of each value (`TextFields`, `read_raw`); plain scalars
//! by `Scalar`; or a whole input struct (`parse_struct_text`).

use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, Visitor};

/// A cursor over the argument object's text, reading it a key at a time
/// and each value straight into its parameter's type: the way
/// [`Args`](super::Args) reads text whose keys come in the parameters'
/// order (as models send them). Nothing is allocated but what the values
/// hold.
#[derive(Clone, Copy)]
pub(crate) struct Cursor<'a> {
    text: &'a str,
    pos: usize,
    first: bool,
}

impl<'a> Cursor<'a> {
    /// At the start of an object.
    pub(crate) fn open(text: &'a str) -> Option<Self> {
        let pos = skip_whitespace(text.as_bytes(), 0);
        (text.as_bytes().get(pos) == Some(&b'{')).then_some(Cursor { text, pos: pos + 1, first: true })
    }

    /// The next key, or `None` past the object's end (with nothing after
    /// it). `Err` when the text is not as expected.
    #[allow(clippy::result_unit_err)]
    pub(crate) fn next_key(&mut self) -> Result<Option<&'a str>, ()> {
        let Some(quote) = self.key_quote()? else { return Ok(None) };
        let (start, end) = plain_string(self.text.as_bytes(), quote).ok_or(())?;
        self.past_colon(end + 1)?;
        // Between two ASCII quotes, so on character boundaries.
        self.text.get(start..end).map(Some).ok_or(())
    }

    /// Whether the next key is `name` (read past it, as by
    /// [`next_key`](Self::next_key), either way), or `None` past the
    /// object's end. The key is compared with `name` where it stands: no
    /// key is cut out of the text. `name` holds nothing a key's text would
    /// escape (a parameter's name is a Rust identifier), so a key that
    /// matches it byte for byte, up to its closing quote, is `name`; a key
    /// written with an escape never matches, and is left to the full path.
    #[allow(clippy::result_unit_err)]
    pub(crate) fn next_key_is(&mut self, name: &str) -> Result<Option<bool>, ()> {
        debug_assert!(!name.bytes().any(|byte| ENDS_KEY[usize::from(byte)]), "a key name a key's text would escape: {name:?}");
        let Some(quote) = self.key_quote()? else { return Ok(None) };
        let bytes = self.text.as_bytes();
        let is_name = spelled_at(bytes, quote + 1, name.as_bytes());
        let end = if is_name { quote + 1 + name.len() } else { plain_string(bytes, quote).ok_or(())?.1 };
        self.past_colon(end + 1)?;
        Ok(Some(is_name))
    }

    /// Where the next key's opening quote is, past the separator before
    /// it; `None` past the object's end (with nothing after it).
    fn key_quote(&mut self) -> Result<Option<usize>, ()> {
        let bytes = self.text.as_bytes();
        let pos = skip_whitespace(bytes, self.pos);
        let first = std::mem::take(&mut self.first);
        match bytes.get(pos) {
            Some(b'}') => {
                self.pos = skip_whitespace(bytes, pos + 1);
                if self.pos == bytes.len() { Ok(None) } else { Err(()) }
            }
            Some(b',') if !first => Ok(Some(skip_whitespace(bytes, pos + 1))),
            Some(b'"') if first => Ok(Some(pos)),
            _ => Err(()),
        }
    }

    /// Past the colon after a key that ends before `pos`.
    fn past_colon(&mut self, pos: usize) -> Result<(), ()> {
        let pos = skip_whitespace(self.text.as_bytes(), pos);
        if self.text.as_bytes().get(pos) != Some(&b':') {
            return Err(());
        }
        self.pos = pos + 1;
        Ok(())
    }

    /// The value after the last key, read as a `T`: a plain scalar (a
    /// string without escapes, `true`/`false`, a non-negative integer,
    /// `null` for an `Option`) by [`Scalar`], anything else by serde_json.
    pub(crate) fn value<T: DeserializeOwned>(&mut self) -> Option<T> {
        let mut scalar = Scalar { text: self.text, pos: skip_whitespace(self.text.as_bytes(), self.pos) };
        if let Ok(value) = T::deserialize(&mut scalar) {
            self.pos = scalar.pos;
            return Some(value);
        }
        let mut values = serde_json::Deserializer::from_str(&self.text[self.pos..]).into_iter::<T>();
        let value = values.next()?.ok()?;
        self.pos += values.byte_offset();
        Some(value)
    }

    /// The text read between this cursor and `later`, a copy of it moved on
    /// past a value: that value's text.
    pub(crate) fn read_up_to(&self, later: &Cursor<'a>) -> &'a str {
        &self.text[skip_whitespace(self.text.as_bytes(), self.pos)..later.pos]
    }
}

/// The argument object's text, split in one pass into its keys and the
/// raw text of each value, for [`Args`](super::Args) to read a parameter
/// at a time when the keys do not come in the parameters' order. Up to
/// eight fields are held inline, with no allocation.
///
/// The registry reads text this way only for tools whose schema makes it
/// exact (`validation::text_exact`): the parameters' types then refuse
/// whatever the value path would read otherwise (a `null` it would drop, a
/// `5.0` it would read as an integer, nesting past the depth limit).
/// Conservative: a key with an escape and anything malformed stop it here;
/// a repeated key or one that is not a parameter stops it once the
/// parameters are read (`Args` counts the fields it read). The registry
/// then takes the value path, which words the error.
pub(crate) struct TextFields<'a> {
    text: &'a str,
    inline: [Field; INLINE],
    len: usize,
    /// The fields past the first eight.
    more: Vec<Field>,
}

/// Where a field's key and value are in the text: `[key start, key end,
/// value start, value end]` (the text is at most 4 GiB: the guard's byte
/// limit is far below).
type Field = [u32; 4];

const INLINE: usize = 8;

impl<'a> TextFields<'a> {
    /// Splits `text`, an object; `None` when it is not one as expected.
    pub(crate) fn split(text: &'a str) -> Option<Self> {
        let bytes = text.as_bytes();
        let mut fields = TextFields { text, inline: [[0; 4]; INLINE], len: 0, more: Vec::new() };
        if u32::try_from(bytes.len()).is_err() {
            return None;
        }
        let mut pos = skip_whitespace(bytes, 0);
        if bytes.get(pos) != Some(&b'{') {
            return None;
        }
        pos = skip_whitespace(bytes, pos + 1);
        if bytes.get(pos) == Some(&b'}') {
            return (skip_whitespace(bytes, pos + 1) == bytes.len()).then_some(fields);
        }
        loop {
            let (key_start, key_end) = plain_string(bytes, pos)?;
            pos = skip_whitespace(bytes, key_end + 1);
            if bytes.get(pos) != Some(&b':') {
                return None;
            }
            let start = skip_whitespace(bytes, pos + 1);
            let end = value_end(bytes, start)?;
            // Positions within the text, which fits `u32`.
            fields.push([key_start, key_end, start, end].map(|at| at as u32));
            pos = skip_whitespace(bytes, end);
            match bytes.get(pos) {
                Some(b',') => pos = skip_whitespace(bytes, pos + 1),
                Some(b'}') => return (skip_whitespace(bytes, pos + 1) == bytes.len()).then_some(fields),
                _ => return None,
            }
        }
    }

    fn push(&mut self, field: Field) {
        match self.inline.get_mut(self.len) {
            Some(slot) => *slot = field,
            None => self.more.push(field),
        }
        self.len += 1;
    }

    /// How many fields the object has.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The raw text of the first value of `name`, if the object has that key.
    pub(crate) fn get(&self, name: &str) -> Option<&'a str> {
        let inline = &self.inline[..self.len.min(INLINE)];
        let at = |start: u32, end: u32| self.text.get(start as usize..end as usize);
        // Keys and values start and end at ASCII bytes: on character boundaries.
        inline
            .iter()
            .chain(&self.more)
            .find_map(|&[key_start, key_end, start, end]| (at(key_start, key_end)? == name).then(|| at(start, end)).flatten())
    }
}

/// Where the value starting at `pos` ends, found without reading it: a
/// string after its closing quote, an array or an object after its
/// matching bracket (outside strings), anything else before the next `,`,
/// `}`, `]` or whitespace. The value is then read, and checked, whole by its
/// parameter's type ([`read_raw`]), so malformed text fails there.
fn value_end(bytes: &[u8], pos: usize) -> Option<usize> {
    match *bytes.get(pos)? {
        b'"' => return Some(string_end(bytes, pos)? + 1),
        b'[' | b'{' => {}
        _ => {
            let end = bytes[pos..].iter().position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))?;
            return (end > 0).then_some(pos + end);
        }
    }
    let mut depth = 0usize;
    let mut at = pos;
    loop {
        match *bytes.get(at)? {
            b'"' => at = string_end(bytes, at)?,
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            _ => {}
        }
        at += 1;
    }
}

/// The position of the closing quote of the string whose opening quote is
/// at `pos`.
fn string_end(bytes: &[u8], pos: usize) -> Option<usize> {
    let mut at = pos + 1;
    loop {
        at += memchr::memchr2(b'"', b'\\', bytes.get(at..)?)?;
        if bytes[at] == b'"' {
            return Some(at);
        }
        at += 2;
    }
}

/// A value's raw text read as a `T`: a plain scalar (a string without
/// escapes, `true`/`false`, a non-negative integer, `null` for an
/// `Option`) by [`Scalar`], anything else by serde_json. `None` when it
/// does not read, or does not read whole.
pub(crate) fn read_raw<T: DeserializeOwned>(raw: &str) -> Option<T> {
    let mut scalar = Scalar { text: raw, pos: 0 };
    if let Ok(value) = T::deserialize(&mut scalar)
        && scalar.pos == raw.len()
    {
        return Some(value);
    }
    serde_json::from_str(raw).ok()
}

/// Reads the plainest JSON scalars at a position, for [`Cursor::value`] and [`read_raw`]:
/// a string without escapes or control characters, `true` and `false`, a
/// non-negative integer in `u64` written without fraction or exponent, and
/// `null` for an `Option`. It refuses everything else (a `Fallback`), and
/// the value is read by serde_json. What it reads it reads as serde_json
/// would, calling the same visitor methods (`tests/slow/agreement.rs` and the
/// fuzz target compare the two paths); what follows the value is checked
/// by the cursor, or by [`read_raw`] (as serde_json's `from_str` checks it).
struct Scalar<'a> {
    text: &'a str,
    pos: usize,
}

/// Not a scalar [`Scalar`] reads: serde_json reads it.
#[derive(Debug)]
struct Fallback;

impl std::fmt::Display for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("left to serde_json")
    }
}

impl std::error::Error for Fallback {}

impl de::Error for Fallback {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Fallback
    }
}

impl<'a> Scalar<'a> {
    /// Consumes `word` when the text goes on with it. (Inlined: each
    /// `word` is a constant of a few bytes, compared in place, where the
    /// function on its own called `memcmp`.)
    #[inline]
    fn eat(&mut self, word: &str) -> bool {
        let found = self.text.as_bytes()[self.pos..].starts_with(word.as_bytes());
        if found {
            self.pos += word.len();
        }
        found
    }

    /// A non-negative integer: digits without a leading zero, not followed
    /// by a fraction or an exponent, within `u64`.
    fn unsigned(&mut self) -> Result<u64, Fallback> {
        let bytes = &self.text.as_bytes()[self.pos..];
        let digits = bytes.iter().position(|b| !b.is_ascii_digit()).unwrap_or(bytes.len());
        if digits == 0 || (digits > 1 && bytes[0] == b'0') || matches!(bytes.get(digits), Some(b'.' | b'e' | b'E')) {
            return Err(Fallback);
        }
        let mut value: u64 = 0;
        for &digit in &bytes[..digits] {
            value = value.checked_mul(10).and_then(|v| v.checked_add(u64::from(digit - b'0'))).ok_or(Fallback)?;
        }
        self.pos += digits;
        Ok(value)
    }

    /// A string's contents, when it has no escape or control character.
    fn plain_str(&mut self) -> Result<&'a str, Fallback> {
        let (start, end) = plain_string(self.text.as_bytes(), self.pos).ok_or(Fallback)?;
        self.pos = end + 1;
        // Between two ASCII quotes, so on character boundaries.
        self.text.get(start..end).ok_or(Fallback)
    }
}

/// `Scalar`'s integer methods, one per integer type.
macro_rules! scalar_integers {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fallback> {
                visitor.visit_u64(self.unsigned()?)
            }
        )*
    };
}

impl<'de> Deserializer<'de> for &mut Scalar<'de> {
    type Error = Fallback;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Fallback> {
        Err(Fallback)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fallback> {
        if self.eat("true") {
            visitor.visit_bool(true)
        } else if self.eat("false") {
            visitor.visit_bool(false)
        } else {
            Err(Fallback)
        }
    }

    // Every integer type: serde_json, too, gives a non-negative integer
    // to any of them as `visit_u64`, and the visitor checks the range.
    scalar_integers! {
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fallback> {
        visitor.visit_borrowed_str(self.plain_str()?)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fallback> {
        visitor.visit_borrowed_str(self.plain_str()?)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fallback> {
        if self.eat("null") { visitor.visit_none() } else { visitor.visit_some(self) }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, Fallback> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        i128 u128 f32 f64 char bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// The string starting with the quote at `pos`, when it holds no escape
/// and no control character (those are left to serde_json, or to the full
/// path): the positions of its first byte and of its closing quote.
fn plain_string(bytes: &[u8], pos: usize) -> Option<(usize, usize)> {
    if bytes.get(pos) != Some(&b'"') {
        return None;
    }
    let start = pos + 1;
    let mut end = start;
    while let Some(&byte) = bytes.get(end) {
        if ENDS_KEY[usize::from(byte)] {
            break;
        }
        end += 1;
    }
    (bytes.get(end) == Some(&b'"')).then_some((start, end))
}

/// Whether the text at `start` is `name` and a closing quote: then the
/// key is `name`, which holds nothing a key's text would escape.
///
/// Compared byte by byte: slices' `==` calls `memcmp`, which for the few
/// bytes of a name costs more than the comparison.
fn spelled_at(bytes: &[u8], start: usize, name: &[u8]) -> bool {
    let spelled = bytes.get(start..start + name.len()).is_some_and(|spelled| spelled.iter().zip(name).all(|(byte, wanted)| byte == wanted));
    spelled && bytes.get(start + name.len()) == Some(&b'"')
}

/// The bytes that end a key or string the cursor reads: a quote, and what it leaves
/// to the full path (a backslash, a control character).
const ENDS_KEY: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = true;
        byte += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// The position of the first byte at or after `pos` that is not JSON
/// whitespace.
fn skip_whitespace(bytes: &[u8], mut pos: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(pos) {
        pos += 1;
    }
    pos
}

/// Deserialises a whole input struct straight from the argument text;
/// `None` when it does not parse or has a key not among `properties` (the
/// schema's closed root: a derived struct may ignore unknown fields). The
/// registry then takes the path that words the error. `properties` is
/// `None` for text that passed before.
pub fn parse_struct_text<T: DeserializeOwned>(text: &str, properties: Option<&[Box<str>]>) -> Option<T> {
    if let Some(properties) = properties {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        deserializer.deserialize_map(KnownKeys(properties)).ok()?;
    }
    serde_json::from_str(text).ok()
}

/// Visits an object's keys, failing at the first that is not known.
struct KnownKeys<'n>(&'n [Box<str>]);

impl<'de> Visitor<'de> for KnownKeys<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(index) = map.next_key_seed(FieldIndex(self.0))? {
            if index.is_none() {
                return Err(de::Error::custom("unknown field"));
            }
            map.next_value::<de::IgnoredAny>()?;
        }
        Ok(())
    }
}

/// A key, as its index among the names (`None` when it is none of them).
struct FieldIndex<'n>(&'n [Box<str>]);

impl<'de> DeserializeSeed<'de> for FieldIndex<'_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for FieldIndex<'_> {
    type Value = Option<usize>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().position(|name| &**name == key))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;
    use crate::__private::Args;

    /// The reading of `text` as `(a: u32, b: Option<String>)`, as a tool's
    /// generated parse does it.
    fn read_text(text: &str) -> Option<(u32, Option<String>)> {
        let schema = serde_json::json!({"properties": {"a": {"type": "integer"}, "b": {"type": ["string", "null"]}}});
        let properties = crate::validation::Properties::of(&schema, true);
        Args::text(text, Some(&properties))?.read_whole(|args| Ok((args.take::<u32>("a")?, args.take::<Option<String>>("b")?)))
    }

    #[test]
    fn nested_and_escaped_values_are_split_whole() {
        let text = r#"{"list": ["a,b", "c\"]d", [1, {"x": "}"}]], "obj": {"k": [true]}, "s": "q\"}", "n": -1.5e3}"#;
        let fields = TextFields::split(text).unwrap();
        assert_eq!(fields.get("list"), Some(r#"["a,b", "c\"]d", [1, {"x": "}"}]]"#));
        assert_eq!(fields.get("obj"), Some(r#"{"k": [true]}"#));
        assert_eq!(fields.get("s"), Some(r#""q\"}""#));
        assert_eq!(fields.get("n"), Some("-1.5e3"));
        assert_eq!(read_raw::<String>(fields.get("s").unwrap()), Some("q\"}".to_owned()));
        assert_eq!(read_raw::<f64>(fields.get("n").unwrap()), Some(-1500.0));
        // Malformed values split, and then fail to read.
        let fields = TextFields::split(r#"{"a": [1}, "b": tru}"#).unwrap();
        assert_eq!(read_raw::<Vec<u32>>(fields.get("a").unwrap()), None);
        assert_eq!(read_raw::<bool>(fields.get("b").unwrap()), None);
        for text in [r#"{"a": "open}"#, r#"{"a": [1, 2}"#, r#"{"a": }"#, r#"{"a": 1"#] {
            assert!(TextFields::split(text).is_none(), "{text}");
        }
    }

    #[test]
    fn the_fast_path_reads_objects_in_any_spacing() {
        assert_eq!(read_text(r#"{"a":1,"b":"x"}"#), Some((1, Some("x".into()))));
        assert_eq!(read_text(" {\n \"b\" :\t\"x\" ,\r\n \"a\" : 7 } \n"), Some((7, Some("x".into()))));
        assert_eq!(read_text(r#"{"a":1}"#), Some((1, None)), "a missing option is None");
        assert_eq!(read_text(r#"{"a":1,"b":"\u00e9\n"}"#), Some((1, Some("é\n".into()))), "escapes in values");
        assert_eq!(read_text(r#"{"a":1,"b":null}"#), Some((1, None)));
    }

    #[test]
    fn the_fast_path_leaves_everything_else_to_the_full_path() {
        for text in [
            r#"{"b":"x"}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a":1,"b":"x","a":2}"#,
            r#"{"b":"x","a":1,"b":"y"}"#,
            r#"{"b":"x","c":1,"a":1}"#,
            r#"{"a":1,"c":2}"#,
            r#"{"\u0061":1}"#,
            r#"{"a" 1}"#,
            r#"{"a":1 "b":"x"}"#,
            r#"{"a":1,}"#,
            r#"{"a":1} {}"#,
            // Cut off before the closing brace.
            &r#"{"a":1}"#[..6],
            r#"{"a":"1"}"#,
            r#"{"a":5.0}"#,
            r#"{"a":1e1}"#,
            r#"{"a":-1}"#,
            r#"{"a":null}"#,
            "{\"a\":1,\"b\":\"x\ny\"}",
            "{\"a\n\":1}",
            "\u{feff}{\"a\":1}",
            "[1]",
            "",
            "null",
        ] {
            assert_eq!(read_text(text), None, "{text:?}");
        }
    }

    #[test]
    fn a_key_is_the_name_only_when_it_is_spelled_whole_and_unescaped() {
        let is = |text: &str, name: &str| Cursor::open(text).unwrap().next_key_is(name);
        assert_eq!(is(r#"{"ab" : 1}"#, "ab"), Ok(Some(true)));
        assert_eq!(is(r#"{"abc": 1}"#, "ab"), Ok(Some(false)), "a longer key");
        assert_eq!(is(r#"{"a": 1}"#, "ab"), Ok(Some(false)), "a shorter key");
        assert_eq!(is(r#"{"ba": 1}"#, "ab"), Ok(Some(false)), "another key of the same length");
        assert_eq!(is(r#"{"ac": 1}"#, "ab"), Ok(Some(false)), "one that differs in its last byte");
        assert_eq!(is(r#"{"a\u0062": 1}"#, "ab"), Err(()), "an escaped key is left to the full path");
        assert_eq!(is(r#"{"\u0061b": 1}"#, "ab"), Err(()));
        assert_eq!(is(r#"{"a\"b": 1}"#, "a"), Err(()));
        assert_eq!(is(r#"{"ab" 1}"#, "ab"), Err(()), "no colon");
        assert_eq!(is(&r#"{"ab": 1}"#[..4], "ab"), Err(()), "cut off");
        assert_eq!(is("{ }", "ab"), Ok(None));
        // Past the key either way, at its value.
        let mut cursor = Cursor::open(r#"{"ab": 1, "c": 2}"#).unwrap();
        assert_eq!(cursor.next_key_is("ab"), Ok(Some(true)));
        assert_eq!(cursor.value::<u32>(), Some(1));
        assert_eq!(cursor.next_key_is("b"), Ok(Some(false)));
        assert_eq!(cursor.value::<u32>(), Some(2));
        assert_eq!(cursor.next_key_is("c"), Ok(None));
    }

    /// What `Scalar` makes of `text` as a `T`, beside serde_json's reading
    /// of the same value: equal whenever `Scalar` reads it, with the same
    /// bytes consumed. Returns whether `Scalar` read it.
    fn scalar_agrees<T: DeserializeOwned + PartialEq + std::fmt::Debug>(text: &str) -> bool {
        let mut scalar = Scalar { text, pos: 0 };
        let Ok(fast) = T::deserialize(&mut scalar) else { return false };
        let mut values = serde_json::Deserializer::from_str(text).into_iter::<T>();
        let full = values.next().and_then(Result::ok);
        assert_eq!(Some(&fast), full.as_ref(), "{text:?} as {}", std::any::type_name::<T>());
        assert_eq!(scalar.pos, values.byte_offset(), "{text:?} as {}", std::any::type_name::<T>());
        true
    }

    #[test]
    fn the_scalar_reader_reads_plain_scalars_as_serde_json_does() {
        #[derive(Debug, Deserialize, PartialEq)]
        struct Id(u32);
        assert!(scalar_agrees::<String>(r#""héllo wörld""#));
        assert!(scalar_agrees::<String>(r#""""#));
        assert!(scalar_agrees::<bool>("true,"));
        assert!(scalar_agrees::<bool>("false}"));
        assert!(scalar_agrees::<u32>("0"));
        assert!(scalar_agrees::<u32>("4294967295 "));
        assert!(scalar_agrees::<i64>("9223372036854775807}"));
        assert!(scalar_agrees::<u64>("18446744073709551615"));
        assert!(scalar_agrees::<Option<u32>>("null"));
        assert!(scalar_agrees::<Option<String>>(r#""x""#));
        assert!(scalar_agrees::<Id>("7"));
        // Left to serde_json: escapes, control characters, signs, fractions,
        // exponents, leading zeros, out-of-range values, other types.
        for text in [
            r#""a\nb""#,
            "\"a\tb\"",
            r#""\u00e9""#,
            r#""open"#,
            "-1",
            "-0",
            "+1",
            "1.0",
            "1e2",
            "1E2",
            "01",
            "18446744073709551616",
            "tru",
            "nul",
            "[1]",
            "{}",
        ] {
            assert!(!scalar_agrees::<String>(text), "{text:?}");
            assert!(!scalar_agrees::<u64>(text) && !scalar_agrees::<i32>(text) && !scalar_agrees::<bool>(text), "{text:?}");
        }
        assert!(!scalar_agrees::<u8>("256"), "out of range for the type");
        assert!(!scalar_agrees::<f64>("1"), "floats are serde_json's");
        assert!(!scalar_agrees::<char>(r#""c""#));
        assert!(!scalar_agrees::<Vec<u32>>("[1]"));
    }

    #[test]
    fn a_derived_input_read_from_text_refuses_unknown_keys() {
        #[derive(Debug, Deserialize, PartialEq)]
        struct Input {
            a: u32,
        }
        let properties: Box<[Box<str>]> = Box::new(["a".into()]);
        assert_eq!(parse_struct_text::<Input>(r#"{"a":1}"#, Some(&properties)), Some(Input { a: 1 }));
        assert_eq!(parse_struct_text::<Input>(r#"{"a":1,"b":2}"#, Some(&properties)), None, "serde would ignore `b`");
        assert_eq!(parse_struct_text::<Input>(r#"{"a":1.0}"#, Some(&properties)), None);
        assert_eq!(parse_struct_text::<Input>(r#"{"a":1,"b":2}"#, None), Some(Input { a: 1 }), "checked before");
    }
}

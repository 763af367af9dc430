//! Helpers for the code `#[tool]` and `tools!` generate. Not a public API.

use std::future::Future;
use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Serialize;
use serde_json::{Map, Value};

pub use schemars;
pub use serde;
pub use serde_json;

pub use crate::context::{CallState, Ctx, StepView};
pub use crate::policy::{PolicyKind, Verdict};
pub use crate::definition::{
    Annotations, BoxError, CallFuture, EndsRun, Failure, ParsedFrom, PolicyFuture, Tool, ToolMeta, ToolOutput,
};
pub use core::time::Duration;

/// The name of a tool, for the duplicate check of `tools!`.
pub trait Named {
    const NAME: &'static str;
}

/// Fails the build (in `tools!`) when two tools share a name, naming it.
///
/// Runs in the compiler's const evaluator, which has a step budget: names
/// are hashed and sorted (O(n log n)) rather than compared pairwise, so a
/// list of thousands of tools stays cheap.
#[track_caller]
pub const fn assert_unique_names<const N: usize>(names: [&str; N]) {
    let mut keys = [(0u64, 0usize); N];
    let mut i = 0;
    while i < N {
        keys[i] = (fnv1a(names[i]), i);
        i += 1;
    }
    heapsort(&mut keys);
    let mut i = 1;
    while i < N {
        // Equal hashes are neighbours; compare the names of the whole run.
        let mut j = i;
        while j > 0 && keys[j - 1].0 == keys[i].0 {
            if str_eq(names[keys[j - 1].1], names[keys[i].1]) {
                duplicate(names[keys[i].1]);
            }
            j -= 1;
        }
        i += 1;
    }
}

#[track_caller]
const fn duplicate(name: &str) -> ! {
    // A const fn cannot format, so the message is assembled by hand.
    let mut buffer = [0u8; 256];
    let mut len = push(&mut buffer, 0, "tools![...] lists the tool `");
    len = push(&mut buffer, len, name);
    len = push(&mut buffer, len, "` twice; list each tool once");
    match core::str::from_utf8(buffer.split_at(len).0) {
        Ok(message) => panic!("{}", message),
        Err(_) => panic!("tools![...] lists the same tool twice; list each tool once"),
    }
}

const fn fnv1a(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

const fn heapsort<const N: usize>(keys: &mut [(u64, usize); N]) {
    let mut start = N / 2;
    while start > 0 {
        start -= 1;
        sift_down(keys, start, N);
    }
    let mut end = N;
    while end > 1 {
        end -= 1;
        let first = keys[0];
        keys[0] = keys[end];
        keys[end] = first;
        sift_down(keys, 0, end);
    }
}

const fn sift_down<const N: usize>(keys: &mut [(u64, usize); N], mut root: usize, end: usize) {
    loop {
        let mut child = 2 * root + 1;
        if child >= end {
            return;
        }
        if child + 1 < end && keys[child].0 < keys[child + 1].0 {
            child += 1;
        }
        if keys[root].0 >= keys[child].0 {
            return;
        }
        let parent = keys[root];
        keys[root] = keys[child];
        keys[child] = parent;
        root = child;
    }
}

/// Appends `text` to `buffer[len..]`, as much as fits (a name cut inside
/// a char fails `from_utf8`, and the message without the name is used).
const fn push(buffer: &mut [u8; 256], mut len: usize, text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() && len < buffer.len() {
        buffer[len] = bytes[i];
        len += 1;
        i += 1;
    }
    len
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A type usable as a tool parameter. Generated code goes through its
/// functions, spanned on the parameter's type, so a type that is not
/// `Deserialize + JsonSchema` fails once, there, with this message.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool parameter",
    label = "not `Deserialize + JsonSchema`",
    note = "a tool parameter must implement `serde::Deserialize` and `schemars::JsonSchema`: add `#[derive(Deserialize, JsonSchema)]` to the type"
)]
pub trait ToolParam: Sized {
    /// Adds the parameter to the input schema.
    fn add_to(
        schema: &mut InputSchema,
        generator: &mut SchemaGenerator,
        name: &'static str,
        doc: &'static str,
        default: Option<Option<Value>>,
    );

    /// Reads the parameter from the arguments.
    fn take_from(args: &mut Args<'_>, name: &'static str) -> Result<Self, serde_json::Error>;

    /// Reads the parameter from the arguments, or its default.
    fn take_or_else_from(
        args: &mut Args<'_>,
        name: &'static str,
        default: impl FnOnce() -> Self,
    ) -> Result<Self, serde_json::Error>;

    /// Reads the parameter's value at the cursor; `None` when it does not
    /// parse.
    fn read(fields: &mut Fields<'_>) -> Option<Self>;

    /// The parameter when the text leaves it out: `None` unless it is an
    /// `Option`, as serde reads struct fields.
    fn missing() -> Option<Self>;
}
// No supertraits: each would be reported on its own, without this message.
#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned + JsonSchema> ToolParam for T {
    fn add_to(
        schema: &mut InputSchema,
        generator: &mut SchemaGenerator,
        name: &'static str,
        doc: &'static str,
        default: Option<Option<Value>>,
    ) {
        schema.param::<T>(generator, name, doc, default);
    }

    fn take_from(args: &mut Args<'_>, name: &'static str) -> Result<T, serde_json::Error> {
        args.take::<T>(name)
    }

    fn take_or_else_from(
        args: &mut Args<'_>,
        name: &'static str,
        default: impl FnOnce() -> T,
    ) -> Result<T, serde_json::Error> {
        args.take_or_else::<T>(name, default)
    }

    fn read(fields: &mut Fields<'_>) -> Option<T> {
        fields.value::<T>()
    }

    fn missing() -> Option<T> {
        T::deserialize(MissingField("")).ok()
    }
}

/// `#[tool(default)]` on a parameter: its type's `Default`.
#[diagnostic::on_unimplemented(
    message = "`#[tool(default)]` needs a default value, but `{Self}` does not implement `Default`",
    label = "`{Self}` has no `Default`",
    note = "derive or implement `Default` for `{Self}`, or give the value: `#[tool(default = expr)]`"
)]
pub trait DefaultParam: Sized {
    fn default_param() -> Self;
}
#[diagnostic::do_not_recommend]
impl<T: Default> DefaultParam for T {
    fn default_param() -> Self {
        T::default()
    }
}

/// The struct of an `Input<T>` tool.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's input",
    label = "not `Deserialize + JsonSchema`",
    note = "the struct in `Input<T>` must implement `serde::Deserialize` and `schemars::JsonSchema`: add `#[derive(Deserialize, JsonSchema)]` to it"
)]
pub trait ToolInput: Sized {
    fn schema(generator: &mut SchemaGenerator) -> Schema;
    fn parse(args: &Map<String, Value>) -> Result<Self, serde_json::Error>;
    fn parse_text(text: &str, properties: Option<&[Box<str>]>) -> Option<Self>;
}
#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned + JsonSchema> ToolInput for T {
    fn schema(generator: &mut SchemaGenerator) -> Schema {
        struct_schema::<T>(generator)
    }

    fn parse(args: &Map<String, Value>) -> Result<T, serde_json::Error> {
        parse_struct::<T>(args)
    }

    fn parse_text(text: &str, properties: Option<&[Box<str>]>) -> Option<T> {
        parse_struct_text::<T>(text, properties)
    }
}

/// What a tool returns on success.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's output",
    label = "not `Serialize`",
    note = "a tool returns a type that implements `serde::Serialize` (and `schemars::JsonSchema` for an output schema): add `#[derive(Serialize, JsonSchema)]` to it"
)]
pub trait ToolReturn {
    fn to_output(self, ends_run: bool) -> Result<ToolOutput, Failure>;
}
// `'static` costs nothing: a tool's output comes out of a `'static` future.
#[diagnostic::do_not_recommend]
impl<T: Serialize + 'static> ToolReturn for T {
    fn to_output(self, ends_run: bool) -> Result<ToolOutput, Failure> {
        output(self, ends_run)
    }
}

/// The first parameter, read as the context.
#[diagnostic::on_unimplemented(
    message = "the first parameter is read as the tool's context, but `{Self}` is not `tool_runtime::Ctx<{App}>`",
    label = "not the runtime's `Ctx`",
    note = "write the context as `Ctx<App>` with `tool_runtime::Ctx`; a tool's inputs come after it"
)]
pub trait CtxParam<App>: Sized {
    fn from_ctx(ctx: Ctx<App>) -> Self;
}
impl<App> CtxParam<App> for Ctx<App> {
    fn from_ctx(ctx: Ctx<App>) -> Self {
        ctx
    }
}

/// A first parameter written `Ctx` without its app type, which only
/// compiles when `Ctx` is an alias: the macro needs the app type written.
#[diagnostic::on_unimplemented(
    message = "`#[tool]` reads the app type from the context's type as written: write `{Self}` here, not an alias",
    label = "write `{Self}`",
    note = "a tool whose first parameter is `Ctx<App>` implements the tool for `Registry<App>`, with `App` as written"
)]
pub trait CtxAppWritten {
    const CHECKED: () = ();
}
/// Nothing implements `CtxAppWritten` (this impl only keeps rustc from
/// calling the trait unimplementable).
pub enum NoApp {}
#[diagnostic::do_not_recommend]
impl CtxAppWritten for NoApp {}

/// A parameter written as `Input<T>`, taking the whole input as one struct.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is read as the whole input, but it is not `tool_runtime::Input<T>`",
    label = "not the runtime's `Input`",
    note = "take a whole input struct as `Input<T>` from `tool_runtime`, with `T: Deserialize + JsonSchema`"
)]
pub trait InputParam: Sized {
    type Inner;
    fn wrap(inner: Self::Inner) -> Self;
}
impl<T> InputParam for crate::Input<T> {
    type Inner = T;
    fn wrap(inner: T) -> Self {
        crate::Input(inner)
    }
}

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

/// The fast path of a `#[tool]`'s parse: the argument object's text read
/// in one pass, a key at a time, each value straight into its parameter's
/// type (`ToolParam::read`). Nothing is allocated but what the values hold.
///
/// The registry takes it only for tools whose schema makes it exact
/// (`validation::text_exact`): the parameters' types then refuse whatever
/// the full path would read otherwise (a `null` it would drop, a `5.0` it
/// would read as an integer, nesting past the depth limit). Conservative:
/// a key with an escape, a repeated or unknown key and anything malformed
/// stop it, and the registry takes the full path, which words the error.
///
/// Generic code stays per parameter type, not per tool: a tool's own
/// generated code is one `match` on the keys.
pub struct Fields<'a> {
    text: &'a str,
    pos: usize,
    first: bool,
}

impl<'a> Fields<'a> {
    /// At the start of an object.
    pub fn open(text: &'a str) -> Option<Self> {
        let pos = skip_whitespace(text.as_bytes(), 0);
        (text.as_bytes().get(pos) == Some(&b'{')).then_some(Fields { text, pos: pos + 1, first: true })
    }

    /// The next key, or `None` past the object's end (with nothing after
    /// it). `Err` when the text is not as expected.
    #[allow(clippy::result_unit_err)]
    pub fn next_key(&mut self) -> Result<Option<&'a str>, ()> {
        let bytes = self.text.as_bytes();
        let mut pos = skip_whitespace(bytes, self.pos);
        let first = std::mem::take(&mut self.first);
        match bytes.get(pos) {
            Some(b'}') => {
                pos = skip_whitespace(bytes, pos + 1);
                self.pos = pos;
                return if pos == bytes.len() { Ok(None) } else { Err(()) };
            }
            Some(b',') if !first => pos = skip_whitespace(bytes, pos + 1),
            Some(b'"') if first => {}
            _ => return Err(()),
        }
        let (start, end) = plain_string(bytes, pos).ok_or(())?;
        pos = skip_whitespace(bytes, end + 1);
        if bytes.get(pos) != Some(&b':') {
            return Err(());
        }
        self.pos = pos + 1;
        // Between two ASCII quotes, so on character boundaries.
        self.text.get(start..end).map(Some).ok_or(())
    }

    /// The value after the last key, read as a `T`: a plain scalar (a
    /// string without escapes, `true`/`false`, a non-negative integer,
    /// `null` for an `Option`) by [`Scalar`], anything else by serde_json.
    pub fn value<T: DeserializeOwned>(&mut self) -> Option<T> {
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
}

/// Reads the plainest JSON scalars at a position, for [`Fields::value`]:
/// a string without escapes or control characters, `true` and `false`, a
/// non-negative integer in `u64` written without fraction or exponent, and
/// `null` for an `Option`. It refuses everything else (a `Fallback`), and
/// the value is read by serde_json. What it reads it reads as serde_json
/// would, calling the same visitor methods (`tests/agreement.rs` and the
/// fuzz target compare the two paths); what follows the value is checked
/// by the cursor, as for serde_json's.
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
    /// Consumes `word` when the text goes on with it.
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
        if self.eat("null") {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
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

/// A parsed argument value, read as serde_json reads a `&Value` except
/// where an integer is expected: there an integral float is read as the
/// integer it is (`validation::integer_of`), `-0.0` as `0` included, and
/// one at or beyond the edges of 64 bits is refused as out of range. Where
/// a float is expected, or any value, the number is read as it is, so
/// `-0.0` keeps its sign.
///
/// The registry rewrites integral floats in the arguments beforehand
/// (`validation::integers_from_integral_floats`), for types that read any
/// value, but not `-0.0`: only the type says whether it wants an integer
/// or a float there. Nested values are read through serde_json's own
/// `SeqAccess` and `MapAccess` (so keys, lengths and errors are its own),
/// with each element or value read as an `Exact` in their place.
#[derive(Clone, Copy)]
struct Exact<'de>(&'de Value);

/// An integral float at or beyond the edges of 64 bits.
const BEYOND_64_BITS: de::Unexpected<'static> =
    de::Unexpected::Other("an integer beyond what arguments hold exactly (-9223372036854775808 to 18446744073709551615)");

/// `Exact`'s integer methods, one per integer type.
macro_rules! exact_integers {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
                match self.0 {
                    Value::Number(number) if number.is_f64() => match crate::validation::integer_of(number) {
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

impl<'de> Deserializer<'de> for Exact<'de> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_any(Nested::new(self.0, visitor))
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

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_seq(Nested::new(self.0, visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_tuple(len, Nested::new(self.0, visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_tuple_struct(name, len, Nested::new(self.0, visitor))
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_map(Nested::new(self.0, visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_struct(name, fields, Nested::new(self.0, visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_enum(name, variants, Nested::new(self.0, visitor))
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_bytes(Nested::new(self.0, visitor))
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_byte_buf(Nested::new(self.0, visitor))
    }

    // Scalars other than integers, read as serde_json reads them.
    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_bool(visitor)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_f32(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_f64(visitor)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_char(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_str(visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_string(visitor)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_unit(visitor)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_unit_struct(name, visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_identifier(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        self.0.deserialize_ignored_any(visitor)
    }
}

/// The root object of the arguments, read as an [`Exact`] object (as
/// serde_json reads a `&Map`: as a map, whatever is asked).
struct ExactObject<'de>(&'de Map<String, Value>);

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
    pub fn param<T: JsonSchema>(
        &mut self,
        generator: &mut SchemaGenerator,
        name: &'static str,
        doc: &'static str,
        default: Option<Option<Value>>,
    ) {
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

/// `Returned(value).into_result()`: a `Result` return keeps its error, any
/// other return is a success.
pub struct Returned<R>(pub R);

impl<T, E> Returned<Result<T, E>> {
    pub fn into_result(self) -> Result<T, Failure>
    where
        E: ToolErrorType,
    {
        self.0.map_err(ToolErrorType::into_failure)
    }
}

/// The error type of a tool that returns `Result<T, E>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's error type",
    label = "not `std::error::Error + Send + Sync + 'static`",
    note = "return `ToolError` for errors the model should read, or any type that implements `std::error::Error + Send + Sync + 'static` for failures the model reads as a generic internal error"
)]
pub trait ToolErrorType {
    fn into_failure(self) -> Failure;
}
#[diagnostic::do_not_recommend]
impl<E: Into<BoxError>> ToolErrorType for E {
    fn into_failure(self) -> Failure {
        Failure::from_error(self)
    }
}

pub trait PlainReturn<T> {
    fn into_result(self) -> Result<T, Failure>;
}
impl<T> PlainReturn<T> for Returned<T> {
    fn into_result(self) -> Result<T, Failure> {
        Ok(self.0)
    }
}

/// Serialises a tool's output. A `String` or a `Value` is moved as it is,
/// not copied through the serialiser.
pub fn output<T: Serialize + 'static>(value: T, ends_run: bool) -> Result<ToolOutput, Failure> {
    let mut slot = Some(value);
    let any: &mut dyn std::any::Any = &mut slot;
    let value = if let Some(text) = any.downcast_mut::<Option<String>>() {
        Value::String(text.take().unwrap_or_default())
    } else if let Some(value) = any.downcast_mut::<Option<Value>>() {
        value.take().unwrap_or_default()
    } else {
        serde_json::to_value(&slot).map_err(|err| Failure::Internal(Box::new(err)))?
    };
    Ok(ToolOutput { value, ends_run })
}

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

/// What a policy predicate may return: a verdict, or a result of one.
#[diagnostic::on_unimplemented(
    message = "a policy predicate must return `Verdict` or `Result<Verdict, E>`, sync or async, not `{Self}`",
    label = "returns `{Self}`",
    note = "write it as `fn(&Input, &Ctx<App>) -> Verdict` (or `async fn`)"
)]
pub trait IntoVerdict {
    fn into_verdict(self) -> Result<Verdict, BoxError>;
}
impl IntoVerdict for Verdict {
    fn into_verdict(self) -> Result<Verdict, BoxError> {
        Ok(self)
    }
}
impl<E: Into<BoxError>> IntoVerdict for Result<Verdict, E> {
    fn into_verdict(self) -> Result<Verdict, BoxError> {
        self.map_err(Into::into)
    }
}

/// `PolicyProbe(predicate(input, ctx)).into_policy()`: boxes the result of
/// a sync or an async predicate.
pub struct PolicyProbe<T>(pub T);

impl<F> PolicyProbe<F>
where
    F: Future + Send,
    F::Output: IntoVerdict,
{
    pub fn into_policy<'a>(self) -> PolicyFuture<'a>
    where
        F: 'a,
    {
        Box::pin(async move { self.0.await.into_verdict() })
    }
}

/// The sync case, and the fallback for any other return type, so that a
/// wrong one is reported as `IntoVerdict`, with its message.
pub trait SyncPolicy {
    type Returned;
    fn into_policy<'a>(self) -> PolicyFuture<'a>
    where
        Self::Returned: IntoVerdict;
}
impl<T> SyncPolicy for PolicyProbe<T> {
    type Returned = T;
    fn into_policy<'a>(self) -> PolicyFuture<'a>
    where
        T: IntoVerdict,
    {
        Box::pin(std::future::ready(self.0.into_verdict()))
    }
}

/// A `visible_when` predicate.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `visible_when` predicate for a tool of app `{App}`",
    label = "expected `fn(&StepView<'_, {App}>) -> bool`",
    note = "a tool without a `Ctx<App>` parameter works in any registry, so its predicates must be generic \
            (`fn p<App>(view: &StepView<'_, App>) -> bool`); or give the tool a first parameter `ctx: Ctx<YourApp>`"
)]
pub trait VisibleWhen<App> {
    fn visible(&self, view: &StepView<'_, App>) -> bool;
}
impl<App, F: Fn(&StepView<'_, App>) -> bool> VisibleWhen<App> for F {
    fn visible(&self, view: &StepView<'_, App>) -> bool {
        self(view)
    }
}

/// An `ends_run` predicate.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an `ends_run` predicate for input `{Input}` and output `{Output}`",
    label = "expected `fn(&{Input}, &{Output}) -> bool`",
    note = "the predicate sees the tool's parsed input (the type named like the tool) and its successful output"
)]
pub trait EndsRunWhen<Input, Output> {
    fn ends_run(&self, input: &Input, output: &Output) -> bool;
}
impl<Input, Output, F: Fn(&Input, &Output) -> bool> EndsRunWhen<Input, Output> for F {
    fn ends_run(&self, input: &Input, output: &Output) -> bool {
        self(input, output)
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    /// The fast path's reading of `text` as `(a: u32, b: Option<String>)`,
    /// as a tool's generated parse does it.
    fn read_text(text: &str) -> Option<(u32, Option<String>)> {
        let mut fields = Fields::open(text)?;
        let (mut a, mut b) = (None, None);
        while let Some(key) = fields.next_key().ok()? {
            match key {
                "a" if a.is_none() => a = Some(<u32 as ToolParam>::read(&mut fields)?),
                "b" if b.is_none() => b = Some(<Option<String> as ToolParam>::read(&mut fields)?),
                _ => return None,
            }
        }
        Some((a.or_else(<u32 as ToolParam>::missing)?, b.or_else(<Option<String> as ToolParam>::missing)?))
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
            r#"{"a":1,"c":2}"#,
            r#"{"\u0061":1}"#,
            r#"{"a" 1}"#,
            r#"{"a":1 "b":"x"}"#,
            r#"{"a":1,}"#,
            r#"{"a":1} {}"#,
            r#"{"a":1"#,
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
        for text in [r#""a\nb""#, "\"a\tb\"", r#""\u00e9""#, r#""open"#, "-1", "-0", "+1", "1.0", "1e2", "1E2", "01", "18446744073709551616", "tru", "nul", "[1]", "{}"] {
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
        for text in [r#""Unit""#, r#"{"Unit":null}"#, r#""Nope""#, r#"{"New":{"name":"a"}}"#, r#"{"New":{"name":"a"},"Unit":null}"#, r#"{}"#, r#"{"Tuple":[1,2]}"#, r#"{"Tuple":[1]}"#, r#"{"Tuple":[]}"#, r#"{"Tuple":7}"#, r#""Tuple""#, "3"] {
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

    #[test]
    fn output_schema_probe_sees_through_result() {
        let mut generator = SchemaGenerator::default();
        let schema = (&OutputSchema::<Result<String, std::io::Error>>::new()).get(&mut generator);
        assert_eq!(schema.unwrap().as_value()["type"], "string");
        struct NoSchema;
        assert!((&OutputSchema::<NoSchema>::new()).get(&mut generator).is_none());
        assert!((&OutputSchema::<Result<NoSchema, String>>::new()).get(&mut generator).is_none());
        assert!((&OutputSchema::<u8>::new()).get(&mut generator).is_some());
    }

    #[test]
    fn returned_probe_keeps_errors_of_results_only() {
        let ok: Result<u8, Failure> = Returned(Ok::<u8, std::io::Error>(1)).into_result();
        assert_eq!(ok.unwrap(), 1);
        let err = Returned(Err::<u8, _>(crate::ToolError::not_found("X", "none"))).into_result();
        assert!(matches!(err, Err(Failure::Tool(e)) if e.code() == "X"));
        let plain = Returned("text").into_result();
        assert_eq!(plain.unwrap(), "text");
    }

    #[test]
    fn maybe_json_only_for_serialize() {
        struct Opaque;
        assert_eq!(MaybeJson(&3u8).to_json(), Some(Value::from(3)));
        assert_eq!(MaybeJson(&Opaque).to_json(), None);
    }

    #[test]
    fn unique_names_pass() {
        assert_unique_names(["a", "b", "ab"]);
        assert_unique_names([]);
    }

    #[test]
    #[should_panic(expected = "lists the tool `a` twice")]
    fn duplicate_names_panic() {
        assert_unique_names(["a", "b", "a"]);
    }

    #[test]
    fn thousands_of_names_are_checked_in_n_log_n() {
        let owned: Vec<String> = (0..5000).map(|i| format!("tool_with_a_long_shared_prefix_{i}")).collect();
        let mut names = [""; 5000];
        for (slot, name) in names.iter_mut().zip(&owned) {
            *slot = name;
        }
        assert_unique_names(names);
        names[4321] = names[17];
        let caught = std::panic::catch_unwind(|| assert_unique_names(names));
        let message = *caught.unwrap_err().downcast::<String>().unwrap();
        assert_eq!(message, "tools![...] lists the tool `tool_with_a_long_shared_prefix_17` twice; list each tool once");
    }
}

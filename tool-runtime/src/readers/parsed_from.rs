//! [`ParsedFrom`]: what a call's input was read from, which the registry
//! keeps beside the input (an `ends_run` predicate reads it, a human reviews
//! it, and a call that asked a question is read again from it).

use std::borrow::Cow;

use serde_json::Value;

/// What a call's input was parsed from, kept by the registry (for an
/// `ends_run` predicate, and for a human to review a pending call).
#[doc(hidden)]
#[derive(Clone, Debug)]
pub enum ParsedFrom<'a> {
    /// The model's text, read straight into the input.
    Text(Cow<'a, str>),
    /// The arguments as a JSON value (an object), after validation.
    Value(Box<Value>),
}

impl ParsedFrom<'_> {
    /// The same, owning its text (to keep it while a call waits).
    pub fn into_owned(self) -> ParsedFrom<'static> {
        match self {
            ParsedFrom::Text(text) => ParsedFrom::Text(Cow::Owned(text.into_owned())),
            ParsedFrom::Value(value) => ParsedFrom::Value(value),
        }
    }

    /// The arguments as a JSON value, for a human to review.
    pub(crate) fn to_value(&self) -> Value {
        match self {
            // It parsed into the input, so it is an object.
            ParsedFrom::Text(text) => serde_json::from_str(text).unwrap_or_default(),
            ParsedFrom::Value(value) => Value::clone(value),
        }
    }
}

//! What a tool returns: its success value serialised, its error kept.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::error::ToolError;
use crate::tool::{BoxError, Failure, Output, ToolOutput};

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

/// `FailureProbe(returned).into_result()`, for a tool written `Result<T, E>` with
/// an `E` not written `ToolError`: an `E` that is `Serialize + JsonSchema`
/// and converts into `ToolError` is a typed failure (the inherent method);
/// any other goes through `ToolErrorType` (the `UntypedFailure` fallback).
pub struct FailureProbe<R>(pub R);

impl<T, E> FailureProbe<Result<T, E>>
where
    E: Serialize + JsonSchema + Into<ToolError>,
{
    pub fn into_result(self) -> Result<T, Failure> {
        self.0.map_err(typed_failure)
    }
}

pub trait UntypedFailure {
    type Ok;
    type Err;
    fn into_result(self) -> Result<Self::Ok, Failure>
    where
        Self::Err: ToolErrorType;
}
impl<T, E> UntypedFailure for FailureProbe<Result<T, E>> {
    type Ok = T;
    type Err = E;
    fn into_result(self) -> Result<T, Failure>
    where
        E: ToolErrorType,
    {
        self.0.map_err(ToolErrorType::into_failure)
    }
}

/// A typed failure: its `ToolError`, carrying the failure serialised. A
/// failure that cannot be serialised (a map with keys that are not
/// strings, a `Serialize` that fails) is a bug: the generic 500.
fn typed_failure<E: Serialize + Into<ToolError>>(failure: E) -> Failure {
    match serde_json::to_value(&failure) {
        Ok(value) => Failure::Tool(Box::new(failure.into().with_structured(value))),
        Err(err) => {
            let error = failure.into();
            let detail = format!("the typed failure `{}` could not be serialised: {err}", error.code());
            Failure::Internal(detail.into())
        }
    }
}

/// The error type of a tool that returns `Result<T, E>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's error type",
    label = "not `std::error::Error + Send + Sync + 'static`, nor a typed failure",
    note = "return `ToolError` for errors the model should read, or any type that implements `std::error::Error + Send + Sync + 'static` for failures the model reads as a generic internal error",
    note = "for a typed failure (its value reaches the host and MCP `structuredContent`, its schema is advertised), derive `Serialize` and `JsonSchema` on `{Self}` and add `impl From<{Self}> for ToolError`, with the return type written `Result<T, {Self}>` (an alias hides it)"
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
/// not copied through the serialiser; content blocks (`Vec<Block>`) are
/// kept as blocks. A host's typed call takes the value itself (`kept`).
#[inline]
pub fn output<T: Serialize + 'static>(value: T, ends_run: bool) -> Result<ToolOutput, Failure> {
    let mut slot = Some(value);
    if crate::kept::wanted() {
        return kept(slot, ends_run);
    }
    let any: &mut dyn std::any::Any = &mut slot;
    let output = if let Some(blocks) = any.downcast_mut::<Option<Vec<crate::content::Block>>>() {
        Output::Blocks(blocks.take().unwrap_or_default())
    } else if let Some(text) = any.downcast_mut::<Option<String>>() {
        Output::Text(text.take().unwrap_or_default())
    } else if let Some(value) = any.downcast_mut::<Option<Value>>() {
        Output::of_value(value.take().unwrap_or_default())
    } else {
        Output::of_value(serde_json::to_value(&slot).map_err(|err| Failure::Internal(Box::new(err)))?)
    };
    Ok(ToolOutput { output, ends_run })
}

/// [`output`] for a host's typed call (`crate::kept`): rendered from a
/// reference, as `output` renders it, then offered whole to the call.
/// Cold and apart, so that every other call's `output` stays as small.
#[cold]
#[inline(never)]
fn kept<T: Serialize + 'static>(mut slot: Option<T>, ends_run: bool) -> Result<ToolOutput, Failure> {
    let any: &dyn std::any::Any = &slot;
    let output = match any.downcast_ref::<Option<Vec<crate::content::Block>>>() {
        Some(blocks) => Output::Blocks(blocks.clone().unwrap_or_default()),
        None => Output::of_value(serde_json::to_value(&slot).map_err(|err| Failure::Internal(Box::new(err)))?),
    };
    crate::kept::offer(&mut slot);
    Ok(ToolOutput { output, ends_run })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returned_probe_keeps_errors_of_results_only() {
        let ok: Result<u8, Failure> = Returned(Ok::<u8, std::io::Error>(1)).into_result();
        assert_eq!(ok.unwrap(), 1);
        let err = Returned(Err::<u8, _>(crate::ToolError::not_found("X", "none"))).into_result();
        assert!(matches!(err, Err(Failure::Tool(e)) if e.code() == "X"));
        let plain = Returned("text").into_result();
        assert_eq!(plain.unwrap(), "text");
    }

    #[derive(Serialize, JsonSchema)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    enum Stock {
        OutOfStock { available: u32 },
    }

    impl From<Stock> for ToolError {
        fn from(stock: Stock) -> Self {
            match stock {
                Stock::OutOfStock { available } => ToolError::conflict("OUT_OF_STOCK", format!("Only {available} left.")),
            }
        }
    }

    #[test]
    fn typed_probe_keeps_a_typed_failures_value_and_sorts_other_errors_as_before() {
        #[allow(unused_imports)]
        use super::UntypedFailure as _;
        let typed = FailureProbe(Err::<u8, _>(Stock::OutOfStock { available: 2 })).into_result();
        let Err(Failure::Tool(error)) = typed else { panic!("a typed failure is a tool error: {typed:?}") };
        assert_eq!(error.code(), "OUT_OF_STOCK");
        assert_eq!(error.structured(), Some(&serde_json::json!({"kind": "out_of_stock", "available": 2})));

        let io = FailureProbe(Err::<u8, _>(std::io::Error::other("disk"))).into_result();
        assert!(matches!(io, Err(Failure::Internal(_))));
        let boxed: Result<u8, BoxError> = Err(Box::new(ToolError::not_found("X", "none")));
        let Err(Failure::Tool(error)) = FailureProbe(boxed).into_result() else { panic!("a boxed ToolError is a tool error") };
        assert_eq!((error.code(), error.structured()), ("X", None));
        assert_eq!(FailureProbe(Ok::<u8, Stock>(1)).into_result().unwrap(), 1);
    }

    #[test]
    fn a_typed_failure_that_cannot_be_serialised_is_internal() {
        #[derive(JsonSchema)]
        struct Broken;
        impl Serialize for Broken {
            fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                Err(serde::ser::Error::custom("no"))
            }
        }
        impl From<Broken> for ToolError {
            fn from(_: Broken) -> Self {
                ToolError::conflict("BROKEN", "Broken.")
            }
        }
        let Err(Failure::Internal(error)) = FailureProbe(Err::<u8, _>(Broken)).into_result() else { panic!("not internal") };
        assert!(error.to_string().contains("`BROKEN` could not be serialised"), "{error}");
    }
}

//! What a tool returns: its success value serialised, its error kept.

use serde::Serialize;
use serde_json::Value;

use crate::tool::{BoxError, Failure, ToolOutput};

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
}

//! `on_error = path`: the recovery generated code calls when the tool
//! returned an error. It sees the tool's input and error and returns an
//! output, sync or async; declining (`None` or `Err`), or panicking, gives
//! the tool's own error back.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;

use crate::error_report::Escaped;
use crate::error_report::panic_message;

/// `recovery_call(recovery, &input, &error, output_of(&returned))?.decide().await`:
/// calls the recovery of a tool whose output is `T`; `None` when it
/// panicked. Coercing the path to a function pointer reports a wrong
/// signature on it, once.
pub fn recovery_call<'a, I, E, R, T>(
    recovery: fn(&'a I, &'a E) -> R,
    input: &'a I,
    error: &'a E,
    _output: OutputOf<T>,
) -> Option<RecoveryProbe<R, T>> {
    match std::panic::catch_unwind(AssertUnwindSafe(|| recovery(input, error))) {
        Ok(returned) => Some(RecoveryProbe(returned, std::marker::PhantomData)),
        Err(payload) => {
            recovery_panicked(panic_message(payload.as_ref()));
            None
        }
    }
}

fn recovery_panicked(message: String) {
    tracing::warn!(panic = %Escaped(&message), "the tool's on_error recovery panicked; the model reads the tool's own error");
}

/// The output type of a tool's `Result`, named before the recovery is
/// called, so that a recovery returning another type is reported as such.
pub struct OutputOf<T>(std::marker::PhantomData<fn() -> T>);

/// `output_of(&returned)`: the output type of `returned`.
pub fn output_of<T, E>(_returned: &Result<T, E>) -> OutputOf<T> {
    OutputOf(std::marker::PhantomData)
}

/// What a recovery of a tool whose output is `T` returned, to be settled
/// by `decide`.
pub struct RecoveryProbe<R, T>(pub R, std::marker::PhantomData<fn() -> T>);

impl<F: Future, T> RecoveryProbe<F, T> {
    /// An async recovery: its output, or `None` when it declined or
    /// panicked.
    pub async fn decide(self) -> Option<T>
    where
        F::Output: Recovered<T>,
    {
        match AssertUnwindSafe(self.0).catch_unwind().await {
            Ok(recovered) => recovered.recovered(),
            Err(payload) => {
                recovery_panicked(panic_message(payload.as_ref()));
                None
            }
        }
    }
}

/// The sync case, and the fallback for any other return type, so that a
/// wrong one is reported as `Recovered`, with its message.
pub trait SyncRecovery {
    type Returned;
    type Output;
    fn decide(self) -> std::future::Ready<Option<Self::Output>>
    where
        Self::Returned: Recovered<Self::Output>;
}
impl<R, T> SyncRecovery for RecoveryProbe<R, T> {
    type Returned = R;
    type Output = T;
    fn decide(self) -> std::future::Ready<Option<T>>
    where
        R: Recovered<T>,
    {
        std::future::ready(self.0.recovered())
    }
}

/// What a recovery may return for a tool whose output is `T`: the output,
/// or an `Option` or `Result` of it (`None` or `Err` declines).
#[diagnostic::on_unimplemented(
    message = "an `on_error` recovery must return the tool's output `{T}` (or `Option<{T}>`, or `Result<{T}, E>`), sync or async, not `{Self}`",
    label = "returns `{Self}`",
    note = "write it as `fn(&Input, &Error) -> {T}` (or `async fn`), where `Input` is the type named like the tool and `Error` the tool's error type"
)]
pub trait Recovered<T> {
    fn recovered(self) -> Option<T>;
}
impl<T> Recovered<T> for T {
    fn recovered(self) -> Option<T> {
        Some(self)
    }
}
impl<T> Recovered<T> for Option<T> {
    fn recovered(self) -> Option<T> {
        self
    }
}
impl<T, E> Recovered<T> for Result<T, E> {
    fn recovered(self) -> Option<T> {
        self.ok()
    }
}

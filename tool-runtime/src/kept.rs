//! A tool's output kept whole for a Rust host that asked for it
//! ([`Call::output`](crate::Call::output)), beside the text and JSON the
//! model and every other caller get.
//!
//! The output is serialised inside the tool's future (generated code calls
//! `__private::output` on it), which the registry may run in place or on a
//! task of its own. A typed call runs in a task-local scope holding a
//! taker for the type it wants; `__private::output`, finding the scope,
//! serialises the output by reference and offers the value itself to the
//! taker, which keeps it if it is of that type. A call outside a scope
//! (every other call) pays one atomic read while no typed call is in
//! flight in the process (a thread-local read while one is), and nothing
//! is kept; a
//! tool that waits is spawned inside the scope of the call that made it
//! ([`in_scope`]). A call nested in a tool's body (a tool that calls the
//! registry) runs in its caller's scope: its output is offered first and
//! replaced by its caller's, which comes last.

use std::any::Any;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Takes an offered output (`&mut Option<T>`) when it is of its type.
type Taker = Arc<dyn Fn(&mut dyn Any) -> bool + Send + Sync>;

tokio::task_local! {
    static TAKER: Taker;
}

/// How many typed calls are in flight in the process: while there are
/// none, a call's output reads this alone, not the task-local.
static TYPED_CALLS: AtomicUsize = AtomicUsize::new(0);

/// The output of type `T` a typed call keeps, once a tool offered it.
pub(crate) struct Kept<T> {
    value: Arc<Mutex<Option<T>>>,
    taker: Taker,
}

impl<T: Send + 'static> Kept<T> {
    pub(crate) fn new() -> Self {
        let value = Arc::new(Mutex::new(None));
        let slot = value.clone();
        let taker: Taker = Arc::new(move |offered: &mut dyn Any| match offered.downcast_mut::<Option<T>>().and_then(Option::take) {
            Some(output) => {
                *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(output);
                true
            }
            None => false,
        });
        Kept { value, taker }
    }

    /// `future`, run where the outputs it makes are offered to this.
    pub(crate) async fn scope<F: Future>(&self, future: F) -> F::Output {
        let _in_flight = InFlight::enter();
        TAKER.scope(self.taker.clone(), future).await
    }

    /// The output kept, if a tool offered one of type `T`.
    pub(crate) fn take(&self) -> Option<T> {
        self.value.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// A typed call in flight, counted in [`TYPED_CALLS`] until it is dropped.
struct InFlight;

impl InFlight {
    fn enter() -> Self {
        TYPED_CALLS.fetch_add(1, Ordering::Relaxed);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        TYPED_CALLS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whether the running call's output is wanted whole (a typed call's
/// scope is set). While no typed call is in flight anywhere, one atomic
/// read says no.
#[inline]
pub(crate) fn wanted() -> bool {
    TYPED_CALLS.load(Ordering::Relaxed) != 0 && TAKER.try_with(|_| ()).is_ok()
}

/// Offers `output` (an `Option<T>` holding the tool's output) to the
/// typed call's taker; it is taken when it is of the wanted type.
pub(crate) fn offer(output: &mut dyn Any) {
    let _ = TAKER.try_with(|taker| taker(output));
}

/// `future` (a tool's, about to be spawned on a task of its own) in the
/// scope of the typed call that made it, if it was made in one.
pub(crate) fn in_scope<F: Future + Send>(future: F) -> futures_util::future::Either<impl Future<Output = F::Output> + Send, F> {
    match TAKER.try_with(Taker::clone) {
        Ok(taker) => futures_util::future::Either::Left(TAKER.scope(taker, future)),
        Err(_) => futures_util::future::Either::Right(future),
    }
}

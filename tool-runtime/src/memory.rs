//! What a run must remember, behind one seam: [`RunMemory`].
//!
//! Every [`Run`](crate::Run) and every MCP session keeps its memory here:
//! the run's steps and state, the calls parked for approval and their
//! decisions, and the effect of its calls (started, finished with its
//! result), through which the external calls still with the host are
//! known. A run that is not durable keeps it in its own process
//! ([`LocalMemory`]); a durable one in the [`Journal`](crate::journal) on
//! SQLite or Postgres (features `sqlite`, `postgres`), which implements the
//! same trait. So one code path serves every run: its steps are saved, its
//! calls parked and decided, and a call's effect recorded as started and
//! finished by the pipeline, whatever the memory is; only what the memory
//! keeps, and for how long, differs. (A run that is not durable records
//! only the effects another call can meet, those keyed by an
//! `idempotency_key`: one keyed by its own call id could meet no other.)
//!
//! The rules every memory keeps, which the runtime relies on:
//!
//! - **Effects.** An effect key is started once: of two starts, one gets
//!   `None` (it now holds the effect) and the other what was found. A
//!   finished effect is never rewritten. A start is withdrawn only by the
//!   call that made it, and only while unfinished.
//! - **Runs.** A step is added to the run's record, never written over it;
//!   the state only moves forward (a finished run stays finished); a step
//!   re-sending the last step's call ids is not counted again.
//! - **Questions.** A parked call (an approval, or a question its tool
//!   asked: [`question`](crate::question)) is one run's one question, keyed
//!   by its run and its id. A decision is made once: the second decider is
//!   told who won ([`JournalError::AlreadyDecided`]); a call past its
//!   expiry cannot be decided ([`JournalError::ApprovalExpired`]); an
//!   expiry is a decision by [`EXPIRED_BY`]. Deciders go through
//!   [`question::decide`](crate::question::decide), which checks the
//!   decision answers the question before the memory records it.
//! - **Tasks.** MCP's tasks are kept in the memory's [`TaskStore`]
//!   ([`RunMemory::task_store`]): a task is created once, and moves only
//!   until it ended.

pub(crate) mod asked;
mod error;
mod local;
pub(crate) mod records;
mod tasks;

use std::fmt;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use serde_json::Value;

use crate::error_report::Escaped;

pub use asked::{Ask, Binding, Decision, Question, Root, Sampled, SamplingMessage, SamplingRequest, SamplingRole};
pub use error::JournalError;
pub use local::LocalMemory;
pub use records::{
    Approval, CallInDoubt, CallStart, Decided, EXPIRED_BY, GONE_BY, JournaledCall, JournaledResult, Opened, ParkedCall, RunRecord, RunState,
    StepDelta, Stepped,
};
pub use tasks::{LocalTasks, TaskRecord, TaskState, TaskStore};

/// The answer of a [`RunMemory`], awaited by the run: ready at once
/// ([`Answer::ready`]: a memory in this process answers without waiting or
/// allocating), or a boxed future ([`Answer::waiting`]: a journal's
/// statements), so that the trait is object-safe and a run holds any memory
/// as `Arc<dyn RunMemory>`.
#[must_use = "an answer does nothing until it is awaited"]
pub struct Answer<'a, T>(Answering<'a, T>);

enum Answering<'a, T> {
    /// `None` once it was taken.
    Ready(Option<Result<T, JournalError>>),
    Waiting(futures_util::future::BoxFuture<'a, Result<T, JournalError>>),
}

impl<'a, T> Answer<'a, T> {
    /// An answer known now.
    pub fn ready(answer: Result<T, JournalError>) -> Self {
        Answer(Answering::Ready(Some(answer)))
    }

    /// An answer that `future` gives once it is done.
    pub fn waiting(future: impl Future<Output = Result<T, JournalError>> + Send + 'a) -> Self {
        Answer(Answering::Waiting(Box::pin(future)))
    }
}

// Nothing in an answer is pinned in place: a ready one is moved out, and a
// waiting one is boxed.
impl<T> Unpin for Answer<'_, T> {}

impl<T> Future for Answer<'_, T> {
    type Output = Result<T, JournalError>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        match &mut self.0 {
            Answering::Ready(answer) => std::task::Poll::Ready(answer.take().expect("an answer is awaited once")),
            Answering::Waiting(future) => future.as_mut().poll(cx),
        }
    }
}

impl<T> fmt::Debug for Answer<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Answering::Ready(_) => "Answer::Ready",
            Answering::Waiting(_) => "Answer::Waiting",
        })
    }
}

/// A call about to start its effect ([`RunMemory::start_or_find`]).
#[derive(Clone, Copy, Debug)]
pub struct Starting<'a> {
    /// The run the call belongs to.
    pub run_id: &'a str,
    /// The call's id.
    pub call_id: &'a str,
    /// Its tool.
    pub tool: &'a str,
    /// Its validated arguments.
    pub input: &'a Value,
    /// The effect's key (see the [module docs](self)).
    pub effect_key: &'a str,
}

/// A call whose effect is keyed by an idempotency key, looked for
/// ([`RunMemory::find_keyed`]).
#[derive(Clone, Copy, Debug)]
pub struct Keyed<'a> {
    /// The run the call belongs to.
    pub run_id: &'a str,
    /// The call's id.
    pub call_id: &'a str,
    /// Its tool.
    pub tool: &'a str,
    /// The key its effect is started under.
    pub key: &'a str,
    /// The key an earlier version of the runtime made for the same effect,
    /// if it made another.
    pub earlier: Option<&'a str>,
}

/// Everything a run must remember, wherever it is kept (see the [module
/// docs](self) for the rules every implementation keeps).
///
/// The runtime ships two: [`LocalMemory`], in the process, for a run that is
/// not durable, and the [`Journal`](crate::journal) (SQLite, Postgres) for a
/// durable one. Each method is one atomic step of the memory.
pub trait RunMemory: fmt::Debug + Send + Sync + 'static {
    /// This memory, with its waits (a busy database retried) ending at
    /// `until`: a call's reads and writes never outlast its timeout.
    fn until(&self, until: Instant) -> Arc<dyn RunMemory>;

    /// The effect `effect_key`, if the memory holds it.
    fn find_call<'a>(&'a self, effect_key: &'a str) -> Answer<'a, Option<JournaledCall>>;

    /// Whether the effect `effect_key` is unfinished and the process that
    /// started it is gone (a journal's owner whose lease lapsed): it will
    /// never finish, and no one need wait for it. The default says no, for
    /// a memory of one process, whose starts are its own.
    fn starter_gone<'a>(&'a self, effect_key: &'a str) -> Answer<'a, bool> {
        let _ = effect_key;
        Answer::ready(Ok(false))
    }

    /// The effect of a keyed call, wherever the memory holds it: under its
    /// key, or as the same call of the same run (its run and call id, with
    /// its tool) under any key, so that a call re-sent is the same call
    /// whoever sends it, or under the key an earlier version made. Says the
    /// key it was found under, for what the call does next; `None` for a
    /// key this call cannot name (stored as its digest by an earlier
    /// version). The default looks the call's key up, for a memory whose
    /// keys never changed form.
    fn find_keyed<'a>(&'a self, keyed: Keyed<'a>) -> Answer<'a, Option<(Option<String>, JournaledCall)>> {
        let found = self.find_call(keyed.key);
        Answer::waiting(async move { Ok(found.await?.map(|found| (Some(keyed.key.to_owned()), found))) })
    }

    /// Starts the effect of `call`: `None` when it was new (the call now
    /// holds it and may run), else what the memory holds for the key.
    /// [`JournalError::RunFinished`] when the key is new and `call`'s run
    /// is finished: a finished run starts no effect (the run's state is
    /// read in the step that starts it).
    fn start_or_find<'a>(&'a self, call: Starting<'a>) -> Answer<'a, Option<JournaledCall>>;

    /// Starts a finished effect again, for `call` (a tool with
    /// `replay = false` runs on every call): `None` when this call now
    /// holds it, else what was found (a start not finished).
    /// [`JournalError::RunFinished`] when `call`'s run is finished, as for
    /// [`start_or_find`](Self::start_or_find).
    fn restart_call<'a>(&'a self, call: Starting<'a>) -> Answer<'a, Option<JournaledCall>>;

    /// Records the result of the started effect `effect_key`.
    /// [`JournalError::CallAlreadyFinished`] when it has one already,
    /// [`JournalError::CallNotStarted`] when it was never started.
    fn finish_call<'a>(&'a self, effect_key: &'a str, result: &'a JournaledResult) -> Answer<'a, ()>;

    /// Withdraws the start of a call that never ran: only the start that
    /// `call_id` made, and only while unfinished. Whether it was withdrawn.
    fn withdraw_call<'a>(&'a self, effect_key: &'a str, call_id: &'a str) -> Answer<'a, bool>;

    /// Withdraws the start `call_id` made at `started_at` of an effect a
    /// reconcile hook says never happened, only while it is that start and
    /// unfinished: a start made since (another call that took it over) is
    /// kept. Whether it was withdrawn. The default withdraws `call_id`'s
    /// start, for a memory of one process, where no two calls of one id
    /// run at once.
    fn withdraw_stale<'a>(&'a self, effect_key: &'a str, call_id: &'a str, started_at: SystemTime) -> Answer<'a, bool> {
        let _ = started_at;
        self.withdraw_call(effect_key, call_id)
    }

    /// Records the result of an effect found unfinished and settled by
    /// its tool's reconcile hook (or the host);
    /// [`JournalError::CallAlreadyFinished`] when another call finished
    /// it first.
    fn resolve_call<'a>(&'a self, effect_key: &'a str, result: &'a JournaledResult) -> Answer<'a, ()>;

    /// Records that `run_id` replayed the finished effect `effect_key`
    /// (a keyed effect, which another run may have journaled): the effect
    /// is kept while the run is ([`Journal::prune`](crate::journal::Journal::prune)).
    /// The default keeps nothing, for a memory that forgets nothing a run
    /// stands on while it lives.
    fn note_replay<'a>(&'a self, run_id: &'a str, effect_key: &'a str) -> Answer<'a, ()> {
        let _ = (run_id, effect_key);
        Answer::ready(Ok(()))
    }

    /// The calls `run_id` started, finished or not.
    fn calls_of_run<'a>(&'a self, run_id: &'a str) -> Answer<'a, Vec<JournaledCall>>;

    /// Adds a step's changes to the record of `run_id` (created when new)
    /// and returns the run as the memory then holds it, with its tools
    /// from the `known`th on. `state` is taken only when it is further
    /// along than the one held.
    fn add_step<'a>(&'a self, run_id: &'a str, delta: &'a StepDelta, state: &'a RunState, known: usize) -> Answer<'a, Stepped>;

    /// Opens `run_id` for a process that makes it durable, as one step of
    /// the memory where it can: records it as `user`'s run unless it has a
    /// user ([`claim_run`](Self::claim_run)), adds `delta` to it
    /// ([`add_step`](Self::add_step), creating it when new), and says
    /// whether it holds calls started and not finished and parked calls
    /// not settled ([`Opened`]), so that the process reads them only when
    /// it does. The default claims, then adds, and says the run may hold
    /// both, so that the process reads them.
    fn open_run<'a>(
        &'a self,
        run_id: &'a str,
        user: Option<&'a str>,
        delta: &'a StepDelta,
        state: &'a RunState,
        known: usize,
    ) -> Answer<'a, (Stepped, Opened)> {
        let claimed = self.claim_run(run_id, user);
        Answer::waiting(async move {
            let user = claimed.await?;
            let stepped = self.add_step(run_id, delta, state, known).await?;
            Ok((stepped, Opened { user, unfinished_calls: true, unsettled: true }))
        })
    }

    /// Parks a call for approval; [`JournalError::AlreadyParked`] when the
    /// run parked that call id before.
    fn park<'a>(&'a self, call: &'a ParkedCall) -> Answer<'a, ()>;

    /// Parks a tool's question ([`Question::Tool`]) and, in the same step,
    /// withdraws the start of its call's effect, `effect` (the effect key
    /// and the call id that started it): the call stopped at the question,
    /// and runs again from the top once it is answered. The default parks
    /// and then withdraws, for a memory of one process, which no crash
    /// leaves half done.
    fn park_asked<'a>(&'a self, call: &'a ParkedCall, effect: Option<(&'a str, &'a str)>) -> Answer<'a, ()> {
        let parked = self.park(call);
        Answer::waiting(async move {
            parked.await?;
            if let Some((key, call_id)) = effect {
                self.withdraw_call(key, call_id).await?;
            }
            Ok(())
        })
    }

    /// Parks a call that this process waits for (an MCP session, for its
    /// client), as [`park`](Self::park) does: once the process is gone, a
    /// decision on the call is refused and recorded as a rejection by
    /// [`GONE_BY`], since nothing would carry it out. The default parks it
    /// as any call, for a memory that lives no longer than its process.
    fn park_held<'a>(&'a self, call: &'a ParkedCall) -> Answer<'a, ()> {
        self.park(call)
    }

    /// The parked calls of `run_id` not yet settled, decided or not, in the
    /// order they were parked.
    fn unsettled_for_run<'a>(&'a self, run_id: &'a str) -> Answer<'a, Vec<Approval>>;

    /// The approval of `call_id` of `run_id`, with its decision if any.
    fn approval<'a>(&'a self, run_id: &'a str, call_id: &'a str) -> Answer<'a, Option<Approval>>;

    /// Records the decision on a parked call, once:
    /// [`JournalError::AlreadyDecided`] when someone decided first,
    /// [`JournalError::ApprovalExpired`] past its expiry,
    /// [`JournalError::UnknownApproval`] when no such call waits. The
    /// memory's own step: deciders call
    /// [`question::decide`](crate::question::decide), which checks first
    /// that the decision answers the question.
    fn decide<'a>(&'a self, run_id: &'a str, call_id: &'a str, decision: Decision, by: &'a str) -> Answer<'a, Approval>;

    /// Records the run `run_id` (when the memory does not know it yet) as
    /// the run of `user`, and returns its user as the memory holds it: the
    /// first process to record the run names it, and a keyed effect of the
    /// run is that user's, whichever process sends the call. The default
    /// keeps nothing, for a memory of one process's run.
    fn claim_run<'a>(&'a self, run_id: &'a str, user: Option<&'a str>) -> Answer<'a, Option<String>> {
        let _ = run_id;
        Answer::ready(Ok(user.map(str::to_owned)))
    }

    /// How many calls wait for a decision now (by the memory's clock) in
    /// the runs whose ids start with either of `prefixes`: in all, and of
    /// `user_id` (0 without one). What an MCP server counts its waiting
    /// calls of revision 2026-07-28 by, on every process of the memory.
    /// The default counts none, for a memory that keeps no such runs.
    fn waiting_in<'a>(&'a self, prefixes: &'a [&'a str; 2], user_id: Option<&'a str>) -> Answer<'a, (usize, usize)> {
        let _ = (prefixes, user_id);
        Answer::ready(Ok((0, 0)))
    }

    /// Where this memory keeps MCP's tasks, if it keeps any: the journal's
    /// table, or a [`LocalMemory`]'s [`LocalTasks`]. The default keeps none.
    fn task_store(&self) -> Option<&dyn TaskStore> {
        None
    }

    /// Marks a decided call as carried out by its run.
    fn settle<'a>(&'a self, run_id: &'a str, call_id: &'a str) -> Answer<'a, ()>;

    /// Once `run_id` finished (its state saved as finished): rejects, by
    /// [`GONE_BY`] with `text`, every call of it that nobody decided, and
    /// marks every call of it settled, whichever process parked it. The
    /// default does nothing, for a memory that only the run's own process
    /// reads (the run drops the calls it holds itself).
    fn end_run<'a>(&'a self, run_id: &'a str, text: &'a str) -> Answer<'a, ()> {
        let _ = (run_id, text);
        Answer::ready(Ok(()))
    }

    /// Rejects, by [`EXPIRED_BY`] with `text`, every undecided call of
    /// `run_id` whose expiry has passed by the memory's clock (a journal's
    /// is the database's, the same for every process); returns them.
    fn expire<'a>(&'a self, run_id: &'a str, text: &'a str) -> Answer<'a, Vec<Approval>>;
}

/// A run's memory and its id in it: what every call of a run carries.
#[derive(Clone, Debug)]
pub(crate) struct Remembered {
    pub(crate) memory: Arc<dyn RunMemory>,
    pub(crate) run_id: Arc<str>,
    /// The run's user as its memory holds it ([`RunMemory::claim_run`]),
    /// whose effects a keyed call's are; `None`: the caller's.
    pub(crate) user: Option<Arc<str>>,
    /// Whether the memory outlives the process (a journal): only then is a
    /// decision's clock the memory's, and a step's digest worth keeping.
    pub(crate) durable: bool,
}

impl Remembered {
    /// A memory of this process only, under a fresh run id.
    pub(crate) fn local() -> Self {
        Remembered { memory: Arc::new(LocalMemory::default()), run_id: crate::ids::fresh_id("run-").as_str().into(), user: None, durable: false }
    }

    /// A durable run `run_id` in `memory`: a journal, or the memory of an
    /// MCP server, which outlives the runs of its tasks.
    pub(crate) fn durable(memory: Arc<dyn RunMemory>, run_id: &str) -> Self {
        Remembered { memory, run_id: run_id.into(), user: None, durable: true }
    }

    /// The effect key of a call keyed by its run and id (every external
    /// call, and any call of a tool without an `idempotency_key`): a JSON
    /// array, so no run id or call id can make two of them equal.
    pub(crate) fn call_key(&self, call_id: &str) -> String {
        serde_json::json!(["call", &*self.run_id, call_id]).to_string()
    }

    /// Marks a call decided in this process as carried out
    /// ([`RunMemory::settle`]), a failure logged.
    pub(crate) async fn settle_or_report(&self, call_id: &str) {
        if let Err(error) = self.memory.settle(&self.run_id, call_id).await {
            tracing::error!(run_id = %Escaped(&self.run_id), call_id = %Escaped(call_id), error = %Escaped(&error), "a settled call could not be journaled as settled");
        }
    }
}

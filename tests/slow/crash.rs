//! Crash safety of durable runs: a child process (this test binary, run
//! again as `crash_child`) executes a step of a durable run on a journal
//! and is killed with SIGKILL at one point of the call: before the
//! call is recorded as started, after it is (the tool running, before its
//! effect), after the tool's effect, and after the call finished. The run
//! is then resumed in this process, which sends the same step again.
//!
//! The effects are counted outside the journal, in files: a charge (not
//! idempotent) appends a line; setting a flag (idempotent) writes a file,
//! so doing it twice leaves one. Whatever the point, a charge happens at
//! most once, and the flag is set exactly once.
//!
//! A call that asks is killed between its question and its answer (a
//! child parks the question and is killed there; the answer comes from
//! another process; the run goes on in a third, or a second child reading
//! the answer is killed before the payment): the hold the tool made before
//! the question (`Ctx::once`) is made once, the call finishes once, and no
//! call is lost.
//!
//! The fixed points run 20 rounds each, several rounds at once; the
//! property test generates runs of several steps and a kill point somewhere
//! in them. Each test runs on SQLite (a file per round) and on Postgres
//! (the server of `TOOL_RUNTIME_TEST_POSTGRES_URL`, a run id per round; with
//! `--features postgres`), both at once: a round mostly waits (for its
//! child, for a call cut off to time out). Under `CI=true` a test fails without
//! a Postgres server; locally it runs on SQLite and says it skipped
//! Postgres. Run them with `cargo test --features postgres --test slow crash::`.
#![cfg(unix)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_json::json;
use tool_runtime::journal::{Decision, Journal};
use tool_runtime::prelude::*;
use tool_runtime::question::Reply;
use tool_runtime::{Form, ResultKind, ToolCall};

/// Where the child stops, waiting to be killed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Point {
    /// The step is about to run: nothing is journaled.
    BeforeStart,
    /// The tool runs (its call is journaled as started), before its effect.
    AfterStart,
    /// The tool's effect happened; the call has not finished.
    AfterEffect,
    /// The call finished and was journaled.
    AfterFinish,
}

impl Point {
    const ALL: [Point; 4] = [Point::BeforeStart, Point::AfterStart, Point::AfterEffect, Point::AfterFinish];

    fn name(self) -> &'static str {
        match self {
            Point::BeforeStart => "before_start",
            Point::AfterStart => "after_start",
            Point::AfterEffect => "after_effect",
            Point::AfterFinish => "after_finish",
        }
    }

    fn from_name(name: &str) -> Option<Point> {
        Point::ALL.into_iter().find(|point| point.name() == name)
    }
}

/// The app state: where the effects go and, in the child, where to stop.
struct World {
    dir: PathBuf,
    /// In the child: the point to stop at, and in which call (by index in
    /// the run's calls); `None` in the parent, which never stops.
    stop: Option<(Point, usize)>,
    /// In a child running a call that asks: stop once its question is
    /// answered, before its payment.
    stop_answered: bool,
}

/// Tells the parent where the child stands, then waits to be killed.
async fn stop_here(point: Point) -> ! {
    stop_here_named(point.name()).await
}

/// Tells the parent the child is at `point`, then waits to be killed.
async fn stop_here_named(point: &str) -> ! {
    println!("AT {point}");
    std::io::stdout().flush().unwrap();
    std::future::pending::<()>().await;
    unreachable!("a pending future never resolves")
}

/// Reaches `point` of call `call`: in the child, at the chosen point of the
/// chosen call, stops there.
async fn reach(world: &World, point: Point, call: usize) {
    if world.stop == Some((point, call)) {
        stop_here(point).await;
    }
}

/// Charge a card: each charge is a line in `charges`. (A call of it found
/// started and unfinished is waited for until its timeout from its start,
/// in case it is still running elsewhere: a short one keeps rounds quick.)
#[tool(timeout = "1s")]
async fn charge(ctx: Ctx<World>, call: usize) -> String {
    let world = ctx.app();
    reach(world, Point::AfterStart, call).await;
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(world.dir.join("charges")).unwrap();
    writeln!(file, "charged by call {call}").unwrap();
    file.sync_all().unwrap();
    reach(world, Point::AfterEffect, call).await;
    format!("charged {call}")
}

/// Charge a card, over a slow line: a call of it found started and
/// unfinished would be waited for until its timeout from its start, were
/// its process not known to be gone.
#[tool(timeout = "60s")]
async fn charge_slowly(ctx: Ctx<World>, call: usize) -> String {
    let world = ctx.app();
    reach(world, Point::AfterStart, call).await;
    format!("charged {call} slowly")
}

/// Set a flag: the flag is a file; setting it twice leaves one.
#[tool(idempotent, timeout = "1m")]
async fn set_flag(ctx: Ctx<World>, call: usize, flag: String) -> String {
    let world = ctx.app();
    reach(world, Point::AfterStart, call).await;
    std::fs::write(world.dir.join(format!("flag-{flag}")), "set").unwrap();
    reach(world, Point::AfterEffect, call).await;
    format!("set {flag}")
}

/// Whether to pay, as the order's owner says.
#[tool_data(Deserialize, JsonSchema)]
#[derive(Form)]
struct Go {
    /// Pay it.
    go: bool,
}

/// Pay an order once its owner confirms: the money is held first (a line in
/// `holds`, made once through `Ctx::once`), then the owner is asked, then
/// the payment is made (a line in `payments`).
#[tool(timeout = "1s")]
async fn pay(ctx: Ctx<World>, order: String) -> Result<String, ToolError> {
    let world = ctx.app();
    ctx.once("hold", async { effect(world, "holds", &order) }).await?;
    let Reply::Answered(Go { go: true }) = ctx.elicit::<Go>(format!("Pay {order}?")).await? else { return Ok("kept".into()) };
    if world.stop_answered {
        stop_here_named("answered").await;
    }
    effect(world, "payments", &order);
    Ok(format!("paid {order}"))
}

/// Appends a line for `order` to the file `name`, synced.
fn effect(world: &World, name: &str, order: &str) {
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(world.dir.join(name)).unwrap();
    writeln!(file, "{order}").unwrap();
    file.sync_all().unwrap();
}

fn registry() -> Registry<World> {
    Registry::builder().tools(tools![charge, charge_slowly, set_flag, pay]).build().unwrap()
}

/// One call of a generated run: which tool, and its call id.
#[derive(Clone, Debug)]
struct Planned {
    idempotent: bool,
    id: String,
}

fn step_of(index: usize, planned: &Planned) -> ToolCall {
    if planned.id.starts_with("slow") {
        ToolCall::new(&planned.id, "charge_slowly", json!({"call": index}))
    } else if planned.idempotent {
        ToolCall::new(&planned.id, "set_flag", json!({"call": index, "flag": format!("f{index}")}))
    } else {
        ToolCall::new(&planned.id, "charge", json!({"call": index}))
    }
}

/// Where the journal is: a SQLite file in each round's directory, or one
/// Postgres database shared by the rounds, each with a run of its own.
#[derive(Clone, Debug)]
enum Backend {
    Sqlite,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Postgres(String),
}

impl Backend {
    fn url(&self, dir: &std::path::Path) -> String {
        match self {
            Backend::Sqlite => dir.join("journal.db").to_str().unwrap().to_owned(),
            Backend::Postgres(url) => url.clone(),
        }
    }
}

/// The backends a test runs on: SQLite, and Postgres with `--features
/// postgres` and a server (without one, outside CI, the test is recorded
/// as skipped: `tool_workspace::peers`; so call it on the test's thread).
fn backends() -> Vec<Backend> {
    #[cfg(feature = "postgres")]
    let postgres = tool_workspace::peers::postgres_url().map(Backend::Postgres);
    #[cfg(not(feature = "postgres"))]
    let postgres = None;
    std::iter::once(Backend::Sqlite).chain(postgres).collect()
}

/// Runs `test` on every backend at once, a thread each; a panic in one
/// fails the test.
fn on_each_backend(test: impl Fn(&Backend) + Sync) {
    let backends = backends();
    std::thread::scope(|scope| {
        for backend in &backends {
            scope.spawn(|| test(backend));
        }
    });
}

/// The child's side: runs the plan's calls, one step each, stopping where told.
#[test]
#[ignore = "run by the crash tests in a child process, which is killed"]
fn crash_child() {
    let Ok(plan) = std::env::var("CRASH_PLAN") else { return };
    let dir = PathBuf::from(std::env::var("CRASH_DIR").unwrap());
    let (url, run_id) = (std::env::var("CRASH_URL").unwrap(), std::env::var("CRASH_RUN").unwrap());
    let (point, at) =
        std::env::var("CRASH_STOP").unwrap().split_once(':').map(|(p, at)| (Point::from_name(p).unwrap(), at.parse().unwrap())).unwrap();
    let plan = parse_plan(&plan);
    let world = Arc::new(World { dir: dir.clone(), stop: Some((point, at)), stop_answered: false });
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let journal = Journal::open(&url).await.unwrap();
        let mut run = registry().run(world.clone()).durable(&journal, &run_id).await.unwrap();
        for (index, planned) in plan.iter().enumerate() {
            reach(&world, Point::BeforeStart, index).await;
            run.execute(vec![step_of(index, planned)]).await;
            reach(&world, Point::AfterFinish, index).await;
        }
        println!("AT end");
        std::io::stdout().flush().unwrap();
        std::future::pending::<()>().await;
    });
}

fn encode_plan(plan: &[Planned]) -> String {
    plan.iter().map(|p| format!("{}{}", if p.idempotent { "i" } else { "n" }, p.id)).collect::<Vec<_>>().join(",")
}

fn parse_plan(text: &str) -> Vec<Planned> {
    text.split(',').map(|item| Planned { idempotent: item.starts_with('i'), id: item[1..].to_owned() }).collect()
}

/// Runs the plan in a child killed at `point` of call `at`, then resumes
/// the run here, sends every step again, and checks the effects.
fn crash_and_resume(backend: &Backend, plan: &[Planned], point: Point, at: usize) -> Result<(), TestCaseError> {
    let (dir, round) = tempdir();
    let (url, run_id) = (backend.url(&dir), format!("crash-{}-{round}", std::process::id()));
    let env = [("CRASH_PLAN", encode_plan(plan)), ("CRASH_STOP", format!("{}:{at}", point.name()))];
    let reached = killed_at("crash::crash_child", (&dir, &url, &run_id), &env, point.name());
    prop_assert!(reached, "the child never reached {point:?} of call {at}");

    // Resume in this process and send every step again.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let results = runtime.block_on(async {
        let journal = Journal::open(&url).await.unwrap();
        let world = Arc::new(World { dir: dir.clone(), stop: None, stop_answered: false });
        let mut run = registry().run(world).durable(&journal, &run_id).await.unwrap();
        let mut results = Vec::new();
        for (index, planned) in plan.iter().enumerate() {
            results.push(run.execute(vec![step_of(index, planned)]).await.results.remove(0));
        }
        journal.close().await;
        results
    });
    let charges = std::fs::read_to_string(dir.join("charges")).unwrap_or_default();
    for (index, (planned, result)) in plan.iter().zip(&results).enumerate() {
        if planned.idempotent {
            prop_assert!(dir.join(format!("flag-{}", format_args!("f{index}"))).exists(), "flag f{index} not set");
            prop_assert_eq!(result.kind, ResultKind::Success, "{}", result.text);
        } else {
            let times = charges.lines().filter(|line| *line == format!("charged by call {index}")).count();
            prop_assert!(times <= 1, "call {index} charged {times} times");
            // The one call cut off after its start reads that its outcome is unknown; every other charged once.
            let cut_off = index == at && matches!(point, Point::AfterStart | Point::AfterEffect);
            if cut_off {
                prop_assert_eq!(result.error_code.as_deref(), Some("OUTCOME_UNKNOWN"), "{}", result.text);
            } else {
                prop_assert_eq!(times, 1, "call {} charged {} times ({})", index, times, result.text);
                prop_assert_eq!(result.kind, ResultKind::Success, "{}", result.text);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Runs the child test `child` on the round's directory, journal and run
/// (and `env`), until it says it is `AT wanted`, and kills it there
/// (SIGKILL); whether it got there.
fn killed_at(child: &str, (dir, url, run_id): (&std::path::Path, &str, &str), env: &[(&str, String)], wanted: &str) -> bool {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", child, "--nocapture", "--test-threads=1"])
        .env("CRASH_DIR", dir)
        .env("CRASH_URL", url)
        .env("CRASH_RUN", run_id)
        .envs(env.iter().map(|(key, value)| (key, value)))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let wanted = format!("AT {wanted}");
    let mut reached = false;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        // libtest writes `test crash_child ... ` before the child's output.
        if line.ends_with(&wanted) || line.ends_with("AT end") {
            reached = line.ends_with(&wanted);
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    reached
}

/// A fresh directory for a round's effects (and SQLite journal), and the
/// round's number, which names its run.
fn tempdir() -> (PathBuf, usize) {
    static ROUND: AtomicUsize = AtomicUsize::new(0);
    let round = ROUND.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("tool-runtime-crash-{}-{round}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    (dir, round)
}

/// How many rounds of the fixed points run at once. Each round has its own
/// directory, journal file or run id, and child process, so they are
/// independent; most of a round is waiting (a charge cut off after its start
/// is waited for until its timeout and a grace have passed), which rounds
/// run side by side spend together. Few enough that a journal write of a
/// call that is not cut off stays well within its 1s timeout on 2 cores.
const ROUNDS_AT_ONCE: usize = 6;

fn killed_at_each_point(backend: &Backend) {
    let mut rounds = Vec::new();
    for idempotent in [false, true] {
        for point in Point::ALL {
            rounds.extend((0..20).map(|round| (idempotent, point, round)));
        }
    }
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..ROUNDS_AT_ONCE {
            scope.spawn(|| {
                while let Some(&(idempotent, point, round)) = rounds.get(next.fetch_add(1, Ordering::SeqCst)) {
                    let plan = [Planned { idempotent, id: format!("c{round}") }];
                    crash_and_resume(backend, &plan, point, 0)
                        .unwrap_or_else(|e| panic!("{backend:?}, {point:?}, idempotent: {idempotent}, round {round}: {e}"));
                }
            });
        }
    });
}

#[test]
fn a_call_killed_at_each_point_has_its_effect_at_most_once_or_exactly_once_if_idempotent() {
    on_each_backend(killed_at_each_point);
}

/// A charge of a 60-second timeout, cut off by a kill after its start, is
/// re-sent by another process: its outcome is unknown, and the re-sent
/// call says so once the killed process's lease on the journal lapsed
/// (seconds), not after the tool's timeout and a grace from its start
/// (before: 62 s).
fn not_waited_for_past_its_lease(backend: &Backend) {
    let plan = [Planned { idempotent: false, id: "slow-1".into() }];
    let started = std::time::Instant::now();
    crash_and_resume(backend, &plan, Point::AfterStart, 0).unwrap_or_else(|e| panic!("{backend:?}: {e}"));
    let took = started.elapsed();
    println!("{backend:?}: killed, resumed and re-sent in {took:?}");
    assert!(took < std::time::Duration::from_secs(30), "{backend:?}: the re-sent call waited {took:?} for a process that was gone");
}

#[test]
fn a_killed_process_s_call_is_not_waited_for_past_its_lease() {
    on_each_backend(not_waited_for_past_its_lease);
}

/// The child of a call that asks: `ASKED_STOP=asked` sends the call, which
/// parks its question, and waits there to be killed; `answered` resumes the
/// run and settles the answered call, stopping in its tool once it read the
/// answer, before the payment.
#[test]
#[ignore = "run by the question crash tests in a child process, which is killed"]
fn asked_child() {
    let Ok(stop) = std::env::var("ASKED_STOP") else { return };
    let dir = PathBuf::from(std::env::var("CRASH_DIR").unwrap());
    let (url, run_id) = (std::env::var("CRASH_URL").unwrap(), std::env::var("CRASH_RUN").unwrap());
    let world = Arc::new(World { dir, stop: None, stop_answered: stop == "answered" });
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let journal = Journal::open(&url).await.unwrap();
        let mut run = registry().run(world).with_user(UserContext::new("owner")).durable(&journal, &run_id).await.unwrap();
        if stop == "asked" {
            let step = run.execute(vec![ToolCall::new("c1", "pay", json!({"order": "A-1"}))]).await;
            assert_eq!(step.results[0].error_code.as_deref(), Some("ANSWER_PENDING"), "{}", step.results[0].text);
            stop_here_named("asked").await;
        }
        run.settle_decided().await.unwrap();
        println!("AT end");
        std::io::stdout().flush().unwrap();
        std::future::pending::<()>().await;
    });
}

/// What a round of a call that asks left: its result once the run went on
/// in this process, and how often the hold and the payment were made.
struct Asked {
    result: tool_runtime::CallResult,
    holds: usize,
    payments: usize,
}

/// A call parks its question in a child killed there (SIGKILL) before any
/// answer; the answer comes from this process through `question::decide`
/// (or, when `by_run`, through the resumed run); with `cut_again`, a second
/// child resumes the run, reads the answer and is killed before the
/// payment. The run then goes on here.
fn asked_and_killed(backend: &Backend, by_run: bool, cut_again: bool) -> Asked {
    let (dir, round) = tempdir();
    let (url, run_id) = (backend.url(&dir), format!("asked-{}-{round}", std::process::id()));
    let place = (dir.as_path(), url.as_str(), run_id.as_str());
    assert!(killed_at("crash::asked_child", place, &[("ASKED_STOP", "asked".into())], "asked"), "the child never asked");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let answer = || Decision::Answer(json!({"go": true}));
    if !by_run || cut_again {
        runtime.block_on(async {
            let journal = Journal::open(&url).await.unwrap();
            tool_runtime::question::decide(&journal, &run_id, "c1#1", answer(), "owner").await.unwrap();
            journal.close().await;
        });
    }
    if cut_again {
        assert!(killed_at("crash::asked_child", place, &[("ASKED_STOP", "answered".into())], "answered"), "the child never read the answer");
    }
    let result = runtime.block_on(async {
        let journal = Journal::open(&url).await.unwrap();
        let world = Arc::new(World { dir: dir.clone(), stop: None, stop_answered: false });
        let mut run = registry().run(world).with_user(UserContext::new("owner")).durable(&journal, &run_id).await.unwrap();
        let mut settled = match by_run && !cut_again {
            true => vec![run.approvals().decide("c1#1", answer()).await.unwrap()],
            false => run.settle_decided().await.unwrap(),
        };
        assert!(run.pending().is_empty(), "nothing waits any more");
        journal.close().await;
        settled.remove(0)
    });
    let lines = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default().lines().count();
    let asked = Asked { result, holds: lines("holds"), payments: lines("payments") };
    let _ = std::fs::remove_dir_all(&dir);
    asked
}

/// Rounds of a call killed between its question and its answer, several at
/// once: the hold made before the question is never made again, the call
/// finishes once (paid once), and no call is lost. With `cut_again`, the
/// process that goes on with the answered call is killed too, before its
/// payment: the call's outcome is then unknown (not run again), and still
/// the hold was made once.
fn killed_between_question_and_answer(backend: &Backend, cut_again: bool) {
    const ROUNDS: usize = 20;
    let next = AtomicUsize::new(0);
    let (finished, holds_twice, lost) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
    std::thread::scope(|scope| {
        for _ in 0..ROUNDS_AT_ONCE {
            scope.spawn(|| {
                while next.fetch_add(1, Ordering::SeqCst) < ROUNDS {
                    let by_run = next.load(Ordering::SeqCst).is_multiple_of(2);
                    let asked = asked_and_killed(backend, by_run, cut_again);
                    holds_twice.fetch_add(usize::from(asked.holds != 1), Ordering::SeqCst);
                    let expected = match cut_again {
                        false => asked.result.text == "paid A-1" && asked.payments == 1,
                        true => asked.result.error_code.as_deref() == Some("OUTCOME_UNKNOWN") && asked.payments == 0,
                    };
                    let counter = if expected { &finished } else { &lost };
                    counter.fetch_add(1, Ordering::SeqCst);
                    assert!(expected, "{backend:?}: {} (paid {} times)", asked.result.text, asked.payments);
                }
            });
        }
    });
    let (finished, holds_twice, lost) = (finished.into_inner(), holds_twice.into_inner(), lost.into_inner());
    println!("{backend:?}, cut again: {cut_again}: {ROUNDS} rounds, {finished} as expected, holds made twice: {holds_twice}, calls lost: {lost}");
    assert_eq!((finished, holds_twice, lost), (ROUNDS, 0, 0));
}

#[test]
fn a_call_killed_between_its_question_and_its_answer_goes_on_once_with_its_effect_made_once() {
    on_each_backend(|backend| {
        killed_between_question_and_answer(backend, false);
        killed_between_question_and_answer(backend, true);
    });
}

fn plans() -> impl Strategy<Value = (Vec<Planned>, Point, usize)> {
    prop::collection::vec(any::<bool>(), 1..5).prop_flat_map(|kinds| {
        let len = kinds.len();
        let plan: Vec<Planned> = kinds.into_iter().enumerate().map(|(i, idempotent)| Planned { idempotent, id: format!("c{i}") }).collect();
        (Just(plan), prop::sample::select(Point::ALL.to_vec()), 0..len)
    })
}

/// The property test, through proptest's runner rather than its macro, so
/// that it runs on the backends at once, and on each in several runners at
/// once (each with its own seed), `RUNNERS` of `CASES / RUNNERS` generated
/// runs: a case mostly waits too. A failure names the smallest run its
/// runner found.
#[test]
fn generated_runs_killed_anywhere_never_repeat_an_effect() {
    const CASES: u32 = 24;
    const RUNNERS: u32 = 4;
    on_each_backend(|backend| {
        std::thread::scope(|scope| {
            for _ in 0..RUNNERS {
                scope.spawn(|| {
                    let config = ProptestConfig { cases: CASES / RUNNERS, failure_persistence: None, ..ProptestConfig::default() };
                    if let Err(failure) = TestRunner::new(config).run(&plans(), |(plan, point, at)| crash_and_resume(backend, &plan, point, at)) {
                        panic!("{backend:?}: {failure}");
                    }
                });
            }
        });
    });
}

//! Throughput: many durable runs at once, each `Run::durable` of a new run
//! and one step of one call of `noop`, against the limit, the same
//! statements sent with sqlx directly by as many tasks at once
//! ([`bare_run`](super::bare_run)); on Postgres also from several
//! processes sharing the server.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tool_runtime::journal::{Journal, JournaledResult};
use tool_runtime::prelude::*;
use tool_runtime::{ResultKind, ToolCall};

use super::{Backend, Bare, bare_pool, bare_run, fresh_id, registry};

/// Runs started at once in one process.
pub(super) const CONCURRENT_RUNS: usize = 1_000;

/// Processes sharing one Postgres server in the measurement across
/// processes, each starting `CONCURRENT_RUNS / PROCESSES` runs at once.
const PROCESSES: usize = 4;

/// Rounds of each measurement, after one to warm the pools.
const ROUNDS: usize = 5;

/// Set in a child process of the measurement across processes: the
/// journal's URL.
const CHILD: &str = "JOURNAL_BENCH_CHILD";

/// What one round took: its wall time, and the CPU time of the clients
/// (this process, or the child processes) and of the Postgres server's
/// processes (where the server runs on this machine) during it.
#[derive(Clone, Copy, Debug)]
struct Round {
    wall: Duration,
    client: Option<Duration>,
    server: Option<Duration>,
}

/// The CPU time (user and system) of process `pid` (`self` for this one),
/// from its `/proc/<pid>/stat` (Linux): the 14th and 15th fields, in clock
/// ticks of 1/100 s (USER_HZ); `None` where it cannot be read.
fn cpu_of(pid: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// The parent of process `pid` (the 4th field of its `stat`).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

/// The CPU time of the Postgres server `server` (a pid) and its children
/// (its backends, WAL writer, checkpointer...).
fn server_cpu(server: Option<u32>) -> Option<Duration> {
    let server = server?;
    let pids = std::fs::read_dir("/proc").ok()?.flatten().filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok());
    Some(pids.filter(|&pid| pid == server || parent_of(pid) == Some(server)).filter_map(|pid| cpu_of(&pid.to_string())).sum())
}

/// The pid of the Postgres server at `url`, when it runs on this machine:
/// the parent of a backend's process.
async fn server_pid(url: &str) -> Option<u32> {
    #[cfg(feature = "postgres")]
    if url.starts_with("postgres") {
        use sqlx::Connection;

        let mut connection = sqlx::PgConnection::connect(url).await.ok()?;
        let (backend,): (i32,) = sqlx::query_as("SELECT pg_backend_pid()").fetch_one(&mut connection).await.ok()?;
        let server = parent_of(u32::try_from(backend).ok()?)?;
        connection.close().await.ok()?;
        return std::fs::read_to_string(format!("/proc/{server}/comm")).ok().filter(|comm| comm.trim() == "postgres").map(|_| server);
    }
    let _ = url;
    None
}

/// The CPU time spent by `clients` and the server between `before` and now.
struct Meter {
    clients: Vec<String>,
    server: Option<u32>,
    before: (Option<Duration>, Option<Duration>),
}

impl Meter {
    fn start(clients: Vec<String>, server: Option<u32>) -> Meter {
        let before = (clients.iter().map(|pid| cpu_of(pid)).sum(), server_cpu(server));
        Meter { clients, server, before }
    }

    fn stop(self, wall: Duration) -> Round {
        let client: Option<Duration> = self.clients.iter().map(|pid| cpu_of(pid)).sum();
        let spent = |after: Option<Duration>, before: Option<Duration>| after.zip(before).map(|(after, before)| after.saturating_sub(before));
        Round { wall, client: spent(client, self.before.0), server: spent(server_cpu(self.server), self.before.1) }
    }
}

/// `runs` tasks started at once, each `one()`; until all are done.
async fn all_at_once<F: Future<Output = ()> + Send + 'static>(runs: usize, one: impl Fn() -> F) -> Duration {
    let started = Instant::now();
    let handles: Vec<_> = (0..runs).map(|_| tokio::spawn(one())).collect();
    for handle in handles {
        handle.await.unwrap();
    }
    started.elapsed()
}

/// `runs` durable runs at once through `journal`, each a new run with one
/// step of one call.
async fn durable_runs(journal: &Journal, registry: &Registry<()>, runs: usize) -> Duration {
    all_at_once(runs, || {
        let (journal, registry) = (journal.clone(), registry.clone());
        async move {
            let mut run = registry.run(Arc::new(())).durable(&journal, &fresh_id("run")).await.unwrap();
            let step = run.execute(vec![ToolCall::new("c1", "noop", "{}")]).await;
            assert_eq!(step.results[0].kind, ResultKind::Success);
        }
    })
    .await
}

/// The same as [`durable_runs`], as the bare statements.
async fn bare_runs(bare: &Arc<Bare>, result: &JournaledResult, runs: usize) -> Duration {
    all_at_once(runs, || {
        let (bare, result) = (bare.clone(), result.clone());
        async move { bare_run(&bare, &fresh_id("run"), &result).await }
    })
    .await
}

/// A runtime of two workers, as a small service has.
fn two_workers() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Rounds of [`CONCURRENT_RUNS`] durable runs and of as many bare ones in
/// this process, alternating. The journal and the bare pool are opened on
/// the runtime that uses them (a pool's connections belong to the runtime
/// that opened them).
fn in_one_process(backend: &Backend, registry: &Registry<()>) -> [Vec<Round>; 2] {
    two_workers().block_on(async {
        let journal = Journal::open(&backend.url).await.unwrap();
        let bare = Arc::new(bare_pool(&backend.url).await);
        let server = server_pid(&backend.url).await;
        let (mut durable, mut bare_rounds) = (Vec::new(), Vec::new());
        for round in 0..=ROUNDS {
            let meter = Meter::start(vec!["self".into()], server);
            let one = meter.stop(durable_runs(&journal, registry, CONCURRENT_RUNS).await);
            let meter = Meter::start(vec!["self".into()], server);
            let other = meter.stop(bare_runs(&bare, &backend.result, CONCURRENT_RUNS).await);
            if round > 0 {
                durable.push(one);
                bare_rounds.push(other);
            }
        }
        journal.close().await;
        super::close_bare(&bare).await;
        [durable, bare_rounds]
    })
}

/// A child process of [`in_processes`]: its stdin, on which it is told to
/// go, and its stdout, on which it says it is ready and done.
struct Worker {
    child: Child,
    go: ChildStdin,
    said: BufReader<ChildStdout>,
}

impl Worker {
    fn spawn(url: &str) -> Worker {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(CHILD, url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start a bench process");
        let (go, said) = (child.stdin.take().unwrap(), BufReader::new(child.stdout.take().unwrap()));
        Worker { child, go, said }
    }

    fn wait_for(&mut self, word: &str) {
        let mut line = String::new();
        self.said.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), word, "a bench process said something else");
    }
}

/// Rounds of [`PROCESSES`] processes at once, each starting
/// `CONCURRENT_RUNS / PROCESSES` durable runs at once on one two-worker
/// runtime; each round until every process is done.
fn in_processes(url: &str) -> Vec<Round> {
    let server = two_workers().block_on(server_pid(url));
    let mut workers: Vec<Worker> = (0..PROCESSES).map(|_| Worker::spawn(url)).collect();
    let clients: Vec<String> = workers.iter().map(|worker| worker.child.id().to_string()).collect();
    workers.iter_mut().for_each(|worker| worker.wait_for("ready"));
    let mut rounds = Vec::new();
    for round in 0..=ROUNDS {
        let meter = Meter::start(clients.clone(), server);
        let started = Instant::now();
        for worker in &mut workers {
            writeln!(worker.go, "go").unwrap();
        }
        workers.iter_mut().for_each(|worker| worker.wait_for("done"));
        let measured = meter.stop(started.elapsed());
        if round > 0 {
            rounds.push(measured);
        }
    }
    for mut worker in workers {
        drop(worker.go);
        assert!(worker.child.wait().unwrap().success());
    }
    rounds
}

/// In a child process of [`in_processes`] (its URL in [`CHILD`]): runs its
/// share of the runs each time it reads a line, and says `done`; returns
/// true. Elsewhere, returns false at once.
pub(super) fn child() -> bool {
    let Ok(url) = std::env::var(CHILD) else { return false };
    let registry = registry();
    two_workers().block_on(async {
        let journal = Journal::open(&url).await.unwrap();
        durable_runs(&journal, &registry, 10).await;
        println!("ready");
        for line in std::io::stdin().lock().lines() {
            line.unwrap();
            durable_runs(&journal, &registry, CONCURRENT_RUNS / PROCESSES).await;
            println!("done");
        }
        journal.close().await;
    });
    true
}

/// The median round of `rounds` (by wall time), with the slowest and the
/// fastest rate.
fn median(mut rounds: Vec<Round>) -> (Round, f64, f64) {
    rounds.sort_by_key(|round| round.wall);
    let rate = |round: &Round| CONCURRENT_RUNS as f64 / round.wall.as_secs_f64();
    (rounds[rounds.len() / 2], rate(&rounds[rounds.len() - 1]), rate(&rounds[0]))
}

/// One line of the table: the median rate, its range, and CPU a run.
fn line(backend: &str, side: &str, rounds: Vec<Round>) -> f64 {
    let (median, slowest, fastest) = median(rounds);
    let rate = CONCURRENT_RUNS as f64 / median.wall.as_secs_f64();
    let per_run =
        |cpu: Option<Duration>| cpu.map_or_else(|| "n/a".to_owned(), |cpu| format!("{:.0}µs", cpu.as_secs_f64() * 1e6 / CONCURRENT_RUNS as f64));
    println!(
        "{backend:<10} {side:<13} {rate:>8.0} {:>18} {:>15} {:>15}",
        format!("{slowest:.0} to {fastest:.0}"),
        per_run(median.client),
        per_run(median.server)
    );
    rate
}

/// The throughput part of the summary, for each backend.
pub(super) fn print(backends: &[Backend], registry: &Registry<()>) {
    println!(
        "\nthroughput: {CONCURRENT_RUNS} runs at once (Run::durable of a new run, then one step of one call), on 2 worker threads; \
         median of {ROUNDS} rounds, durable and bare alternating"
    );
    println!("{:<10} {:<13} {:>8} {:>18} {:>15} {:>15}", "backend", "", "runs/s", "range", "client CPU/run", "server CPU/run");
    for backend in backends {
        let [durable, bare] = in_one_process(backend, registry);
        let (durable, bare) = (line(backend.name, "durable", durable), line(backend.name, "bare", bare));
        let ratio = durable / bare;
        println!(
            "{:<10} {:<13} {ratio:>7.2}x  target: at least 0.8x: {}",
            backend.name,
            "durable/bare",
            if ratio >= 0.8 { "met" } else { "NOT met" }
        );
        if backend.name == "postgres" {
            let rate = line(backend.name, &format!("{PROCESSES} processes"), in_processes(&backend.url));
            println!(
                "{:<10} {:<13} durable at least 3,000 runs/s: {}",
                "",
                "",
                if durable >= 3_000.0 && rate >= 3_000.0 { "met" } else { "NOT met" }
            );
        }
    }
    if !backends.iter().any(|backend| backend.name == "postgres") {
        println!("postgres: skipped (see above)");
    }
}

//! What journaling costs a call of a durable run, on SQLite and Postgres.
//!
//! One call of a tool that does nothing, through `Run::execute`, measured
//! three ways on each backend:
//!
//! - **durable**: in a durable run (`Run::durable`), with a fresh call id
//!   every time, so that every call is journaled. `execute` then runs four
//!   statements: the effect key looked up before the policy is decided
//!   (`calls().known`: a SELECT), the call recorded as started before the tool
//!   runs (`calls().start`: INSERT ... ON CONFLICT DO NOTHING, which reads
//!   the run's state, so that a finished run starts nothing), as finished
//!   after it (`calls().finish`: an UPDATE), and the step added to the run's
//!   record (`runs().add_step`: one transaction that takes the run's row and reads
//!   it, writes its step and state, appends the tool on the run's first call
//!   of it, and reads back the tools and failures other processes added).
//!   Three of them write (a commit, so an fsync on SQLite with synchronous
//!   = FULL and a WAL flush on Postgres). One call at a time, each is its
//!   own transaction; when many runs write at once, the writes that wait
//!   share one (the journal's group commit).
//! - **bare**, the limit: those statements with the same parameters,
//!   written with sqlx directly on the same database, each write its own
//!   transaction, through a pool with the same settings as
//!   `Journal::open`'s (SQLite: WAL, synchronous = FULL, 5 s busy timeout;
//!   sqlx's default pool of 10, a connection pinged only once it idled a
//!   second), sent again while SQLite answers busy, as the journal's are.
//! - **in memory**: the same call in a run that is not durable.
//!
//! A run is replaced by a fresh one every `RUN_LENGTH` calls (outside the
//! time measured), as in a conversation, so that one call in `RUN_LENGTH`
//! is a run's first and appends its tool; the bare writes do the same.
//!
//! `cargo bench --bench journal` prints criterion's groups, then the ratios
//! it is judged by, measured side by side in alternating batches:
//! durable/bare (target: at most 1.5x) and durable/in memory, per backend;
//! then the throughput (`throughput.rs`) of 1,000 runs at once (each a new
//! run id, one step of one call), durable and bare alternating, in one
//! process on each backend and from 4 processes of 250 on Postgres, with
//! the CPU time of the clients and of the Postgres server a run. The SQLite
//! file is in the system's temporary directory. The Postgres part needs
//! `--features postgres` and a server URL in
//! `TOOL_RUNTIME_TEST_POSTGRES_URL` or `DATABASE_URL` (`source
//! .ci/postgres.sh && postgres_start` starts a throwaway one); the bench
//! creates a database of its own there and drops it at the end. Without
//! them it says so and measures SQLite only.
//!
//! # Where the time goes
//!
//! A new run's first step sends 9 statements (tool-runtime's test
//! `a_new_runs_first_step_sends_nine_statements` counts them in sqlx's log
//! of each statement): `Run::durable` opens the run in one transaction,
//! whose first statement takes the run's row, claims it for its user and
//! says whether the run holds calls started and not finished or parked
//! calls not settled (so a new run reads neither), and whose second reads
//! back the run's tools and failures; `execute` sends the four above, the
//! step's transaction taking the row, writing the step, appending the tool
//! and reading back (7). Four of them commit a write. It sent 13 before
//! (14 for a run with a user): `Run::durable` read the run's user in a
//! statement of its own (and claimed it in another for a run with a user),
//! wrote step 0 though it changed nothing, and read the run's calls and
//! unsettled approvals after its commit. The bare side (`bare_run`) sends
//! the journal's statements as they are now, so durable/bare compares the
//! same 9 statements. With sqlx's default pool every statement or
//! transaction first pinged its connection: 25 round trips a run, 8 of
//! them pings, and 4 commits, when the run sent 13.
//!
//! Measured with 1,000 runs at once on 2 cores shared with other builds
//! (load 4 to 8), each the median of 5 rounds of 1,000, the versions
//! interleaved: every write its own commit with pings (3 rounds), the same
//! without pings (3), group commit with pings (3) and without (6):
//!
//! | 1,000 runs at once | every write its own commit, pinged | group commit, no pings |
//! |---|---|---|
//! | SQLite, one process | 198 to 1,017 runs/s, client 820 to 1,110 µs CPU a run | 3,050 to 5,778 runs/s, 220 to 270 µs |
//! | Postgres, one process | 248 to 820 runs/s, client 500 to 800 µs, server 1,150 to 2,270 µs | 1,352 to 2,598 runs/s, client 240 to 400 µs, server 400 to 940 µs |
//! | Postgres, 4 processes of 250 | 788 to 898 runs/s, client 580 to 640 µs, server 870 to 1,010 µs | 2,245 to 2,787 runs/s, client 270 to 300 µs, server 380 to 620 µs |
//!
//! - **Commits** were the limit on SQLite: one writer at a time, and each
//!   write waits for its fsync, so 4 fsyncs a run; the bare statements,
//!   written the same way, reached at most 1,121 runs/s in any round.
//!   Shared by the writes that wait together, they no longer bound it.
//! - **CPU**, the client's and the server's together, is the limit on
//!   Postgres: CPU a run times runs a second is 1.7 to 1.8 of the 2 cores
//!   (client 240 µs and server 400 µs at 2,598 runs/s), the rest taken by
//!   the other builds. The server's part is the larger: a backend process
//!   runs each statement, and each transaction's BEGIN and COMMIT (its WAL
//!   flush). Group commit cut
//!   both parts by half or more: a commit, its BEGIN and its WAL flush are
//!   shared by up to 64 writes.
//! - **Round trips**: the pings are gone (a connection in use a moment ago
//!   is alive); a run's 9 statements are left (13 before the run was
//!   opened in one transaction, below), and the BEGIN and COMMIT of its 2
//!   transactions, shared in a group. The pings alone were not a
//!   figure a user would notice on a local server: without group commit,
//!   Postgres 337 to 696 runs/s in one process and 1,126 to 1,555 in 4
//!   (SQLite 49 to 142, its fsyncs slowed by the other builds' disk
//!   writes); with group commit, 4 processes 2,245 to 2,483 runs/s
//!   without pings against 1,702 to 2,239 with them, one process within
//!   the noise. Each is a network round trip to a remote server.
//! - **Pool waits**: the pool is sqlx's default, 10 connections a journal;
//!   at most 4 send groups on Postgres (1 on SQLite, which takes one writer
//!   at a time), the others serve the reads. More would not help: the runs
//!   are bound by CPU, not by waits for a connection, and each Postgres
//!   connection is a server process competing for the same cores. The 4
//!   processes hold 40 connections at most, under Postgres's default of 100.
//!
//! **Fewer statements.** The run opened in one transaction (9 statements a
//! run, not 13) cut the CPU a run spends, the server's most. Measured with
//! the whole bench (`cargo bench --features postgres --bench journal --
//! none`, where the filter `none` skips criterion's groups), the binary of
//! before and of after alternating, 3 rounds each, on 2 cores shared with
//! other builds (load 4.0 to 7.2), each figure the median of the bench's 5
//! rounds of 1,000 runs:
//!
//! | Postgres, 1,000 runs at once | 13 statements a run | 9 statements a run |
//! |---|---|---|
//! | one process | 392 to 1,075 runs/s, client 400 to 570 µs CPU a run, server 1,210 to 1,870 µs | 1,019 to 1,394 runs/s, client 200 to 390 µs, server 260 to 1,030 µs |
//! | 4 processes of 250 | 1,205 to 2,128 runs/s, client 320 to 440 µs, server 460 to 680 µs | 1,870 to 2,577 runs/s, client 230 to 260 µs, server 360 to 400 µs |
//! | bare, one process | 166 to 1,373 runs/s | 221 to 1,747 runs/s |
//!
//! The bare side, each write its own commit, waits for the disk: on this
//! loaded machine it read from 166 to 1,747 runs/s, and durable/bare 0.76x
//! to 5.31x (0.78x and 0.76x in the one round of each where the disk was
//! quick).
//!
//! Measured again on the same machine quiet (load 1.0 to 1.6, nothing else
//! running), the same way, the binary of before (37a2f08, whose bare side
//! sends the 13 statements) and of after alternating, 3 rounds each:
//!
//! | 1,000 runs at once | 13 statements a run | 9 statements a run |
//! |---|---|---|
//! | Postgres, one process | 3,109, 3,279, 3,154 runs/s; client 210 to 220 µs CPU a run, server 290 to 310 µs | 4,222, 3,778, 3,855 runs/s; client 150 to 170 µs, server 230 to 240 µs |
//! | Postgres, 4 processes of 250 | 2,951, 2,989, 2,879 runs/s | 3,908, 3,517, 3,650 runs/s |
//! | Postgres, durable/bare | 1.69x, 1.77x, 1.73x | 2.07x, 1.96x, 1.88x |
//! | SQLite, one process | 5,263, 5,381, 5,295 runs/s | 6,792, 4,964, 6,524 runs/s |
//!
//! Quiet, group commit alone already passed 3,000 runs/s on Postgres; the
//! run opened in one transaction adds about a fifth, and a quarter in 4
//! processes. CPU is still the limit: client and server together spend
//! about 400 µs a run, so 2 cores hold about 5,000 runs/s at best, and the
//! 4 processes, which spend more CPU a run (each its own runtime and pool,
//! more server processes), reach fewer runs a second than one process.
//!
//! With group commit, the bare statements (each write its own commit) are
//! no longer a limit: durable/bare read 0.88x to 1.54x on Postgres and 5x
//! to 11x on SQLite in the rounds above.
//!
//! One call at a time (no group forms), in the same rounds: SQLite file
//! 0.53 to 0.71 ms durable against 0.48 to 0.62 ms bare (1.08x to 1.16x),
//! local Postgres 0.90 to 0.93 ms against 0.78 to 0.92 ms (1.01x to
//! 1.15x; one round at 21.8 ms against 17.1 ms, the machine loaded), each
//! 255x to 635x the call in memory (1.4 to 2.8 µs).

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use criterion::{Criterion, criterion_group};
use tokio::runtime::Runtime;
use tool_runtime::journal::{CallStart, Journal, JournaledResult};
use tool_runtime::prelude::*;
use tool_runtime::{ResultKind, ToolCall};

#[path = "journal/throughput.rs"]
mod throughput;

/// Does nothing.
#[tool]
async fn noop() -> String {
    String::new()
}

/// Calls per run before the bench starts a fresh one.
const RUN_LENGTH: u64 = 10;

// The journal's statements (tool-runtime/src/journal/calls.rs and runs.rs),
// written out again for the bare writes.
const KNOWN: &str = "SELECT effect_key, call_id, tool, input, started_at, finished_at, kind, text, structured, error_code, status, truncated, ends_run \
     FROM journal_calls WHERE effect_key = $1";
const START: &str = "INSERT INTO journal_calls (effect_key, run_id, call_id, tool, input, owner, started_at) \
     SELECT $1, $2, $3, $4, $5, $6, clock.ms FROM journal_clock AS clock \
     WHERE NOT EXISTS (SELECT 1 FROM journal_runs AS run WHERE run.run_id = $2 AND run.state = 'finished') ON CONFLICT (effect_key) DO NOTHING";
const FINISH: &str = "UPDATE journal_calls SET finished_at = (SELECT ms FROM journal_clock), kind = $2, text = $3, structured = $4, \
     error_code = $5, status = $6, truncated = $7, ends_run = $8 WHERE effect_key = $1 AND finished_at IS NULL";
const SAVE: &str = "INSERT INTO journal_runs (run_id, step, state, ended_by, updated_at, version) VALUES ($1, $2, $3, $4, $5, 1) \
     ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, state = excluded.state, ended_by = excluded.ended_by, \
     updated_at = excluded.updated_at, version = journal_runs.version + 1";
const TAKE: &str = "INSERT INTO journal_runs (run_id, step, state, ended_by, updated_at, version) \
     VALUES ($1, 0, 'active', NULL, (SELECT ms FROM journal_clock), 1) ON CONFLICT (run_id) DO UPDATE SET version = journal_runs.version + 1, updated_at = excluded.updated_at \
     RETURNING run_id, step, state, ended_by, last_calls, version";
const STEP: &str = "UPDATE journal_runs SET step = $2, state = $3, ended_by = $4, last_calls = $5 WHERE run_id = $1";
const APPEND_TOOL: &str = "INSERT INTO journal_run_tools (run_id, ordinal, tool) \
     SELECT $1, (SELECT COALESCE(MAX(ordinal) + 1, 0) FROM journal_run_tools WHERE run_id = $1), $2 \
     WHERE NOT EXISTS (SELECT 1 FROM journal_run_tools WHERE run_id = $1 AND tool = $2)";
const READ_BACK: &str = "SELECT * FROM (SELECT CAST(1 AS BIGINT) AS is_tool, ordinal AS n, tool FROM journal_run_tools \
     WHERE run_id = $1 AND ordinal >= $2 UNION ALL SELECT CAST(0 AS BIGINT), failures, tool FROM journal_run_failures \
     WHERE run_id = $1) AS back ORDER BY is_tool DESC, n, tool";

const OPEN: &str = "INSERT INTO journal_runs (run_id, step, state, ended_by, updated_at, version, user_id) \
     VALUES ($1, 0, 'active', NULL, (SELECT ms FROM journal_clock), 1, $2) ON CONFLICT (run_id) DO UPDATE SET version = journal_runs.version + 1, \
     updated_at = excluded.updated_at, user_id = COALESCE(journal_runs.user_id, excluded.user_id) \
     RETURNING run_id, step, state, ended_by, last_calls, version, user_id, \
     EXISTS (SELECT 1 FROM journal_calls WHERE run_id = $1 AND finished_at IS NULL) AS unfinished_calls, \
     EXISTS (SELECT 1 FROM journal_approvals WHERE run_id = $1 AND settled_at IS NULL) AS unsettled";

/// A pool beside the journal's, for the bare writes.
enum Bare {
    Sqlite(sqlx::SqlitePool),
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgPool),
}

/// Runs `$body` with `$pool` bound to the bare pool (the statements are the
/// same text on both backends).
macro_rules! on_pool {
    ($bare:expr, $pool:ident => $body:expr) => {
        match $bare {
            Bare::Sqlite($pool) => $body,
            #[cfg(feature = "postgres")]
            Bare::Postgres($pool) => $body,
        }
    };
}

/// `$unit` (an async block giving a `Result<_, sqlx::Error>`), sent again
/// while SQLite says another connection holds the lock, as the journal
/// sends its operations again ([`busy`](tool_runtime::journal)).
macro_rules! busy {
    ($unit:expr) => {
        loop {
            match $unit.await {
                Ok(done) => break done,
                Err(error) if is_busy(&error) => tokio::time::sleep(Duration::from_millis(2)).await,
                Err(error) => panic!("a bare statement failed: {error}"),
            }
        }
    };
}

/// SQLite's busy or locked (its codes 5 and 6, extended ones included).
fn is_busy(error: &sqlx::Error) -> bool {
    let code = error.as_database_error().and_then(|error| error.code()).and_then(|code| code.parse::<i64>().ok());
    matches!(code.map(|code| code & 0xff), Some(5 | 6))
}

/// One backend: the journal, the bare pool on the same database, and what
/// the journal stores for a call of `noop` (the bare writes store the same).
struct Backend {
    name: &'static str,
    url: String,
    journal: Journal,
    bare: Bare,
    result: JournaledResult,
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn registry() -> Registry<()> {
    Registry::<()>::builder().tools(tools![noop]).build().unwrap()
}

/// An id no earlier call, run or bench process used.
fn fresh_id(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static EPOCH: std::sync::OnceLock<u128> = std::sync::OnceLock::new();
    let epoch = EPOCH.get_or_init(|| SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos());
    format!("{prefix}-{epoch}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn millis(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The journal's effect key of a call by run id and call id.
fn effect_key(run_id: &str, call_id: &str) -> String {
    serde_json::json!(["call", run_id, call_id]).to_string()
}

/// `calls` calls of `noop`, each its own step, through `execute` of durable
/// runs (`Some(journal)`) or of runs in memory; the time spent in `execute`.
async fn through_runs(registry: &Registry<()>, journal: Option<&Journal>, calls: u64) -> Duration {
    let mut spent = Duration::ZERO;
    let mut done = 0;
    while done < calls {
        let mut run = registry.run(Arc::new(()));
        if let Some(journal) = journal {
            run = run.durable(journal, &fresh_id("run")).await.unwrap();
        }
        for _ in 0..RUN_LENGTH.min(calls - done) {
            let call = ToolCall::new(fresh_id("c"), "noop", "{}");
            let started = Instant::now();
            let step = run.execute(vec![call]).await;
            spent += started.elapsed();
            assert_eq!(black_box(step).results[0].kind, ResultKind::Success);
            done += 1;
        }
    }
    spent
}

/// The journal's statements for `calls` calls of `noop`, written directly;
/// the time spent on them. A fresh run record is saved first every
/// `RUN_LENGTH` calls, outside the time, as `Run::durable` does.
async fn bare_writes(backend: &Backend, calls: u64) -> Duration {
    let mut spent = Duration::ZERO;
    let mut done = 0;
    while done < calls {
        let run_id = fresh_id("run");
        save_run(&backend.bare, &run_id).await;
        for step in 1..=RUN_LENGTH.min(calls - done) {
            let call_id = fresh_id("c");
            let started = Instant::now();
            bare_call(&backend.bare, &backend.result, &run_id, &call_id, step).await;
            spent += started.elapsed();
            done += 1;
        }
    }
    spent
}

/// What a durable run's `execute` writes for one call of `noop` as its
/// `step`th step: the effect key looked up, the call started and finished,
/// the step added to the run (with `noop` appended to its tools on the
/// first step, and read back).
async fn bare_call(bare: &Bare, result: &JournaledResult, run_id: &str, call_id: &str, step: u64) {
    let key = effect_key(run_id, call_id);
    let structured = result.structured.as_ref().map(serde_json::Value::to_string);
    // The digest of the step's call ids, as long as the journal's.
    let last_calls = format!("{call_id:0>64}");
    let step = i64::try_from(step).unwrap();
    on_pool!(bare, pool => {
        let known = busy!(sqlx::query(KNOWN).bind(&key).fetch_optional(pool));
        assert!(known.is_none());
        let inserted = busy!(sqlx::query(START).bind(&key).bind(run_id).bind(call_id).bind("noop").bind("{}").bind("bench-owner").execute(pool));
        assert_eq!(inserted.rows_affected(), 1);
        let updated = busy!(sqlx::query(FINISH)
            .bind(&key)
            .bind(result.kind.as_str())
            .bind(&result.text)
            .bind(structured.as_deref())
            .bind(result.error_code.as_deref())
            .bind(result.status.map(i64::from))
            .bind(result.truncated)
            .bind(result.ends_run)
            .execute(pool));
        assert_eq!(updated.rows_affected(), 1);
        let back = busy!(async {
            let mut tx = pool.begin().await?;
            let taken = sqlx::query(TAKE).bind(run_id).fetch_one(&mut *tx).await?;
            assert_eq!(sqlx::Row::get::<i64, _>(&taken, "step"), step - 1);
            sqlx::query(STEP).bind(run_id).bind(step).bind("active").bind(None::<&str>).bind(&last_calls).execute(&mut *tx).await?;
            if step == 1 {
                sqlx::query(APPEND_TOOL).bind(run_id).bind("noop").execute(&mut *tx).await?;
            }
            let back: Vec<(i64, i64, String)> = sqlx::query_as(READ_BACK).bind(run_id).bind(i64::from(step > 1)).fetch_all(&mut *tx).await?;
            tx.commit().await.map(|()| back)
        });
        assert_eq!(back.len(), usize::from(step == 1));
    });
}

/// A new run at step 0, as `journal.runs().save` writes it (outside the time
/// measured).
async fn save_run(bare: &Bare, run_id: &str) {
    on_pool!(bare, pool => sqlx::query(SAVE)
        .bind(run_id)
        .bind(0_i64)
        .bind("active")
        .bind(None::<&str>)
        .bind(millis(SystemTime::now()))
        .execute(pool)
        .await
        .map(drop)
        .unwrap());
}

/// What `Run::durable` sends for a new run `run_id`, then one step of one
/// call ([`bare_call`]), with sqlx directly: in one transaction, the run's
/// row taken (its user claimed, and whether it holds unfinished calls or
/// unsettled approvals read: it holds neither, so they are not read) and
/// its tools and failures read back.
async fn bare_run(bare: &Bare, run_id: &str, result: &JournaledResult) {
    on_pool!(bare, pool => {
        let (back, unfinished, unsettled) = busy!(async {
            let mut tx = pool.begin().await?;
            let taken = sqlx::query(OPEN).bind(run_id).bind(None::<&str>).fetch_one(&mut *tx).await?;
            let held: (bool, bool) = (sqlx::Row::try_get(&taken, "unfinished_calls")?, sqlx::Row::try_get(&taken, "unsettled")?);
            let back: Vec<(i64, i64, String)> = sqlx::query_as(READ_BACK).bind(run_id).bind(0_i64).fetch_all(&mut *tx).await?;
            tx.commit().await.map(|()| (back, held.0, held.1))
        });
        assert!(back.is_empty() && !unfinished && !unsettled);
    });
    bare_call(bare, result, run_id, "c1", 1).await;
}

/// A bare pool with `Journal::open`'s settings for `url`: its connection
/// options, and a connection pinged only when it idled a second or more.
async fn bare_pool(url: &str) -> Bare {
    fn options<DB: sqlx::Database>() -> sqlx::pool::PoolOptions<DB> {
        sqlx::pool::PoolOptions::new().test_before_acquire(false).before_acquire(|connection, meta| {
            Box::pin(async move {
                if meta.idle_for >= Duration::from_secs(1) {
                    sqlx::Connection::ping(connection).await?;
                }
                Ok(true)
            })
        })
    }
    #[cfg(feature = "postgres")]
    if url.starts_with("postgres") {
        let connect: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
        return Bare::Postgres(options().connect_with(connect).await.unwrap());
    }
    use std::str::FromStr;

    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
    let connect = SqliteConnectOptions::from_str(url)
        .unwrap()
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(Duration::from_secs(5));
    Bare::Sqlite(options().connect_with(connect).await.unwrap())
}

/// Opens the journal and the bare pool on `url`, and checks that the bare
/// writes store exactly what a journaled call stores.
async fn backend(name: &'static str, url: &str, registry: &Registry<()>) -> Backend {
    let journal = Journal::open(url).await.unwrap_or_else(|e| panic!("open the journal at {url}: {e}"));
    let run_id = fresh_id("run");
    let mut run = registry.run(Arc::new(())).durable(&journal, &run_id).await.unwrap();
    let step = run.execute(vec![ToolCall::new("c-check", "noop", "{}")]).await;
    assert_eq!(step.results[0].kind, ResultKind::Success);
    let Some(CallStart::Finished(result)) = journal.calls().known(&effect_key(&run_id, "c-check")).await.unwrap() else {
        panic!("the journaled call is not finished under the key the bench computes");
    };
    let journaled_run = journal.runs().load(&run_id).await.unwrap().unwrap();
    let backend = Backend { name, url: url.to_owned(), bare: bare_pool(url).await, journal, result };

    // One bare call in a run of its own, read back through the journal.
    let bare_run_id = fresh_id("run");
    save_run(&backend.bare, &bare_run_id).await;
    bare_call(&backend.bare, &backend.result, &bare_run_id, "c-check", 1).await;
    let bare_result = backend.journal.calls().known(&effect_key(&bare_run_id, "c-check")).await.unwrap();
    assert_eq!(bare_result, Some(CallStart::Finished(backend.result.clone())), "the bare writes store what the journal stores");
    let bare_run = backend.journal.runs().load(&bare_run_id).await.unwrap().unwrap();
    assert_eq!((bare_run.step, &bare_run.executed, &bare_run.state), (journaled_run.step, &journaled_run.executed, &journaled_run.state));
    backend
}

/// The Postgres server's URL, when one is given.
fn postgres_url() -> Option<String> {
    ["TOOL_RUNTIME_TEST_POSTGRES_URL", "DATABASE_URL"]
        .into_iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|url| url.starts_with("postgres://") || url.starts_with("postgresql://"))
}

/// The databases measured: a SQLite file in a fresh temporary directory,
/// and a fresh database on the Postgres server when there is one.
struct Databases {
    sqlite_dir: std::path::PathBuf,
    sqlite_url: String,
    /// The server's URL and the bench's own database on it.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    postgres: Option<(String, String)>,
}

impl Databases {
    async fn create() -> Databases {
        let sqlite_dir = std::env::temp_dir().join(format!("tool-runtime-bench-journal-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&sqlite_dir);
        std::fs::create_dir_all(&sqlite_dir).unwrap();
        let sqlite_url = format!("sqlite:{}", sqlite_dir.join("journal.db").display());
        // Said once, though criterion's groups and the summary each create the databases.
        static SAID: std::sync::Once = std::sync::Once::new();
        let postgres = match postgres_url() {
            None => {
                SAID.call_once(|| {
                    println!("journal bench: no Postgres server (set TOOL_RUNTIME_TEST_POSTGRES_URL or DATABASE_URL); measuring SQLite only");
                });
                None
            }
            Some(_) if cfg!(not(feature = "postgres")) => {
                SAID.call_once(|| {
                    println!("journal bench: built without the `postgres` feature; run `cargo bench --bench journal --features postgres` to measure Postgres");
                });
                None
            }
            Some(server) => Some(Self::create_postgres(server).await),
        };
        Databases { sqlite_dir, sqlite_url, postgres }
    }

    #[cfg(feature = "postgres")]
    async fn create_postgres(server: String) -> (String, String) {
        use sqlx::{AssertSqlSafe, Connection};

        let name = format!("journal_bench_{}", std::process::id());
        let mut admin = sqlx::PgConnection::connect(&server).await.expect("connect to the Postgres server");
        sqlx::raw_sql(AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))).execute(&mut admin).await.unwrap();
        sqlx::raw_sql(AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut admin).await.unwrap();
        admin.close().await.unwrap();
        let (base, _) = server.rsplit_once('/').expect("a URL ending in /database");
        let url = format!("{base}/{name}");
        (server, url)
    }

    #[cfg(not(feature = "postgres"))]
    async fn create_postgres(_server: String) -> (String, String) {
        unreachable!("Postgres is only measured with the `postgres` feature")
    }

    async fn backends(&self, registry: &Registry<()>) -> Vec<Backend> {
        let sqlite = backend("sqlite", &self.sqlite_url, registry).await;
        #[cfg(feature = "postgres")]
        if let Some((_, url)) = &self.postgres {
            return vec![sqlite, backend("postgres", url, registry).await];
        }
        vec![sqlite]
    }

    async fn drop_all(&self) {
        let _ = std::fs::remove_dir_all(&self.sqlite_dir);
        #[cfg(feature = "postgres")]
        if let Some((server, url)) = &self.postgres {
            use sqlx::{AssertSqlSafe, Connection};

            let name = url.rsplit_once('/').unwrap().1;
            let mut admin = sqlx::PgConnection::connect(server).await.unwrap();
            sqlx::raw_sql(AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))).execute(&mut admin).await.unwrap();
            admin.close().await.unwrap();
        }
    }
}

async fn close_bare(bare: &Bare) {
    on_pool!(bare, pool => pool.close().await);
}

async fn close(backends: Vec<Backend>) {
    for backend in backends {
        backend.journal.close().await;
        close_bare(&backend.bare).await;
    }
}

fn benches(c: &mut Criterion) {
    let rt = runtime();
    let registry = registry();
    let databases = rt.block_on(Databases::create());
    let backends = rt.block_on(databases.backends(&registry));

    let mut group = c.benchmark_group("journal");
    // Each durable call waits for three commits: few samples, short.
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    group.bench_function("memory", |b| b.iter_custom(|iters| rt.block_on(through_runs(&registry, None, iters))));
    for backend in &backends {
        group.bench_function(format!("{}/durable", backend.name), |b| {
            b.iter_custom(|iters| rt.block_on(through_runs(&registry, Some(&backend.journal), iters)))
        });
        group.bench_function(format!("{}/bare", backend.name), |b| b.iter_custom(|iters| rt.block_on(bare_writes(backend, iters))));
    }
    group.finish();
    rt.block_on(close(backends));
    rt.block_on(databases.drop_all());
}

/// The median time per call of each of `sides`, over `rounds` rounds of
/// batches of `batch` calls, the sides alternating within a round.
fn side_by_side<const N: usize>(rounds: usize, batch: u64, mut sides: [&mut dyn FnMut(u64) -> Duration; N]) -> [Duration; N] {
    for side in sides.iter_mut() {
        side(batch);
    }
    let mut times: [Vec<Duration>; N] = std::array::from_fn(|_| Vec::with_capacity(rounds));
    for _ in 0..rounds {
        for (side, times) in sides.iter_mut().zip(times.iter_mut()) {
            times.push(side(batch) / u32::try_from(batch).unwrap());
        }
    }
    times.map(|mut times| {
        times.sort();
        times[times.len() / 2]
    })
}

fn summary() {
    let rt = runtime();
    let registry = registry();
    let databases = rt.block_on(Databases::create());
    let backends = rt.block_on(databases.backends(&registry));
    let (rounds, batch) = (15, 20);
    println!("\njournal: one call of a tool that does nothing through Run::execute (median of {rounds} alternating batches of {batch} calls)");
    println!(
        "durable: per call a SELECT by effect key, an INSERT start, an UPDATE finish, and the step's transaction (row taken, UPDATE, read back); 3 commits"
    );
    println!("bare: those statements with the same parameters, sqlx directly, same database and connection settings");
    println!("{:<10} {:>12} {:>12} {:>12} {:>13} {:>15}  target", "backend", "durable", "bare", "in memory", "durable/bare", "durable/memory");
    for backend in &backends {
        let [durable, bare, memory] = side_by_side(
            rounds,
            batch,
            [&mut |n| rt.block_on(through_runs(&registry, Some(&backend.journal), n)), &mut |n| rt.block_on(bare_writes(backend, n)), &mut |n| {
                rt.block_on(through_runs(&registry, None, n))
            }],
        );
        let to_bare = durable.as_secs_f64() / bare.as_secs_f64();
        let to_memory = durable.as_secs_f64() / memory.as_secs_f64();
        println!(
            "{:<10} {durable:>12.2?} {bare:>12.2?} {memory:>12.2?} {to_bare:>12.2}x {to_memory:>14.0}x  durable/bare <= 1.5x: {}",
            backend.name,
            if to_bare <= 1.5 { "met" } else { "NOT met" }
        );
    }
    throughput::print(&backends, &registry);
    rt.block_on(close(backends));
    rt.block_on(databases.drop_all());
}

criterion_group!(group, benches);

fn main() {
    if throughput::child() {
        return;
    }
    group();
    Criterion::default().configure_from_args().final_summary();
    summary();
}

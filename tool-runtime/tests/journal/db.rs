//! A fresh database per test: a SQLite file in its own temp directory, or
//! its own database on the Postgres server named by
//! `TOOL_RUNTIME_TEST_POSTGRES_URL` (`.ci/postgres.sh` starts one).

// Shared by the journal and durable-run tests; each uses a part.
#![allow(dead_code)]

use tool_runtime::journal::Journal;

#[path = "../../../tests/support/peers.rs"]
mod peers;

/// One test per backend for each case, from one body taking a [`Db`]:
/// `sqlite::NAME` on a fresh SQLite file, `postgres::NAME` on a fresh
/// database of the Postgres server (the test says it skips without one,
/// outside CI). `$prefix` keeps the databases of two test files apart.
/// In scope in every module after `db` (`#[macro_use]` in `suite.rs`).
macro_rules! on_both_backends {
    ($prefix:literal: $($case:ident),* $(,)?) => {
        #[cfg(feature = "sqlite")]
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(super::Db::sqlite(concat!($prefix, stringify!($case)))).await;
                }
            )*
        }
        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    if let Some(db) = super::Db::postgres(concat!($prefix, stringify!($case))).await {
                        super::$case(db).await;
                    }
                }
            )*
        }
    };
}

pub enum Db {
    #[cfg(feature = "sqlite")]
    Sqlite { dir: std::path::PathBuf, url: String },
    #[cfg(feature = "postgres")]
    Postgres { url: String },
}

impl Db {
    #[cfg(feature = "sqlite")]
    pub fn sqlite(test: &str) -> Db {
        let dir = std::env::temp_dir().join(format!("tool-runtime-journal-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite:{}", dir.join("journal.db").display());
        Db::Sqlite { dir, url }
    }

    /// `None` when no server is configured, outside CI: the test is then
    /// recorded as skipped (`tests/support/peers.rs`).
    #[cfg(feature = "postgres")]
    pub async fn postgres(test: &str) -> Option<Db> {
        use sqlx::{AssertSqlSafe, Connection};

        let base = peers::postgres_url()?;
        // Checkouts sharing one server (worktrees) keep their databases apart.
        let checkout = env!("CARGO_MANIFEST_DIR").bytes().fold(0u32, |hash, byte| hash.wrapping_mul(31).wrapping_add(u32::from(byte))) % 10_000;
        let name = format!("journal{checkout}_{test}");
        let mut admin = sqlx::PgConnection::connect(&base).await.expect("connect to TOOL_RUNTIME_TEST_POSTGRES_URL");
        sqlx::raw_sql(AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))).execute(&mut admin).await.unwrap();
        sqlx::raw_sql(AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut admin).await.unwrap();
        admin.close().await.unwrap();
        let (server, _) = base.rsplit_once('/').expect("a URL ending in /database");
        Some(Db::Postgres { url: format!("{server}/{name}") })
    }

    pub fn url(&self) -> &str {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite { url, .. } => url,
            #[cfg(feature = "postgres")]
            Db::Postgres { url } => url,
        }
    }

    /// A journal on this database, as another process would open it (its
    /// own connections).
    pub async fn open(&self) -> Journal {
        Journal::open(self.url()).await.unwrap_or_else(|e| panic!("open {}: {e}", self.url()))
    }

    /// Runs SQL behind the journal's back, on a connection of its own (on
    /// SQLite, creating the file when no journal opened it yet).
    pub async fn exec(&self, sql: String) {
        use sqlx::{AssertSqlSafe, ConnectOptions, Connection};
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite { url, .. } => {
                let options: sqlx::sqlite::SqliteConnectOptions = url.parse().unwrap();
                let mut conn = options.create_if_missing(true).connect().await.unwrap();
                sqlx::raw_sql(AssertSqlSafe(sql)).execute(&mut conn).await.unwrap();
                conn.close().await.unwrap();
            }
            #[cfg(feature = "postgres")]
            Db::Postgres { url } => {
                let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
                sqlx::raw_sql(AssertSqlSafe(sql)).execute(&mut conn).await.unwrap();
                conn.close().await.unwrap();
            }
        }
    }

    /// The first column of the first row of `sql`, as text.
    pub async fn text(&self, sql: String) -> String {
        use sqlx::{AssertSqlSafe, Connection};
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite { url, .. } => {
                let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
                let (text,): (String,) = sqlx::query_as(AssertSqlSafe(sql)).fetch_one(&mut conn).await.unwrap();
                text
            }
            #[cfg(feature = "postgres")]
            Db::Postgres { url } => {
                let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
                let (text,): (String,) = sqlx::query_as(AssertSqlSafe(sql)).fetch_one(&mut conn).await.unwrap();
                text
            }
        }
    }
}

/// A lock on the journal's calls held by another connection
/// ([`Db::lock_calls`]), until [`release`](Self::release).
pub enum Lock {
    #[cfg(feature = "sqlite")]
    Sqlite(sqlx::SqliteConnection),
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgConnection),
}

impl Db {
    /// Holds the journal's calls locked from another connection, as a
    /// stuck process would: SQLite, a write transaction (`BEGIN
    /// IMMEDIATE`) on the whole file; Postgres, `LOCK TABLE journal_calls`
    /// in a transaction, which blocks reads too.
    pub async fn lock_calls(&self) -> Lock {
        self.lock("LOCK TABLE journal_calls IN ACCESS EXCLUSIVE MODE").await
    }

    /// Holds the journal's runs locked from another connection, as a
    /// stuck process would: SQLite, a write transaction on the whole file;
    /// Postgres, `LOCK TABLE journal_runs IN EXCLUSIVE MODE`, which lets
    /// reads through and holds every write of a run.
    pub async fn lock_runs(&self) -> Lock {
        self.lock("LOCK TABLE journal_runs IN EXCLUSIVE MODE").await
    }

    /// A write transaction on SQLite; on Postgres, `lock` in a transaction.
    async fn lock(&self, lock: &str) -> Lock {
        use sqlx::Connection;
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite { url, .. } => {
                let _ = lock;
                let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
                sqlx::raw_sql("BEGIN IMMEDIATE").execute(&mut conn).await.unwrap();
                Lock::Sqlite(conn)
            }
            #[cfg(feature = "postgres")]
            Db::Postgres { url } => {
                let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!("BEGIN; {lock}"))).execute(&mut conn).await.unwrap();
                Lock::Postgres(conn)
            }
        }
    }
}

impl Lock {
    /// Ends the transaction: the journal can be written again.
    pub async fn release(self) {
        use sqlx::Connection;
        match self {
            #[cfg(feature = "sqlite")]
            Lock::Sqlite(mut conn) => {
                sqlx::raw_sql("ROLLBACK").execute(&mut conn).await.unwrap();
                conn.close().await.unwrap();
            }
            #[cfg(feature = "postgres")]
            Lock::Postgres(mut conn) => {
                sqlx::raw_sql("ROLLBACK").execute(&mut conn).await.unwrap();
                conn.close().await.unwrap();
            }
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        // Irrefutable when only the `sqlite` feature is on.
        #[cfg(feature = "sqlite")]
        #[allow(irrefutable_let_patterns)]
        if let Db::Sqlite { dir, .. } = self {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

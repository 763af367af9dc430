//! The journal's schema: numbered migrations embedded in the binary, each
//! backend its own SQL, applied in order when a journal is opened. The
//! versions applied are rows of `journal_schema`; a version there that this
//! code does not know means a newer tool-runtime wrote the database, which
//! is refused rather than misread.
//!
//! Migrating holds a lock (SQLite: an immediate transaction; Postgres: an
//! advisory lock inside the transaction), so that processes opening one
//! database at once apply each migration once.

use super::{Journal, JournalError};
use crate::memory::records::millis;

/// The newest schema version this code knows.
pub(crate) const LATEST: i64 = 9;

#[cfg(feature = "sqlite")]
const SQLITE: [&str; LATEST as usize] = [
    include_str!("sql/sqlite/0001_journal.sql"),
    include_str!("sql/sqlite/0002_run_tools.sql"),
    include_str!("sql/sqlite/0003_approvals_by_run.sql"),
    include_str!("sql/sqlite/0004_run_steps.sql"),
    include_str!("sql/sqlite/0005_inbox.sql"),
    include_str!("sql/sqlite/0006_tasks.sql"),
    include_str!("sql/sqlite/0007_inbox_notify_approved_calls.sql"),
    include_str!("sql/sqlite/0008_clock_users_owners_replays.sql"),
    include_str!("sql/sqlite/0009_questions.sql"),
];
#[cfg(feature = "postgres")]
const POSTGRES: [&str; LATEST as usize] = [
    include_str!("sql/postgres/0001_journal.sql"),
    include_str!("sql/postgres/0002_run_tools.sql"),
    include_str!("sql/postgres/0003_approvals_by_run.sql"),
    include_str!("sql/postgres/0004_run_steps.sql"),
    include_str!("sql/postgres/0005_inbox.sql"),
    include_str!("sql/postgres/0006_tasks.sql"),
    include_str!("sql/postgres/0007_inbox_notify_approved_calls.sql"),
    include_str!("sql/postgres/0008_clock_users_owners_replays.sql"),
    include_str!("sql/postgres/0009_questions.sql"),
];

const CREATE_VERSIONS: &str = "CREATE TABLE IF NOT EXISTS journal_schema (version BIGINT PRIMARY KEY NOT NULL, applied_at BIGINT NOT NULL)";
const CURRENT_VERSION: &str = "SELECT MAX(version) FROM journal_schema";
const RECORD_VERSION: &str = "INSERT INTO journal_schema (version, applied_at) VALUES ($1, $2)";
/// Any fixed number: the key of the advisory lock that serialises migrations.
#[cfg(feature = "postgres")]
const POSTGRES_MIGRATION_LOCK: i64 = 0x746f_6f6c_6a6e_6c31;

/// Applies the migrations the database lacks; tried again while SQLite
/// says another process holds the lock (one migrating at the same time).
pub(crate) async fn migrate(journal: &Journal) -> Result<(), JournalError> {
    let mut busy = super::busy::Retries::new();
    loop {
        let result = migrate_once(journal).await;
        if !busy.again(&result).await {
            return result;
        }
    }
}

async fn migrate_once(journal: &Journal) -> Result<(), JournalError> {
    let failed = JournalError::database::<sqlx::Error>("migrate");
    match &journal.backend {
        #[cfg(feature = "sqlite")]
        super::Backend::Sqlite(pool) => {
            let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
            apply_sqlite(&mut tx, &SQLITE).await?;
            tx.commit().await.map_err(JournalError::database::<sqlx::Error>("migrate"))
        }
        #[cfg(feature = "postgres")]
        super::Backend::Postgres(pool) => {
            let mut tx = pool.begin().await.map_err(failed)?;
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(POSTGRES_MIGRATION_LOCK)
                .execute(&mut *tx)
                .await
                .map_err(JournalError::database::<sqlx::Error>("migrate"))?;
            apply_postgres(&mut tx, &POSTGRES).await?;
            tx.commit().await.map_err(JournalError::database::<sqlx::Error>("migrate"))
        }
        #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
        super::Backend::None(never) => match *never {},
    }
}

/// Applies, inside `tx`, the migrations after the database's version.
macro_rules! apply_body {
    ($tx:ident, $migrations:ident) => {{
        let failed = || JournalError::database::<sqlx::Error>("migrate");
        sqlx::query(CREATE_VERSIONS).execute(&mut **$tx).await.map_err(failed())?;
        let (current,): (Option<i64>,) = sqlx::query_as(CURRENT_VERSION).fetch_one(&mut **$tx).await.map_err(failed())?;
        let current = current.unwrap_or(0);
        if current > LATEST {
            return Err(JournalError::SchemaTooNew { found: current, known: LATEST });
        }
        for (version, sql) in (1..).zip($migrations.iter()).skip(current as usize) {
            sqlx::raw_sql(*sql).execute(&mut **$tx).await.map_err(failed())?;
            sqlx::query(RECORD_VERSION).bind(version).bind(millis(std::time::SystemTime::now())).execute(&mut **$tx).await.map_err(failed())?;
        }
        Ok(())
    }};
}

#[cfg(feature = "sqlite")]
async fn apply_sqlite(tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>, migrations: &[&'static str]) -> Result<(), JournalError> {
    apply_body!(tx, migrations)
}

#[cfg(feature = "postgres")]
async fn apply_postgres(tx: &mut sqlx::Transaction<'static, sqlx::Postgres>, migrations: &[&'static str]) -> Result<(), JournalError> {
    apply_body!(tx, migrations)
}

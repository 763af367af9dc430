//! The journal `durable_desk` and `approvals_inbox` share.

use tool_runtime::journal::Journal;

/// The journal: `DATABASE_URL`, else a SQLite file in the temp directory.
pub async fn journal() -> Result<Journal, Box<dyn std::error::Error>> {
    let url = match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => std::env::temp_dir().join("durable_desk.db").display().to_string(),
    };
    println!("journal: {url}");
    Ok(Journal::open(&url).await?)
}

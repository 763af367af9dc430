//! The revisions with sessions (2024-11-05 to 2025-11-25): one session is
//! one run (`session.rs`); a durable session's wait for approval
//! (`durable.rs`).

mod durable;
mod session;

pub use session::McpSession;

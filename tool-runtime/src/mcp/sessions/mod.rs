//! The revisions with sessions (2024-11-05 to 2025-11-25): one session is
//! one run (`session.rs`); a durable session's wait for approval
//! (`durable.rs`); the questions a call's tool asks, sent to the client
//! (`questions.rs`).

mod durable;
mod questions;
mod session;

pub use session::McpSession;

//! Streamable HTTP: the checks every request passes before rmcp reads it
//! (`checks.rs`), the connections `serve_http` accepts (`connections.rs`),
//! and the bounded store of the session revisions' sessions (`sessions.rs`).

mod checks;
pub(crate) mod connections;
pub(crate) mod sessions;

pub use checks::*;

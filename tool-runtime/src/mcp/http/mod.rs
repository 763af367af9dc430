//! Streamable HTTP: the checks every request passes before rmcp reads it
//! (`checks.rs`), the connections `serve_http` accepts (`connections.rs`,
//! with the cap per peer in `peers.rs` and the bounds of a kept-alive
//! connection in `keep_alive.rs`), and the bounded store of the session
//! revisions' sessions (`sessions.rs`).

mod checks;
pub(crate) mod connections;
pub(crate) mod keep_alive;
pub(crate) mod peers;
pub(crate) mod sessions;

pub use checks::*;
pub use keep_alive::{DEFAULT_KEEP_ALIVE_TIMEOUT, DEFAULT_MAX_REQUESTS_PER_CONNECTION};
pub use peers::DEFAULT_MAX_CONNECTIONS_PER_PEER;

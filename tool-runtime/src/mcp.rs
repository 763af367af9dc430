//! An MCP server over a [`Registry`], on [`rmcp`] (the official Rust MCP
//! SDK), behind the cargo feature `mcp`.
//!
//! ```no_run
//! use std::sync::Arc;
//! use tool_runtime::mcp::McpServer;
//! use tool_runtime::prelude::*;
//!
//! struct Shop;
//!
//! /// Look up one order by the number printed on the invoice.
//! #[tool(read_only)]
//! async fn lookup_order(ctx: Ctx<Shop>, order_id: String) -> String {
//!     let _shop = ctx.app();
//!     format!("{order_id}: shipped")
//! }
//!
//! # #[tokio::main] async fn main() -> std::io::Result<()> {
//! let registry = Registry::<Shop>::builder().tools(tools![lookup_order]).build().unwrap();
//! let server = McpServer::new(registry, Arc::new(Shop)).with_name("shop", "1.0.0");
//! // Over stdio (the client started this process):
//! server.clone().serve_stdio().await?;
//! // Or over streamable HTTP, at `http://127.0.0.1:8080/mcp`:
//! server.serve_http(tokio::net::TcpListener::bind("127.0.0.1:8080").await?).await
//! # }
//! ```
//!
//! How the MCP rules map onto the runtime:
//!
//! - **One session is one [`Run`](crate::Run).** `tools/list` lists the
//!   tools a run would offer now (`visible_when` and `requires`); each
//!   `tools/call` is one step. When a call changes what is offered (a
//!   `requires` is met, a `visible_when` turns), the server sends
//!   `notifications/tools/list_changed`. A tool not offered is refused like an
//!   unknown tool. Once a call ends the run (`ends_run`), the session offers
//!   no tools: a new conversation is a new session.
//! - **`tools/call` runs the whole pipeline.** Every way a call can fail (bad
//!   input, a refusal, a tool error, a timeout, a bug) comes back as a result
//!   with `isError: true` and the line the model reads as its text, never as
//!   a protocol error. A success carries the text, and `structuredContent`
//!   when the output is a JSON object; so does a tool error whose
//!   [`ToolError::structured`](crate::ToolError::structured) value (a typed
//!   failure) is one. A tool's failure schema goes in its `tools/list`
//!   entry's `_meta`, as `failureSchema`. A tool that returns content
//!   blocks ([`Block`](crate::Block)) sends them as MCP content blocks
//!   (text, image, audio, resource link, embedded resource), without
//!   structured content.
//! - **Approvals go to the human through elicitation.** A call that needs
//!   approval asks the client's user (MCP `elicitation/create`, showing the
//!   tool and its arguments): accepting runs it, declining or dismissing
//!   rejects it; until the answer comes the call waits (a cancellation ends
//!   the wait without running it). A client that did not declare the
//!   elicitation capability cannot ask anyone, so such calls are refused
//!   with a text that says so (code `APPROVAL_UNAVAILABLE`).
//!   An approval waits at most the registry's
//!   [`approval_ttl`](crate::Registry::approval_ttl): then the call is
//!   refused as expired (code `APPROVAL_EXPIRED`), and an answer that comes
//!   later runs nothing. At most
//!   [`max_pending_approvals`](crate::RegistryBuilder::max_pending_approvals)
//!   calls of a session wait at once, at most
//!   [`with_max_waiting_approvals_per_user`](McpServer::with_max_waiting_approvals_per_user)
//!   (default 32) of one user over all their sessions, and at most
//!   [`with_max_waiting_approvals`](McpServer::with_max_waiting_approvals)
//!   (default 128) in all; one more is refused (`TOO_MANY_PENDING`) without
//!   asking anyone. A waiting call holds its arguments three times: as they
//!   came, parsed into the tool's input, and in the text the human reads
//!   (the arguments as they came are kept: once approved, the tool may ask
//!   a question of its own, and the call is read again from them): a call
//!   of 512 KiB of arguments costs the server about 1,770 KiB while it
//!   waits (`mcp_memory approvals`, examples/mcp_memory.rs).
//! - **A tool's own questions go to the client.** A tool that asks
//!   ([`Ctx::elicit`](crate::Ctx::elicit), [`Ctx::sample`](crate::Ctx::sample),
//!   [`Ctx::roots`](crate::Ctx::roots)) parks its question in the
//!   session's memory (the journal, with one) and stops there; the session
//!   sends it to the client as `elicitation/create` (in form mode, the
//!   form's schema as `requestedSchema`), `sampling/createMessage` or
//!   `roots/list`, records the answer as the question's decision through
//!   [`question::decide`](crate::question::decide) (a form's answer that
//!   does not fit its schema ends the call, `QUESTION_UNANSWERED`), and
//!   runs the call again from the top, where the question returns the
//!   answer; a question the client did not declare the capability for in
//!   `initialize` ends the call with a tool error naming it
//!   (`QUESTION_UNAVAILABLE`). Questions wait as approvals do: within the
//!   approval TTL, counted under the same caps.
//! - **A cut output is not sent whole as structured content.** When a
//!   tool's output was cut at its `max_output_chars`
//!   ([`CallResult::truncated`](crate::CallResult::truncated)), the client gets the cut text only, never
//!   `structuredContent`: the model never reads more than the limit allows.
//!   A tool whose `tools/list` entry declares an `outputSchema` must send
//!   structured content with every successful result (clients such as the
//!   official Python SDK reject a success without it), so its cut output
//!   comes back with `isError: true`, the text still saying it was cut.
//! - **Cancellation, progress and log messages.** `notifications/cancelled`
//!   cancels the call's token ([`Ctx::cancellation`](crate::Ctx::cancellation)); what
//!   a tool reports with [`Ctx::progress`](crate::Ctx::progress) becomes
//!   `notifications/progress` when the request carried a progress token,
//!   and what it logs with [`Ctx::log`](crate::Ctx::log) becomes
//!   `notifications/message` at or above the session's level
//!   (`logging/setLevel`; `info` until the client sets one).
//! - **Beside the tools**: prompts, resources and their templates, and
//!   completion are served, at every revision, by an rmcp handler of the
//!   host's composed with the tools ([`McpServer::with_handler`]): what it
//!   declares in its capabilities, as it answers it. A read of a resource
//!   it does not have is an error naming the URI (`data.uri`).
//!
//! Over streamable HTTP ([`McpServer::serve_http`],
//! [`McpServer::http_service`]), every request is checked from its headers
//! before its body is read:
//!
//! - **`Host` and `Origin`** (against DNS rebinding from web pages), first,
//!   before authentication: `Host` must be a loopback name, the bound
//!   address, or listed in [`with_allowed_hosts`](McpServer::with_allowed_hosts),
//!   or the request gets `403`. A request without `Origin` (a client that
//!   is not a browser) is served; one from a loopback origin
//!   (`http://localhost:*`, `http://127.0.0.1:*`, `http://[::1]:*`), from the
//!   server's own origin (the `Host` it was sent to) or from
//!   [`with_allowed_origins`](McpServer::with_allowed_origins) is served;
//!   any other gets `403`.
//! - **Who is calling**: an [authentication hook](McpServer::with_auth)
//!   turns the headers into a [`UserContext`] or a `401`; every request of
//!   a session is authenticated, and its calls (and `tools/list`) run as the
//!   user its own headers gave, so that user's approval floor applies. A
//!   session belongs to the user who opened it (by id): another user's
//!   requests with its id get `404`, so a leaked session id is no use. A
//!   caller the hook accepts without naming a user ([`UserContext::id`]
//!   is `None`) cannot open a session (`403`): it would belong to no one.
//!   [`serve_http`](McpServer::serve_http) refuses a non-loopback address
//!   without a hook unless told otherwise
//!   ([`allow_remote_without_auth`](McpServer::allow_remote_without_auth)).
//! - **Body size**: at most the registry's argument limit plus room for the
//!   JSON-RPC envelope ([`max_body_bytes`](McpServer::max_body_bytes)). A
//!   larger `Content-Length` gets `413` before any of the body is read; a
//!   chunked body is cut off with `413` as soon as it passes the limit. A
//!   body under the limit is read and its JSON values counted before rmcp
//!   parses it: more than the registry's value limit
//!   ([`ArgumentLimits::max_values`](crate::ArgumentLimits::max_values))
//!   plus 1,024 for the envelope gets `413`. Parsing costs hundreds of bytes
//!   a value (1 MiB of `[0],[0],...`, 260,000 values, once cost 148 MB), so
//!   the value limit, not the byte limit, bounds what a request costs. A
//!   body that is not UTF-8 (which JSON must be) gets `400` unparsed.
//! - **Time, memory and connections**: a body must arrive within
//!   [`with_body_read_timeout`](McpServer::with_body_read_timeout) (default
//!   30 s) of its headers, or the request gets `408`. Bodies still arriving
//!   hold at most [`with_max_arriving_body_bytes`](McpServer::with_max_arriving_body_bytes)
//!   (default 64 MiB) at once besides their first 64 KiB each; a body that
//!   would pass it gets `503` and `Retry-After`, so clients that never
//!   finish large bodies cost no more, and small requests are still served.
//!   [`serve_http`](McpServer::serve_http) also closes a connection that
//!   sends no whole request head within
//!   [`with_header_read_timeout`](McpServer::with_header_read_timeout)
//!   (default 10 s), and serves at most
//!   [`with_max_connections`](McpServer::with_max_connections) (default
//!   1,024) at once; the server you mount [`http_service`](McpServer::http_service)
//!   in must do both itself.
//! - **No one client holds the connections**: a request refused for its
//!   `Host`, its `Origin` or its credential (`400`, `403`, `401`) is
//!   answered with `Connection: close`, so a client without the right to
//!   be served keeps no connection between attempts. [`serve_http`](McpServer::serve_http)
//!   also lets one peer (an IPv4 address, an IPv6 `/64`) hold at most
//!   [`with_max_connections_per_peer`](McpServer::with_max_connections_per_peer)
//!   (default 64) of its connections (one more is answered `429` and
//!   closed), closes a kept-alive connection that waits longer than
//!   [`with_keep_alive_timeout`](McpServer::with_keep_alive_timeout)
//!   (default 5 s) for its next request, and serves at most
//!   [`with_max_requests_per_connection`](McpServer::with_max_requests_per_connection)
//!   (default 100) requests on one connection (a server you mount
//!   [`http_service`](McpServer::http_service) in must bound these
//!   itself). One unauthenticated client
//!   sending a small request every 8 s on 1,100 connections once held all
//!   1,024 (the server held 1,028 sockets) and every legitimate
//!   `initialize` timed out at 60 s; now the server holds 4 and each is
//!   answered in 2 to 5 ms (`mcp_memory held-connections`, debug build).
//!
//! Sessions are bounded, in all ([`with_max_sessions`](McpServer::with_max_sessions),
//! default 500; an idle one costs about 60 KB) and for each user
//! ([`with_max_sessions_per_user`](McpServer::with_max_sessions_per_user),
//! default 16), and a session without a request for
//! [`with_session_idle_timeout`](McpServer::with_session_idle_timeout)
//! (default 5 minutes) is closed. A session with a call in flight or an
//! approval waiting is *busy*: it is never idle and never closed to make
//! room, so a long call or a slow human always gets its result to the
//! client (an approval waits at most the registry's `approval_ttl`,
//! 10 minutes by default, however short the idle timeout). To open one
//! more session, a user at their own cap closes their least recently used
//! session that is not busy, and a full server closes the least recently
//! used one that is not busy of the user who holds the most; a client whose
//! session was closed gets `404` and starts a new one, as the transport
//! asks. When there is none to close, the newcomer is refused, with `429`
//! (the user's sessions are all busy) or `503` (the server's are), and
//! `Retry-After`. So one user who opens sessions in a loop closes only their
//! own, and locks no one out. A session its client ends (`DELETE`) during a
//! call takes no new requests and is closed once the call has answered.
//!
//! The server speaks the revisions that have sessions (2024-11-05 to
//! 2025-11-25), as above, and revision 2026-07-28 beside them, without
//! sessions: `server/discover`; each
//! request carries its protocol version, client capabilities and client
//! info, and is served on its own by any instance, for its own credential.
//! What a request needs travels in it or lives in the journal:
//!
//! - **Approvals** are multi round-trip requests: a call that needs one
//!   answers `input_required` with a form elicitation and a `requestState`
//!   sealed by a keyed MAC ([`with_request_state_key`](McpServer::with_request_state_key),
//!   or a keyring to rotate keys, [`with_request_state_keys`](McpServer::with_request_state_keys))
//!   and bound to the tool, the arguments (whatever the order of their
//!   members), the user and the approval TTL; the client retries with the
//!   answer. A forged, edited, replayed or expired state, or another
//!   user's, runs nothing (`REQUEST_STATE_REFUSED`). With a journal, the
//!   waiting call is parked there, any instance finishes it, the retried
//!   call must be the parked row's (user, tool, arguments), and the answer
//!   is journaled as the call's one decision: a decision made out of band
//!   first wins and is carried out as made (an approver's edit runs
//!   edited). Without one, only the instance that asked finishes it, once.
//!   Waiting calls are capped per user and in all as a session's are
//!   (counted in the journal, on every instance, when there is one).
//! - **A tool's own questions** are multi round-trip requests too: a call
//!   whose tool asks answers `input_required`, each question it stopped at
//!   one of `inputRequests` (`elicitation/create`, `sampling/createMessage`,
//!   `roots/list`, keyed by the question's id), with a sealed
//!   `requestState` that carries the questions and the answers given so
//!   far; the client sends the call again with `inputResponses`, each
//!   answer is checked and recorded through [`question::decide`](crate::question::decide),
//!   and the call runs again from the top: it finishes, or asks its next
//!   questions in a new round. Questions asked together go in one round.
//!   Only what the request's `_meta` declares is asked (`-32021` with
//!   `requiredCapabilities` otherwise, HTTP 400); a state that does not open
//!   for the call, or an answer that does not answer its question, is
//!   `-32602` and runs nothing. Nothing is kept between rounds but the
//!   state, so any instance holding the key finishes it; the state carries
//!   the values of the effects made through [`Ctx::once`](crate::Ctx::once)
//!   too, so that no round makes one again.
//! - **Idempotent retries**: a call whose `_meta` carries
//!   [`IDEMPOTENCY_KEY`] reads, on a retry, the journaled result of the
//!   first call with that key and credential; so does a re-sent approval
//!   round of it.
//! - **Tasks** (`io.modelcontextprotocol/tasks`, for a client that
//!   declares it): a long call answers with a task written to the server's
//!   memory first, and so does a call that needs approval (the task waits
//!   `input_required` for `tasks/update`), and so may a task whose tool
//!   asks its own questions (each undecided one of its `inputRequests`,
//!   kept in the same memory; `tasks/update` may answer them one at a
//!   time, and the call runs again once all are). With a journal,
//!   `tasks/get`, `tasks/update` and `tasks/cancel` work on any instance,
//!   and a task outlives its process until its time to live
//!   ([`with_task_ttl`](McpServer::with_task_ttl)); without one, the
//!   process keeps its own tasks, until its time to live or its end. Tasks under way are
//!   capped per user and in all ([`with_max_tasks_per_user`](McpServer::with_max_tasks_per_user),
//!   [`with_max_tasks`](McpServer::with_max_tasks); `TOO_MANY_TASKS`).
//! - **Callers without a name**: a caller the authentication hook accepts
//!   without a [`UserContext::id`] cannot be told from another such one, so
//!   nothing kept for a caller is theirs: a keyed call is refused
//!   (`IDEMPOTENCY_UNAVAILABLE`), an approval cannot be asked
//!   (`APPROVAL_UNAVAILABLE`), and a call answers directly, never as a task.
//! - **No run**: what is offered is what a fresh run offers at its first
//!   step for the caller; a tool with `requires` is not offered, and
//!   external tools are not served at this revision.
//! - **Log messages** of a call reach its client only when the request's
//!   `_meta` names a level, at or above it.
//! - **List changes** are announced on `subscriptions/listen` streams: the
//!   tool list of the stream's caller, and the composed handler's lists
//!   that change, read again after every call and on
//!   [`notify_list_changes`](McpServer::notify_list_changes).
//! - **Caching hints** (`ttlMs`, `cacheScope`) on every list and read:
//!   stale at once and private by default, as set by
//!   [`with_cache_hint`](McpServer::with_cache_hint).
//! - **Parameters in headers**: a parameter marked `x-mcp-header` in its
//!   tool's schema is checked against its `Mcp-Param-*` header (rmcp).
//!
//! One handler serves both ([`McpHandler`]): it picks each request's
//! revision once, and hands it to the connection's session or serves it
//! statelessly.
//!
//! A waiting approval costs the server little at this revision: it lives
//! in its client's `requestState` and, with a journal, as one row; without
//! one, as its id in the process that asked.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;
use rmcp::ServiceExt;
use rmcp::model::Implementation;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

mod approval;
mod asked;
mod cache;
mod caller;
mod composed;
mod handler;
mod http;
mod listeners;
mod notices;
mod results;
mod server;
mod sessions;
mod stateless;
mod subscriptions;
mod tool_list;
mod waiting;

pub use cache::{CacheHint, Cached};
pub use handler::McpHandler;
pub use http::sessions::DEFAULT_MAX_SESSIONS_PER_USER;
pub use http::{DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_CONNECTIONS};
pub use http::{DEFAULT_ENVELOPE_BYTES, DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT, Unauthorized};
pub use http::{DEFAULT_KEEP_ALIVE_TIMEOUT, DEFAULT_MAX_CONNECTIONS_PER_PEER, DEFAULT_MAX_REQUESTS_PER_CONNECTION};
pub use http::{DEFAULT_MAX_ARRIVING_BODY_BYTES, FREE_BODY_BYTES};
pub use sessions::McpSession;
pub use stateless::{DEFAULT_MAX_TASKS, DEFAULT_MAX_TASKS_PER_USER, DEFAULT_TASK_TTL, TASK_TIMEOUT, TaskSupport};
pub use stateless::{IDEMPOTENCY_KEY, StateKeyError, supported_versions};
pub use waiting::{DEFAULT_MAX_WAITING_APPROVALS, DEFAULT_MAX_WAITING_APPROVALS_PER_USER};

use crate::context::UserContext;
use crate::registry::Registry;
use server::Server;
use stateless::Stateless;

/// The `rmcp` crate this module is built on, for naming its types (for
/// example to mount [`McpServer::http_service`] or to serve a
/// [`McpSession`] over another transport).
pub use rmcp;

/// An MCP server for the tools of a [`Registry`]: the registry, the app
/// state every call sees, and who is calling. Cheap to clone.
///
/// Each MCP session (a stdio connection, an HTTP `Mcp-Session-Id`) gets a
/// fresh [`McpSession`], which is one run: see the [module docs](self).
pub struct McpServer<App> {
    /// What both revisions serve with.
    server: Server<App>,
    /// What only the stateless revision keeps.
    stateless: Stateless,
    http: HttpOptions,
}

/// How the server serves streamable HTTP; see the `with_*` methods.
#[derive(Clone)]
struct HttpOptions {
    envelope_bytes: usize,
    allowed_origins: Vec<String>,
    allowed_hosts: Option<Vec<String>>,
    // The session caps (`mcp/http/sessions.rs`).
    max_sessions: usize,
    max_sessions_per_user: usize,
    session_idle_timeout: Duration,
    auth: Option<Arc<http::AuthHook>>,
    remote_without_auth: bool,
    // How long a request may take to arrive, and how many connections
    // `serve_http` holds at once, for how long and how many requests.
    header_read_timeout: Duration,
    body_read_timeout: Duration,
    max_connections: usize,
    max_connections_per_peer: usize,
    keep_alive_timeout: Duration,
    max_requests_per_connection: usize,
    arriving_body_bytes: usize,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            envelope_bytes: DEFAULT_ENVELOPE_BYTES,
            allowed_origins: Vec::new(),
            allowed_hosts: None,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_sessions_per_user: DEFAULT_MAX_SESSIONS_PER_USER,
            session_idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
            auth: None,
            remote_without_auth: false,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_peer: DEFAULT_MAX_CONNECTIONS_PER_PEER,
            keep_alive_timeout: DEFAULT_KEEP_ALIVE_TIMEOUT,
            max_requests_per_connection: DEFAULT_MAX_REQUESTS_PER_CONNECTION,
            arriving_body_bytes: DEFAULT_MAX_ARRIVING_BODY_BYTES,
        }
    }
}

impl<App> Clone for McpServer<App> {
    fn clone(&self) -> Self {
        McpServer { server: self.server.clone(), stateless: self.stateless.clone(), http: self.http.clone() }
    }
}

impl<App: Send + Sync + 'static> McpServer<App> {
    /// A server for `registry`'s tools, calling them with `app`. It names
    /// itself `tool-runtime` until [`with_name`](Self::with_name).
    pub fn new(registry: Registry<App>, app: Arc<App>) -> Self {
        McpServer { server: Server::new(registry, app), stateless: Stateless::default(), http: HttpOptions::default() }
    }

    /// Runs the calls of external tools (`#[tool(external)]`) with `run`:
    /// a `tools/call` of one is validated and judged, then handed to
    /// `run` (a worker, another service) while the client waits, under the
    /// tool's timeout and the client's cancellation. Its output is checked
    /// against the tool's output schema (a mismatch is the generic 500, and
    /// reported); its error is the tool's. Without a runner, external
    /// tools are not listed, and a call of one reads that no one runs it.
    pub fn with_external<F, Fut>(mut self, run: F) -> Self
    where
        F: Fn(crate::ExternalCall) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<serde_json::Value, crate::ToolError>> + Send + 'static,
    {
        self.server.external = Some(Arc::new(move |call| Box::pin(run(call))));
        self
    }

    /// Makes each session's run durable in `journal`, under a run id of its
    /// own (`mcp-...`): each call's effect is journaled (a re-sent call is
    /// not run twice), and a call that needs approval is parked there, so
    /// that any process can decide it ([`question::decide`](crate::question::decide)):
    /// the call waits for the first of the client's answer (elicitation,
    /// where the client supports it) and a decision made out of band,
    /// within the approval's time to live. The client's answer is
    /// journaled as a decision too; when another process decided first,
    /// its decision stands.
    #[cfg(feature = "journal")]
    pub fn with_journal(mut self, journal: crate::journal::Journal) -> Self {
        self.server.memory = Arc::new(journal);
        self.server.durable = true;
        self
    }

    /// The name and version the server gives clients in `initialize`.
    pub fn with_name(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.server.info = Implementation::new(name, version);
        self
    }

    /// Instructions the client may add to the model's prompt.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.server.instructions = Some(instructions.into());
        self
    }

    /// Who calls the tools in every session (default: an anonymous user);
    /// their approval floor and attributes reach policy and visibility.
    /// Over HTTP, an [authentication hook](Self::with_auth) decides the
    /// user of each request instead.
    pub fn with_user(mut self, user: UserContext) -> Self {
        self.server.user = Arc::new(user);
        self
    }

    /// Serves what `handler` declares beside the tools, at every revision:
    /// prompts, resources and their templates, and completion, each as
    /// `handler` answers it (its `get_info().capabilities` say which:
    /// `prompts`, `resources`, `completions`). `handler` is an ordinary rmcp
    /// [`ServerHandler`](rmcp::ServerHandler), for example one with a
    /// `#[prompt_router]`; its tools, if it has any, are not served: the
    /// registry's are. The server puts the caching hints of
    /// [`with_cache_hint`](Self::with_cache_hint) on what it lists and reads,
    /// and the URI, as `data.uri`, on its error
    /// for a resource it does not have. See the guide's MCP page for the
    /// smallest example.
    pub fn with_handler(mut self, handler: impl rmcp::ServerHandler) -> Self {
        self.server.composed = composed::Composed::new(handler);
        self
    }

    /// The caching hint of every result of one kind at revision
    /// 2026-07-28. Where none is set, a result keeps the hint the composed
    /// handler gave it, and one without is stale at once and private
    /// ([`CacheHint::default`]).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// use tool_runtime::mcp::{CacheHint, Cached, McpServer};
    /// # let registry = tool_runtime::Registry::<()>::builder().build().unwrap();
    /// let server = McpServer::new(registry, Arc::new(()))
    ///     .with_cache_hint(Cached::Prompts, CacheHint::public(Duration::from_secs(300)));
    /// # let _ = server;
    /// ```
    pub fn with_cache_hint(mut self, kind: Cached, hint: CacheHint) -> Self {
        self.server.cache.set(kind, hint);
        self
    }

    /// Decides which tools answer with a task at revision 2026-07-28, for a
    /// client that declares the tasks extension (default:
    /// [`TaskSupport::by_default`]). A tool of [`TaskSupport::Required`]
    /// refuses a client that does not declare the extension (`-32021`)
    /// before it runs.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use tool_runtime::mcp::{McpServer, TaskSupport};
    /// # let registry = tool_runtime::Registry::<()>::builder().build().unwrap();
    /// let server = McpServer::new(registry, Arc::new(())).with_task_support(|def| match def.tags.iter().any(|tag| tag == "batch") {
    ///     true => TaskSupport::Required,
    ///     false => TaskSupport::by_default(def),
    /// });
    /// # let _ = server;
    /// ```
    pub fn with_task_support(mut self, rule: impl Fn(&crate::ToolDefinition) -> TaskSupport + Send + Sync + 'static) -> Self {
        self.stateless.task_support = Arc::new(rule);
        self
    }

    /// Tells the clients listening on `subscriptions/listen` (revision
    /// 2026-07-28) that their lists may have changed: each one's tool
    /// list (and the composed handler's lists that change) is read again
    /// for its caller, and a list that changed is announced. The server does
    /// this after every call; call it when the app changes otherwise (what
    /// `visible_when` reads, a prompt added).
    pub async fn notify_list_changes(&self) {
        subscriptions::announce_changes(&self.server).await;
    }

    /// Authenticates every HTTP request from its headers: the hook returns
    /// the [`UserContext`] the request's calls run as (so that user's
    /// approval floor and attributes apply), or an [`Unauthorized`], which
    /// the client reads in a `401` answer. Each request of a session is
    /// authenticated again, and its calls run as the user it gave. A
    /// session belongs to the user (by [`UserContext::id`]) who opened it:
    /// another user's requests with its id get `404`. So the hook must name
    /// each user: a caller it accepts without an id cannot open a session
    /// (`403`, which tells the operator so), since the session would belong
    /// to no one and anyone could use or end it.
    ///
    /// ```
    /// use tool_runtime::mcp::{McpServer, Unauthorized};
    /// use tool_runtime::prelude::*;
    /// # let registry = Registry::<()>::builder().build().unwrap();
    /// let server = McpServer::new(registry, std::sync::Arc::new(())).with_auth(|headers| {
    ///     match headers.get("x-api-key").and_then(|key| key.to_str().ok()) {
    ///         Some("k-alice") => Ok(UserContext::new("alice")),
    ///         _ => Err(Unauthorized::new("Send your API key in the `X-Api-Key` header.")),
    ///     }
    /// });
    /// ```
    pub fn with_auth(mut self, hook: impl Fn(&HeaderMap) -> Result<UserContext, Unauthorized> + Send + Sync + 'static) -> Self {
        self.http.auth = Some(Arc::new(hook));
        self
    }

    /// Authenticates HTTP requests by one shared bearer token
    /// (`Authorization: Bearer <token>`); they run as `user`. For more
    /// users or other schemes, use [`with_auth`](Self::with_auth).
    pub fn with_bearer_token(self, token: impl Into<String>, user: UserContext) -> Self {
        self.with_auth(http::bearer_token(token.into(), user))
    }

    /// Lets [`serve_http`](Self::serve_http) listen on a non-loopback
    /// address without an [authentication hook](Self::with_auth): anyone
    /// who reaches the address can call every tool. For servers behind a
    /// proxy that authenticates.
    pub fn allow_remote_without_auth(mut self) -> Self {
        self.http.remote_without_auth = true;
        self
    }

    /// Browser origins allowed besides the default ones, spelled
    /// `scheme://host[:port]` (for example `https://app.example.com`), or
    /// `null`. By default a request with an `Origin` header is served only
    /// when it comes from the server's own origin or a loopback one
    /// (`http://localhost:*`, `http://127.0.0.1:*`, `http://[::1]:*`); any
    /// other gets `403`, which stops DNS-rebinding attacks from web pages.
    /// Requests without `Origin` (clients that are not browsers) are served.
    pub fn with_allowed_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.http.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// The `Host` names (or `host:port`) HTTP requests may address,
    /// instead of the loopback names (`localhost`, `127.0.0.1`, `::1`); the
    /// address [`serve_http`](Self::serve_http) is bound to is always
    /// accepted too. A server reached under another name must list it.
    pub fn with_allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.http.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// Room in an HTTP request body for the JSON-RPC envelope (method, id,
    /// tool name, `_meta`) besides the arguments (default
    /// [`DEFAULT_ENVELOPE_BYTES`]). A body may be at most the registry's
    /// [argument limit](Registry::argument_limits) plus this; a larger one
    /// is refused with `413` before it is read.
    pub fn with_envelope_bytes(mut self, bytes: usize) -> Self {
        self.http.envelope_bytes = bytes;
        self
    }

    /// The largest HTTP request body served: the registry's argument
    /// limit plus the [envelope](Self::with_envelope_bytes).
    pub fn max_body_bytes(&self) -> usize {
        self.server.registry.argument_limits().max_bytes.saturating_add(self.http.envelope_bytes)
    }

    /// How long [`serve_http`](Self::serve_http) waits for a request's
    /// headers (default [`DEFAULT_HEADER_READ_TIMEOUT`]): a connection that
    /// has not sent a whole request head by then is closed, and so is a
    /// kept-alive connection that sends no new request in that time.
    pub fn with_header_read_timeout(mut self, timeout: Duration) -> Self {
        self.http.header_read_timeout = timeout;
        self
    }

    /// How long a request's body may take to arrive once its headers have
    /// (default [`DEFAULT_BODY_READ_TIMEOUT`]); a body still unfinished
    /// then is refused with `408`, and its connection closed.
    pub fn with_body_read_timeout(mut self, timeout: Duration) -> Self {
        self.http.body_read_timeout = timeout;
        self
    }

    /// How many connections [`serve_http`](Self::serve_http) serves at once
    /// (default [`DEFAULT_MAX_CONNECTIONS`]; at least 1). At the limit it
    /// accepts no more until one closes: a new client waits in the
    /// listener's queue, it is not refused.
    pub fn with_max_connections(mut self, connections: usize) -> Self {
        self.http.max_connections = connections;
        self
    }

    /// How many of those connections one peer holds at once (default
    /// [`DEFAULT_MAX_CONNECTIONS_PER_PEER`]; at least 1). A peer is an IPv4
    /// address or an IPv6 `/64`. One more connection from a peer at its
    /// cap is answered `429` at once and closed, so that no one client
    /// fills [`with_max_connections`](Self::with_max_connections) and locks
    /// the others out. Behind a proxy every connection comes from the
    /// proxy's address: raise this to the connection cap there.
    pub fn with_max_connections_per_peer(mut self, connections: usize) -> Self {
        self.http.max_connections_per_peer = connections;
        self
    }

    /// How long [`serve_http`](Self::serve_http) keeps a connection open
    /// after answering a request while no next one comes (default
    /// [`DEFAULT_KEEP_ALIVE_TIMEOUT`]); then it closes it, and the client
    /// opens a new one for its next request. A connection's first request
    /// has the [header read timeout](Self::with_header_read_timeout)
    /// instead, which also bounds every wait longer than it.
    pub fn with_keep_alive_timeout(mut self, timeout: Duration) -> Self {
        self.http.keep_alive_timeout = timeout;
        self
    }

    /// How many requests [`serve_http`](Self::serve_http) serves on one
    /// connection (default [`DEFAULT_MAX_REQUESTS_PER_CONNECTION`]; at
    /// least 1): the last is answered with `Connection: close`, and the
    /// client opens a new connection for its next request.
    pub fn with_max_requests_per_connection(mut self, requests: usize) -> Self {
        self.http.max_requests_per_connection = requests;
        self
    }

    /// How many bytes of request bodies still arriving the server holds at
    /// once, besides the first [`FREE_BODY_BYTES`] of each (default
    /// [`DEFAULT_MAX_ARRIVING_BODY_BYTES`]; never less than one body of
    /// [`max_body_bytes`](Self::max_body_bytes)). A body whose next bytes
    /// would pass it is refused with `503` and `Retry-After: 1`. Clients
    /// that send large bodies slowly, or never finish them, then cost the
    /// server this much at most, while requests under 64 KiB (every one
    /// but calls with large arguments) are still served.
    pub fn with_max_arriving_body_bytes(mut self, bytes: usize) -> Self {
        self.http.arriving_body_bytes = bytes;
        self
    }

    /// The limit on bytes of bodies still arriving, at least one body.
    fn arriving_body_bytes(&self) -> usize {
        self.http.arriving_body_bytes.max(self.max_body_bytes().saturating_sub(FREE_BODY_BYTES))
    }

    /// How many HTTP sessions are kept at most (default
    /// [`DEFAULT_MAX_SESSIONS`]). When a new session would pass it, the
    /// least recently used session that is not busy (no call in flight, no
    /// approval waiting), of the user who holds the most, is closed: its
    /// client gets `404` on its next request and starts a new session, as
    /// MCP clients do. When every session is busy, the new one is refused
    /// with `503` and `Retry-After`: a busy session is never closed.
    pub fn with_max_sessions(mut self, sessions: usize) -> Self {
        self.http.max_sessions = sessions;
        self
    }

    /// How many HTTP sessions one user (by [`UserContext::id`], as the
    /// [authentication hook](Self::with_auth) gives it) keeps at most
    /// (default [`DEFAULT_MAX_SESSIONS_PER_USER`]). A user at the cap who
    /// opens one more closes their own least recently used session that is
    /// not busy; when all of theirs are busy, the new one is refused with
    /// `429` and `Retry-After`. So one user opening sessions in a loop
    /// closes only their own. Without a hook, only
    /// [`with_max_sessions`](Self::with_max_sessions) applies.
    pub fn with_max_sessions_per_user(mut self, sessions: usize) -> Self {
        self.http.max_sessions_per_user = sessions;
        self
    }

    /// How long an HTTP session may go without a request from its client
    /// before it is closed (default [`DEFAULT_SESSION_IDLE_TIMEOUT`]). A
    /// session with a call in flight or an approval waiting is not idle,
    /// however long the call or the human takes (an approval waits at most
    /// the registry's [`approval_ttl`](Registry::approval_ttl), a call its
    /// tool's timeout): the idle time counts from the later of its last
    /// request and the end of its last call.
    pub fn with_session_idle_timeout(mut self, idle: Duration) -> Self {
        self.http.session_idle_timeout = idle;
        self
    }

    /// How many calls may wait for a human's approval at once, over all
    /// sessions (default [`DEFAULT_MAX_WAITING_APPROVALS`]). Each holds its
    /// arguments until it is decided; one more is refused at once
    /// (`TOO_MANY_PENDING`, status 429), asking no one.
    pub fn with_max_waiting_approvals(mut self, calls: usize) -> Self {
        self.server.waiting = Arc::new(waiting::WaitingCalls::new(calls, self.server.waiting.per_user));
        self
    }

    /// How many calls of one user (by [`UserContext::id`]) may wait for
    /// approval at once, over all their sessions (default
    /// [`DEFAULT_MAX_WAITING_APPROVALS_PER_USER`]); one more is refused at
    /// once (`TOO_MANY_PENDING`). A session's own cap is the registry's
    /// [`max_pending_approvals`](crate::RegistryBuilder::max_pending_approvals).
    pub fn with_max_waiting_approvals_per_user(mut self, calls: usize) -> Self {
        self.server.waiting = Arc::new(waiting::WaitingCalls::new(self.server.waiting.max, calls));
        self
    }

    /// How long a task of revision 2026-07-28 is kept (default
    /// [`DEFAULT_TASK_TTL`]): past it, `tasks/get` reads no such task and
    /// its call is never taken up again.
    pub fn with_task_ttl(mut self, ttl: Duration) -> Self {
        self.stateless.task_limits.ttl = ttl;
        self
    }

    /// How many tasks may be under way (working or waiting for input) at
    /// once, on every instance of the journal, if any (default
    /// [`DEFAULT_MAX_TASKS`]); a call that would start one more is refused
    /// at once (`TOO_MANY_TASKS`, status 429).
    pub fn with_max_tasks(mut self, tasks: usize) -> Self {
        self.stateless.task_limits.max = tasks;
        self
    }

    /// How many tasks of one user (by [`UserContext::id`]) may be under way
    /// at once, on every instance of the journal, if any (default
    /// [`DEFAULT_MAX_TASKS_PER_USER`]); one more is refused at once
    /// (`TOO_MANY_TASKS`).
    pub fn with_max_tasks_per_user(mut self, tasks: usize) -> Self {
        self.stateless.task_limits.per_user = tasks;
        self
    }

    /// A new session: a fresh run over the registry, as an `rmcp` handler.
    /// It speaks the revisions with sessions only; [`handler`](Self::handler)
    /// speaks 2026-07-28 too.
    pub fn session(&self) -> McpSession<App> {
        McpSession::new(self.server.clone())
    }

    /// The `rmcp` handler of one connection: requests at revision 2026-07-28
    /// served statelessly, any other on the connection's session (made at
    /// its first such request). What [`serve_stdio`](Self::serve_stdio)
    /// and [`http_service`](Self::http_service) serve.
    pub fn handler(&self) -> McpHandler<App> {
        McpHandler::new(self.server.clone(), self.stateless.clone(), None)
    }

    /// Seals the `requestState` of revision 2026-07-28's approvals (a
    /// keyed MAC, HMAC-SHA256) with `key`. With a journal
    /// ([`with_journal`](Self::with_journal)), any instance given the same
    /// key and journal finishes an approval another one asked for; without
    /// one, only the instance that asked does (nothing else could tell that
    /// the approval was answered already). Without a key, one is drawn at
    /// random when the server is made, and a state is good on this process
    /// only. Keep the key secret: at least 32 bytes of random data (for
    /// example `openssl rand -hex 32`, hex-decoded); to change it without
    /// dropping approvals in flight, see
    /// [`with_request_state_keys`](Self::with_request_state_keys).
    ///
    /// # Errors
    ///
    /// When `key` is shorter than 32 bytes.
    pub fn with_request_state_key(mut self, key: impl Into<Vec<u8>>) -> Result<Self, StateKeyError> {
        self.stateless.sealing = Arc::new(stateless::Sealing::new(key.into())?);
        Ok(self)
    }

    /// Seals `requestState`s with the key named `active` and opens them with
    /// any key of `keys` (each an id and at least 32 bytes of random data),
    /// so that keys can be rotated: deploy the new key beside the old one
    /// (still active) on every instance, then make the new one active, and
    /// remove the old one once the states it sealed have expired (the
    /// registry's [`approval_ttl`](Registry::approval_ttl)). States sealed
    /// by a server given one key ([`with_request_state_key`](Self::with_request_state_key))
    /// open too when that key is in the ring.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use tool_runtime::mcp::McpServer;
    /// # use tool_runtime::Registry;
    /// let (old, new) = ([1u8; 32].to_vec(), [2u8; 32].to_vec()); // from your secret store
    /// let server = McpServer::new(Registry::<()>::builder().build().unwrap(), Arc::new(()))
    ///     .with_request_state_keys("2026-12", [("2026-06", old), ("2026-12", new)])
    ///     .unwrap();
    /// # let _ = server;
    /// ```
    ///
    /// # Errors
    ///
    /// When a key is shorter than 32 bytes, two keys share an id, an id is
    /// empty or longer than 255 bytes, or `active` is not in `keys`.
    pub fn with_request_state_keys<K: Into<String>, V: Into<Vec<u8>>>(
        mut self,
        active: &str,
        keys: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self, StateKeyError> {
        let keys = keys.into_iter().map(|(kid, key)| (kid.into(), key.into())).collect();
        self.stateless.sealing = Arc::new(stateless::Sealing::with_keys(active, keys)?);
        Ok(self)
    }

    /// Serves one session over this process's stdin and stdout until the
    /// client closes stdin. Stdout carries the protocol: log to stderr.
    ///
    /// # Errors
    ///
    /// When the client neither completes the `initialize` handshake nor
    /// sends a request of revision 2026-07-28.
    pub async fn serve_stdio(self) -> io::Result<()> {
        let running = self.handler().serve(rmcp::transport::stdio()).await.map_err(io::Error::other)?;
        running.waiting().await.map_err(io::Error::other)?;
        Ok(())
    }

    /// The streamable HTTP endpoint as a tower service (an axum
    /// [`Router`](axum::Router)), one session per `Mcp-Session-Id`; mount it
    /// where you like, for example
    /// `Router::new().nest_service("/mcp", server.http_service())`.
    ///
    /// Every request is checked before its body is read: its `Host`
    /// ([`with_allowed_hosts`](Self::with_allowed_hosts), `403`) and
    /// `Origin` ([`with_allowed_origins`](Self::with_allowed_origins),
    /// `403`), its caller ([`with_auth`](Self::with_auth), `401`) and its
    /// size ([`max_body_bytes`](Self::max_body_bytes), `413`). Sessions
    /// are bounded by [`with_max_sessions`](Self::with_max_sessions) and
    /// [`with_session_idle_timeout`](Self::with_session_idle_timeout), and a
    /// body by [`with_body_read_timeout`](Self::with_body_read_timeout)
    /// (`408`).
    ///
    /// The connections are the server's you run it in: give it what
    /// [`serve_http`](Self::serve_http) does for its own, or one slow client
    /// can hold a connection open for ever. With hyper, set
    /// `http1::Builder::header_read_timeout` (and a timer); cap the
    /// connections you accept, in all and for each client address (a
    /// `tokio::sync::Semaphore` permit per connection, a count per
    /// address); bound how long a kept-alive connection waits for its next
    /// request and how many it serves; and, so that a client still sending
    /// a refused body reads its `413`, shut down the sending side and drain
    /// a while before closing. A proxy in front (nginx, Envoy) does all of
    /// these. The refusals of these checks (`401`, `403`) close their
    /// connection wherever the service is mounted.
    pub fn http_service(&self) -> axum::Router {
        self.http_router(Vec::new())
    }

    /// The endpoint, also accepting `extra_hosts` in `Host`.
    fn http_router(&self, extra_hosts: Vec<String>) -> axum::Router {
        let server = self.server.clone();
        let max_body_bytes = self.max_body_bytes();
        // The checks below refuse a foreign `Host` from the headers, before
        // anything else; rmcp would only after the body was read.
        let config = StreamableHttpServerConfig::default().with_max_request_body_bytes(max_body_bytes);
        let mut hosts = self.http.allowed_hosts.clone().unwrap_or_else(|| config.allowed_hosts.clone());
        hosts.extend(extra_hosts);
        let config = config.disable_allowed_hosts();
        let sessions = Arc::new(http::sessions::BoundedSessions::new(http::sessions::SessionLimits {
            max: self.http.max_sessions,
            per_user: self.http.max_sessions_per_user,
            idle: self.http.session_idle_timeout,
        }));
        let store = sessions.clone();
        let stateless = self.stateless.clone();
        let service =
            StreamableHttpService::new(move || Ok(McpHandler::new(server.clone(), stateless.clone(), Some(store.clone()))), sessions.clone(), config);
        let checks = http::Checks {
            max_body_bytes,
            max_body_values: self.server.registry.argument_limits().max_values.saturating_add(http::ENVELOPE_VALUES),
            envelope_bytes: self.http.envelope_bytes,
            body_read_timeout: self.http.body_read_timeout,
            arriving: tokio::sync::Semaphore::new(self.arriving_body_bytes().min(tokio::sync::Semaphore::MAX_PERMITS)),
            allowed_origins: self.http.allowed_origins.clone(),
            allowed_hosts: hosts,
            auth: self.http.auth.clone(),
            sessions,
        };
        axum::Router::new().fallback_service(service).layer(axum::middleware::from_fn_with_state(Arc::new(checks), http::check))
    }

    /// Serves streamable HTTP (HTTP/1.1) at the path `/mcp` on `listener`
    /// until the process ends. Bind the listener yourself (`127.0.0.1:0`
    /// picks a free port; `listener.local_addr()` tells which). Requests may
    /// address the server by the IP address it is bound to, besides the
    /// loopback names.
    ///
    /// Besides the checks of [`http_service`](Self::http_service), it
    /// bounds the connections: at most
    /// [`with_max_connections`](Self::with_max_connections) at once, and
    /// [`with_max_connections_per_peer`](Self::with_max_connections_per_peer)
    /// of one peer; each closed when it does not send a request head within
    /// [`with_header_read_timeout`](Self::with_header_read_timeout), when
    /// kept alive longer than [`with_keep_alive_timeout`](Self::with_keep_alive_timeout)
    /// without a request, and after
    /// [`with_max_requests_per_connection`](Self::with_max_requests_per_connection)
    /// requests. A
    /// connection answered before its request was read whole (a `413`, a
    /// `408`, a `503`) is closed gracefully: the server reads and drops what the
    /// client still sends for up to 5 seconds, so a client still sending
    /// its body reads the answer rather than a broken pipe. A failed accept
    /// (too many open files) is logged and retried a second later.
    ///
    /// # Errors
    ///
    /// At once, without serving, when the listener's address cannot be
    /// read, or it is an address that is not loopback while no
    /// [authentication hook](Self::with_auth) is set (unless
    /// [`allow_remote_without_auth`](Self::allow_remote_without_auth)).
    pub async fn serve_http(self, listener: tokio::net::TcpListener) -> io::Result<()> {
        self.check_listener(&listener)?;
        let addr = listener.local_addr()?;
        let own = if addr.ip().is_unspecified() { Vec::new() } else { vec![addr.ip().to_string(), addr.to_string()] };
        let router = axum::Router::new().nest_service("/mcp", self.http_router(own));
        let limits = http::connections::Limits {
            header_read_timeout: self.http.header_read_timeout,
            max_connections: self.http.max_connections,
            max_connections_per_peer: self.http.max_connections_per_peer,
            keep_alive_timeout: self.http.keep_alive_timeout,
            max_requests: self.http.max_requests_per_connection,
        };
        http::connections::serve(listener, router, limits).await
    }

    /// The check [`serve_http`](Self::serve_http) makes before serving,
    /// to call before announcing the address.
    ///
    /// # Errors
    ///
    /// When `listener` is bound to an address that is not loopback while no
    /// [authentication hook](Self::with_auth) is set (unless
    /// [`allow_remote_without_auth`](Self::allow_remote_without_auth)).
    pub fn check_listener(&self, listener: &tokio::net::TcpListener) -> io::Result<()> {
        let addr = listener.local_addr()?;
        if !addr.ip().is_loopback() && self.http.auth.is_none() && !self.http.remote_without_auth {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "refusing to serve MCP on {addr} without authentication: anyone who can reach that address \
                     could call every tool. Bind a loopback address (127.0.0.1), set an authentication hook \
                     (McpServer::with_auth or with_bearer_token), or, behind a proxy that authenticates, opt out \
                     with McpServer::allow_remote_without_auth"
                ),
            ));
        }
        Ok(())
    }
}

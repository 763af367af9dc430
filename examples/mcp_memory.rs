//! Measures what hostile HTTP traffic costs the `mcp_server` example, from
//! its resident memory (`VmRSS` in `/proc/PID/status`, so Linux only):
//!
//! 1. one 3 MiB POST of `[0],[0],...` arguments, declared with
//!    `Content-Length` and sent chunked, without a session and in one (and,
//!    a 1 MiB one, under the byte limit but over the value limit);
//! 2. 3,000 `initialize` from one client (sessions left idle), then a new
//!    well-behaved client that must still be served;
//! 3. a 1.1 MB POST of `[0],[0],...` ending in one byte that is not UTF-8
//!    (which once skipped the value count and was parsed whole), alone and
//!    10 at once: status, time, and the server's peak growth (`VmHWM`);
//! 4. 1,000 connections that never finish their headers: how many are
//!    still open once the header read timeout (10 s) has passed;
//! 5. 200 POSTs of 1 MB whose bodies never finish: what they hold while
//!    they wait (the peak), and how they were answered once the body read
//!    timeout (30 s) has passed (`503` at once past the 64 MiB the bodies
//!    arriving at once may hold, `408` at the timeout).
//!
//! ```text
//! cargo build --features mcp --example mcp_server --example mcp_memory
//! target/debug/examples/mcp_memory [PATH_TO_MCP_SERVER] [SESSIONS]
//! ```
//!
//! `mcp_memory approvals [PATH_TO_MCP_SERVER]` measures instead what a call
//! waiting for its human's approval costs: 20 sessions, each with 16
//! `issue_voucher` calls of 512 KiB of arguments sent to wait (elicitation
//! never answered; those past the server's caps on waiting calls are
//! refused at once), and the bytes per waiting call.
//!
//! `mcp_memory current-approvals [PATH_TO_MCP_SERVER]` measures what 1,000
//! calls waiting for approval at revision 2026-07-28 cost the server: each
//! is answered `input_required` at once and waits in its client's sealed
//! `requestState`, so the server holds nothing for it (the figure is the
//! server's RSS growth, and the size of a state the client holds).
//!
//! `mcp_memory held-connections [PATH_TO_MCP_SERVER]` measures whether one
//! client can lock everyone else out: 1,100 connections from one client,
//! each sending a small unauthenticated request every 8 s (answered `401`;
//! opened again when the server closes it), against the default cap of
//! 1,024 connections; then, while they go on, a legitimate `initialize`
//! with the server's token, timed (60 s at most), five times.
//!
//! Not a test: the figures depend on the machine and the allocator. It
//! prints them and exits non-zero when a target is missed (3 MiB POST:
//! under 16 MB; 3,000 sessions: under 64 MB; the new client served; the
//! body that is not UTF-8: `400`, peak under 16 MB alone and 64 MB for 10;
//! no unfinished head open after the timeout; every unfinished body
//! answered `408` or `503`, peak under 112 MB: 64 MiB plus 64 KiB a body).
//!
//! Figures it printed (debug build): one idle session about 60 KB; the
//! largest body both limits let through (64 KiB of `[0],[0],...`) about
//! 6 MB while it is parsed, where 1 MiB of it (260,000 values) cost 148 MB
//! before bodies had their values counted (now refused with `413` at about
//! 0.1 MB).

#[path = "common/proc_status.rs"]
mod proc_status;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const MB: f64 = 1024.0 * 1024.0;

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    if args.next_if_eq("approvals").is_some() {
        return waiting_approvals(args.next().map(PathBuf::from));
    }
    if args.next_if_eq("current-approvals").is_some() {
        return current_approvals(args.next().map(PathBuf::from));
    }
    if args.next_if_eq("held-connections").is_some() {
        return held_connections(args.next().map(PathBuf::from));
    }
    let binary = args.next().map(PathBuf::from).unwrap_or_else(|| {
        let me = std::env::current_exe().expect("the path of this program");
        me.with_file_name("mcp_server")
    });
    let sessions: usize = args.next().map_or(3_000, |n| n.parse().expect("SESSIONS is a number"));
    let mut missed = Vec::new();

    // 1. One 3 MiB body, four ways, each on a fresh server.
    let arguments = big_arguments(3 << 20);
    for (label, chunked, in_session) in [
        ("3 MiB POST, Content-Length, no session", false, false),
        ("3 MiB POST, Content-Length, in a session", false, true),
        ("3 MiB POST, chunked, no session", true, false),
        ("3 MiB POST, chunked, in a session", true, true),
    ] {
        let server = Server::start(&binary);
        let session = in_session.then(|| open_session(server.addr));
        settle();
        let before = server.rss();
        let status = post_raw(server.addr, session.as_deref(), arguments.as_bytes(), chunked);
        settle();
        let grown = server.rss().saturating_sub(before);
        println!("{label}: HTTP {status}, RSS +{:.1} MB", grown as f64 / MB);
        if grown as f64 >= 16.0 * MB {
            missed.push(format!("{label}: +{:.1} MB, target under 16 MB", grown as f64 / MB));
        }
    }

    // A body under the byte limit with more values than a call may hold:
    // counted and refused before it is parsed (it once cost 148 MB).
    let (status, grown) = post_in_a_session(&binary, 1 << 20);
    println!("1 MiB POST (under the byte limit, 260,000 values), in a session: HTTP {status}, RSS +{:.1} MB", grown as f64 / MB);
    // For comparison, no target: the largest body both limits let through
    // (about 32,000 values in 64 KiB) is parsed, as it must be.
    let (status, grown) = post_in_a_session(&binary, 64 << 10);
    println!("64 KiB POST (32,000 values, within both limits), in a session: HTTP {status}, RSS +{:.1} MB", grown as f64 / MB);

    many_sessions(&binary, sessions, &mut missed);
    not_utf8(&binary, &mut missed);
    unfinished_heads(&binary, &mut missed);
    unfinished_bodies(&binary, &mut missed);

    if !missed.is_empty() {
        eprintln!("missed:\n  {}", missed.join("\n  "));
        std::process::exit(1);
    }
}

/// Case 2: many sessions from one client, then a new client.
fn many_sessions(binary: &PathBuf, sessions: usize, missed: &mut Vec<String>) {
    let server = Server::start(binary);
    open_session(server.addr);
    settle();
    let before = server.rss();
    let started = Instant::now();
    let mut peak = before;
    let mut per_session = None;
    for n in 1..=sessions {
        open_session(server.addr);
        if n == 400 {
            // Below the default cap: what an idle session costs.
            settle();
            let rss = server.rss();
            per_session = Some(rss.saturating_sub(before) as f64 / 400.0);
        }
        if n % 250 == 0 {
            peak = peak.max(server.rss());
        }
    }
    let elapsed = started.elapsed();
    settle();
    let after = server.rss();
    let grown = after.saturating_sub(before);
    println!(
        "{sessions} initialize in {:.1}s: RSS +{:.1} MB (peak +{:.1} MB)",
        elapsed.as_secs_f64(),
        grown as f64 / MB,
        peak.saturating_sub(before) as f64 / MB
    );
    if let Some(bytes) = per_session {
        println!("one idle session: about {:.1} KB (from the first 400)", bytes / 1024.0);
    }
    if grown as f64 >= 64.0 * MB {
        missed.push(format!("{sessions} sessions: +{:.1} MB, target under 64 MB", grown as f64 / MB));
    }
    let session = open_session(server.addr);
    let listed = request(server.addr, &session, r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#);
    let served = listed.0 == 200 && listed.1.contains("lookup_order");
    println!("a new client afterwards: {}", if served { "served" } else { "NOT served" });
    if !served {
        missed.push(format!("the new client got HTTP {}: {}", listed.0, listed.1));
    }
}

/// Case 3: a body under the byte limit and over the value limit, ending
/// in one byte that is not UTF-8: refused with `400`, neither counted nor parsed.
fn not_utf8(binary: &PathBuf, missed: &mut Vec<String>) {
    let mut body = big_arguments(1_100_000).into_bytes();
    body.push(0xFF);
    for (label, at_once, target) in [("one", 1, 16.0), ("10 at once", 10, 64.0)] {
        let server = Server::start(binary);
        let session = open_session(server.addr);
        settle();
        let before = server.rss();
        server.reset_peak();
        let started = Instant::now();
        let statuses: Vec<u16> = std::thread::scope(|scope| {
            let sends: Vec<_> = (0..at_once).map(|_| scope.spawn(|| post_raw(server.addr, Some(&session), &body, false))).collect();
            sends.into_iter().map(|send| send.join().expect("a sender")).collect()
        });
        let elapsed = started.elapsed().as_secs_f64();
        settle();
        let peak = server.peak().saturating_sub(before) as f64 / MB;
        println!("{} byte POST ending in 0xFF, in a session, {label}: HTTP {statuses:?} in {elapsed:.2}s, peak RSS +{peak:.1} MB", body.len());
        if statuses.iter().any(|&status| status != 400) || peak >= target {
            missed.push(format!("not UTF-8, {label}: HTTP {statuses:?}, peak +{peak:.1} MB; target 400, under {target} MB"));
        }
    }
}

/// Case 4: connections that never finish their headers, closed once the
/// header read timeout (10 s, the default) has passed.
fn unfinished_heads(binary: &PathBuf, missed: &mut Vec<String>) {
    const CONNECTIONS: usize = 1_000;
    let server = Server::start(binary);
    let head = format!("POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n", server.addr);
    let connecting = Instant::now();
    let streams: Vec<TcpStream> = (0..CONNECTIONS)
        .map(|_| {
            let mut stream = TcpStream::connect(server.addr).expect("the server accepts");
            stream.write_all(head.as_bytes()).expect("the head is sent");
            stream
        })
        .collect();
    let connected = connecting.elapsed().as_secs_f64();
    let sent = Instant::now();
    std::thread::sleep(Duration::from_secs(5));
    let open_before = streams.iter().filter(|stream| is_open(stream)).count();
    std::thread::sleep(Duration::from_secs(6));
    let open_after = streams.iter().filter(|stream| is_open(stream)).count();
    println!(
        "{CONNECTIONS} connections with unfinished headers (sent in {connected:.1}s): {open_before} open after 5s, \
         {open_after} after {:.0}s",
        sent.elapsed().as_secs_f64()
    );
    if open_after > 0 {
        missed.push(format!("{open_after} unfinished heads still open after 11 s, target 0"));
    }
}

/// Whether the server has neither closed `stream` nor sent anything on it.
fn is_open(stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).expect("a socket");
    let open = matches!(stream.peek(&mut [0u8; 1]), Err(error) if error.kind() == std::io::ErrorKind::WouldBlock);
    stream.set_nonblocking(false).expect("a socket");
    open
}

/// Case 5: POSTs of 1 MB whose last byte never comes: what they hold
/// while they wait, then `408` once the body read timeout (30 s) has passed.
fn unfinished_bodies(binary: &PathBuf, missed: &mut Vec<String>) {
    const BODIES: usize = 200;
    let server = Server::start(binary);
    settle();
    let before = server.rss();
    server.reset_peak();
    let mut head = head(server.addr, None);
    head.push_str(&format!("Content-Length: {}\r\n\r\n", 1 << 20));
    let almost = vec![b' '; (1 << 20) - 1];
    let streams: Vec<TcpStream> = (0..BODIES)
        .map(|_| {
            let mut stream = TcpStream::connect(server.addr).expect("the server accepts");
            stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(&almost)).expect("the body is sent");
            stream
        })
        .collect();
    let sent = Instant::now();
    std::thread::sleep(Duration::from_secs(31).saturating_sub(sent.elapsed()));
    let held = server.peak().saturating_sub(before) as f64 / MB;
    let statuses: Vec<u16> = streams
        .into_iter()
        .map(|mut stream| {
            stream.set_read_timeout(Some(Duration::from_secs(5))).expect("a socket");
            let mut reply = Vec::new();
            let _ = stream.read_to_end(&mut reply);
            status(&String::from_utf8_lossy(&reply))
        })
        .collect();
    let count = |code| statuses.iter().filter(|&&status| status == code).count();
    let (timed_out, busy) = (count(408), count(503));
    settle();
    let after = server.rss().saturating_sub(before) as f64 / MB;
    println!(
        "{BODIES} unfinished 1 MB bodies: peak RSS +{held:.1} MB while they wait; after {:.0}s, {busy} answered 503, \
         {timed_out} answered 408, RSS +{after:.1} MB",
        sent.elapsed().as_secs_f64()
    );
    if timed_out + busy < BODIES || held >= 112.0 {
        missed.push(format!(
            "unfinished bodies: {busy} answered 503 and {timed_out} 408 of {BODIES}, peak +{held:.1} MB; target all, \
             under 112 MB"
        ));
    }
}

/// On a fresh server, one POST of `bytes` of arguments in a session: its
/// HTTP status and how much the server grew.
fn post_in_a_session(binary: &PathBuf, bytes: usize) -> (u16, u64) {
    let server = Server::start(binary);
    let session = open_session(server.addr);
    settle();
    let before = server.rss();
    let status = post_raw(server.addr, Some(&session), big_arguments(bytes).as_bytes(), false);
    settle();
    (status, server.rss().saturating_sub(before))
}

/// The body of a `tools/call` whose arguments hold `[0],[0],...` to about
/// `bytes` bytes: cheap to send, costly to parse.
fn big_arguments(bytes: usize) -> String {
    let mut body = String::with_capacity(bytes + 200);
    body.push_str(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"lookup_order","arguments":{"order_id":["#);
    while body.len() < bytes {
        body.push_str("[0],");
    }
    body.push_str("[0]]}}}");
    body
}

/// Lets the server finish what it does with a request before measuring.
fn settle() {
    std::thread::sleep(Duration::from_millis(300));
}

/// The example serving HTTP on a free loopback port; killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(binary: &PathBuf) -> Server {
        Server::start_with(binary, &[], &[])
    }

    /// The example with the arguments `args` after `--http`, and the
    /// environment variables `env` set.
    fn start_with(binary: &PathBuf, args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut child = Command::new(binary)
            .args(["--http", "127.0.0.1:0"])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("{} does not start ({error}); build it first", binary.display()));
        let mut stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
        let mut line = String::new();
        stderr.read_line(&mut line).expect("the server's first line");
        let url = line.trim().strip_prefix("mcp_server: listening on http://").expect("the listening line");
        let addr = url.trim_end_matches("/mcp").parse().expect("an address");
        // Keep draining stderr so the server never blocks on it.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Server { child, addr }
    }

    /// How many sockets the server holds open (its listener among them).
    fn sockets(&self) -> usize {
        let fds = std::fs::read_dir(format!("/proc/{}/fd", self.child.id())).expect("/proc is readable");
        fds.filter_map(Result::ok)
            .filter(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target.to_string_lossy().starts_with("socket:")))
            .count()
    }

    /// Resident memory in bytes.
    fn rss(&self) -> u64 {
        self.status_bytes("VmRSS:")
    }

    /// The most resident memory since [`reset_peak`](Self::reset_peak),
    /// in bytes.
    fn peak(&self) -> u64 {
        self.status_bytes("VmHWM:")
    }

    /// Starts the peak over from the resident memory now (Linux 4.0 on).
    fn reset_peak(&self) {
        std::fs::write(format!("/proc/{}/clear_refs", self.child.id()), "5").expect("/proc/PID/clear_refs is writable");
    }

    fn status_bytes(&self, field: &str) -> u64 {
        proc_status::bytes(self.child.id(), field)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One POST to `/mcp` on its own connection; the status and the body.
fn post(addr: SocketAddr, session: Option<&str>, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("the server accepts");
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut head = head(addr, session);
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply).into_owned();
    (status(&reply), reply)
}

/// Sends `body` whole (the server may stop reading early); the status.
fn post_raw(addr: SocketAddr, session: Option<&str>, body: &[u8], chunked: bool) -> u16 {
    let mut stream = TcpStream::connect(addr).expect("the server accepts");
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut head = head(addr, session);
    if chunked {
        head.push_str("Transfer-Encoding: chunked\r\n\r\n");
    } else {
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    }
    let _ = stream.write_all(head.as_bytes());
    // A refusal may close the connection while the body is on its way:
    // sending stops there, and the answer is read when it came.
    for part in body.chunks(64 * 1024) {
        let sent = if chunked {
            stream.write_all(format!("{:x}\r\n", part.len()).as_bytes()).and_then(|()| {
                stream.write_all(part)?;
                stream.write_all(b"\r\n")
            })
        } else {
            stream.write_all(part)
        };
        if sent.is_err() {
            break;
        }
    }
    if chunked {
        let _ = stream.write_all(b"0\r\n\r\n");
    }
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply);
    status(&String::from_utf8_lossy(&reply))
}

fn head(addr: SocketAddr, session: Option<&str>) -> String {
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n"
    );
    if let Some(session) = session {
        head.push_str(&format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\n"));
    }
    head
}

fn status(reply: &str) -> u16 {
    reply.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0)
}

/// `initialize` then `notifications/initialized`; the session id.
fn open_session(addr: SocketAddr) -> String {
    open_session_with(addr, "{}")
}

/// `open_session` for a client with `capabilities` (JSON).
fn open_session_with(addr: SocketAddr, capabilities: &str) -> String {
    let init = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{capabilities},"clientInfo":{{"name":"memory","version":"0"}}}}}}"#
    );
    let (code, reply) = post(addr, None, &init);
    assert_eq!(code, 200, "initialize failed: {reply}");
    let session = reply
        .lines()
        .find_map(|line| line.split_once(':').filter(|(name, _)| name.eq_ignore_ascii_case("mcp-session-id")))
        .map(|(_, id)| id.trim().to_owned())
        .expect("a session id");
    let (code, reply) = post(addr, Some(&session), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert_eq!(code, 202, "initialized failed: {reply}");
    session
}

/// A request in `session`; the status and the body.
fn request(addr: SocketAddr, session: &str, body: &str) -> (u16, String) {
    post(addr, Some(session), body)
}

/// Calls waiting for approval: `SESSIONS` x `CALLS` `issue_voucher` calls
/// of `BYTES` of arguments each, their streams held open and never answered;
/// the server's growth per waiting call.
fn waiting_approvals(binary: Option<PathBuf>) {
    const SESSIONS: usize = 20;
    const CALLS: usize = 16;
    const BYTES: usize = 512 << 10;
    let binary = binary.unwrap_or_else(|| std::env::current_exe().expect("the path of this program").with_file_name("mcp_server"));
    // Every waiting call holds its connection (its stream), all from one
    // address: more than the default of 64 a client.
    let server = Server::start_with(&binary, &["--max-connections-per-peer", "1024"], &[]);
    let sessions: Vec<String> = (0..SESSIONS).map(|_| open_session_with(server.addr, r#"{"elicitation":{"form":{}}}"#)).collect();
    settle();
    let before = server.rss();
    let customer = "c".repeat(BYTES);
    let (mut waiting, mut refused) = (Vec::new(), 0);
    for session in &sessions {
        for id in 0..CALLS {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"issue_voucher","arguments":{{"customer":"{customer}","amount_cents":500}}}}}}"#,
                id + 10
            );
            let mut stream = TcpStream::connect(server.addr).expect("the server accepts");
            let mut head = head(server.addr, Some(session));
            head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
            stream.write_all(head.as_bytes()).unwrap();
            stream.write_all(body.as_bytes()).unwrap();
            // Read the server's whole request to the human (as a client
            // does): the call waits now.
            stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            let mut seen = Vec::new();
            let mut buffer = [0u8; 64 * 1024];
            let asked = |seen: &[u8]| {
                let seen = String::from_utf8_lossy(seen);
                seen.find("elicitation/create").is_some_and(|at| seen[at..].contains("\n\n"))
            };
            loop {
                if asked(&seen) {
                    waiting.push(stream);
                    break;
                }
                match stream.read(&mut buffer) {
                    Ok(n) if n > 0 => seen.extend_from_slice(&buffer[..n]),
                    // Answered at once: past a cap on waiting calls.
                    _ if String::from_utf8_lossy(&seen).contains("TOO_MANY_PENDING") => {
                        refused += 1;
                        break;
                    }
                    _ => panic!("no approval request: {}", String::from_utf8_lossy(&seen)),
                }
            }
        }
    }
    settle();
    let grown = server.rss().saturating_sub(before);
    let calls = waiting.len();
    println!(
        "{SESSIONS} sessions x {CALLS} calls of {} KiB: {calls} wait for approval, {refused} refused (TOO_MANY_PENDING); \
         RSS +{:.1} MB, {:.0} KiB a waiting call ({:.2}x its arguments)",
        BYTES >> 10,
        grown as f64 / MB,
        grown as f64 / calls as f64 / 1024.0,
        grown as f64 / calls as f64 / BYTES as f64
    );
}

/// 1,000 calls needing approval at revision 2026-07-28 (no session): what
/// the server holds while they wait, and what each client holds.
fn current_approvals(binary: Option<PathBuf>) {
    const CALLS: usize = 1_000;
    let binary = binary.unwrap_or_else(|| std::env::current_exe().expect("the path of this program").with_file_name("mcp_server"));
    let server = Server::start(&binary);
    let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#;
    let call = |id: usize| {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"issue_voucher","arguments":{{"customer":"c-{id}","amount_cents":500}},"_meta":{meta}}}}}"#
        );
        let mut head = head(server.addr, None);
        head.push_str(&format!(
            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: issue_voucher\r\nContent-Length: {}\r\n\r\n",
            body.len()
        ));
        let mut stream = TcpStream::connect(server.addr).expect("the server accepts");
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        let state = reply.split("\"requestState\":\"").nth(1).and_then(|rest| rest.split('"').next()).map(str::len);
        state.unwrap_or_else(|| panic!("no input_required answer: {reply}"))
    };
    // Warm up (allocator pools, the first connections), then measure.
    for id in 0..50 {
        call(id);
    }
    settle();
    let before = server.rss();
    let mut state_bytes = 0;
    for id in 0..CALLS {
        state_bytes = call(id + 100);
    }
    settle();
    let grown = server.rss().saturating_sub(before);
    println!(
        "{CALLS} calls waiting for approval at 2026-07-28: server RSS +{:.2} MB ({:.0} bytes a waiting call); each waits in its \
         client's requestState of {state_bytes} bytes",
        grown as f64 / MB,
        grown as f64 / CALLS as f64
    );
}

/// One client's 1,100 connections, each sending a small unauthenticated
/// request every 8 s, against the default connection cap; how long a
/// legitimate `initialize` waits meanwhile.
fn held_connections(binary: Option<PathBuf>) {
    const CONNECTIONS: usize = 1_100;
    const EVERY: Duration = Duration::from_secs(8);
    const PATIENCE: Duration = Duration::from_secs(60);
    let binary = binary.unwrap_or_else(|| std::env::current_exe().expect("the path of this program").with_file_name("mcp_server"));
    let server = Server::start_with(&binary, &[], &[("MCP_BEARER_TOKEN", "legitimate")]);
    let addr = server.addr;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime");
    runtime.block_on(async move {
        let attackers: Vec<_> = (0..CONNECTIONS).map(|_| tokio::spawn(hold_a_connection(addr, EVERY))).collect();
        tokio::time::sleep(Duration::from_secs(3)).await;
        println!("{CONNECTIONS} connections from one client, a small unauthenticated request each every {}s:", EVERY.as_secs());
        println!("  the server holds {} sockets", server.sockets());
        for attempt in 1..=5 {
            let started = Instant::now();
            let answered = tokio::time::timeout(PATIENCE, legitimate_initialize(addr)).await;
            match answered {
                Ok(status) => println!("  legitimate initialize {attempt}: HTTP {status} in {:.3}s", started.elapsed().as_secs_f64()),
                Err(_) => println!("  legitimate initialize {attempt}: no answer within {}s", PATIENCE.as_secs()),
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        attackers.iter().for_each(tokio::task::JoinHandle::abort);
    });
}

/// One attacking connection: a small request every `every`, answered
/// `401`; opened again at the next turn when the server closed it.
async fn hold_a_connection(addr: SocketAddr, every: Duration) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = None;
    let mut answer = vec![0u8; 4096];
    loop {
        if stream.is_none() {
            stream = tokio::time::timeout(every, tokio::net::TcpStream::connect(addr)).await.ok().and_then(Result::ok);
        }
        if let Some(open) = stream.as_mut() {
            let answered = async {
                open.write_all(request.as_bytes()).await?;
                let read = open.read(&mut answer).await?;
                // An answer that closed the connection reads its end next.
                let closed = read == 0 || String::from_utf8_lossy(&answer[..read]).to_ascii_lowercase().contains("connection: close");
                Ok::<bool, std::io::Error>(!closed)
            };
            if !matches!(tokio::time::timeout(every, answered).await, Ok(Ok(true))) {
                stream = None;
            }
        }
        tokio::time::sleep(every).await;
    }
}

/// `initialize` with the server's token on a connection of its own; the status.
async fn legitimate_initialize(addr: SocketAddr) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"legitimate","version":"0"}}}"#;
    let mut head = head(addr, None);
    head.push_str(&format!("Authorization: Bearer legitimate\r\nContent-Length: {}\r\n\r\n{body}", body.len()));
    let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await else { return 0 };
    if stream.write_all(head.as_bytes()).await.is_err() {
        return 0;
    }
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply).await;
    status(&String::from_utf8_lossy(&reply))
}

//! Measures what calls with large arguments cost the `approvals_inbox`
//! example while people look at them, from its resident memory (`VmRSS`
//! and `VmHWM` in `/proc/PID/status`, so Linux only): 60 calls of 1 MB
//! waiting in its journal (a SQLite file of its own), one load of the
//! inbox page (its size), then 8 pages of one approver open on the live
//! updates (those past the approver's cap are refused, `429`), and one
//! more call parked while they are (every page's lists sent again).
//!
//! ```text
//! cargo build --features inbox --example approvals_inbox --example inbox_memory
//! target/debug/examples/inbox_memory [PATH_TO_APPROVALS_INBOX]
//! ```
//!
//! Not a test: the figures depend on the machine and the allocator. It
//! prints them.

#[path = "common/proc_status.rs"]
mod proc_status;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tool_runtime::journal::{Journal, ParkedCall};

const MB: f64 = 1024.0 * 1024.0;
const CALLS: usize = 60;
const PAGES: usize = 8;
const COOKIE: &str = "demo_approver=dana-token";

#[tokio::main]
async fn main() {
    let binary = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| {
        let me = std::env::current_exe().expect("the path of this program");
        me.with_file_name("approvals_inbox")
    });
    let dir = std::env::temp_dir().join(format!("inbox-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite:{}", dir.join("journal.db").display());
    let journal = Journal::open(&url).await.expect("the journal opens");
    let server = Server::start(&binary, &url);
    settle().await;
    println!("idle: RSS {:.0} MB", server.rss() as f64 / MB);

    let reason = "x".repeat(1 << 20);
    for n in 0..CALLS {
        park(&journal, n, &reason).await;
    }
    settle().await;
    println!("{CALLS} calls of 1 MB waiting: RSS {:.0} MB", server.rss() as f64 / MB);

    let started = Instant::now();
    let page = get(server.addr, "/approvals").await;
    println!(
        "one page load: {:.1} MB of HTML in {:.2}s; RSS {:.0} MB",
        page.len() as f64 / MB,
        started.elapsed().as_secs_f64(),
        server.rss() as f64 / MB
    );

    let (opened, mut statuses) = tokio::sync::mpsc::unbounded_channel();
    let mut pages = Vec::new();
    for _ in 0..PAGES {
        pages.push(tokio::spawn(listen(server.addr, opened.clone())));
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut answered = Vec::new();
    while let Ok(status) = statuses.try_recv() {
        answered.push(status);
    }
    answered.sort_unstable();
    println!("{PAGES} pages open on the live updates (answered {answered:?}): RSS {:.0} MB", server.rss() as f64 / MB);

    park(&journal, CALLS, "one more").await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    println!(
        "one more call parked, every page's lists sent again: RSS {:.0} MB (peak {:.0} MB)",
        server.rss() as f64 / MB,
        server.peak() as f64 / MB
    );
    for page in &pages {
        page.abort();
    }
    drop(server);
    journal.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Parks call `n` for the customer c-17: a refund whose reason is `reason`.
async fn park(journal: &Journal, n: usize, reason: &str) {
    let input = json!({"order_id": "A-1002", "amount_cents": 18990, "reason": reason});
    let call = ParkedCall {
        run_id: format!("memory-{n}"),
        call_id: format!("memory-{n}-call_1"),
        tool: "refund".into(),
        question: tool_runtime::question::Question::Approval(tool_runtime::question::Binding::of_arguments(&input)),
        input,
        user_id: Some("c-17".into()),
        parked_at: SystemTime::now(),
        expires_at: Some(SystemTime::now() + Duration::from_secs(3600)),
    };
    tool_runtime::question::park(journal, &call).await.expect("the call parks");
}

/// The body of `GET path`, signed in as the supervisor Dana.
async fn get(addr: SocketAddr, path: &str) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).await.expect("the server accepts");
    let head = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nCookie: {COOKIE}\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).await.unwrap();
    let at = reply.windows(4).position(|window| window == b"\r\n\r\n").expect("an HTTP answer");
    reply.split_off(at + 4)
}

/// One open page's live updates, read and dropped as they come; the
/// status of its answer goes to `opened`.
async fn listen(addr: SocketAddr, opened: tokio::sync::mpsc::UnboundedSender<String>) {
    let mut stream = TcpStream::connect(addr).await.expect("the server accepts");
    let head = format!("GET /approvals/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {COOKIE}\r\nAccept: text/event-stream\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut first = true;
    while let Ok(read) = stream.read(&mut buffer).await
        && read > 0
    {
        if std::mem::take(&mut first) {
            let status = String::from_utf8_lossy(&buffer[..read]).split(' ').nth(1).unwrap_or("?").to_owned();
            let _ = opened.send(status);
        }
    }
}

async fn settle() {
    tokio::time::sleep(Duration::from_millis(500)).await;
}

/// The example serving the journal on a free loopback port; killed when
/// dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(binary: &PathBuf, url: &str) -> Server {
        let mut child = Command::new(binary)
            .args(["--listen", "127.0.0.1:0"])
            .env("DATABASE_URL", url)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("{} does not start ({error}); build it first", binary.display()));
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let addr = loop {
            let mut line = String::new();
            assert_ne!(stdout.read_line(&mut line).expect("the server's output"), 0, "the server ended before listening");
            if let Some(url) = line.trim().strip_prefix("listening on http://") {
                break url.parse().expect("an address");
            }
        };
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        Server { child, addr }
    }

    /// Resident memory in bytes.
    fn rss(&self) -> u64 {
        proc_status::bytes(self.child.id(), "VmRSS:")
    }

    /// The most resident memory since the server started, in bytes.
    fn peak(&self) -> u64 {
        proc_status::bytes(self.child.id(), "VmHWM:")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

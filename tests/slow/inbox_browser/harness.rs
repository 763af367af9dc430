//! What the inbox's browser tests run on: a fresh journal (a SQLite file,
//! or a database of its own on the Postgres server named by
//! `TOOL_RUNTIME_TEST_POSTGRES_URL`), the `approvals_inbox` example serving
//! it as a process of its own, and headless Chromium driven through
//! chromedriver (Debian's `chromium` and `chromium-driver`, which `.ci/run`
//! installs).

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder};
use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Whether the browser is installed; under `CI=true` its absence fails,
/// elsewhere the test is recorded as skipped (`tool_workspace::peers`).
pub fn browser_installed() -> bool {
    tool_workspace::peers::chromium(CHROMIUM, CHROMEDRIVER)
}

/// A directory of its own for one test's files.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tool-runtime-inbox-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fresh Postgres database for `test`; `None` when no server is
/// configured, outside CI (the test is then recorded as skipped).
#[cfg(feature = "postgres")]
pub async fn postgres(test: &str) -> Option<String> {
    use sqlx::{AssertSqlSafe, Connection};

    let base = tool_workspace::peers::postgres_url()?;
    let checkout = env!("CARGO_MANIFEST_DIR").bytes().fold(0u32, |hash, byte| hash.wrapping_mul(31).wrapping_add(u32::from(byte))) % 10_000;
    let name = format!("inbox{checkout}_{test}");
    let mut admin = sqlx::PgConnection::connect(&base).await.expect("connect to TOOL_RUNTIME_TEST_POSTGRES_URL");
    sqlx::raw_sql(AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))).execute(&mut admin).await.unwrap();
    sqlx::raw_sql(AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut admin).await.unwrap();
    admin.close().await.unwrap();
    let (server, _) = base.rsplit_once('/').expect("a URL ending in /database");
    Some(format!("{server}/{name}"))
}

/// The example's executable, built once per test process as README's test
/// command built this test (so it reuses that build).
fn example_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| crate::examples::build_example("approvals_inbox", &["inbox"])).clone()
}

/// A child process, killed when dropped (with its process group, so a
/// chromedriver takes its browsers along).
pub struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let id = self.0.id().to_string();
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{id}")]).status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn own_group(command: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    command.process_group(0)
}

/// The example serving the journal at `url`; returns it and its address
/// (`http://127.0.0.1:PORT`).
pub fn serve(url: &str) -> (Process, String) {
    let mut child = own_group(Command::new(example_binary()).args(["--listen", "127.0.0.1:0"]).env("DATABASE_URL", url))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the example starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let address = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("listening on ").map(str::to_owned))
        .expect("the example says where it listens");
    // Keep reading what it prints, so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (Process(child), address)
}

/// chromedriver on a free port of the loopback.
pub fn chromedriver() -> (Process, String) {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = own_group(Command::new(CHROMEDRIVER).arg(format!("--port={port}")))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "chromedriver did not listen within 20 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    (Process(child), format!("http://127.0.0.1:{port}"))
}

/// A headless Chromium of its own (a fresh profile in `profile`), signed
/// in to the inbox at `site` with `token`.
pub async fn browser(driver: &str, profile: &Path, site: &str, token: &str) -> Client {
    let options = json!({
        "binary": CHROMIUM,
        "args": [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", "--window-size=1280,900",
            format!("--user-data-dir={}", profile.display()),
        ],
    });
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("goog:chromeOptions".into(), options);
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let client = ClientBuilder::new(connector).capabilities(capabilities).connect(driver).await.expect("a Chromium session");
    client.goto(&format!("{site}/sign-in?token={token}")).await.unwrap();
    wait_until(&client, "document.querySelector('#lists') !== null", "the inbox after signing in").await;
    client
}

/// Waits until the script expression `condition` is true in the page, at
/// most 10 s; fails naming `what`.
pub async fn wait_until(client: &Client, condition: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let script = format!("return !!({condition});");
    loop {
        if client.execute(&script, vec![]).await.unwrap_or(Value::Bool(false)) == Value::Bool(true) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what} ({condition})");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The value of a script expression in the page.
pub async fn eval(client: &Client, expression: &str) -> Value {
    client.execute(&format!("return ({expression});"), vec![]).await.unwrap()
}

/// The CSS selector of a waiting call's entry.
pub fn entry(call_id: &str) -> String {
    format!("li.call[data-call=\"{call_id}\"]")
}

/// The text of the element `selector` matches, as shown. Read in one
/// script: the live lists may replace an element between two commands.
pub async fn text(client: &Client, selector: &str) -> String {
    let script = format!("var e = document.querySelector({selector:?}); return e ? e.innerText.trim() : null;");
    match client.execute(&script, vec![]).await.unwrap() {
        Value::String(text) => text,
        other => panic!("no {selector} on the page ({other})"),
    }
}

/// Clicks the element `selector` matches, in one script (see [`text`]).
pub async fn click(client: &Client, selector: &str) {
    let script = format!("var e = document.querySelector({selector:?}); if (!e) {{ return false; }} e.click(); return true;");
    assert_eq!(client.execute(&script, vec![]).await.unwrap(), Value::Bool(true), "no {selector} to click");
}

/// One HTTP/1.1 request to the example, as a client other than a browser
/// would send it: the status, and the whole response's text.
pub async fn http(site: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let host = site.strip_prefix("http://").unwrap();
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("an HTTP status line");
    (status, response)
}

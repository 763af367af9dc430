//! The approvals inbox over HTTP, without a browser: its router served on
//! a loopback socket over a SQLite journal, spoken to as raw HTTP/1.1.
//! What one approver's lists hold when another user parked many calls,
//! what a list shows of large arguments and what a call's own page shows,
//! how many live pages an approver keeps, a live page of an approver the
//! auth hook no longer accepts, an edited JSON field past the guard, the
//! docs and icon the pages show, and a tool's question answered as a form.
//!
//! ```text
//! cargo test -p tool-runtime --features inbox --test suite inbox_http::
//! ```
#![cfg(feature = "inbox")]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tool_runtime::inbox::{CallsOf, Inbox, Unauthorized};
use tool_runtime::journal::{Journal, ParkedCall};
use tool_runtime::prelude::*;
use tool_runtime::question::Reply as Answer;

/// Refund an order.
#[tool(policy = needs_approval)]
async fn refund(
    /// The order number, for example `A-4711`.
    order_id: String,
    /// How much to refund, in cents.
    amount_cents: u64,
    /// Why.
    reason: String,
    /// The lines refunded.
    #[tool(default)]
    lines: Vec<String>,
) -> String {
    format!("refunded {amount_cents} of {order_id} ({reason}, {} lines)", lines.len())
}

/// A fresh journal in a directory of its own.
async fn journal(test: &str) -> (Journal, PathBuf) {
    let dir = std::env::temp_dir().join(format!("tool-runtime-inbox-http-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let journal = Journal::open(&format!("sqlite:{}", dir.join("journal.db").display())).await.unwrap();
    (journal, dir)
}

/// Closes `journal` and removes its directory.
async fn done(journal: Journal, dir: PathBuf) {
    journal.close().await;
    let _ = std::fs::remove_dir_all(dir);
}

/// An inbox over `journal` whose approver is the `x-approver` header,
/// unless `revoked`.
fn inbox(journal: Journal, revoked: Arc<AtomicBool>) -> Inbox<()> {
    let registry = Registry::<()>::builder().tools(tools![refund]).build().unwrap();
    Inbox::new(journal, registry, Arc::new(())).poll_interval(Duration::from_millis(50)).with_auth(move |headers| {
        match headers.get("x-approver").and_then(|value| value.to_str().ok()) {
            Some(_) if revoked.load(Ordering::SeqCst) => Err(Unauthorized::new("Your access was revoked.")),
            Some(id) => Ok(UserContext::new(id)),
            None => Err(Unauthorized::new("Send x-approver.")),
        }
    })
}

/// Serves `inbox` on a free loopback port; its address.
async fn serve(inbox: Inbox<()>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, inbox.router()).await });
    addr
}

/// Parks call `call_id` of run `run_id` for `user`, with `input`.
async fn park(journal: &Journal, run_id: &str, call_id: &str, user: &str, input: Value) {
    let call = ParkedCall {
        run_id: run_id.into(),
        call_id: call_id.into(),
        tool: "refund".into(),
        question: tool_runtime::question::Question::Approval(tool_runtime::question::Binding::of_arguments(&input)),
        input,
        user_id: Some(user.into()),
        parked_at: SystemTime::now(),
        expires_at: Some(SystemTime::now() + Duration::from_secs(600)),
    };
    tool_runtime::question::park(journal, &call).await.unwrap();
}

fn small(order: &str) -> Value {
    json!({"order_id": order, "amount_cents": 100, "reason": "broken"})
}

struct Reply {
    status: u16,
    head: String,
    body: String,
}

/// One request on its own connection; the whole reply.
async fn request(addr: SocketAddr, method: &str, target: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    stream.write_all(format!("{head}\r\n{body}").as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw)).await.expect("a reply within 10 s").unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    Reply { status, head: head.to_owned(), body: body.to_owned() }
}

async fn get(addr: SocketAddr, target: &str, approver: &str) -> Reply {
    request(addr, "GET", target, &[("x-approver", approver)], "").await
}

/// A page's live updates, read as they come.
struct Live {
    stream: TcpStream,
    seen: String,
}

impl Live {
    /// Opens `/events` as `approver`; the reply's status line and head.
    async fn open(addr: SocketAddr, approver: &str) -> (Live, String) {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let head = format!("GET /events HTTP/1.1\r\nHost: {addr}\r\nx-approver: {approver}\r\nAccept: text/event-stream\r\n\r\n");
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut live = Live { stream, seen: String::new() };
        live.until(|seen| seen.contains("\r\n\r\n")).await;
        let head = live.seen.split("\r\n\r\n").next().unwrap().to_owned();
        (live, head)
    }

    /// Reads until `done` holds for what was read, or the stream ends (its
    /// last chunk, or the connection closed); whether it ended.
    async fn until(&mut self, done: impl Fn(&str) -> bool) -> bool {
        let mut buffer = vec![0u8; 64 * 1024];
        while !done(&self.seen) {
            if self.seen.ends_with("\r\n0\r\n\r\n") {
                return true;
            }
            let read = tokio::time::timeout(Duration::from_secs(10), self.stream.read(&mut buffer)).await.expect("read within 10 s");
            match read {
                Ok(0) | Err(_) => return true,
                Ok(read) => self.seen.push_str(&String::from_utf8_lossy(&buffer[..read])),
            }
        }
        false
    }
}

/// `text` percent-encoded for a form.
fn encoded(text: &str) -> String {
    text.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

#[tokio::test]
async fn each_approver_sees_their_own_calls_whatever_others_parked() {
    let (journal, dir) = journal("own").await;
    park(&journal, "r-c17", "c17-call", "c-17", small("A-1")).await;
    park(&journal, "r-c23", "c23-call", "c-23", small("A-2")).await;
    // Then one user parks 600 calls, all newer.
    for n in 0..600 {
        park(&journal, &format!("r-flood-{n}"), &format!("flood-{n}"), "flood", small("A-3")).await;
    }
    // The default rule (each approver decides their own calls), and a
    // rule of the application's own with no `calls_of`: read page by page.
    let supervisor = |approver: &UserContext| approver.id.as_deref() == Some("dana");
    let by_default = serve(inbox(journal.clone(), Arc::default())).await;
    let by_rule =
        serve(inbox(journal.clone(), Arc::default()).may_decide(move |approver, call| supervisor(approver) || approver.id == call.user_id)).await;
    for addr in [by_default, by_rule] {
        let page = get(addr, "/", "c-17").await;
        assert_eq!(page.status, 200);
        assert!(page.body.contains("data-call=\"c17-call\""), "c-17's own call is listed");
        assert!(!page.body.contains("c23-call") && !page.body.contains("flood-"), "and no one else's");
        let page = get(addr, "/", "c-23").await;
        assert!(page.body.contains("data-call=\"c23-call\""), "c-23's own call is listed");
    }
    // A supervisor sees everyone's newest, and is told the list is cut.
    let page = get(by_rule, "/", "dana").await;
    assert_eq!(page.body.matches("<li class=\"call\"").count(), 100, "a list shows 100 calls");
    assert!(page.body.contains("flood-599") && page.body.contains("Only the newest 100 calls are shown"));
    done(journal, dir).await;
}

#[tokio::test]
async fn calls_of_names_whose_calls_are_read() {
    let (journal, dir) = journal("calls-of").await;
    park(&journal, "r-c17", "c17-call", "c-17", small("A-1")).await;
    for n in 0..2_100 {
        park(&journal, &format!("r-flood-{n}"), &format!("flood-{n}"), "flood", small("A-3")).await;
    }
    // Past the rows one list reads, a rule alone finds nothing of c-17's
    // and says so; with `calls_of`, the journal is asked for c-17's alone.
    let rule = |approver: &UserContext, call: &ParkedCall| approver.id == call.user_id;
    let addr = serve(inbox(journal.clone(), Arc::default()).may_decide(rule)).await;
    let page = get(addr, "/", "c-17").await;
    assert!(!page.body.contains("c17-call"));
    assert!(page.body.contains("read the newest 2000 waiting calls and stopped"), "{}", page.body);
    let addr = serve(inbox(journal.clone(), Arc::default()).may_decide(rule).calls_of(CallsOf::own)).await;
    assert!(get(addr, "/", "c-17").await.body.contains("data-call=\"c17-call\""));
    done(journal, dir).await;
}

#[tokio::test]
async fn a_list_shows_a_preview_of_large_arguments_and_the_calls_page_all_of_them() {
    let (journal, dir) = journal("preview").await;
    let reason = "é".repeat(500_000); // 1,000,000 bytes
    let lines: Vec<String> = (0..30_000).map(|n| n.to_string()).collect();
    for n in 0..20 {
        let input = json!({"order_id": "A-1", "amount_cents": 100, "reason": reason, "lines": lines});
        park(&journal, &format!("r-{n}"), &format!("big-{n}"), "c-17", input).await;
    }
    let addr = serve(inbox(journal.clone(), Arc::default())).await;
    let page = get(addr, "/", "c-17").await;
    assert_eq!(page.status, 200);
    assert_eq!(page.body.matches("<li class=\"call\"").count(), 20);
    assert!(page.body.len() < 200_000, "20 calls of 1.2 MB each: a page of {} bytes", page.body.len());
    assert!(page.body.contains(" … and 999000 bytes more"), "what a preview left out");
    assert!(page.body.contains("href=\"/call?run=r-7&amp;call=big-7\""), "a link to the call's own page");
    let call = get(addr, "/call?run=r-7&call=big-7", "c-17").await;
    assert_eq!(call.status, 200);
    assert!(
        call.body.contains(&reason) && call.body.contains("&#34;0&#34;,&#34;1&#34;,") && call.body.contains("&#34;29999&#34;]"),
        "the whole input"
    );
    assert!(call.body.contains("form method=\"post\" action=\"/approve\""), "decided from there too");
    assert_eq!(get(addr, "/call?run=r-7&call=big-7", "c-23").await.status, 404, "only to its approver");
    done(journal, dir).await;
}

#[tokio::test]
async fn an_approver_keeps_at_most_six_live_pages_open() {
    let (journal, dir) = journal("live-pages").await;
    let addr = serve(inbox(journal.clone(), Arc::default())).await;
    let mut open = Vec::new();
    for _ in 0..6 {
        let (live, head) = Live::open(addr, "c-17").await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        open.push(live);
    }
    let (_, head) = Live::open(addr, "c-17").await;
    assert!(head.starts_with("HTTP/1.1 429"), "a seventh page: {head}");
    let (_, head) = Live::open(addr, "c-23").await;
    assert!(head.starts_with("HTTP/1.1 200"), "another approver: {head}");
    drop(open.pop());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (_, head) = Live::open(addr, "c-17").await;
    assert!(head.starts_with("HTTP/1.1 200"), "once one closed: {head}");
    done(journal, dir).await;
}

#[tokio::test]
async fn a_live_page_ends_once_the_auth_hook_refuses_its_approver() {
    let (journal, dir) = journal("revoked").await;
    let revoked = Arc::new(AtomicBool::new(false));
    let addr = serve(inbox(journal.clone(), revoked.clone())).await;
    let (mut live, head) = Live::open(addr, "c-17").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    park(&journal, "r-1", "before", "c-17", small("A-1")).await;
    live.until(|seen| seen.contains("before")).await;
    revoked.store(true, Ordering::SeqCst);
    park(&journal, "r-2", "after-revocation", "c-17", small("A-2")).await;
    let ended = live.until(|seen| seen.contains("after-revocation")).await;
    assert!(ended, "the stream ended");
    assert!(!live.seen.contains("after-revocation"), "a call parked after the revocation reached the page");
    assert!(live.seen.contains("event: signed-out") && live.seen.contains("Your access was revoked."), "{}", live.seen);
    done(journal, dir).await;
}

#[tokio::test]
async fn an_edited_json_field_is_guarded_before_it_is_parsed() {
    let (journal, dir) = journal("edit-guard").await;
    park(&journal, "r-1", "edit", "c-17", small("A-1")).await;
    let addr = serve(inbox(journal.clone(), Arc::default())).await;
    let form = get(addr, "/edit?run=r-1&call=edit", "c-17").await;
    let cookie = form.head.lines().find_map(|line| line.strip_prefix("set-cookie: ")).unwrap().split(';').next().unwrap().to_owned();
    let token = form.body.split("name=\"csrf\" value=\"").nth(1).unwrap().split('"').next().unwrap().to_owned();
    // 40,000 values: past the registry's 32,768, under its 1 MiB.
    let lines = format!("[{}]", vec!["0"; 40_000].join(","));
    let body = format!("csrf={token}&run=r-1&call=edit&arg.order_id=A-1&arg.amount_cents=100&arg.reason=broken&arg.lines={}", encoded(&lines));
    let headers = [("x-approver", "c-17"), ("Cookie", cookie.as_str()), ("Content-Type", "application/x-www-form-urlencoded")];
    let refused = request(addr, "POST", "/edit", &headers, &body).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    let problem = refused.body.split("<p class=\"problem\" data-field=\"lines\">").nth(1).expect("the field's problem").split("</p>").next().unwrap();
    assert!(problem.contains("this JSON holds more than 32768 values"), "{problem}");
    assert!(journal.approvals().get("r-1", "edit").await.unwrap().unwrap().decided.is_none(), "nothing decided");
    done(journal, dir).await;
}

#[tokio::test]
async fn parameter_docs_show_code_as_code_and_the_pages_name_their_icon() {
    let (journal, dir) = journal("docs").await;
    park(&journal, "r-1", "docs", "c-17", small("A-1")).await;
    let addr = serve(inbox(journal.clone(), Arc::default())).await;
    for target in ["/", "/edit?run=r-1&call=docs"] {
        let page = get(addr, target, "c-17").await;
        assert!(page.body.contains("The order number, for example <code>A-4711</code>."), "{target}");
        assert!(!page.body.contains('`'), "{target}: a backtick left");
        assert!(page.body.contains("<link rel=\"icon\" href=\"/favicon.svg\""), "{target}");
    }
    let icon = request(addr, "GET", "/favicon.svg", &[], "").await;
    assert_eq!(icon.status, 200);
    assert!(icon.head.contains("content-type: image/svg+xml") && icon.body.starts_with("<svg"), "{}", icon.head);
    done(journal, dir).await;
}

/// How to close an account.
#[tool_data(Deserialize, JsonSchema)]
#[derive(tool_runtime::Form, Debug)]
enum Closing {
    /// Now.
    Now,
    /// At the end of the month.
    MonthEnd,
}

#[tool_data(Deserialize, JsonSchema)]
#[derive(tool_runtime::Form)]
struct Confirm {
    /// Close it for good.
    close: bool,
    /// When.
    when: Closing,
    /// How many days of notice, 0 to 30.
    #[schemars(range(max = 30))]
    #[serde(default = "two_weeks")]
    notice_days: u32,
}

fn two_weeks() -> u32 {
    14
}

/// Close an account, once its owner confirms.
#[tool]
async fn close_account(ctx: Ctx<()>, account: String) -> Result<String, ToolError> {
    match ctx.elicit::<Confirm>(format!("Close {account}?")).await? {
        Answer::Answered(Confirm { close: true, when, notice_days }) => Ok(format!("closing {account}: {when:?}, {notice_days} days' notice")),
        _ => Ok(format!("{account} stays open")),
    }
}

#[tokio::test]
async fn a_tool_s_question_is_a_form_beside_the_approvals_and_its_answer_goes_through_the_one_api() {
    let (journal, dir) = journal("question").await;
    let registry = Registry::<()>::builder().tools(tools![close_account]).build().unwrap();
    let mut run = registry.run(Arc::new(())).with_user(UserContext::new("c-17")).durable(&journal, "r-q").await.unwrap();
    let step = run.execute(vec![ToolCall::new("q1", "close_account", json!({"account": "ACC-9"}))]).await;
    assert_eq!(step.results[0].error_code.as_deref(), Some("ANSWER_PENDING"));
    park(&journal, "r-1", "approval", "c-17", small("A-1")).await;
    let inbox = Inbox::new(journal.clone(), registry.clone(), Arc::new(())).with_auth(|headers| {
        headers.get("x-approver").and_then(|value| value.to_str().ok()).map(UserContext::new).ok_or_else(|| Unauthorized::new("Send x-approver."))
    });
    let addr = serve(inbox).await;
    let page = get(addr, "/", "c-17").await;
    // Beside the approval, the question, as its form: a checkbox, a choice
    // of its titled values, a number with its bound and its default.
    assert!(page.body.contains("data-call=\"approval\"") && page.body.contains("data-call=\"q1#1\""), "{}", page.body);
    let question = page.body.split("data-call=\"q1#1\"").nth(1).unwrap().split("</li>").next().unwrap();
    assert!(question.contains("The tool asks: <span class=\"message\">Close ACC-9?</span>"), "{question}");
    assert!(question.contains("type=\"checkbox\"") && question.contains("name=\"arg.close\""), "{question}");
    assert!(question.contains("<option value=\"MonthEnd\"") && question.contains("name=\"arg.when\""), "{question}");
    assert!(question.contains("name=\"arg.notice_days\" value=\"14\"") && question.contains("max=\"30\""), "{question}");
    assert!(!question.contains("/approve") && !question.contains("Edit and approve"), "a question is answered, not approved");

    let cookie = page.head.lines().find_map(|line| line.strip_prefix("set-cookie: ")).unwrap().split(';').next().unwrap().to_owned();
    let token = page.body.split("name=\"csrf\" value=\"").nth(1).unwrap().split('"').next().unwrap().to_owned();
    let headers = [("x-approver", "c-17"), ("Cookie", cookie.as_str()), ("Content-Type", "application/x-www-form-urlencoded")];
    let answer = |days: &str| format!("csrf={token}&run=r-q&call={}&arg.close=true&arg.when=MonthEnd&arg.notice_days={days}", encoded("q1#1"));
    // Past the form's bound: refused by the one API, nothing recorded.
    let refused = request(addr, "POST", "/answer", &headers, &answer("45")).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(refused.body.contains("the answer does not fit the form") && refused.body.contains("/notice_days"), "{}", refused.body);
    assert!(journal.approvals().get("r-q", "q1#1").await.unwrap().unwrap().decided.is_none());
    let answered = request(addr, "POST", "/answer", &headers, &answer("7")).await;
    assert_eq!(answered.status, 200, "{}", answered.body);
    assert!(answered.body.contains("Answered: call q1#1 of run r-q"), "{}", answered.body);
    // The run goes on with the answer.
    let settled = run.settle_decided().await.unwrap();
    assert_eq!(settled[0].text, "closing ACC-9: MonthEnd, 7 days' notice");
    let page = get(addr, "/", "c-17").await;
    assert!(page.body.contains("answered: <span class=\"detail\">"), "the decisions list says how it was decided");
    done(journal, dir).await;
}

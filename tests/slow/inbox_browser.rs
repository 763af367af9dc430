//! The approvals inbox in a real browser: headless Chromium, driven over
//! WebDriver, against the `approvals_inbox` example serving a journal as a
//! process of its own, while this test process parks and decides calls in
//! the same journal as any other process would. The same cases run on
//! SQLite and on Postgres (`--features inbox,postgres` and
//! `TOOL_RUNTIME_TEST_POSTGRES_URL`; `.ci/postgres.sh` starts a server).
//!
//! Approve, reject with a reason, edit with an invalid then a valid value,
//! a call decided by another process leaving the page live, two browsers
//! racing one call, an expiry, script-injection arguments shown as text,
//! forms refused across sites and across approvers. The run on SQLite
//! takes screenshots of the list and the edit form, and each run prints
//! how soon an open page showed a decision made in another process.
//!
//! The screenshots go to `inbox/` in the test's scratch directory under
//! `target/` (the run prints where), so a test run leaves the checkout as
//! it was. `UPDATE_SCREENSHOTS=1` writes them over the committed ones in
//! `docs/inbox/` as well.
//!
//! `cargo test --features inbox --test slow inbox_browser:: -- --nocapture`

#![cfg(feature = "inbox")]

use crate::shop;

mod harness;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fantoccini::{Client, Locator};
use serde_json::{Value, json};
use tool_runtime::journal::{Decision, EXPIRED_BY, Journal, ParkedCall};
use tool_runtime::{ResultKind, ToolCall, UserContext};

use harness::{Process, browser, click, entry, eval, http, text, wait_until};
use shop::Shop;

/// One backend's inbox: the journal, the example serving it, chromedriver.
struct Setup {
    backend: &'static str,
    journal: Journal,
    site: String,
    driver: String,
    dir: PathBuf,
    _server: Process,
    _chromedriver: Process,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite() {
    if !harness::browser_installed() {
        return;
    }
    let dir = harness::scratch("sqlite");
    let url = format!("sqlite:{}", dir.join("journal.db").display());
    every_case(setup("sqlite", &url, dir).await).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres() {
    if !harness::browser_installed() {
        return;
    }
    let Some(url) = harness::postgres("browser").await else { return };
    every_case(setup("postgres", &url, harness::scratch("postgres")).await).await;
}

async fn setup(backend: &'static str, url: &str, dir: PathBuf) -> Setup {
    // Opened here first, so the schema exists before the example opens it.
    let journal = Journal::open(url).await.expect("the journal opens");
    let (server, site) = harness::serve(url);
    let (chromedriver, driver) = harness::chromedriver();
    Setup { backend, journal, site, driver, dir, _server: server, _chromedriver: chromedriver }
}

async fn every_case(setup: Setup) {
    let dana = browser(&setup.driver, &setup.dir.join("dana"), &setup.site, "dana-token").await;
    an_approved_call_runs_and_its_outcome_appears(&setup, &dana).await;
    a_rejection_records_the_reason_the_model_reads(&setup, &dana).await;
    an_edit_is_refused_until_valid_then_approved(&setup, &dana).await;
    script_in_arguments_shows_as_text(&setup, &dana).await;
    an_expired_call_leaves_the_list(&setup, &dana).await;
    let latencies = a_call_decided_elsewhere_leaves_the_list_live(&setup, &dana).await;
    let erin = browser(&setup.driver, &setup.dir.join("erin"), &setup.site, "erin-token").await;
    two_browsers_racing_one_call_are_told_who_won(&setup, &dana, &erin).await;
    forms_from_other_sites_or_approvers_are_refused(&setup).await;
    erin.close().await.unwrap();
    dana.close().await.unwrap();
    report(setup.backend, latencies);
}

fn now_plus(seconds: u64) -> SystemTime {
    SystemTime::now() + Duration::from_secs(seconds)
}

/// Parks a call for `user` as a run would, expiring in 10 minutes.
async fn park(setup: &Setup, run_id: &str, call_id: &str, tool: &str, input: Value, user: &str) {
    park_until(setup, run_id, call_id, tool, input, user, now_plus(600)).await;
}

async fn park_until(setup: &Setup, run_id: &str, call_id: &str, tool: &str, input: Value, user: &str, expires_at: SystemTime) {
    let call = ParkedCall {
        run_id: run_id.into(),
        call_id: call_id.into(),
        tool: tool.into(),
        question: tool_runtime::question::Question::Approval(tool_runtime::question::Binding::of_arguments(&input)),
        input,
        user_id: Some(user.into()),
        parked_at: SystemTime::now(),
        expires_at: Some(expires_at),
    };
    tool_runtime::question::park(&setup.journal, &call).await.expect("the call parks");
}

async fn decision(setup: &Setup, run_id: &str, call_id: &str) -> Option<(Decision, String)> {
    let approval = setup.journal.approvals().get(run_id, call_id).await.unwrap().expect("the call is in the journal");
    approval.decided.map(|decided| (decided.decision, decided.by))
}

async fn screenshot(setup: &Setup, client: &Client, name: &str) {
    if setup.backend != "sqlite" {
        return;
    }
    let picture = client.screenshot().await.unwrap();
    let mut dirs = vec![PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("inbox")];
    if std::env::var_os("UPDATE_SCREENSHOTS").is_some_and(|value| value == "1") {
        dirs.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/inbox"));
    }
    for dir in dirs {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), &picture).unwrap();
        println!("inbox_browser: screenshot {}", dir.join(name).display());
    }
}

/// A durable run parks a refund; Dana approves it in the browser; the run,
/// resumed, carries it out, and the page shows the outcome without a reload.
async fn an_approved_call_runs_and_its_outcome_appears(setup: &Setup, dana: &Client) {
    let registry = shop::registry();
    let app = Arc::new(Shop::demo());
    let run_id = "desk-approve";
    let call_id = "desk-approve-call_2";
    let mut run = registry.run(app.clone()).with_user(UserContext::new("c-17")).durable(&setup.journal, run_id).await.unwrap();
    run.execute(vec![ToolCall::new("desk-approve-call_1", "lookup_order", json!({"order_id": "A-1002"}))]).await;
    run.execute(vec![ToolCall::new(call_id, "refund", json!({"order_id": "A-1002", "amount_cents": 18990, "reason": "arrived broken"}))]).await;
    assert_eq!(run.pending().len(), 1, "the refund over 50.00 waits for a supervisor");
    park(setup, "desk-voucher", "desk-voucher-call_1", "issue_voucher", json!({"customer": "c-17", "amount_cents": 2500}), "c-17").await;

    let selector = entry(call_id);
    wait_until(dana, &format!("document.querySelector('{selector}')"), "the parked refund on the page").await;
    assert_eq!(text(dana, &format!("{selector} dd[data-name=\"amount_cents\"]")).await, "18990", "money as the model wrote it");
    let labels = text(dana, &format!("{selector} dl.arguments")).await;
    assert!(labels.contains("How much to refund, in cents."), "labels come from the parameter docs: {labels}");
    assert!(text(dana, &format!("{selector} .meta")).await.contains("c-17"), "the user the call is for");
    screenshot(setup, dana, "list.png").await;

    click(dana, &format!("{selector} form.approve button")).await;
    wait_until(dana, "document.querySelector('#notice.done')", "the approval's notice").await;
    assert!(text(dana, "#notice").await.starts_with(&format!("Approved: call {call_id} of run {run_id}")));
    assert_eq!(decision(setup, run_id, call_id).await, Some((Decision::Approve, "dana".into())), "journaled as Dana's");

    drop(run);
    let mut run = registry.run(app).with_user(UserContext::new("c-17")).durable(&setup.journal, run_id).await.unwrap();
    let settled = run.settle_decided().await.unwrap();
    assert_eq!(settled.iter().map(|r| r.kind).collect::<Vec<_>>(), [ResultKind::Success]);
    let outcome = format!("document.querySelector('tr[data-call=\"{call_id}\"] td.outcome')");
    wait_until(dana, &format!("{outcome} && {outcome}.textContent.startsWith('success')"), "the refund's outcome, live").await;
    assert!(text(dana, &format!("tr[data-call=\"{call_id}\"] td.outcome")).await.contains("\"refunded_cents\":18990"));
}

/// Dana rejects the voucher with a reason; the journal keeps the reason
/// for the model, and the decisions list shows it.
async fn a_rejection_records_the_reason_the_model_reads(setup: &Setup, dana: &Client) {
    let (run_id, call_id) = ("desk-voucher", "desk-voucher-call_1");
    let selector = entry(call_id);
    wait_until(dana, &format!("document.querySelector('{selector}')"), "the voucher on the page").await;
    // Typed as a person would; tried again should the lists be replaced
    // between finding the box and typing (the typed text itself survives
    // an update, as the assertion below checks).
    let input = format!("{selector} form.reject input[name=reason]");
    for attempt in 0.. {
        let typed = async {
            let reason = dana.find(Locator::Css(&input)).await?;
            reason.clear().await?;
            reason.send_keys("A voucher needs the receipt first; ask the customer for it.").await
        };
        match typed.await {
            Ok(()) => break,
            Err(error) => assert!(attempt < 3, "cannot type the reason: {error}"),
        }
    }
    assert_eq!(
        eval(dana, &format!("document.querySelector('{selector} form.reject input[name=reason]').value")).await,
        "A voucher needs the receipt first; ask the customer for it.",
        "the reason typed survives the lists' updates"
    );
    click(dana, &format!("{selector} form.reject button")).await;
    wait_until(dana, "document.querySelector('#notice.done')", "the rejection's notice").await;
    assert!(text(dana, "#notice").await.starts_with("Rejected: call desk-voucher-call_1"));
    assert_eq!(
        decision(setup, run_id, call_id).await,
        Some((Decision::Reject("A voucher needs the receipt first; ask the customer for it.".into()), "dana".into()))
    );
    let how = text(dana, &format!("tr[data-call=\"{call_id}\"] td.how")).await;
    assert_eq!(how, "rejected: A voucher needs the receipt first; ask the customer for it.");
}

/// The edit form refuses a value the schema forbids in the browser, then
/// on the server when the browser's check is taken away, refuses an input
/// the policy denies, and approves a valid one as edited.
async fn an_edit_is_refused_until_valid_then_approved(setup: &Setup, dana: &Client) {
    let (run_id, call_id) = ("desk-edit", "desk-edit-call_2");
    park(setup, run_id, call_id, "refund", json!({"order_id": "A-1002", "amount_cents": 18990, "reason": "arrived broken"}), "c-17").await;
    let selector = entry(call_id);
    wait_until(dana, &format!("document.querySelector('{selector} a.edit')"), "the refund's edit link").await;
    click(dana, &format!("{selector} a.edit")).await;
    wait_until(dana, "document.querySelector('#edit-form')", "the edit form").await;
    assert_eq!(eval(dana, "document.querySelector('input[name=\"arg.amount_cents\"]').value").await, "18990");
    assert_eq!(eval(dana, "document.querySelector('input[name=\"arg.amount_cents\"]').min").await, "1", "the schema's minimum");

    let amount = "document.querySelector('input[name=\"arg.amount_cents\"]')";
    let set = |field: &str, value: &str| format!("document.querySelector('input[name=\"arg.{field}\"]').value = {value:?}; return true;");
    let submit = "document.querySelector('#edit-form button[type=submit]')";

    // In the browser: 0 is below the minimum, so the form is not sent.
    dana.execute(&set("amount_cents", "0"), vec![]).await.unwrap();
    click(dana, "#edit-form button[type=submit]").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(eval(dana, &format!("{amount}.matches(':invalid')")).await, true, "the browser marks the field");
    assert_eq!(eval(dana, "location.pathname.endsWith('/edit') && location.search.includes('run=')").await, true, "not sent");
    assert_eq!(decision(setup, run_id, call_id).await, None);

    // On the server: the browser's check taken away, the schema still refuses it.
    dana.execute(&format!("{amount}.removeAttribute('min'); return true;"), vec![]).await.unwrap();
    dana.execute(&format!("{submit}.click(); return true;"), vec![]).await.unwrap();
    wait_until(dana, "document.querySelector('#notice.refused')", "the server's refusal").await;
    let refusal = text(dana, "#notice").await;
    assert!(refusal.contains("does not accept this input") && refusal.contains("amount_cents"), "{refusal}");
    assert_eq!(decision(setup, run_id, call_id).await, None, "nothing journaled");

    // The policy decides the edited input again: order A-1001 is not delivered.
    dana.execute(&set("order_id", "A-1001"), vec![]).await.unwrap();
    dana.execute(&set("amount_cents", "2500"), vec![]).await.unwrap();
    dana.execute(&format!("{submit}.click(); return true;"), vec![]).await.unwrap();
    wait_until(
        dana,
        "document.querySelector('#notice.refused') && document.querySelector('#notice').textContent.includes('policy')",
        "the policy's refusal",
    )
    .await;
    assert!(text(dana, "#notice").await.contains("cannot be refunded before it is delivered"));
    screenshot(setup, dana, "edit.png").await;
    assert_eq!(decision(setup, run_id, call_id).await, None, "nothing journaled");

    // A valid input is approved as edited.
    dana.execute(&set("order_id", "A-1002"), vec![]).await.unwrap();
    dana.execute(&set("amount_cents", "5000"), vec![]).await.unwrap();
    dana.execute(&format!("{submit}.click(); return true;"), vec![]).await.unwrap();
    wait_until(dana, "document.querySelector('#notice.done')", "the edited approval's notice").await;
    assert!(text(dana, "#notice").await.starts_with("Approved with your edits: call desk-edit-call_2"));
    let edited = json!({"order_id": "A-1002", "amount_cents": 5000, "reason": "arrived broken"});
    assert_eq!(decision(setup, run_id, call_id).await, Some((Decision::ApproveEdited(edited), "dana".into())));
}

/// Arguments holding a script, an `onerror` attribute and `javascript:`
/// URLs are shown as the text they are, in the list and in the edit form,
/// and run nothing; the page's policy allows no inline script.
async fn script_in_arguments_shows_as_text(setup: &Setup, dana: &Client) {
    let (run_id, call_id) = ("desk-hostile", "desk-hostile-call_1");
    let order = "<img src=x onerror=\"window.__pwned='img'\">";
    let reason = "<script>window.__pwned='script'</script><a href=\"javascript:window.__pwned='link'\">click</a> javascript:alert(1)";
    park(setup, run_id, call_id, "refund", json!({"order_id": order, "amount_cents": 100, "reason": reason}), "c-17").await;
    let selector = entry(call_id);
    wait_until(dana, &format!("document.querySelector('{selector}')"), "the hostile call on the page").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(text(dana, &format!("{selector} dd[data-name=\"order_id\"]")).await, order);
    assert_eq!(text(dana, &format!("{selector} dd[data-name=\"reason\"]")).await, reason);
    assert_eq!(eval(dana, "window.__pwned === undefined").await, true, "nothing ran");
    assert_eq!(eval(dana, "document.querySelectorAll('#lists img, #lists script, #lists a[href^=\"javascript:\"]').length").await, 0);

    click(dana, &format!("{selector} a.edit")).await;
    wait_until(dana, "document.querySelector('#edit-form')", "the hostile call's edit form").await;
    assert_eq!(eval(dana, "document.querySelector('input[name=\"arg.order_id\"]').value").await, order);
    assert_eq!(eval(dana, "document.querySelector('input[name=\"arg.reason\"]').value").await, reason);
    assert_eq!(eval(dana, "window.__pwned === undefined && document.querySelectorAll('main img, main script').length === 0").await, true);

    let (status, response) = http(&setup.site, "GET", "/approvals", &[("Cookie", "demo_approver=dana-token")], "").await;
    assert_eq!(status, 200);
    let policy = response.lines().find(|line| line.to_ascii_lowercase().starts_with("content-security-policy:")).expect("a CSP header");
    assert!(policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"), "{policy}");
    assert!(!response.contains(order) && response.contains("&#60;img src=x onerror="), "escaped in the HTML itself");
    dana.goto(&format!("{}/approvals", setup.site)).await.unwrap();
    let reject = format!("{selector} form.reject button");
    wait_until(dana, &format!("document.querySelector('{reject}')"), "the list again").await;
    click(dana, &reject).await;
    wait_until(dana, "document.querySelector('#notice.done')", "the hostile call rejected").await;
}

/// A call whose expiry passes leaves the list by itself, and the decisions
/// list says it expired.
async fn an_expired_call_leaves_the_list(setup: &Setup, dana: &Client) {
    let (run_id, call_id) = ("desk-expiry", "desk-expiry-call_1");
    dana.goto(&format!("{}/approvals", setup.site)).await.unwrap();
    park_until(setup, run_id, call_id, "issue_voucher", json!({"customer": "c-17", "amount_cents": 500}), "c-17", now_plus(3)).await;
    let selector = entry(call_id);
    wait_until(dana, &format!("document.querySelector('{selector}')"), "the call about to expire").await;
    let countdown = text(dana, &format!("{selector} .countdown")).await;
    assert!(countdown.starts_with("in 0:0"), "a live countdown: {countdown}");
    wait_until(dana, &format!("!document.querySelector('{selector}')"), "the expired call leaving the list").await;
    assert_eq!(text(dana, &format!("tr[data-call=\"{call_id}\"] td.how")).await, "expired");
    let (decided, by) = decision(setup, run_id, call_id).await.expect("expired in the journal");
    assert!(matches!(decided, Decision::Reject(text) if text.contains("APPROVAL_EXPIRED")));
    assert_eq!(by, EXPIRED_BY);
}

/// Calls decided by this process (not the server's) leave Dana's open page
/// without a reload; returns how long each took, in milliseconds, from the
/// journal's answer to the page's update.
async fn a_call_decided_elsewhere_leaves_the_list_live(setup: &Setup, dana: &Client) -> Vec<f64> {
    dana.goto(&format!("{}/approvals", setup.site)).await.unwrap();
    wait_until(dana, "document.body.dataset.live === 'open'", "the page's event stream").await;
    dana.execute("window.__same_page = true; return true;", vec![]).await.unwrap();
    let mut latencies = Vec::new();
    for round in 0..20 {
        let (run_id, call_id) = (format!("desk-elsewhere-{round}"), format!("desk-elsewhere-{round}-call_1"));
        park(setup, &run_id, &call_id, "issue_voucher", json!({"customer": "c-17", "amount_cents": 1000}), "c-17").await;
        let selector = entry(&call_id);
        wait_until(dana, &format!("document.querySelector('{selector}')"), "the parked call").await;
        // The page learnt of the call at a poll; a decision comes at any
        // moment after, not only right after one (on SQLite the page waits
        // for the next poll): spread over one poll interval.
        tokio::time::sleep(Duration::from_millis(round * 53 % 200)).await;
        tool_runtime::question::decide(&setup.journal, &run_id, &call_id, Decision::Approve, "erin-shell").await.expect("decided in this process");
        let decided_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64() * 1000.0;
        wait_until(dana, &format!("!document.querySelector('{selector}')"), "the call decided elsewhere leaving the list").await;
        let updated_ms = eval(dana, "Number(document.body.dataset.updatedAt)").await.as_f64().unwrap();
        latencies.push((updated_ms - decided_ms).max(0.0));
        assert_eq!(text(dana, &format!("tr[data-call=\"{call_id}\"] td.by")).await, "erin-shell", "the decider shown");
    }
    assert_eq!(eval(dana, "window.__same_page === true").await, true, "no reload: the page updated live");
    latencies
}

/// Dana and Erin approve one call at the same moment: one is told it is
/// done, the other who won; the journal holds the winner's decision.
async fn two_browsers_racing_one_call_are_told_who_won(setup: &Setup, dana: &Client, erin: &Client) {
    for round in 0..3 {
        let (run_id, call_id) = (format!("desk-race-{round}"), format!("desk-race-{round}-call_1"));
        dana.goto(&format!("{}/approvals", setup.site)).await.unwrap();
        erin.goto(&format!("{}/approvals", setup.site)).await.unwrap();
        park(setup, &run_id, &call_id, "issue_voucher", json!({"customer": "c-17", "amount_cents": 1500}), "c-17").await;
        let selector = entry(&call_id);
        let visible = format!("document.querySelector('{selector}')");
        wait_until(dana, &visible, "the raced call for Dana").await;
        wait_until(erin, &visible, "the raced call for Erin").await;
        let submit = format!("document.querySelector('{selector} form.approve').submit(); return true;");
        let (a, b) = tokio::join!(dana.execute(&submit, vec![]), erin.execute(&submit, vec![]));
        a.unwrap();
        b.unwrap();
        let settled = "document.querySelector('#notice.done, #notice.conflict')";
        wait_until(dana, settled, "Dana's answer").await;
        wait_until(erin, settled, "Erin's answer").await;
        let answer = |client| async move { (eval(client, "document.querySelector('#notice').className").await, text(client, "#notice").await) };
        let (dana_answer, erin_answer) = (answer(dana).await, answer(erin).await);
        let (winner, loser_text) = match (dana_answer.0.as_str(), erin_answer.0.as_str()) {
            (Some("notice done"), Some("notice conflict")) => ("dana", erin_answer.1),
            (Some("notice conflict"), Some("notice done")) => ("erin", dana_answer.1),
            _ => panic!("exactly one decider wins: Dana read {dana_answer:?}, Erin read {erin_answer:?}"),
        };
        assert!(loser_text.contains(&format!("already decided by {winner}")), "the loser is told who won: {loser_text}");
        assert_eq!(decision(setup, &run_id, &call_id).await, Some((Decision::Approve, winner.into())));
    }
}

/// A form sent from another origin, without the session's token, or by an
/// approver who may not decide the call decides nothing; the same form from
/// the inbox's own page does.
async fn forms_from_other_sites_or_approvers_are_refused(setup: &Setup) {
    let (run_id, call_id) = ("desk-forms", "desk-forms-call_1");
    park(setup, run_id, call_id, "issue_voucher", json!({"customer": "c-17", "amount_cents": 700}), "c-17").await;
    park(setup, "desk-c23", "desk-c23-call_1", "issue_voucher", json!({"customer": "c-23", "amount_cents": 700}), "c-23").await;
    let origin = setup.site.clone();

    let (status, body) = http(&setup.site, "GET", "/approvals", &[], "").await;
    assert_eq!(status, 401, "no sign-in: {body}");

    // c-23, a customer, sees only their own call, and cannot decide c-17's.
    let (c23_cookies, c23_token, c23_page) = session(setup, "c-23-token").await;
    assert!(c23_page.contains("desk-c23-call_1") && !c23_page.contains(call_id), "one approver never sees another's calls");
    let form = format!("csrf={c23_token}&run={run_id}&call={call_id}");
    let (status, _) = post(setup, &c23_cookies, &origin, &form).await;
    assert_eq!(status, 404, "c-23 may not decide c-17's call");

    let (cookies, token, _) = session(setup, "dana-token").await;
    let form = format!("csrf={token}&run={run_id}&call={call_id}");
    assert_eq!(post(setup, &cookies, "http://evil.example", &form).await.0, 403, "another origin");
    assert_eq!(post(setup, &cookies, &origin, &format!("csrf={c23_token}&run={run_id}&call={call_id}")).await.0, 403, "another session's token");
    let without_session = cookies.split("; ").filter(|c| c.starts_with("demo_approver")).collect::<Vec<_>>().join("; ");
    assert_eq!(post(setup, &without_session, &origin, &form).await.0, 403, "no session cookie");
    assert_eq!(decision(setup, run_id, call_id).await, None, "none of those decided anything");

    let (status, body) = post(setup, &cookies, &origin, &form).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(decision(setup, run_id, call_id).await, Some((Decision::Approve, "dana".into())));
    let (status, body) = post(setup, &cookies, &origin, &form).await;
    assert_eq!(status, 409, "a second decision conflicts");
    assert!(body.contains("already decided by dana"));
}

/// The cookies, form token and page of `token`'s approver.
async fn session(setup: &Setup, token: &str) -> (String, String, String) {
    let sign_in = format!("demo_approver={token}");
    let (status, response) = http(&setup.site, "GET", "/approvals", &[("Cookie", &sign_in)], "").await;
    assert_eq!(status, 200);
    let session = response
        .lines()
        .find_map(|line| line.strip_prefix("set-cookie: ").and_then(|c| c.split(';').next()).filter(|c| c.starts_with("tool_runtime_inbox=")))
        .expect("a session cookie")
        .to_owned();
    let csrf = response.split("name=\"csrf\" value=\"").nth(1).and_then(|rest| rest.split('"').next()).expect("a form token").to_owned();
    (format!("{sign_in}; {session}"), csrf, response)
}

async fn post(setup: &Setup, cookies: &str, origin: &str, form: &str) -> (u16, String) {
    let headers = [("Cookie", cookies), ("Origin", origin), ("Content-Type", "application/x-www-form-urlencoded")];
    http(&setup.site, "POST", "/approvals/approve", &headers, form).await
}

fn report(backend: &str, mut latencies: Vec<f64>) {
    latencies.sort_by(f64::total_cmp);
    let median = latencies[latencies.len() / 2];
    let max = latencies[latencies.len() - 1];
    println!(
        "inbox on {backend}: a decision in another process reached the open page in {median:.0} ms (median), {max:.0} ms (max) over {} decisions",
        latencies.len()
    );
}

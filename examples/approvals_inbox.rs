//! The approvals inbox over the `durable_desk` example's journal: a web page
//! where a supervisor decides the refunds and vouchers that runs parked.
//!
//! ```text
//! cargo run --example approvals_inbox --features inbox          # serves http://127.0.0.1:8080
//! cargo run --example durable_desk                               # in another shell: parks a refund
//! # sign in as the supervisor Dana at http://127.0.0.1:8080/sign-in?token=dana-token and decide it
//! cargo run --example durable_desk -- --resume <run id>          # the run carries the decision out
//! ```
//!
//! `--listen ADDR` serves elsewhere (`127.0.0.1:0`: a free port, printed).
//! A call decided from another process (`durable_desk -- --approve`)
//! leaves the open pages' lists at once.
//!
//! The journal is `DATABASE_URL` (with `--features inbox,postgres` for a
//! `postgres://` one), else the SQLite file `durable_desk` uses in the
//! temp directory.
//!
//! Sign-in is a demonstration only: a token in a link becomes a cookie.
//! Dana and Erin are supervisors and decide every call; the customers
//! `c-17` and `c-23` see only the calls made for them. A real application
//! reads its own session in the hook given to `Inbox::with_auth`.

#[path = "common/desk_journal.rs"]
mod desk_journal;
#[path = "common/shop.rs"]
mod shop;

use desk_journal::journal;

use std::process::ExitCode;
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use tool_runtime::UserContext;
use tool_runtime::inbox::{CallsOf, Inbox, Unauthorized};

use shop::Shop;

/// The demonstration's people: token, id, role.
const PEOPLE: [(&str, &str, &str); 4] = [
    ("dana-token", "dana", "supervisor"),
    ("erin-token", "erin", "supervisor"),
    ("c-17-token", "c-17", "customer"),
    ("c-23-token", "c-23", "customer"),
];

/// The cookie the sign-in link sets.
const COOKIE: &str = "demo_approver";

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] => serve("127.0.0.1:8080").await,
        ["--listen", address] => serve(address).await,
        _ => Err("usage: approvals_inbox [--listen ADDR]".into()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

type Outcome = Result<(), Box<dyn std::error::Error>>;

async fn serve(address: &str) -> Outcome {
    let journal = journal().await?;
    let supervisor = |approver: &UserContext| approver.attribute("role").is_some_and(|role| role == "supervisor");
    let inbox = Inbox::new(journal, shop::registry(), Arc::new(Shop::demo()))
        .with_auth(signed_in)
        .may_decide(move |approver, call| supervisor(approver) || approver.id == call.user_id)
        // A customer's list is read from the journal's calls for them alone.
        .calls_of(move |approver| if supervisor(approver) { CallsOf::Everyone } else { CallsOf::own(approver) })
        .base_path("/approvals");
    let app = axum::Router::new()
        .nest("/approvals", inbox.router())
        .route("/", axum::routing::get(|| async { Redirect::to("/approvals") }))
        .route("/sign-in", axum::routing::get(sign_in));
    let listener = tokio::net::TcpListener::bind(address).await?;
    let address = listener.local_addr()?;
    println!("listening on http://{address}");
    for (token, id, role) in PEOPLE {
        println!("  sign in as {id} ({role}): http://{address}/sign-in?token={token}");
    }
    axum::serve(listener, app).await?;
    Ok(())
}

/// The approver a request's cookie names.
fn signed_in(headers: &HeaderMap) -> Result<UserContext, Unauthorized> {
    let token = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find_map(|(name, value)| (name == COOKIE).then_some(value));
    match PEOPLE.iter().find(|(known, ..)| Some(*known) == token) {
        Some((_, id, role)) => Ok(UserContext::new(*id).with_attribute("role", *role)),
        None => Err(Unauthorized::new("Sign in first: open one of the sign-in links the example printed.")),
    }
}

/// `/sign-in?token=...`: the token becomes the cookie, and the inbox opens.
async fn sign_in(axum::extract::RawQuery(query): axum::extract::RawQuery) -> Response {
    let token = query.as_deref().and_then(|query| query.strip_prefix("token=")).unwrap_or_default();
    if !PEOPLE.iter().any(|(known, ..)| *known == token) {
        return (axum::http::StatusCode::UNAUTHORIZED, "unknown token; use one of the links the example printed").into_response();
    }
    let mut response = Redirect::to("/approvals").into_response();
    let cookie = format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict");
    response.headers_mut().insert(header::SET_COOKIE, HeaderValue::from_str(&cookie).expect("a token is a header value"));
    response
}

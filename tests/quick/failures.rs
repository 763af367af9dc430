//! Typed failures: a `#[tool]` written `-> Result<T, E>` whose `E` is
//! `Serialize + JsonSchema` and converts into `ToolError` advertises `E`'s
//! schema as its failure schema, and a failure's value reaches
//! `CallResult::structured` while the model reads the error's one line.
//! `DynamicTool` gets the same through `failure_schema` and
//! `ToolError::with_structured`.
//!
//! ```text
//! cargo test --test quick failures::
//! ```

use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};
use tool_runtime::prelude::*;
use tool_runtime::{ErrorKind, ErrorReport, FailureMode, ResultKind};

#[derive(Serialize, JsonSchema)]
struct Reservation {
    seat: String,
}

/// Why a seat could not be reserved.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum ReserveFailure {
    /// The flight is full.
    Full { next_free: String },
    /// No such flight.
    UnknownFlight { flight: String },
}

impl From<ReserveFailure> for ToolError {
    fn from(failure: ReserveFailure) -> Self {
        match failure {
            ReserveFailure::Full { next_free } => ToolError::conflict("FLIGHT_FULL", format!("The flight is full; offer {next_free} instead.")),
            ReserveFailure::UnknownFlight { flight } => {
                ToolError::not_found("UNKNOWN_FLIGHT", format!("There is no flight {flight}; ask for the number.")).no_retry()
            }
        }
    }
}

/// Reserve a seat on a flight.
#[tool]
async fn reserve(flight: String) -> Result<Reservation, ReserveFailure> {
    match flight.as_str() {
        "LH 400" => Err(ReserveFailure::Full { next_free: "LH 402".into() }),
        "LH 402" => Ok(Reservation { seat: "12A".into() }),
        _ => Err(ReserveFailure::UnknownFlight { flight }),
    }
}

/// Reserve a seat, with a plain tool error.
#[tool]
async fn reserve_plain(flight: String) -> Result<Reservation, ToolError> {
    Err(ToolError::conflict("FLIGHT_FULL", format!("{flight} is full.")))
}

/// A typed failure that is also an `std::error::Error`: still typed.
#[derive(Debug, Serialize, JsonSchema)]
struct Busy {
    retry_after_s: u32,
}

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "busy for {}s", self.retry_after_s)
    }
}
impl std::error::Error for Busy {}
impl From<Busy> for ToolError {
    fn from(busy: Busy) -> Self {
        ToolError::unavailable("BUSY", format!("Try again in {}s.", busy.retry_after_s))
    }
}

/// Check in; busy now.
#[tool]
async fn check_in() -> Result<String, Busy> {
    Err(Busy { retry_after_s: 30 })
}

/// An error type that is only an `std::error::Error`: the generic 500, no value.
#[tool]
async fn read_manifest() -> Result<String, std::io::Error> {
    Err(std::io::Error::other("disk on fire"))
}

fn registry() -> Registry<()> {
    Registry::builder().tools(tools![reserve, reserve_plain, check_in, read_manifest]).build().unwrap()
}

#[test]
fn a_typed_failure_is_advertised_beside_the_output_schema() {
    let registry = registry();
    let def = registry.definition("reserve").unwrap();
    let failure = def.failure_schema.as_deref().expect("a typed failure has a failure schema");
    assert_eq!(failure["$schema"], "https://json-schema.org/draft/2020-12/schema");
    let kinds: Vec<&Value> = failure["oneOf"].as_array().unwrap().iter().map(|variant| &variant["properties"]["kind"]["const"]).collect();
    assert_eq!(kinds, [&json!("full"), &json!("unknown_flight")], "{failure}");
    assert_eq!(def.output_schema.as_deref().unwrap()["properties"]["seat"]["type"], "string");
    assert!(registry.definition("check_in").unwrap().failure_schema.is_some());

    for plain in ["reserve_plain", "read_manifest"] {
        assert!(registry.definition(plain).unwrap().failure_schema.is_none(), "{plain} has no typed failure");
    }
}

#[tokio::test]
async fn a_typed_failures_value_reaches_the_result_and_the_model_reads_its_line() {
    let registry = registry();
    let app = Arc::new(());
    let full = registry.invoke(&app, "reserve", r#"{"flight": "LH 400"}"#).await;
    assert_eq!(full.kind, ResultKind::ToolError);
    assert_eq!(full.text, "code: FLIGHT_FULL, status: 409, userMessage: The flight is full; offer LH 402 instead.");
    assert_eq!(full.structured(), Some(&json!({"kind": "full", "next_free": "LH 402"})));
    assert_eq!((full.error_code.as_deref(), full.status), (Some("FLIGHT_FULL"), Some(409)));

    let unknown = registry.invoke(&app, "reserve", r#"{"flight": "XX 1"}"#).await;
    assert!(unknown.text.ends_with("Do not retry this call."), "{}", unknown.text);
    assert_eq!(unknown.structured(), Some(&json!({"kind": "unknown_flight", "flight": "XX 1"})));

    let ok = registry.invoke(&app, "reserve", r#"{"flight": "LH 402"}"#).await;
    assert_eq!(ok.structured(), Some(&json!({"seat": "12A"})));

    let busy = registry.invoke(&app, "check_in", "{}").await;
    assert_eq!(busy.kind, ResultKind::ToolError, "a typed failure wins over the std::error::Error path");
    assert_eq!(busy.structured(), Some(&json!({"retry_after_s": 30})));
}

#[tokio::test]
async fn a_plain_tool_error_or_another_error_has_no_structured_value() {
    let registry = registry();
    let app = Arc::new(());
    let plain = registry.invoke(&app, "reserve_plain", r#"{"flight": "LH 400"}"#).await;
    assert_eq!(plain.kind, ResultKind::ToolError);
    assert_eq!(plain.structured(), None);
    let internal = registry.invoke(&app, "read_manifest", "{}").await;
    assert_eq!(internal.kind, ResultKind::Internal);
    assert_eq!(internal.structured(), None);
    assert!(!internal.text.contains("fire"), "{}", internal.text);
}

/// A failure whose `Serialize` writes what its schema does not admit.
#[derive(Serialize, JsonSchema)]
struct Lying {
    #[schemars(with = "String")]
    available: u32,
}

impl From<Lying> for ToolError {
    fn from(lying: Lying) -> Self {
        ToolError::conflict("OUT_OF_STOCK", format!("Only {} left.", lying.available))
    }
}

/// Order an item; its failure does not match its schema.
#[tool]
async fn order_item() -> Result<String, Lying> {
    Err(Lying { available: 2 })
}

#[tokio::test]
async fn where_outputs_are_checked_a_failure_that_breaks_its_schema_is_the_generic_500() {
    let reports = Arc::new(Mutex::new(Vec::<ErrorReport>::new()));
    let sink = reports.clone();
    let checked = Registry::<()>::builder()
        .tools(tools![order_item])
        .validate_outputs(true)
        .on_tool_error(move |report| sink.lock().unwrap().push(report.clone()))
        .build()
        .unwrap();
    let result = checked.invoke(&Arc::new(()), "order_item", "{}").await;
    assert_eq!(result.kind, ResultKind::Internal);
    assert_eq!(result.structured(), None);
    assert!(!result.text.contains("Only 2"), "never passed on: {}", result.text);
    {
        let reports = reports.lock().unwrap();
        assert_eq!(reports.len(), 1);
        assert_eq!(reports[0].kind, ErrorKind::Output);
        assert!(reports[0].error.contains("`OUT_OF_STOCK` does not match the failure schema"), "{}", reports[0].error);
        assert!(reports[0].error.contains("/available"), "says which part is wrong: {}", reports[0].error);
    }

    let unchecked = Registry::<()>::builder().tools(tools![order_item]).validate_outputs(false).build().unwrap();
    let result = unchecked.invoke(&Arc::new(()), "order_item", "{}").await;
    assert_eq!(result.kind, ResultKind::ToolError);
    assert_eq!(result.structured(), Some(&json!({"available": 2})));
}

fn dynamic_reserve() -> DynamicTool<()> {
    DynamicTool::new(
        "reserve",
        "Reserve a seat on a flight.",
        json!({"type": "object", "properties": {"flight": {"type": "string"}}, "required": ["flight"]}),
        |args: Value, _ctx: Ctx<()>| async move {
            let failure = json!({"kind": "full", "next_free": "LH 402"});
            match args["flight"].as_str() {
                Some("LH 400") => Err(ToolError::conflict("FLIGHT_FULL", "The flight is full; offer LH 402 instead.").with_structured(failure)),
                _ => Err(ToolError::not_found("UNKNOWN_FLIGHT", "No such flight.")),
            }
        },
    )
}

#[tokio::test]
async fn a_dynamic_tool_agrees_with_the_macro_tool() {
    let failure_schema = registry().definition("reserve").unwrap().failure_schema.clone().unwrap();
    let dynamic = Registry::builder().tool(dynamic_reserve().failure_schema((*failure_schema).clone())).build().unwrap();
    assert_eq!(dynamic.definition("reserve").unwrap().failure_schema, Some(failure_schema));
    let app = Arc::new(());
    let ours = registry().invoke(&app, "reserve", r#"{"flight": "LH 400"}"#).await;
    let mut theirs = dynamic.invoke(&app, "reserve", r#"{"flight": "LH 400"}"#).await;
    theirs.call_id = ours.call_id.clone();
    assert_eq!(ours, theirs);

    let unknown = dynamic.invoke(&app, "reserve", r#"{"flight": "XX"}"#).await;
    assert_eq!((unknown.kind, unknown.structured()), (ResultKind::ToolError, None));
}

#[test]
fn a_failure_schema_and_a_meta_entry_of_its_name_fail_the_build() {
    let tool = dynamic_reserve().failure_schema(json!({"type": "object"})).meta("failureSchema", "mine");
    let error = Registry::builder().tool(tool).build().unwrap_err();
    assert!(error.to_string().contains("`reserve` has a failure schema and a `meta` entry named `failureSchema`"), "{error}");
    assert!(Registry::builder().tool(dynamic_reserve().meta("failureSchema", "mine")).build().is_ok());
}

// ---------------------------------------------------------------- failure_mode

/// Reserve a seat; a failure is the host's, not the model's.
#[tool(failure_mode = "error", max_retries = 2)]
async fn reserve_for_host(flight: String) -> Result<Reservation, ReserveFailure> {
    match flight.as_str() {
        "LH 402" => Ok(Reservation { seat: "12A".into() }),
        _ => Err(ReserveFailure::Full { next_free: "LH 402".into() }),
    }
}

#[tokio::test]
async fn failure_mode_error_ends_a_failed_call_as_an_error_the_host_handles() {
    let reports = Arc::new(Mutex::new(Vec::<ErrorReport>::new()));
    let seen = reports.clone();
    let registry = Registry::<()>::builder()
        .tools(tools![reserve_for_host, reserve])
        .on_tool_error(move |report| seen.lock().unwrap().push(report.clone()))
        .build()
        .unwrap();
    assert_eq!(registry.definition("reserve_for_host").unwrap().failure_mode, FailureMode::Error);
    assert_eq!(registry.definition("reserve").unwrap().failure_mode, FailureMode::Return);
    let app = Arc::new(());

    let failed = registry.invoke(&app, "reserve_for_host", r#"{"flight": "LH 400"}"#).await;
    assert_eq!(failed.kind, ResultKind::HostError);
    assert!(failed.is_error());
    assert_eq!(failed.text, ToolError::internal().model_line(), "the model reads the generic line");
    assert_eq!((failed.error_code.as_deref(), failed.status), (Some("FLIGHT_FULL"), Some(409)), "the host reads the failure's code");
    assert_eq!(failed.structured(), None, "the typed value is not carried where an MCP client would pass it on");
    let report = reports.lock().unwrap().pop().expect("the failure is reported");
    assert_eq!((report.kind, report.code.as_str()), (ErrorKind::Tool, "FLIGHT_FULL"));
    assert!(report.error.contains("The flight is full; offer LH 402 instead."), "{}", report.error);

    // The default: the model reads the same failure.
    let returned = registry.invoke(&app, "reserve", r#"{"flight": "LH 400"}"#).await;
    assert_eq!((returned.kind, returned.error_code.as_deref()), (ResultKind::ToolError, Some("FLIGHT_FULL")));
    // Only the tool's own failure: a success, and invalid arguments, read as always.
    assert_eq!(registry.invoke(&app, "reserve_for_host", r#"{"flight": "LH 402"}"#).await.kind, ResultKind::Success);
    assert_eq!(registry.invoke(&app, "reserve_for_host", r#"{"flight": 1}"#).await.kind, ResultKind::InvalidArguments);

    // A failure the host handles is still a failure of the tool: it counts toward max_retries.
    let mut run = registry.run(app);
    for id in ["c1", "c2"] {
        run.execute(vec![ToolCall::new(id, "reserve_for_host", r#"{"flight": "LH 400"}"#)]).await;
    }
    assert!(!run.offered_names().contains(&"reserve_for_host".to_owned()), "{:?}", run.offered_names());
}

#[tokio::test]
async fn a_dynamic_tools_failure_mode_is_its_builders_and_an_external_tool_refuses_it() {
    let charge = DynamicTool::new("charge", "Charge the card.", json!({"type": "object"}), |_: Value, _: Ctx<()>| async {
        Err::<Value, _>(ToolError::unavailable("PSP_DOWN", "The payment provider is down."))
    })
    .failure_mode(FailureMode::Error);
    let registry = Registry::builder().tool(charge).build().unwrap();
    let result = registry.invoke(&Arc::new(()), "charge", "{}").await;
    assert_eq!((result.kind, result.error_code.as_deref(), result.status), (ResultKind::HostError, Some("PSP_DOWN"), Some(503)));

    let external = DynamicTool::<()>::external("pick", "Pick.", json!({"type": "object"})).failure_mode(FailureMode::Error);
    let error = Registry::builder().tool(external).build().expect_err("failure_mode contradicts external");
    assert!(error.to_string().contains("dynamic tool `pick`: `failure_mode` contradicts `external`"), "{error}");
}

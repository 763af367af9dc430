use std::sync::Arc;

use tool_runtime::prelude::*;

struct Shop;

fn policy(input: &place_order, _ctx: &Ctx<Shop>) -> Verdict {
    if input.quantity > 100 { Verdict::deny("Too many.") } else { Verdict::Allow }
}

fn visible(view: &StepView<'_, Shop>) -> bool {
    view.step < 10
}

// `ends_run`'s predicate takes the output as the tool returns it.
#[allow(clippy::ptr_arg)]
async fn done(_input: &place_order, output: &String) -> bool {
    output.starts_with("placed")
}

async fn retry_later(input: &place_order, error: &ToolError) -> Result<String, ToolError> {
    if error.code() == "BUSY" { Ok(format!("queued {} x {}", input.quantity, input.product)) } else { Err(error.clone()) }
}

fn order_key(input: &place_order) -> String {
    format!("{}:{}", input.product, input.quantity)
}

fn placed_already(_input: &place_order, _ctx: &Ctx<Shop>) -> Reconciled<String> {
    Reconciled::Unknown
}

/// Ignored: `description` wins.
#[tool(
    name = "place_order",
    description = "Place an order for one product.",
    title = "Place order",
    tags("orders", "write"),
    read_only = false,
    destructive = false,
    idempotent = false,
    open_world = true,
    policy = policy,
    visible_when = visible,
    requires("login"),
    ends_run = done,
    timeout = "2m",
    interim = "Still placing the order...",
    interim_after = "3s",
    max_output_chars = 4000,
    max_retries = 3,
    on_error = retry_later,
    interruptible = false,
    idempotency_key = order_key,
    reconcile = placed_already,
    parallel_safe = false,
    strict = true,
    kind = "write",
    examples("place_order(product: \"pen\", quantity: 2)"),
    example_prompts("Order two pens"),
    related("login"),
    always_active,
    classification = "places orders",
    scope_prompt = "scope to one product",
    meta(owner = "shop", cost = -2, ratio = 1.5, beta = true),
    crate = ::tool_runtime,
)]
async fn place_order(_ctx: Ctx<Shop>, product: String, quantity: u32) -> Result<String, ToolError> {
    if quantity > 50 {
        return Err(ToolError::conflict("BUSY", "The warehouse is busy; try later."));
    }
    Ok(format!("placed {quantity} x {product}"))
}

/// Log in.
#[tool]
async fn login(_ctx: Ctx<Shop>) {}

fn log_report(report: &tool_runtime::CallReport) {
    let _ = report.elapsed;
}

/// Read the stock of a product now (`replay = false` contradicts `idempotency_key`, and `as_intent` `always_active`, so they are on another tool).
#[tool(replay = false, as_intent, failure_mode = "error", on_result = log_report)]
async fn stock(_ctx: Ctx<Shop>, product: String) -> Result<usize, ToolError> {
    Ok(product.len())
}

fn to_month(input: &pick_day) -> Result<u32, String> {
    if input.month > 12 { Err("A month is 1 to 12.".into()) } else { Ok(input.month) }
}

/// Let the user pick a day in their calendar app (`external` and `resolve` take no key about running the tool here).
#[tool(external, resolve = to_month)]
async fn pick_day(month: u32) -> String;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::<Shop>::builder().tools(tools![login, place_order, stock, pick_day]).build().unwrap();
    let definition = registry.definition("place_order").unwrap();
    assert_eq!(definition.description, "Place an order for one product.");
    assert_eq!(definition.title.as_deref(), Some("Place order"));
    assert_eq!(definition.tags, ["orders", "write"]);
    assert_eq!(definition.annotations.open_world, Some(true));
    assert_eq!(definition.requires, ["login"]);
    assert_eq!(definition.timeout, Some(std::time::Duration::from_secs(120)));
    assert_eq!(definition.max_output_chars, Some(4000));
    let interim = definition.interim.as_ref().unwrap();
    assert_eq!((interim.text.as_str(), interim.after), ("Still placing the order...", std::time::Duration::from_secs(3)));
    assert_eq!(definition.strict, Some(true));
    assert_eq!(definition.max_retries, Some(3));
    assert!(!definition.interruptible);
    assert!(definition.idempotency_key && definition.replay);
    let input = place_order { product: "pen".into(), quantity: 2 };
    assert_eq!(<place_order as tool_runtime::__private::Tool<Shop>>::effect_key(&input).as_deref(), Some("pen:2"));
    let stock = registry.definition("stock").unwrap();
    assert!(!stock.replay && stock.as_intent && stock.has_result_hook);
    assert_eq!(stock.failure_mode, tool_runtime::FailureMode::Error);
    assert!(registry.definition("pick_day").unwrap().resolve);
    assert!(!definition.parallel_safe);
    assert!(definition.has_visibility_predicate);
    assert_eq!(definition.kind.as_deref(), Some("write"));
    assert_eq!(definition.related, ["login"]);
    assert!(definition.always_active);
    assert_eq!(definition.meta["cost"], -2);
    let result = registry.invoke(&Arc::new(Shop), "place_order", r#"{"product": "pen", "quantity": 2}"#).await;
    assert!(result.ends_run, "{}", result.text);
    let queued = registry.invoke(&Arc::new(Shop), "place_order", r#"{"product": "pen", "quantity": 60}"#).await;
    assert_eq!(queued.text, "queued 60 x pen");
}

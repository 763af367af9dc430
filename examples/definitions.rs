//! What `#[tool]` makes of a few support-desk tools: the definition of each,
//! as the registry holds it and a provider or MCP client receives it.
//!
//! Run with `cargo run --example definitions`.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_runtime::ToolDefinition;
use tool_runtime::prelude::*;

/// The app state every call can read.
struct Shop {
    currency: &'static str,
    orders: &'static [&'static str],
}

/// An order, as the model reads it.
#[derive(Serialize, JsonSchema)]
struct Order {
    id: String,
    status: Status,
    /// Line items, when asked for.
    items: Vec<String>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Status {
    Open,
    Shipped,
    Refunded,
}

/// Look up one order by the number printed on the invoice.
///
/// Returns the order's status and, when asked, its line items.
///
/// # Errors
///
/// `ORDER_NOT_FOUND` when no order has that number.
#[tool(read_only, title = "Look up an order", tags("orders"), timeout = "5s")]
async fn lookup_order(
    ctx: Ctx<Shop>,
    /// The order number, for example `A-4711`.
    #[schemars(regex(pattern = r"^A-\d+$"))]
    order_id: String,
    /// Include the line items.
    #[tool(default)]
    with_items: bool,
) -> Result<Order, ToolError> {
    if !ctx.app().orders.contains(&order_id.as_str()) {
        return Err(ToolError::not_found("ORDER_NOT_FOUND", "No order has that number; ask for the one on the invoice."));
    }
    let items = if with_items { vec!["1 x kettle".to_owned()] } else { Vec::new() };
    Ok(Order { id: order_id, status: Status::Shipped, items })
}

/// Search orders by customer name or e-mail address.
///
/// # Arguments
///
/// * `query` - A name or an e-mail address.
/// * `status` - Only orders in this status.
/// * `limit` - At most this many orders.
#[tool(read_only, tags("orders"))]
async fn search_orders(query: String, status: Option<Status>, #[tool(default = 10)] limit: u8) -> Vec<String> {
    let _ = status;
    (1..=limit.min(2)).map(|n| format!("A-{n} ({query})")).collect()
}

/// Refund part or all of an order to the customer's original payment method.
///
/// A human approves every refund before it is paid.
#[tool(
    policy = needs_approval,
    destructive,
    tags("billing"),
    requires("lookup_order"),
    timeout = "30s",
    max_output_chars = 500
)]
async fn refund_order(
    ctx: Ctx<Shop>,
    /// The order number, as `lookup_order` returned it.
    order_id: String,
    /// The amount in cents, at most 500.00.
    #[schemars(range(min = 1, max = 50_000))]
    amount_cents: u64,
    /// Why the customer gets money back, in one sentence.
    reason: String,
) -> Result<String, ToolError> {
    let currency = ctx.app().currency;
    Ok(format!("Refunded {amount_cents} {currency} cents on {order_id}: {reason}"))
}

/// A ticket for the support team.
#[derive(Deserialize, JsonSchema)]
struct NewTicket {
    /// One line that says what is wrong.
    subject: String,
    /// What the customer said, in their words.
    body: String,
    /// 1 (low) to 3 (urgent).
    #[schemars(range(min = 1, max = 3))]
    priority: u8,
}

/// Open a ticket for the support team when the problem needs a person.
#[tool(tags("support"), idempotent = false)]
async fn open_ticket(Input(ticket): Input<NewTicket>) -> String {
    format!("T-1: {} (priority {}, {} chars)", ticket.subject, ticket.priority, ticket.body.len())
}

/// Hand the conversation to a human agent and stop.
#[tool(ends_run, strict = true)]
async fn hand_off(
    /// What the human needs to know, in two or three sentences.
    summary: String,
) -> String {
    format!("Handed off: {summary}")
}

/// Lines after the first lined up under the first; blank lines stay empty.
fn indent(text: &str) -> String {
    const MARGIN: &str = "                  ";
    let lines: Vec<String> = text.lines().map(|line| if line.is_empty() { String::new() } else { format!("{MARGIN}{line}") }).collect();
    lines.join("\n").trim_start().to_owned()
}

fn print_definition(definition: &ToolDefinition) {
    let or_default = |value: Option<String>| value.unwrap_or_else(|| "(registry default)".into());
    let list = |items: &[String]| if items.is_empty() { "-".to_owned() } else { items.join(", ") };
    println!("== {} ==", definition.name);
    println!("title:            {}", definition.title.as_deref().unwrap_or("-"));
    println!("description:      {}", indent(&definition.description));
    println!("tags:             {}", list(&definition.tags));
    println!("annotations:      {}", serde_json::to_string(&definition.annotations).unwrap());
    println!("policy:           {:?}", definition.policy);
    println!("timeout:          {}", or_default(definition.timeout.map(|t| format!("{t:?}"))));
    println!("max_output_chars: {}", or_default(definition.max_output_chars.map(|n| n.to_string())));
    println!("parallel_safe:    {}", definition.parallel_safe);
    println!("strict:           {}", definition.strict.map_or("(provider default)".into(), |s| s.to_string()));
    println!("ends_run:         {:?}", definition.ends_run);
    println!("requires:         {}", list(&definition.requires));
    println!("input schema:\n{}", serde_json::to_string_pretty(&*definition.input_schema).unwrap());
    match &definition.output_schema {
        Some(schema) => println!("output schema:\n{}", serde_json::to_string_pretty(&**schema).unwrap()),
        None => println!("output schema:    none"),
    }
    println!();
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::<Shop>::builder()
        .tools(tools![lookup_order, search_orders, refund_order, open_ticket, hand_off])
        .build()
        .expect("the tools are consistent");
    for definition in registry.definitions() {
        print_definition(definition);
    }

    // The same registry runs the model's calls against them.
    let shop = Arc::new(Shop { currency: "EUR", orders: &["A-4711"] });
    let result = registry.invoke(&shop, "lookup_order", r#"{"order_id": "A-4711"}"#).await;
    println!("lookup_order {{\"order_id\": \"A-4711\"}} -> {}", result.text);
}

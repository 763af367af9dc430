//! An in-memory shop and the support-desk tools over it, shared by the
//! examples (`#[path]`-included, so each example stays one binary).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_runtime::Block;
use tool_runtime::prelude::*;

/// The app state every tool sees through `Ctx<Shop>`.
pub struct Shop {
    orders: Mutex<BTreeMap<String, Order>>,
    vouchers: Mutex<Vec<Voucher>>,
    /// How long `hand_over` takes to find a colleague (zero in the demo
    /// shop; the support desk sets it to show the tool's interim text).
    pub hand_over_wait: Duration,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Order {
    pub id: String,
    pub customer: String,
    pub status: Status,
    pub total_cents: u32,
    pub refunded_cents: u32,
    pub items: Vec<Item>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Processing,
    Shipped,
    Delivered,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Item {
    pub sku: String,
    pub name: String,
    pub price_cents: u32,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Voucher {
    pub code: String,
    pub customer: String,
    pub amount_cents: u32,
}

impl Shop {
    /// A shop with three orders in different states.
    pub fn demo() -> Shop {
        let order = |id: &str, customer: &str, status, items: &[(&str, &str, u32)]| Order {
            id: id.into(),
            customer: customer.into(),
            status,
            total_cents: items.iter().map(|item| item.2).sum(),
            refunded_cents: 0,
            items: items.iter().map(|(sku, name, price)| Item { sku: (*sku).into(), name: (*name).into(), price_cents: *price }).collect(),
        };
        let orders = [
            order("A-1001", "c-17", Status::Processing, &[("K-1", "Kettle", 4990)]),
            order("A-1002", "c-17", Status::Delivered, &[("M-7", "Espresso machine", 18990), ("C-2", "Cups (4)", 1990)]),
            order("A-1003", "c-23", Status::Shipped, &[("T-3", "Teapot", 2990)]),
        ];
        Shop {
            orders: Mutex::new(orders.into_iter().map(|order| (order.id.clone(), order)).collect()),
            vouchers: Mutex::new(Vec::new()),
            hand_over_wait: Duration::ZERO,
        }
    }

    fn order(&self, id: &str) -> Option<Order> {
        self.orders.lock().unwrap().get(id).cloned()
    }
}

/// What the customer wants, read from their message.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Intent {
    pub category: Category,
    pub order_id: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Refund,
    OrderStatus,
    Other,
}

/// Classify the customer's message before anything else: its category and
/// the order number it mentions, if any.
#[tool(read_only, visible_when = first_step, tags("triage"))]
pub async fn classify_request(
    /// The customer's message, verbatim.
    text: String,
) -> Intent {
    let lower = text.to_lowercase();
    let category = if ["refund", "broken", "money back"].iter().any(|word| lower.contains(word)) {
        Category::Refund
    } else if lower.contains("where") || lower.contains("status") {
        Category::OrderStatus
    } else {
        Category::Other
    };
    let order_id = text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).find(|word| word.starts_with("A-")).map(str::to_owned);
    Intent { category, order_id }
}

/// The classifier belongs to the first step: it turns the request into an
/// intent the model plans from.
pub fn first_step<App>(view: &StepView<'_, App>) -> bool {
    view.step == 0
}

/// The orders a conversation is about, as the intent classifier reads
/// them from the customer's message.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OrderScope {
    /// The order numbers the customer names, such as `A-1002`.
    pub orders: Vec<String>,
}

/// `lookup_order` for one turn: only the orders the customer named.
pub fn named_orders(scope: &OrderScope, tool: &mut ScopedTool) {
    if scope.orders.is_empty() {
        return;
    }
    tool.description = format!("Look up the customer's order {}, by its number.", scope.orders.join(" or "));
    tool.input_schema["properties"]["order_id"]["enum"] = tool_runtime::serde_json::json!(scope.orders);
}

/// Look up one order by the number printed on the invoice.
///
/// Returns its status, total and what was refunded; with `with_items`, its
/// line items too.
#[tool(
    read_only,
    tags("orders"),
    timeout = "5s",
    scope = named_orders,
    scope_prompt = "the order numbers the customer names",
    example_prompts("Where is my parcel?", "Has order A-1001 shipped?")
)]
pub async fn lookup_order(
    ctx: Ctx<Shop>,
    /// The order number, for example `A-1002`.
    #[schemars(regex(pattern = r"^A-\d{4}$"))]
    order_id: String,
    /// Include the line items.
    #[tool(default)]
    with_items: bool,
) -> Result<Order, ToolError> {
    let mut order = ctx.app().order(&order_id).ok_or_else(|| {
        ToolError::not_found("ORDER_NOT_FOUND", format!("There is no order {order_id}; ask the customer for the number on the invoice."))
    })?;
    if !with_items {
        order.items.clear();
    }
    Ok(order)
}

/// The photo the customer attached to a complaint about an order, with a
/// link to the complaint.
#[tool(read_only, tags("orders"))]
pub async fn damage_photo(
    /// The order number, for example `A-1002`.
    #[schemars(regex(pattern = r"^A-\d{4}$"))]
    order_id: String,
) -> Result<Vec<Block>, ToolError> {
    if order_id != "A-1002" {
        return Err(ToolError::not_found("NO_PHOTO", format!("No photo was sent about {order_id}; ask the customer for one.")));
    }
    Ok(vec![
        Block::text(format!("The customer's photo of {order_id}, sent with the complaint.")),
        Block::image(PHOTO, "image/png"),
        Block::resource_link(format!("shop://complaints/{order_id}"), "complaint").mime_type("text/plain").into(),
    ])
}

/// A 1x1 PNG, standing for the customer's photo.
const PHOTO: [u8; 68] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
    0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0x64, 0x60, 0x00, 0x00,
    0x00, 0x06, 0x00, 0x02, 0x30, 0x81, 0xd0, 0x2f, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// What a refund did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RefundReceipt {
    pub order_id: String,
    pub refunded_cents: u32,
    pub remaining_cents: u32,
}

/// Refund part or all of a delivered order to the customer's payment method.
///
/// # Arguments
///
/// * `order_id` - The order to refund, as returned by `lookup_order`.
/// * `amount_cents` - How much to refund, in cents.
/// * `reason` - Why, in a few words, for the customer's record.
#[tool(destructive, tags("billing"), requires("lookup_order"), policy = refund_policy, timeout = "10s")]
pub async fn refund(
    ctx: Ctx<Shop>,
    order_id: String,
    #[schemars(range(min = 1))] amount_cents: u32,
    reason: String,
) -> Result<RefundReceipt, ToolError> {
    let _ = reason;
    let mut orders = ctx.app().orders.lock().unwrap();
    let order = orders.get_mut(&order_id).ok_or_else(|| ToolError::not_found("ORDER_NOT_FOUND", format!("There is no order {order_id}.")))?;
    let remaining = order.total_cents - order.refunded_cents;
    if amount_cents > remaining {
        return Err(ToolError::conflict(
            "REFUND_TOO_LARGE",
            format!("Only {} is left to refund on {order_id}; refund at most that.", money(remaining)),
        )
        .no_retry());
    }
    order.refunded_cents += amount_cents;
    Ok(RefundReceipt { order_id, refunded_cents: amount_cents, remaining_cents: remaining - amount_cents })
}

/// Refunds of undelivered orders are refused; refunds over 50.00 wait for a
/// human; the rest run.
pub fn refund_policy(input: &refund, ctx: &Ctx<Shop>) -> Verdict {
    match ctx.app().order(&input.order_id) {
        Some(order) if order.status != Status::Delivered => Verdict::deny(format!(
            "Order {} is {} and cannot be refunded before it is delivered; offer to check its status instead.",
            order.id,
            format!("{:?}", order.status).to_lowercase()
        )),
        _ if input.amount_cents > 50_00 => {
            Verdict::needs_approval().with_rejection_text("A supervisor declined this refund; apologise and offer a voucher instead.")
        }
        _ => Verdict::Allow,
    }
}

/// Give the customer a voucher for a future order. Every voucher is
/// approved by a human first.
#[tool(policy = needs_approval, tags("billing"), idempotent = false)]
pub async fn issue_voucher(
    ctx: Ctx<Shop>,
    /// The customer's id, for example `c-17`.
    customer: String,
    /// The voucher's value, in cents (at most 100.00).
    #[schemars(range(min = 100, max = 10000))]
    amount_cents: u32,
) -> Voucher {
    let mut vouchers = ctx.app().vouchers.lock().unwrap();
    let voucher = Voucher { code: format!("V-{:04}", vouchers.len() + 1), customer, amount_cents };
    vouchers.push(voucher.clone());
    voucher
}

/// Hand the conversation to a human agent, with a summary so the customer
/// does not have to repeat themselves. Ends the run.
///
/// Finding a free colleague can take a moment: the customer is told so
/// while it runs.
#[tool(ends_run, always_active, title = "Hand over to a human", interim = "Finding a colleague to take over the case...", interim_after = "300ms")]
pub async fn hand_over(
    ctx: Ctx<Shop>,
    /// Two or three sentences: what the customer wants and what was done.
    #[schemars(length(min = 10, max = 600))]
    summary: String,
) -> String {
    let wait = ctx.app().hand_over_wait;
    if !wait.is_zero() {
        tokio::time::sleep(wait).await;
    }
    format!("A human agent has the case (summary: {} characters) and will reply within the hour.", summary.len())
}

/// Every support-desk tool, in the order the model sees them.
pub fn registry() -> Registry<Shop> {
    Registry::builder()
        .tools(tools![classify_request, lookup_order, damage_photo, refund, issue_voucher, hand_over])
        .build()
        .expect("the support-desk tools are valid")
}

/// Cents as `12.34`.
pub fn money(cents: u32) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

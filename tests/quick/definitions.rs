//! Golden tests of what `#[tool]` tells the model: the exact `ToolDefinition`
//! of each kind of tool, schemas compared byte for byte (key order included,
//! since the properties follow the parameters' order).

use std::collections::HashMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::prelude::*;
use tool_runtime::{Annotations, EndsRun, ToolDefinition};

const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

struct Shop;

fn registry(tools: Vec<BoxedTool<Shop>>) -> Registry<Shop> {
    Registry::<Shop>::builder().tools(tools).build().expect("the registry builds")
}

fn definition(tools: Vec<BoxedTool<Shop>>, name: &str) -> ToolDefinition {
    registry(tools).definition(name).expect("the tool is registered").clone()
}

fn input_schema(tools: Vec<BoxedTool<Shop>>, name: &str) -> Value {
    (*definition(tools, name).input_schema).clone()
}

/// Equal as values (for a readable diff) and as text (for key order).
#[track_caller]
fn assert_json(actual: &Value, expected: &Value) {
    assert_eq!(actual, expected);
    assert_eq!(serde_json::to_string(actual).unwrap(), serde_json::to_string(expected).unwrap(), "key order differs");
}

// ---------------------------------------------------------------- scalars

/// Search the catalogue.
#[tool]
async fn search_catalogue(
    /// Words to look for.
    query: String,
    limit: i64,
    level: u8,
    boost: f64,
    exact: bool,
) -> String {
    format!("{query} {limit} {level} {boost} {exact}")
}

#[test]
fn scalars_are_typed_required_and_in_declaration_order() {
    let schema = input_schema(tools![search_catalogue], "search_catalogue");
    assert_json(
        &schema,
        &json!({
            "$schema": DIALECT,
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to look for."},
                "limit": {"type": "integer", "format": "int64", "minimum": i64::MIN, "maximum": i64::MAX},
                "level": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255},
                "boost": {"type": "number", "format": "double"},
                "exact": {"type": "boolean"}
            },
            "required": ["query", "limit", "level", "boost", "exact"],
            "additionalProperties": false
        }),
    );
}

// ---------------------------------------------------------------- optional parameters

/// List orders.
#[tool]
async fn list_orders(customer: String, status: Option<String>, page: Option<u32>) -> String {
    format!("{customer} {status:?} {page:?}")
}

#[test]
fn option_is_optional_and_nullable() {
    let schema = input_schema(tools![list_orders], "list_orders");
    assert_json(
        &schema,
        &json!({
            "$schema": DIALECT,
            "type": "object",
            "properties": {
                "customer": {"type": "string"},
                "status": {"type": ["string", "null"]},
                "page": {"type": ["integer", "null"], "format": "uint32", "minimum": 0, "maximum": u32::MAX}
            },
            "required": ["customer"],
            "additionalProperties": false
        }),
    );
}

/// Look up an order.
#[tool]
async fn defaults_tool(
    order_id: String,
    /// Include the line items.
    #[tool(default)]
    with_items: bool,
    #[tool(default = 20)] limit: u32,
    #[tool(default = "en".to_owned())] language: String,
) -> String {
    format!("{order_id} {with_items} {limit} {language}")
}

#[test]
fn defaults_make_parameters_optional_and_are_advertised() {
    let schema = input_schema(tools![defaults_tool], "defaults_tool");
    assert_json(
        &schema,
        &json!({
            "$schema": DIALECT,
            "type": "object",
            "properties": {
                "order_id": {"type": "string"},
                "with_items": {"type": "boolean", "description": "Include the line items.", "default": false},
                "limit": {"type": "integer", "format": "uint32", "minimum": 0, "maximum": u32::MAX, "default": 20},
                "language": {"type": "string", "default": "en"}
            },
            "required": ["order_id"],
            "additionalProperties": false
        }),
    );
}

/// Set preferences; everything is optional.
#[tool]
async fn all_optional(nickname: Option<String>, #[tool(default)] newsletter: bool) -> String {
    format!("{nickname:?} {newsletter}")
}

/// Tell the time.
#[tool]
async fn no_params() -> String {
    "noon".into()
}

#[test]
fn required_is_present_even_when_empty() {
    let registry = registry(tools![all_optional, no_params]);
    assert_json(
        &registry.definition("all_optional").unwrap().input_schema,
        &json!({
            "$schema": DIALECT,
            "type": "object",
            "properties": {
                "nickname": {"type": ["string", "null"]},
                "newsletter": {"type": "boolean", "default": false}
            },
            "required": [],
            "additionalProperties": false
        }),
    );
    assert_json(
        &registry.definition("no_params").unwrap().input_schema,
        &json!({
            "$schema": DIALECT,
            "type": "object",
            "properties": {},
            "required": [],
            "additionalProperties": false
        }),
    );
}

// ---------------------------------------------------------------- collections

/// Restock products.
#[tool]
async fn restock(skus: Vec<String>, quantities: HashMap<String, u32>) -> String {
    format!("{skus:?} {}", quantities.len())
}

#[test]
fn vec_and_map() {
    let schema = input_schema(tools![restock], "restock");
    assert_json(
        &schema,
        &json!({
            "$schema": DIALECT,
            "type": "object",
            "properties": {
                "skus": {"type": "array", "items": {"type": "string"}},
                "quantities": {
                    "type": "object",
                    "additionalProperties": {"type": "integer", "format": "uint32", "minimum": 0, "maximum": u32::MAX}
                }
            },
            "required": ["skus", "quantities"],
            "additionalProperties": false
        }),
    );
}

// ---------------------------------------------------------------- enums and nested structs

/// How soon the ticket needs an answer.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Priority {
    Low,
    High,
}

/// What a ticket is about.
#[allow(dead_code)] // only its schema is read
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Subject {
    /// An order.
    Order { order_id: String },
    /// A customer account.
    Account { email: String },
}

/// Open a ticket.
#[tool]
async fn open_ticket(
    /// How urgent it is.
    priority: Priority,
    subject: Subject,
) -> String {
    let _ = (priority, subject);
    String::new()
}

#[test]
fn enums_live_in_defs() {
    let schema = input_schema(tools![open_ticket], "open_ticket");
    assert_json(
        &schema,
        &json!({
            "$schema": DIALECT,
            "type": "object",
            "properties": {
                "priority": {"$ref": "#/$defs/Priority", "description": "How urgent it is."},
                "subject": {"$ref": "#/$defs/Subject"}
            },
            "required": ["priority", "subject"],
            "additionalProperties": false,
            "$defs": {
                "Priority": {
                    "type": "string",
                    "enum": ["low", "high"],
                    "description": "How soon the ticket needs an answer."
                },
                "Subject": {
                    "oneOf": [
                        {
                            "type": "object",
                            "properties": {
                                "kind": {"type": "string", "const": "order"},
                                "order_id": {"type": "string"}
                            },
                            "required": ["kind", "order_id"],
                            "description": "An order."
                        },
                        {
                            "type": "object",
                            "properties": {
                                "kind": {"type": "string", "const": "account"},
                                "email": {"type": "string"}
                            },
                            "required": ["kind", "email"],
                            "description": "A customer account."
                        }
                    ],
                    "description": "What a ticket is about."
                }
            }
        }),
    );
}

#[allow(dead_code)] // only its schema is read
#[derive(Deserialize, JsonSchema)]
struct Address {
    street: String,
    city: String,
}

/// A customer.
#[allow(dead_code)] // only its schema is read
#[derive(Deserialize, JsonSchema)]
struct Customer {
    name: String,
    /// Where parcels go.
    address: Address,
}

/// Create a customer.
#[tool]
async fn create_customer(customer: Customer, billing: Option<Address>) -> String {
    let _ = (customer, billing);
    String::new()
}

#[test]
fn nested_structs_are_referenced_from_defs() {
    let schema = input_schema(tools![create_customer], "create_customer");
    assert_json(
        &schema,
        &json!({
            "$schema": DIALECT,
            "type": "object",
            "properties": {
                "customer": {"$ref": "#/$defs/Customer"},
                "billing": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]}
            },
            "required": ["customer"],
            "additionalProperties": false,
            "$defs": {
                "Customer": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "address": {"$ref": "#/$defs/Address", "description": "Where parcels go."}
                    },
                    "required": ["name", "address"],
                    "description": "A customer."
                },
                "Address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                    "required": ["street", "city"]
                }
            }
        }),
    );
}

// ---------------------------------------------------------------- serde and schemars attributes

#[allow(dead_code)] // only its schema is read
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Filter {
    min_total: u32,
    created_after: Option<String>,
}

/// Find orders.
#[tool]
async fn find_orders(
    /// The order number.
    #[serde(rename = "orderId")]
    order_id: String,
    filter: Filter,
) -> String {
    let _ = filter;
    order_id
}

#[test]
fn serde_renames_are_honoured() {
    let schema = input_schema(tools![find_orders], "find_orders");
    assert_json(
        &schema,
        &json!({
            "$schema": DIALECT,
            "type": "object",
            "properties": {
                "orderId": {"type": "string", "description": "The order number."},
                "filter": {"$ref": "#/$defs/Filter"}
            },
            "required": ["orderId", "filter"],
            "additionalProperties": false,
            "$defs": {
                "Filter": {
                    "type": "object",
                    "properties": {
                        "minTotal": {"type": "integer", "format": "uint32", "minimum": 0, "maximum": u32::MAX},
                        "createdAfter": {"type": ["string", "null"]}
                    },
                    "required": ["minTotal"]
                }
            }
        }),
    );
}

/// Order a product.
#[tool]
async fn order_product(
    /// How many.
    #[schemars(range(min = 1, max = 10))]
    quantity: u8,
    #[schemars(length(max = 5))] code: String,
    #[schemars(regex(pattern = r"^A-\d+$"))] order_id: String,
) -> String {
    format!("{quantity} {code} {order_id}")
}

#[test]
fn schemars_constraints_on_parameters() {
    let schema = input_schema(tools![order_product], "order_product");
    assert_json(
        &schema,
        &json!({
            "$schema": DIALECT,
            "type": "object",
            "properties": {
                "quantity": {"type": "integer", "format": "uint8", "minimum": 1, "maximum": 10, "description": "How many."},
                "code": {"type": "string", "maxLength": 5},
                "order_id": {"type": "string", "pattern": "^A-\\d+$"}
            },
            "required": ["quantity", "code", "order_id"],
            "additionalProperties": false
        }),
    );
}

// ---------------------------------------------------------------- context and whole input

/// Cancel an order.
#[tool]
async fn cancel_order(shop: Ctx<Shop>, order_id: String, reason: Option<String>) -> String {
    let _ = (shop.app(), reason);
    order_id
}

#[test]
fn the_context_is_not_part_of_the_schema() {
    let schema = input_schema(tools![cancel_order], "cancel_order");
    assert_json(
        &schema,
        &json!({
            "$schema": DIALECT,
            "type": "object",
            "properties": {
                "order_id": {"type": "string"},
                "reason": {"type": ["string", "null"]}
            },
            "required": ["order_id"],
            "additionalProperties": false
        }),
    );
}

/// A new ticket; this doc is the struct's, not the tool's.
#[derive(Deserialize, JsonSchema)]
struct NewTicket {
    /// One line.
    title: String,
    /// 1 (low) to 3 (urgent).
    #[schemars(range(min = 1, max = 3))]
    priority: u8,
    #[serde(default)]
    labels: Vec<String>,
    assignee: Option<String>,
}

/// File a ticket.
#[tool]
async fn file_ticket(ctx: Ctx<Shop>, Input(ticket): Input<NewTicket>) -> String {
    let _ = (ctx, ticket.priority, ticket.labels, ticket.assignee);
    ticket.title
}

#[test]
fn a_whole_input_struct_becomes_the_root() {
    let schema = input_schema(tools![file_ticket], "file_ticket");
    assert_json(
        &schema,
        &json!({
            "$schema": DIALECT,
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "One line."},
                "priority": {
                    "type": "integer",
                    "format": "uint8",
                    "minimum": 1,
                    "maximum": 3,
                    "description": "1 (low) to 3 (urgent)."
                },
                "labels": {"type": "array", "items": {"type": "string"}, "default": []},
                "assignee": {"type": ["string", "null"]}
            },
            "required": ["title", "priority"],
            "additionalProperties": false
        }),
    );
}

/// Paging; every field has a default.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Paging {
    #[serde(default)]
    page: u32,
    per_page: Option<u8>,
}

/// List tickets.
#[tool]
async fn list_tickets(Input(paging): Input<Paging>) -> String {
    format!("{} {:?}", paging.page, paging.per_page)
}

#[test]
fn a_whole_input_struct_without_required_fields_still_lists_required() {
    let schema = input_schema(tools![list_tickets], "list_tickets");
    assert_json(
        &schema,
        &json!({
            "$schema": DIALECT,
            "type": "object",
            "properties": {
                "page": {"type": "integer", "format": "uint32", "minimum": 0, "maximum": u32::MAX, "default": 0},
                "per_page": {"type": ["integer", "null"], "format": "uint8", "minimum": 0, "maximum": 255}
            },
            "required": [],
            "additionalProperties": false
        }),
    );
}

// ---------------------------------------------------------------- descriptions

/// Refund an order.
///
/// # Arguments
///
/// * `order_id` - The order
///   to refund.
/// * `amount` - Ignored: the parameter's own doc wins.
/// * `reason` - Why, in a word.
#[tool]
async fn refund_args(
    order_id: String,
    /// In cents,
    /// never more than the order total.
    amount: u64,
    reason: String,
) -> String {
    format!("{order_id} {amount} {reason}")
}

/// Same as `refund_args`, on the derive path.
///
/// # Arguments
///
/// * `order_id` - The order
///   to refund.
/// * `amount` - Ignored: the parameter's own doc wins.
#[tool]
async fn refund_args_derived(
    #[serde(rename = "order_id")] order_id: String,
    /// In cents,
    /// never more than the order total.
    amount: u64,
) -> String {
    format!("{order_id} {amount}")
}

#[test]
fn parameter_descriptions_from_docs_and_the_arguments_section() {
    let registry = registry(tools![refund_args, refund_args_derived]);
    let fast = &registry.definition("refund_args").unwrap().input_schema;
    assert_json(
        fast,
        &json!({
            "$schema": DIALECT,
            "type": "object",
            "properties": {
                "order_id": {"type": "string", "description": "The order to refund."},
                "amount": {
                    "type": "integer",
                    "format": "uint64",
                    "minimum": 0,
                    "maximum": u64::MAX,
                    "description": "In cents, never more than the order total."
                },
                "reason": {"type": "string", "description": "Why, in a word."}
            },
            "required": ["order_id", "amount", "reason"],
            "additionalProperties": false
        }),
    );
    let derived = &registry.definition("refund_args_derived").unwrap().input_schema;
    assert_eq!(derived["properties"]["order_id"]["description"], "The order to refund.");
    assert_eq!(derived["properties"]["amount"]["description"], "In cents, never more than the order total.");
    assert_eq!(registry.definition("refund_args").unwrap().description, "Refund an order.");
}

/// Look up one order
/// by the number printed on the invoice.
///
/// Returns the order's status and,
/// when asked, its line items.
///
/// # Errors
///
/// Fails when the order does not exist.
#[tool]
async fn described(order_id: String) -> String {
    order_id
}

/// This doc comment is not what the model reads.
#[tool(description = "Look up an order by its number.")]
async fn explicit_description(order_id: String) -> String {
    order_id
}

/** Archive a ticket.

Archived tickets are read-only. */
#[tool]
async fn block_doc() -> String {
    String::new()
}

#[test]
fn tool_descriptions() {
    let registry = registry(tools![described, explicit_description, block_doc]);
    assert_eq!(
        registry.definition("described").unwrap().description,
        "Look up one order by the number printed on the invoice.\n\n\
         Returns the order's status and, when asked, its line items."
    );
    assert_eq!(registry.definition("explicit_description").unwrap().description, "Look up an order by its number.");
    assert_eq!(registry.definition("block_doc").unwrap().description, "Archive a ticket.\n\nArchived tickets are read-only.");
}

// ---------------------------------------------------------------- attributes carried into the definition

fn large_refunds(input: &approve_refund, _ctx: &Ctx<Shop>) -> Verdict {
    // Over 100.00.
    if input.cents > 10_000 { Verdict::needs_approval() } else { Verdict::Allow }
}

fn after_login(view: &StepView<'_, Shop>) -> bool {
    view.has_executed("login")
}

#[allow(clippy::ptr_arg, reason = "an `ends_run` predicate takes the tool's output type, here `String`")]
fn refunded(_input: &approve_refund, output: &String) -> bool {
    output.starts_with("refunded")
}

/// Log in.
#[tool]
async fn login(_ctx: Ctx<Shop>) -> String {
    "ok".into()
}

/// Refund an order.
#[tool(
    title = "Approve a refund",
    tags("billing", "write"),
    destructive,
    idempotent = false,
    open_world = true,
    policy = large_refunds,
    visible_when = after_login,
    requires("login"),
    ends_run = refunded,
    timeout = "2m",
    max_output_chars = 4000,
    strict = true
)]
async fn approve_refund(_ctx: Ctx<Shop>, cents: u64) -> String {
    format!("refunded {cents}")
}

/// Read the order history.
#[tool(read_only, idempotent, timeout = "500ms", strict = false)]
async fn order_history(_ctx: Ctx<Shop>) -> String {
    String::new()
}

/// Hand the conversation to a human.
#[tool(ends_run, policy = needs_approval, parallel_safe)]
async fn hand_off() -> String {
    String::new()
}

/// Delete everything.
#[tool(policy = deny, destructive = true, read_only = false, parallel_safe = false, interruptible = false)]
async fn wipe() -> String {
    String::new()
}

/// What `#[tool]` makes of a tool with no key: a definition of its own.
fn expected(name: &str, description: &str, input_schema: Value) -> ToolDefinition {
    let mut want = ToolDefinition::new(name, description, input_schema);
    want.origin = tool_runtime::Origin::Typed;
    want
}

fn empty_input() -> Value {
    json!({"$schema": DIALECT, "type": "object", "properties": {}, "required": [], "additionalProperties": false})
}

#[test]
fn a_tool_without_attributes_has_the_defaults() {
    let mut want = expected("no_params", "Tell the time.", empty_input());
    want.output_schema = Some(json!({"$schema": DIALECT, "type": "string"}).into());
    assert_eq!(definition(tools![no_params], "no_params"), want);
}

#[test]
fn every_attribute_is_carried_into_the_definition() {
    let registry = registry(tools![login, approve_refund, order_history, hand_off, wipe]);

    let mut want = expected(
        "approve_refund",
        "Refund an order.",
        json!({
            "$schema": DIALECT,
            "type": "object",
            "properties": {"cents": {"type": "integer", "format": "uint64", "minimum": 0, "maximum": u64::MAX}},
            "required": ["cents"],
            "additionalProperties": false
        }),
    );
    want.title = Some("Approve a refund".into());
    want.tags = vec!["billing".into(), "write".into()];
    want.annotations = Annotations { read_only: None, destructive: Some(true), idempotent: Some(false), open_world: Some(true) };
    want.output_schema = Some(json!({"$schema": DIALECT, "type": "string"}).into());
    want.policy = PolicyKind::Predicate;
    want.has_visibility_predicate = true;
    want.requires = vec!["login".into()];
    want.ends_run = EndsRun::Predicate;
    want.timeout = Some(Duration::from_secs(120));
    want.max_output_chars = Some(4000);
    want.parallel_safe = false;
    want.strict = Some(true);
    assert_eq!(registry.definition("approve_refund").unwrap(), &want);

    let mut want = expected("order_history", "Read the order history.", empty_input());
    want.annotations = Annotations { read_only: Some(true), idempotent: Some(true), ..Annotations::default() };
    want.output_schema = Some(json!({"$schema": DIALECT, "type": "string"}).into());
    want.timeout = Some(Duration::from_millis(500));
    want.parallel_safe = true; // implied by read_only
    want.strict = Some(false);
    assert_eq!(registry.definition("order_history").unwrap(), &want);

    let mut want = expected("hand_off", "Hand the conversation to a human.", empty_input());
    want.output_schema = Some(json!({"$schema": DIALECT, "type": "string"}).into());
    want.policy = PolicyKind::NeedsApproval;
    want.ends_run = EndsRun::Always;
    want.parallel_safe = true;
    assert_eq!(registry.definition("hand_off").unwrap(), &want);

    let mut want = expected("wipe", "Delete everything.", empty_input());
    want.annotations = Annotations { read_only: Some(false), destructive: Some(true), ..Annotations::default() };
    want.output_schema = Some(json!({"$schema": DIALECT, "type": "string"}).into());
    want.policy = PolicyKind::Deny;
    want.interruptible = false;
    assert_eq!(registry.definition("wipe").unwrap(), &want);
}

// ---------------------------------------------------------------- durable run keys

fn refund_key(input: &refund_order) -> String {
    format!("refund:{}", input.order_id)
}

/// Refund an order once, whichever call asks for it.
#[tool(idempotency_key = refund_key, destructive)]
async fn refund_order(_ctx: Ctx<Shop>, order_id: String, cents: u64) -> String {
    format!("refunded {cents} on {order_id}")
}

#[derive(Deserialize, JsonSchema)]
struct Shipment {
    tracking: String,
}

fn tracking_number(shipment: &Shipment) -> &str {
    &shipment.tracking
}

/// Book a courier for a shipment; works in any app's registry.
#[tool(idempotency_key = tracking_number)]
async fn book_courier(Input(shipment): Input<Shipment>) -> String {
    shipment.tracking
}

/// Read how many of a product are in stock now.
#[tool(replay = false, read_only)]
async fn stock_level(_ctx: Ctx<Shop>, product: String) -> u32 {
    product.len() as u32
}

#[test]
fn the_durable_run_keys_are_carried_into_the_definition() {
    let registry = registry(tools![refund_order, book_courier, stock_level, order_history]);

    let mut want = expected(
        "refund_order",
        "Refund an order once, whichever call asks for it.",
        json!({
            "$schema": DIALECT,
            "type": "object",
            "properties": {
                "order_id": {"type": "string"},
                "cents": {"type": "integer", "format": "uint64", "minimum": 0, "maximum": u64::MAX}
            },
            "required": ["order_id", "cents"],
            "additionalProperties": false
        }),
    );
    want.annotations = Annotations { destructive: Some(true), ..Annotations::default() };
    want.output_schema = Some(json!({"$schema": DIALECT, "type": "string"}).into());
    want.idempotency_key = true;
    assert_eq!(registry.definition("refund_order").unwrap(), &want);

    let book_courier = registry.definition("book_courier").unwrap();
    assert!(book_courier.idempotency_key && book_courier.replay);

    let stock_level = registry.definition("stock_level").unwrap();
    assert!(!stock_level.replay && !stock_level.idempotency_key);
    // Neither key written: the defaults.
    let order_history = registry.definition("order_history").unwrap();
    assert!(order_history.replay && !order_history.idempotency_key);
}

#[test]
fn an_idempotency_key_function_gives_the_effect_key_of_an_input() {
    use tool_runtime::__private::Tool;
    let input = refund_order { order_id: "A-4711".into(), cents: 250 };
    assert_eq!(<refund_order as Tool<Shop>>::effect_key(&input).as_deref(), Some("refund:A-4711"));
    // A borrowed key, from a tool that runs in any app's registry.
    let shipment = Shipment { tracking: "TRK-9".into() };
    assert_eq!(<book_courier as Tool<Shop>>::effect_key(&shipment).as_deref(), Some("TRK-9"));
    assert_eq!(<book_courier as Tool<()>>::effect_key(&shipment).as_deref(), Some("TRK-9"));
    // Without the key, the effect is keyed by the run and the call id.
    let stock = stock_level { product: "pen".into() };
    assert_eq!(<stock_level as Tool<Shop>>::effect_key(&stock), None);
}

/// Geocode a place.
#[tool(
    kind = "read",
    examples("geocode(place: \"Amsterdam\")", "geocode(place: \"Louvre\")"),
    example_prompts("Where is the Louvre?"),
    related("login", "order_history"),
    always_active,
    classification = "turns a place name into coordinates",
    scope_prompt = "scope to one country when the user names one",
    meta(owner = "maps", cost = 3, below = -1, ratio = 0.25, beta = true)
)]
async fn geocode(place: String) -> String {
    place
}

/// Log out.
#[tool(kind = "write", always_active = false)]
async fn logout() -> String {
    String::new()
}

#[test]
fn every_metadata_key_is_carried_into_the_definition() {
    let registry = registry(tools![login, order_history, geocode, logout]);
    let mut want = expected(
        "geocode",
        "Geocode a place.",
        json!({
            "$schema": DIALECT,
            "type": "object",
            "properties": {"place": {"type": "string"}},
            "required": ["place"],
            "additionalProperties": false
        }),
    );
    want.output_schema = Some(json!({"$schema": DIALECT, "type": "string"}).into());
    want.kind = Some("read".into());
    want.examples = vec![r#"geocode(place: "Amsterdam")"#.into(), r#"geocode(place: "Louvre")"#.into()];
    want.example_prompts = vec!["Where is the Louvre?".into()];
    want.related = vec!["login".into(), "order_history".into()];
    want.always_active = true;
    want.classification = Some("turns a place name into coordinates".into());
    want.scope_prompt = Some("scope to one country when the user names one".into());
    let Value::Object(meta) = json!({"owner": "maps", "cost": 3, "below": -1, "ratio": 0.25, "beta": true}) else { unreachable!() };
    want.meta = meta;
    let got = registry.definition("geocode").unwrap();
    assert_eq!(got, &want);
    assert_eq!(serde_json::to_string(&got.meta).unwrap(), r#"{"owner":"maps","cost":3,"below":-1,"ratio":0.25,"beta":true}"#);

    let logout = registry.definition("logout").unwrap();
    assert_eq!(logout.kind.as_deref(), Some("write"));
    assert!(!logout.always_active);
}

#[test]
fn definitions_are_filtered_by_kind_in_declaration_order() {
    let registry = registry(tools![login, order_history, geocode, logout]);
    let of = |kind: &str| registry.definitions_of_kind(kind).map(|def| def.name.clone()).collect::<Vec<_>>();
    assert_eq!(of("read"), ["geocode"]);
    assert_eq!(of("write"), ["logout"]);
    assert!(of("admin").is_empty());
}

#[test]
fn an_unknown_related_tool_fails_the_build() {
    let err = Registry::<Shop>::builder().tools(tools![login, geocode]).build().unwrap_err();
    assert_eq!(err.problems, [tool_runtime::BuildProblem::UnknownRelated { tool: "geocode".into(), related: "order_history".into() }]);
    assert!(err.to_string().contains("tool `geocode` lists `order_history` as related, but it is not in the registry"), "{err}");
}

#[test]
fn annotations_serialise_as_mcp_hints() {
    let annotations = Annotations { read_only: Some(true), destructive: None, idempotent: Some(false), open_world: None };
    assert_eq!(serde_json::to_string(&annotations).unwrap(), r#"{"readOnlyHint":true,"idempotentHint":false}"#);
}

/// Pick a renamed tool.
#[tool(name = "pick_renamed")]
async fn some_function_name() -> String {
    String::new()
}

#[test]
fn an_explicit_name_wins() {
    let registry = registry(tools![some_function_name]);
    assert_eq!(registry.names().collect::<Vec<_>>(), ["pick_renamed"]);
}

// ---------------------------------------------------------------- output schemas

/// An order.
#[derive(Serialize, JsonSchema)]
struct Order {
    id: String,
    status: Status,
    total_cents: u64,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Status {
    Open,
    Shipped,
}

/// Serialisable, but without a schema.
#[derive(Serialize)]
struct Receipt {
    text: String,
}

/// Get an order.
#[tool]
async fn get_order(id: String) -> Result<Order, ToolError> {
    Ok(Order { id, status: Status::Open, total_cents: 0 })
}

/// Get an order, infallibly.
#[tool]
async fn get_order_plain(id: String) -> Order {
    Order { id, status: Status::Shipped, total_cents: 0 }
}

/// Print a receipt.
#[tool]
async fn print_receipt(id: String) -> Receipt {
    Receipt { text: id }
}

/// Print a receipt, fallibly.
#[tool]
async fn print_receipt_fallible(id: String) -> Result<Receipt, ToolError> {
    Ok(Receipt { text: id })
}

#[test]
fn output_schema_of_a_json_schema_return_type() {
    let registry = registry(tools![get_order, get_order_plain, print_receipt, print_receipt_fallible]);
    let order = json!({
        "$schema": DIALECT,
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "status": {"$ref": "#/$defs/Status"},
            "total_cents": {"type": "integer", "format": "uint64", "minimum": 0, "maximum": u64::MAX}
        },
        "required": ["id", "status", "total_cents"],
        "description": "An order.",
        "$defs": {
            "Status": {"type": "string", "enum": ["open", "shipped"]}
        }
    });
    assert_json(registry.definition("get_order").unwrap().output_schema.as_deref().unwrap(), &order);
    assert_json(registry.definition("get_order_plain").unwrap().output_schema.as_deref().unwrap(), &order);
    assert_eq!(registry.definition("print_receipt").unwrap().output_schema, None);
    assert_eq!(registry.definition("print_receipt_fallible").unwrap().output_schema, None);
}

// ---------------------------------------------------------------- fast path against derive path

// A parameter carrying `#[serde]` or `#[schemars]` switches the macro from
// its own schema builder to a derived struct; both must say the same thing.

type MaybeText = Option<String>;

/// Compare the two paths.
///
/// # Arguments
///
/// * `note` - A note for the record.
#[allow(clippy::too_many_arguments, reason = "a tool of many parameters, each a property of its input")]
#[tool]
async fn fast_path(
    /// The order number.
    order_id: String,
    note: MaybeText,
    /// Include the line items.
    #[tool(default)]
    with_items: bool,
    #[tool(default = 5)] limit: u8,
    #[tool(default)] cursor: Option<String>,
    tags: Vec<String>,
    priority: Priority,
    customer: Option<Customer>,
    /// Anything at all.
    payload: serde_json::Value,
    extra: serde_json::Value,
) -> String {
    let _ = (note, with_items, limit, cursor, tags, priority, customer, payload, extra);
    order_id
}

/// Compare the two paths.
///
/// # Arguments
///
/// * `note` - A note for the record.
#[allow(clippy::too_many_arguments, reason = "a tool of many parameters, each a property of its input")]
#[tool]
async fn derive_path(
    /// The order number.
    #[serde(rename = "order_id")]
    order_id: String,
    note: MaybeText,
    /// Include the line items.
    #[tool(default)]
    with_items: bool,
    #[tool(default = 5)] limit: u8,
    #[tool(default)] cursor: Option<String>,
    tags: Vec<String>,
    priority: Priority,
    customer: Option<Customer>,
    /// Anything at all.
    payload: serde_json::Value,
    extra: serde_json::Value,
) -> String {
    let _ = (note, with_items, limit, cursor, tags, priority, customer, payload, extra);
    order_id
}

#[test]
fn fast_and_derive_paths_give_identical_schemas() {
    let registry = registry(tools![fast_path, derive_path]);
    let fast = &registry.definition("fast_path").unwrap().input_schema;
    let derived = &registry.definition("derive_path").unwrap().input_schema;
    assert_eq!(serde_json::to_string(&**fast).unwrap(), serde_json::to_string(&**derived).unwrap());
    assert_json(
        fast,
        &json!({
            "$schema": DIALECT,
            "type": "object",
            "properties": {
                "order_id": {"type": "string", "description": "The order number."},
                "note": {"type": ["string", "null"], "description": "A note for the record."},
                "with_items": {"type": "boolean", "description": "Include the line items.", "default": false},
                "limit": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255, "default": 5},
                "cursor": {"type": ["string", "null"], "default": null},
                "tags": {"type": "array", "items": {"type": "string"}},
                "priority": {"$ref": "#/$defs/Priority"},
                "customer": {"anyOf": [{"$ref": "#/$defs/Customer"}, {"type": "null"}]},
                "payload": {"description": "Anything at all."},
                "extra": true
            },
            "required": ["order_id", "tags", "priority", "payload", "extra"],
            "additionalProperties": false,
            "$defs": {
                "Priority": {
                    "type": "string",
                    "enum": ["low", "high"],
                    "description": "How soon the ticket needs an answer."
                },
                "Customer": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "address": {"$ref": "#/$defs/Address", "description": "Where parcels go."}
                    },
                    "required": ["name", "address"],
                    "description": "A customer."
                },
                "Address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                    "required": ["street", "city"]
                }
            }
        }),
    );
}

#[test]
fn an_alias_of_option_is_still_optional() {
    let registry = registry(tools![fast_path, derive_path]);
    for name in ["fast_path", "derive_path"] {
        let schema = &registry.definition(name).unwrap().input_schema;
        assert!(!schema["required"].as_array().unwrap().contains(&json!("note")), "{name}");
    }
}

/// Label a ticket.
#[tool]
async fn label_ticket(
    /// The label, one line.
    #[schemars(regex(pattern = "^no description here$"))]
    label: String,
) -> String {
    label
}

#[test]
fn a_parameter_doc_survives_an_unrelated_schemars_attribute() {
    let schema = input_schema(tools![label_ticket], "label_ticket");
    assert_json(
        &schema["properties"]["label"],
        &json!({"type": "string", "description": "The label, one line.", "pattern": "^no description here$"}),
    );
}

// ---------------------------------------------------------------- every schema is valid JSON Schema 2020-12

fn every_tool() -> Vec<BoxedTool<Shop>> {
    tools![
        search_catalogue,
        list_orders,
        defaults_tool,
        all_optional,
        no_params,
        restock,
        open_ticket,
        create_customer,
        find_orders,
        order_product,
        cancel_order,
        file_ticket,
        list_tickets,
        refund_args,
        refund_args_derived,
        described,
        explicit_description,
        block_doc,
        login,
        approve_refund,
        order_history,
        hand_off,
        wipe,
        some_function_name,
        get_order,
        get_order_plain,
        print_receipt,
        print_receipt_fallible,
        fast_path,
        derive_path,
        label_ticket,
    ]
}

/// Every `$ref` of `value` points into the root's `$defs`.
fn assert_refs_resolve(root: &Value, value: &Value, tool: &str) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref") {
                let name = reference.strip_prefix("#/$defs/").unwrap_or_else(|| panic!("{tool}: $ref {reference}"));
                assert!(root["$defs"].get(name).is_some(), "{tool}: $ref {reference} has no definition");
            }
            map.values().for_each(|child| assert_refs_resolve(root, child, tool));
        }
        Value::Array(items) => items.iter().for_each(|child| assert_refs_resolve(root, child, tool)),
        _ => {}
    }
}

#[test]
fn every_schema_is_valid_json_schema_2020_12() {
    let registry = registry(every_tool());
    assert_eq!(registry.len(), every_tool().len());
    for definition in registry.definitions() {
        let name = &definition.name;
        let schemas = std::iter::once(&definition.input_schema).chain(definition.output_schema.as_ref());
        for schema in schemas {
            assert_eq!(schema["$schema"], DIALECT, "{name}");
            if let Err(error) = jsonschema::draft202012::meta::validate(schema) {
                panic!("{name}: {error}\n{schema:#}");
            }
            assert_refs_resolve(schema, schema, name);
        }
        let input = &definition.input_schema;
        assert_eq!(input["type"], "object", "{name}");
        assert!(input["required"].is_array(), "{name}");
        assert_eq!(input["additionalProperties"], false, "{name}");
    }
}

// ---------------------------------------------------------------- frozen

#[tokio::test]
async fn a_built_registrys_definitions_cannot_be_widened_afterwards() {
    let registry = registry(tools![search_catalogue]);
    let before = registry.definition("search_catalogue").unwrap().clone();
    let too_big = r#"{"query": "kettle", "limit": 1, "level": 300}"#;
    let app = std::sync::Arc::new(Shop);
    assert_eq!(registry.invoke(&app, "search_catalogue", too_big).await.kind, tool_runtime::ResultKind::InvalidArguments);

    // What the registry hands out is a shared, read-only view: a copy may be
    // changed to accept anything, and the registry does not see it.
    let mut widened = before.clone();
    widened.input_schema = std::sync::Arc::new(json!({"type": "object"}));
    std::sync::Arc::make_mut(&mut widened.input_schema)["additionalProperties"] = json!(true);
    assert_eq!(registry.definition("search_catalogue").unwrap(), &before);
    assert_eq!(registry.invoke(&app, "search_catalogue", too_big).await.kind, tool_runtime::ResultKind::InvalidArguments);

    // Adding tools makes another registry; this one keeps its tools as built.
    let more = registry.with_tools(tools![no_params]).unwrap();
    assert!(more.definition("no_params").is_some());
    assert_eq!(registry.names().collect::<Vec<_>>(), ["search_catalogue"]);
    assert_eq!(registry.definition("search_catalogue").unwrap(), &before);
}

// ---------------------------------------------------------------- replay = false on a destructive tool

/// A shell-like tool: destructive, not idempotent, and run again on every
/// call (`replay(false)`); `{"slow": true}` outlasts its timeout.
fn run_command(runs: std::sync::Arc<std::sync::atomic::AtomicUsize>, idempotent: bool) -> DynamicTool<Shop> {
    let schema = json!({"type": "object", "properties": {"slow": {"type": "boolean"}}, "required": ["slow"]});
    DynamicTool::new("run_command", "Run the command.", schema, move |args: Value, _ctx: Ctx<Shop>| {
        let run = runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        async move {
            if args["slow"] == true {
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
            Ok::<_, ToolError>(json!(format!("run {run}")))
        }
    })
    .annotations(Annotations { destructive: Some(true), idempotent: Some(idempotent), ..Annotations::default() })
    .replay(false)
    .timeout(Duration::from_millis(100))
}

#[tokio::test]
async fn a_destructive_tool_with_replay_false_runs_again_but_never_over_an_unfinished_call() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tool_runtime::ToolCall;
    use tool_runtime::journal::Journal;

    let dir = std::env::temp_dir().join(format!("tool-runtime-definitions-replay-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let journal = Journal::open(dir.join("runs.db").to_str().unwrap()).await.unwrap();
    let app = std::sync::Arc::new(Shop);
    for idempotent in [false, true] {
        let runs = std::sync::Arc::new(AtomicUsize::new(0));
        let registry = Registry::<Shop>::builder().tool(run_command(runs.clone(), idempotent)).build().unwrap();
        let run_id = format!("replay-{idempotent}");
        let call = |id: &str, slow: bool| vec![ToolCall::new(id, "run_command", json!({"slow": slow}).to_string())];

        // A finished call sent again runs again: its output is fresh.
        let mut run = registry.run(app.clone()).durable(&journal, &run_id).await.unwrap();
        assert_eq!(run.execute(call("c1", false)).await.results[0].text, "run 1");
        let mut run = registry.run(app.clone()).durable(&journal, &run_id).await.unwrap();
        assert_eq!(run.execute(call("c1", false)).await.results[0].text, "run 2");

        // A call cut off (its timeout) may have had its effect.
        let cut = run.execute(call("c2", true)).await.results.remove(0);
        assert_eq!(cut.kind, tool_runtime::ResultKind::TimedOut, "{}", cut.text);
        assert_eq!(runs.load(Ordering::SeqCst), 3);
        let mut run = registry.run(app.clone()).durable(&journal, &run_id).await.unwrap();
        let again = run.execute(call("c2", false)).await.results.remove(0);
        if idempotent {
            // Doing it twice does no more than once: it runs.
            assert_eq!(again.text, "run 4");
        } else {
            // Not run over an effect that may have happened.
            assert_eq!(again.error_code.as_deref(), Some("OUTCOME_UNKNOWN"), "{}", again.text);
            assert_eq!(runs.load(Ordering::SeqCst), 3, "the tool did not run again");
        }
    }
    journal.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------- a dynamic tool's contradictions

fn dynamic(name: &str) -> DynamicTool<Shop> {
    DynamicTool::new(name, "Do it.", json!({"type": "object"}), |_: Value, _: Ctx<Shop>| async { Ok::<_, ToolError>(json!("done")) })
}

#[test]
fn a_dynamic_tool_s_contradictions_fail_the_build_as_the_macro_s_would() {
    let external = |name: &str| DynamicTool::<Shop>::external(name, "Pick a date.", json!({"type": "object"}));
    type Case = (&'static str, fn(DynamicTool<Shop>) -> DynamicTool<Shop>, &'static str);
    let cases: Vec<Case> = vec![
        (
            "both_ways",
            |t| t.annotations(Annotations { read_only: Some(true), destructive: Some(true), ..Annotations::default() }),
            "`read_only` and `destructive` contradict each other",
        ),
        (
            "serial_reader",
            |t| t.annotations(Annotations { read_only: Some(true), ..Annotations::default() }).parallel_safe(false),
            "`parallel_safe = false` contradicts `read_only`",
        ),
        (
            "judged_reader",
            |t| t.annotations(Annotations { read_only: Some(true), ..Annotations::default() }).parallel_safe_fn(|_| true),
            "`parallel_safe = predicate` contradicts `read_only`",
        ),
        ("two_ends", |t| t.ends_run(true).ends_turn(true), "`ends_turn` and `ends_run` cannot both be set"),
        ("keyed_fresh", |t| t.idempotency_key(|_| "k".into()).replay(false), "`replay = false` contradicts `idempotency_key`"),
        ("own_prerequisite", |t| t.requires(["own_prerequisite"]), "tool `own_prerequisite` cannot require itself"),
        ("own_relative", |t| t.related(["own_relative"]), "tool `own_relative` cannot be related to itself"),
        ("scoped_always", |t| t.always_active(true).scope(json!({"type": "string"}), |_, _| {}), "`scope` contradicts `always_active`"),
    ];
    let external_cases: Vec<Case> = vec![
        ("host_recovered", |t| t.on_error(|_, _| None), "`on_error` contradicts `external`"),
        ("host_interim", |t| t.interim("Waiting...", Duration::from_millis(10)), "`interim` contradicts `external`"),
        ("host_uninterruptible", |t| t.interruptible(false), "`interruptible` contradicts `external`"),
        ("host_keyed", |t| t.idempotency_key(|_| "k".into()), "`idempotency_key` contradicts `external`"),
        ("host_judged_end", |t| t.ends_run_fn(|_, _| true), "`ends_run = path` contradicts `external`"),
    ];
    let mut tools: Vec<BoxedTool<Shop>> = cases.iter().map(|(name, make, _)| make(dynamic(name)).into()).collect();
    tools.extend(external_cases.iter().map(|(name, make, _)| make(external(name)).into()));
    let expected: Vec<(&str, &str)> = cases.iter().chain(&external_cases).map(|(name, _, message)| (*name, *message)).collect();
    let error = Registry::<Shop>::builder().tools(tools).build().expect_err("every contradiction fails the build");
    let problems: Vec<String> = error.problems.iter().map(ToString::to_string).collect();
    assert_eq!(problems.len(), expected.len(), "one problem a tool:\n{}", problems.join("\n"));
    for ((name, message), problem) in expected.iter().zip(&problems) {
        assert!(problem.starts_with(&format!("dynamic tool `{name}`: {message}")), "{problem}");
        // Each says what to do.
        assert!(problem.contains("remove") || problem.contains("keep one"), "{problem}");
    }
    assert!(matches!(&error.problems[0], tool_runtime::BuildProblem::Contradiction { tool, .. } if tool == "both_ways"));
    // What the macro allows, the build allows.
    let allowed = dynamic("fresh_shell").annotations(Annotations { destructive: Some(true), ..Annotations::default() }).replay(false);
    assert!(Registry::<Shop>::builder().tool(allowed).build().is_ok());
}

// ---------------------------------------------------------------- a dynamic tool that streams

#[tokio::test]
async fn a_dynamic_tool_streams_preliminary_results_like_a_streamed_tool() {
    use std::sync::{Arc, Mutex};
    use tool_runtime::{ProgressSink, ResultKind, Streamed, stream};

    let schema = json!({"type": "object", "properties": {"to": {"type": "integer"}}, "required": ["to"]});
    let count = DynamicTool::streamed("count", "Count up to a number.", schema.clone(), |args: Value, _: Ctx<Shop>| async move {
        let to = args["to"].as_u64().unwrap_or_default();
        Streamed::new(stream::iter((1..=to).map(|n| json!({"counted": n}))))
    });
    let failing = DynamicTool::streamed("failing", "Fail after one item.", json!({"type": "object"}), |_: Value, _: Ctx<Shop>| async {
        Streamed::try_new(stream::iter([Ok(json!(1)), Err(ToolError::unavailable("FEED_DOWN", "The feed is down."))]))
    });
    let endless = DynamicTool::streamed("endless", "Never finish.", json!({"type": "object"}), |_: Value, _: Ctx<Shop>| async {
        Streamed::new(stream::unfold(0u64, |n| async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            Some((json!(n), n + 1))
        }))
    })
    .timeout(Duration::from_millis(200));
    let registry = Registry::<Shop>::builder().tool(count).tool(failing).tool(endless).build().unwrap();
    let app = Arc::new(Shop);
    let collect = || {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        (ProgressSink::new(move |progress| sink.lock().unwrap().push(progress)), seen)
    };

    let (sink, seen) = collect();
    let result = registry.call(&app, "count", r#"{"to": 3}"#).progress(sink).await.into_result().unwrap();
    assert_eq!(result.kind, ResultKind::Success, "{}", result.text);
    assert_eq!(result.structured(), Some(&json!({"counted": 3})), "the last item is the result");
    let preliminary: Vec<Value> = seen.lock().unwrap().iter().map(|report| report.preliminary.clone().unwrap()).collect();
    assert_eq!(preliminary, [json!({"counted": 1}), json!({"counted": 2})]);

    // Validated like any dynamic tool.
    assert_eq!(registry.call(&app, "count", r#"{"to": "three"}"#).await.into_result().unwrap().kind, ResultKind::InvalidArguments);
    // An empty stream is a bug of the tool.
    assert_eq!(registry.call(&app, "count", r#"{"to": 0}"#).await.into_result().unwrap().kind, ResultKind::Internal);

    let (sink, seen) = collect();
    let failed = registry.call(&app, "failing", "{}").progress(sink).await.into_result().unwrap();
    assert_eq!(failed.error_code.as_deref(), Some("FEED_DOWN"), "{}", failed.text);
    assert_eq!(seen.lock().unwrap().len(), 1, "the item before the error was sent");

    // The timeout covers the whole stream.
    let cut = registry.call(&app, "endless", "{}").await.into_result().unwrap();
    assert_eq!(cut.kind, ResultKind::TimedOut, "{}", cut.text);

    // `on_error` does not apply to a streaming tool, as the macro says.
    let recovered = DynamicTool::streamed("recovered", "Count.", schema, |_: Value, _: Ctx<Shop>| async { Streamed::new(stream::iter([json!(1)])) })
        .on_error(|_, _| Some(json!(0)));
    let error = Registry::<Shop>::builder().tool(recovered).build().expect_err("on_error on a streaming tool fails the build");
    assert!(error.to_string().contains("dynamic tool `recovered`: `on_error` does not apply to a streaming tool"), "{error}");
}

// ---------------------------------------------------------------- origin

/// Pick a slot in the user's calendar.
#[tool(external)]
async fn pick_a_slot(day: String) -> String;

#[tokio::test]
async fn origin_says_where_a_definition_comes_from_and_a_floor_or_a_filter_reads_it() {
    use std::sync::Arc;
    use tool_runtime::providers::builtin::ProviderTool;
    use tool_runtime::{CallOutcome, Origin, ResultKind};

    let weather =
        DynamicTool::new("weather", "The weather.", json!({"type": "object"}), |_: Value, _: Ctx<Shop>| async { Ok::<_, ToolError>(json!("sunny")) });
    let pick_file = DynamicTool::external("pick_file", "Pick a file.", json!({"type": "object"}));
    let search = ProviderTool::openai_web_search("web_search").into_tool();
    let registry = Registry::<Shop>::builder().tools(tools![no_params, pick_a_slot]).tool(weather).tool(pick_file).tool(search).build().unwrap();
    let origins: Vec<(&str, Origin)> = registry.definitions().map(|def| (def.name.as_str(), def.origin)).collect();
    assert_eq!(
        origins,
        [
            ("no_params", Origin::Typed),
            ("pick_a_slot", Origin::External),
            ("weather", Origin::Dynamic),
            ("pick_file", Origin::External),
            ("web_search", Origin::ProviderDefined),
        ]
    );
    let external: Vec<&str> = registry.definitions_of_origin(Origin::External).map(|def| def.name.as_str()).collect();
    assert_eq!(external, ["pick_a_slot", "pick_file"]);

    // A user's floor over an origin: every dynamic tool needs approval, the typed ones run.
    let app = Arc::new(Shop);
    let user = Arc::new(UserContext::new("u-1").with_floor(ApprovalFloor::default().origin(Origin::Dynamic)));
    let outcome = registry.call(&app, "weather", "{}").user(user.clone()).await;
    assert!(matches!(outcome, CallOutcome::NeedsApproval(_)), "{outcome:?}");
    let typed = registry.call(&app, "no_params", "{}").user(user).await.into_result().unwrap();
    assert_eq!(typed.kind, ResultKind::Success, "{}", typed.text);
}

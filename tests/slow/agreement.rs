//! Schema and parser agree: for each tool, the `jsonschema` crate's verdict
//! on the exported input schema (`registry.definition(name).input_schema`)
//! equals whether the registry accepts the input before policy (its result
//! is anything but `InvalidArguments`), over generated inputs and over
//! mutations of valid ones, 10,000 cases a tool.
//!
//! The tools: the support desk's (examples/common/shop.rs) and tools with
//! the constraints of tests/quick/pipeline.rs (ranges, a pattern, a length, an
//! enum), one whose schema says nothing serde does not check (the
//! registry's fast path, which skips the validator), one with only an enum
//! and one with a nested struct (which serde reads more leniently than
//! their schemas: a unit variant from a one-key object, a struct from an
//! array), plus numbers at their edges: a float and an `i64` on the fast
//! path, `u128`/`i128` parameters (whose schema states the range a parsed
//! value holds), and a derived input with both nested. Policies are
//! compared on kinds: a denial, a pending approval or a tool error all mean
//! the input was accepted.
//!
//! Every input sent as text is also sent to a registry that validates every
//! call, which never takes the fast path (the text read straight into the
//! tool's input): both give the same result.
//!
//! Two rules of the registry are applied to the schema's side, or treated
//! apart, on purpose:
//! - A `null` for an optional property whose schema does not accept `null`
//!   means "use the default" (OpenAI strict mode sends such nulls): the
//!   registry drops it before validating. The schema's verdict is taken
//!   after the same rule, at the top level; the generators put no `null`
//!   inside nested objects, where the registry applies it too.
//! - The float -2^63 where an integer is expected: `i64::MIN` and the
//!   integers below it that round to that float are one value once parsed,
//!   so it is refused, though a schema's `minimum: -9223372036854775808`
//!   admits it. For such inputs (and any integer beyond its Rust type's
//!   range that a schema would not state; the registry's schemas state
//!   every integer type's range) the test asserts that the registry refuses
//!   them as invalid arguments naming the property, instead of agreement.

use crate::shop;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestCaseError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tool_runtime::prelude::*;
use tool_runtime::{Arguments, ResultKind};

use shop::Shop;

// ------------------------------------------------------------------ tools

/// Transfer money.
#[tool]
async fn transfer(
    /// In cents.
    #[schemars(range(min = 1, max = 10000))]
    amount: u32,
    /// Three capital letters.
    #[schemars(regex(pattern = r"^[A-Z]{3}$"))]
    currency: String,
    /// A short note.
    #[schemars(length(max = 5))]
    #[tool(default)]
    note: String,
    kind: Kind,
) -> String {
    format!("{amount} {currency} {note} {kind:?}")
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Instant,
    Standard,
}

/// Look up orders: nothing serde does not check, so no validator on the happy path.
#[tool]
async fn lookup(order_id: String, #[tool(default)] with_items: bool, limit: Option<u32>, tags: Vec<String>) -> String {
    format!("{order_id} {with_items} {limit:?} {}", tags.len())
}

/// Pick a kind: only an enum, which serde also reads from a one-key object.
#[tool]
async fn pick(kind: Kind, #[tool(default)] count: u32) -> String {
    format!("{count} {kind:?}")
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Address {
    street: String,
    #[serde(default)]
    floor: u32,
}

/// Ship parcels to an address.
#[tool]
async fn ship(address: Address, #[tool(default)] express: bool, #[schemars(range(min = 1, max = 99))] count: u8) -> String {
    format!("{} parcels to {} (floor {}), express {express}", count, address.street, address.floor)
}

/// Weigh a parcel: a float, and any JSON (which the full path hands over
/// with its nulls and integral floats as they are rewritten).
#[tool]
async fn measure(weight: f64, #[tool(default)] meta: Option<Value>) -> String {
    format!("{weight} {meta:?}")
}

/// Tag an order: a renamed parameter, so the input struct is derived.
#[tool]
async fn tag(#[serde(rename = "label")] name: String, #[tool(default)] count: u32) -> String {
    format!("{name} {count}")
}

/// Cast a vote: a policy predicate on plain parameters (parsed before the
/// policy decides, on the fast path too).
#[tool(policy = vote_policy)]
async fn vote(_shop: Ctx<Shop>, choice: String, weight: u32) -> String {
    format!("{weight} for {choice}")
}

fn vote_policy(input: &vote, _ctx: &Ctx<Shop>) -> Verdict {
    match input.weight {
        0..=5 => Verdict::Allow,
        6..=10 => Verdict::needs_approval(),
        _ => Verdict::deny("too heavy"),
    }
}

/// Wipe a record: always needs approval.
#[tool(policy = needs_approval)]
async fn wipe(record: String, #[tool(default)] force: bool) -> String {
    format!("{record} {force}")
}

/// Scale a reading: a float and an integer, on the fast path.
#[tool]
async fn scale(ratio: f64, #[tool(default)] offset: i64) -> String {
    format!("{ratio} {offset}")
}

/// Settle a balance: 128-bit integers, which parsed arguments hold up to
/// 64 bits, beside a float.
#[tool]
async fn settle(big: u128, signed: i128, #[tool(default)] ratio: f64, #[tool(default)] spare: Option<i128>) -> String {
    format!("{big} {signed} {ratio} {spare:?}")
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Ledger {
    total: u128,
    entries: Vec<Entry>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Entry {
    delta: i128,
    weight: f64,
}

/// Book a ledger: a derived input with 128-bit integers and floats nested.
#[tool]
async fn book(Input(ledger): Input<Ledger>) -> String {
    let entries: Vec<(i128, f64)> = ledger.entries.iter().map(|entry| (entry.delta, entry.weight)).collect();
    format!("{} {entries:?}", ledger.total)
}

fn registry() -> &'static Registry<Shop> {
    static REGISTRY: OnceLock<Registry<Shop>> = OnceLock::new();
    REGISTRY.get_or_init(|| build(false))
}

/// The same tools with the validator run on every call: no call takes the
/// fast path, which reads text straight into a tool's input.
fn full_path_registry() -> &'static Registry<Shop> {
    static REGISTRY: OnceLock<Registry<Shop>> = OnceLock::new();
    REGISTRY.get_or_init(|| build(true))
}

fn build(validate_every_call: bool) -> Registry<Shop> {
    Registry::builder()
        .validate_every_call(validate_every_call)
        .tools(tools![
            shop::classify_request,
            shop::lookup_order,
            shop::refund,
            shop::issue_voucher,
            shop::hand_over,
            transfer,
            lookup,
            pick,
            ship,
            measure,
            tag,
            vote,
            wipe,
            scale,
            settle,
            book
        ])
        .build()
        .unwrap()
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap())
}

// ---------------------------------------------------------- the schema side

/// A tool's exported schema, its validator, and which of its properties
/// accept `null`.
struct Schema {
    schema: Value,
    validator: jsonschema::Validator,
    required: Vec<String>,
    nullable: BTreeMap<String, bool>,
}

fn schema_of(tool: &str) -> Schema {
    let schema = (*registry().definition(tool).unwrap().input_schema).clone();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let required = schema["required"].as_array().unwrap().iter().map(|name| name.as_str().unwrap().to_owned()).collect();
    let nullable = schema["properties"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, property)| {
            let mut alone = property.clone();
            if let (Value::Object(alone), Some(defs)) = (&mut alone, schema.get("$defs")) {
                alone.insert("$defs".into(), defs.clone());
            }
            (name.clone(), jsonschema::draft202012::new(&alone).unwrap().is_valid(&Value::Null))
        })
        .collect();
    Schema { schema, validator, required, nullable }
}

impl Schema {
    /// The schema's verdict after the registry's null rule (top level).
    fn accepts(&self, args: &Value) -> bool {
        let mut args = args.clone();
        if let Value::Object(map) = &mut args {
            map.retain(|name, value| !(value.is_null() && !self.required.contains(name) && self.nullable.get(name) == Some(&false)));
        }
        self.validator.is_valid(&args)
    }

    /// A top-level property holding an integer beyond its Rust type's
    /// range, which the schema does not state.
    fn beyond_type_range(&self, args: &Value) -> Option<String> {
        args.as_object()?.iter().find_map(|(name, value)| {
            let format = self.schema["properties"].get(name)?.get("format")?.as_str()?;
            let (min, max): (i128, i128) = match format {
                "uint32" => (0, u32::MAX.into()),
                "int32" => (i32::MIN.into(), i32::MAX.into()),
                "uint64" => (0, u64::MAX.into()),
                "int64" => (i64::MIN.into(), i64::MAX.into()),
                "uint128" => (0, u64::MAX.into()),
                "int128" => (i64::MIN.into(), u64::MAX.into()),
                _ => return None,
            };
            let number = value.as_number()?;
            let integer = match (number.as_i64(), number.as_u64(), number.as_f64()) {
                (Some(i), _, _) => i128::from(i),
                (_, Some(u), _) => i128::from(u),
                // The float -2^63 also stands for the integers below
                // `i64::MIN` that round to it: refused.
                (_, _, Some(-9_223_372_036_854_775_808.0)) => return Some(name.clone()),
                (_, _, Some(f)) if f.fract() == 0.0 => f as i128,
                _ => return None,
            };
            (!(min..=max).contains(&integer)).then(|| name.clone())
        })
    }
}

// ------------------------------------------------------------- generators

/// Leaves, including the edges: integral floats, `-0.0`, integers beyond
/// `u32` and at the edges of 64 bits, long strings.
fn leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (0u64..20_000).prop_map(Value::from),
        (-20_000i64..0).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        // The edges of `u32` and of 64 bits; 2^64 and -2^63 as floats are
        // what `18446744073709551616` and `-9223372036854775809` parse to.
        prop_oneof![
            Just(Value::from(u32::MAX)),
            Just(Value::from(u64::from(u32::MAX) + 1)),
            Just(Value::from(u64::MAX)),
            Just(Value::from(i64::MIN)),
            Just(json!(18_446_744_073_709_551_616.0)),
            Just(json!(-9_223_372_036_854_775_808.0)),
            Just(json!(-9_223_372_036_854_774_784.0)),
        ],
        (0i64..20_000).prop_map(|i| json!(i as f64)),
        (-1e4f64..1e4).prop_map(|f| json!(f)),
        prop_oneof![Just(1e20), Just(5e9), Just(-0.0)].prop_map(|f| json!(f)),
        "[A-Za-z0-9 -]{0,12}".prop_map(Value::from),
        "[A-Z]{3}".prop_map(Value::from),
        "A-[0-9]{4}".prop_map(Value::from),
        prop_oneof![Just("instant"), Just("standard"), Just("express"), Just("")].prop_map(Value::from),
        (0usize..700).prop_map(|n| Value::from("é".repeat(n))),
    ]
    .boxed()
}

/// Any JSON value, without `null` directly inside an object (see the
/// module docs).
fn any_json() -> BoxedStrategy<Value> {
    leaf()
        .prop_recursive(2, 12, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map("[a-z]{1,6}", inner, 0..3)
                    .prop_map(|map| { Value::Object(map.into_iter().map(|(k, v)| (k, if v.is_null() { Value::from(0) } else { v })).collect()) }),
            ]
        })
        .boxed()
}

/// Integers in `low..=high` (within `i64::MIN..=u64::MAX`), often at its
/// edges, some written as integral floats (`-0.0` among them).
fn wide(low: i128, high: i128) -> BoxedStrategy<Value> {
    let integer = |i: i128| i64::try_from(i).map(Value::from).unwrap_or_else(|_| Value::from(i as u64));
    prop_oneof![
        (low..=high).prop_map(integer),
        prop_oneof![Just(low), Just(high), Just(low.max(0)), Just(high.min(1 << 60))].prop_map(integer),
        (-1000i64..1000).prop_filter("in range", move |i| (low..=high).contains(&i128::from(*i))).prop_map(|i| json!(i as f64)),
        Just(json!(-0.0)),
    ]
    .boxed()
}

/// Floats, `-0.0`, integral ones and integers among them.
fn float() -> BoxedStrategy<Value> {
    prop_oneof![
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        Just(json!(-0.0)),
        Just(json!(0.0)),
        (-1000i64..1000).prop_map(|i| json!(i as f64)),
        any::<i64>().prop_map(Value::from),
        Just(json!(1e300)),
    ]
    .boxed()
}

/// Valid values of each property of a tool, and which are required.
struct Case {
    valid: Vec<(&'static str, BoxedStrategy<Value>)>,
}

fn case(tool: &'static str) -> Case {
    let s = |pattern: &'static str| pattern.prop_map(Value::from).boxed();
    let n = |low: u64, high: u64| (low..=high).prop_map(Value::from).boxed();
    let b = || any::<bool>().prop_map(Value::from).boxed();
    let valid = match tool {
        "classify_request" => vec![("text", s(".{0,40}"))],
        "lookup_order" => vec![("order_id", s("A-[0-9]{4}")), ("with_items", b())],
        "refund" => vec![("order_id", s("A-100[0-4]")), ("amount_cents", n(1, 30_000)), ("reason", s("[a-z ]{0,20}"))],
        "issue_voucher" => vec![("customer", s("c-[0-9]{2}")), ("amount_cents", n(100, 10_000))],
        "hand_over" => vec![("summary", s("[A-Za-z .]{10,80}"))],
        "transfer" => vec![
            ("amount", n(1, 10_000)),
            ("currency", s("[A-Z]{3}")),
            ("note", s("[a-z]{0,5}")),
            ("kind", prop_oneof![Just(json!("instant")), Just(json!("standard"))].boxed()),
        ],
        "lookup" => vec![
            ("order_id", s("[A-Z0-9-]{1,8}")),
            ("with_items", b()),
            ("limit", prop_oneof![Just(Value::Null), (0u64..1000).prop_map(Value::from)].boxed()),
            ("tags", prop::collection::vec("[a-z]{1,5}", 0..3).prop_map(|tags| json!(tags)).boxed()),
        ],
        "pick" => vec![("kind", prop_oneof![Just(json!("instant")), Just(json!("standard"))].boxed()), ("count", n(0, 100))],
        "ship" => vec![
            (
                "address",
                ("[A-Za-z ]{1,12}", prop::option::of(0u64..50))
                    .prop_map(|(street, floor)| match floor {
                        Some(floor) => json!({"street": street, "floor": floor}),
                        None => json!({"street": street}),
                    })
                    .boxed(),
            ),
            ("express", b()),
            ("count", n(1, 99)),
        ],
        "scale" => vec![("ratio", float()), ("offset", wide(i64::MIN.into(), i64::MAX.into()))],
        "settle" => vec![
            ("big", wide(0, u64::MAX.into())),
            ("signed", wide(i64::MIN.into(), u64::MAX.into())),
            ("ratio", float()),
            ("spare", prop_oneof![Just(Value::Null), wide(i64::MIN.into(), u64::MAX.into())].boxed()),
        ],
        "book" => vec![
            ("total", wide(0, u64::MAX.into())),
            (
                "entries",
                prop::collection::vec((wide(i64::MIN.into(), u64::MAX.into()), float()), 0..3)
                    .prop_map(|entries| {
                        json!(entries.into_iter().map(|(delta, weight)| json!({"delta": delta, "weight": weight})).collect::<Vec<_>>())
                    })
                    .boxed(),
            ),
        ],
        other => panic!("no generator for {other}"),
    };
    Case { valid }
}

/// Values that a property's schema may or may not accept: valid ones, any
/// JSON, and the shapes serde reads more leniently than a schema (a unit
/// variant as a one-key object, a struct as an array).
fn candidates(valid: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    prop_oneof![
        3 => valid,
        3 => any_json(),
        1 => prop_oneof![Just(json!({"instant": null})), Just(json!(["Main", 3])), Just(json!({"street": "Main", "floor": 1.0}))],
    ]
    .boxed()
}

/// An object with some of the tool's properties (valid or not), and
/// sometimes a property the schema does not name.
fn generated(case: &Case) -> BoxedStrategy<Value> {
    let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = case
        .valid
        .iter()
        .map(|(name, valid)| {
            let name = (*name).to_owned();
            prop::option::weighted(0.8, candidates(valid.clone())).prop_map(move |value| value.map(|v| (name.clone(), v))).boxed()
        })
        .collect();
    (fields, prop::option::weighted(0.1, ("[a-z_]{1,8}", any_json())))
        .prop_map(|(fields, extra)| {
            let mut map: Map<String, Value> = fields.into_iter().flatten().collect();
            if let Some((name, value)) = extra {
                map.insert(name, value);
            }
            Value::Object(map)
        })
        .boxed()
}

/// A valid object.
fn valid(case: &Case) -> BoxedStrategy<Value> {
    let fields: Vec<BoxedStrategy<(String, Value)>> = case
        .valid
        .iter()
        .map(|(name, valid)| {
            let name = (*name).to_owned();
            valid.clone().prop_map(move |v| (name.clone(), v)).boxed()
        })
        .collect();
    fields.prop_map(|fields| Value::Object(fields.into_iter().collect())).boxed()
}

#[derive(Clone, Debug)]
enum Mutation {
    DropField(usize),
    AddUnknown(String, Value),
    WrongType(usize, Value),
    OutOfRange(usize, bool),
    Overlong(usize),
    Null(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::DropField),
        ("[a-z_]{1,8}", any_json()).prop_map(|(name, value)| Mutation::AddUnknown(name, value)),
        (any::<usize>(), any_json()).prop_map(|(i, value)| Mutation::WrongType(i, value)),
        (any::<usize>(), any::<bool>()).prop_map(|(i, above)| Mutation::OutOfRange(i, above)),
        any::<usize>().prop_map(Mutation::Overlong),
        any::<usize>().prop_map(Mutation::Null),
    ]
}

/// Applies a mutation to a valid object, reading bounds from the schema.
fn mutate(mut args: Value, mutation: &Mutation, schema: &Schema) -> Value {
    let names: Vec<String> = schema.schema["properties"].as_object().unwrap().keys().cloned().collect();
    let pick = |i: usize| names[i % names.len()].clone();
    let map = args.as_object_mut().unwrap();
    match mutation {
        Mutation::DropField(i) => {
            map.shift_remove(&schema.required.get(i % schema.required.len().max(1)).cloned().unwrap_or_else(|| pick(*i)));
        }
        Mutation::AddUnknown(name, value) => {
            map.insert(name.clone(), value.clone());
        }
        Mutation::WrongType(i, value) => {
            map.insert(pick(*i), value.clone());
        }
        Mutation::OutOfRange(i, above) => {
            let name = pick(*i);
            let property = &schema.schema["properties"][&name];
            let bound = if *above {
                property.get("maximum").map(|m| m.as_f64().unwrap() + 1.0)
            } else {
                property.get("minimum").map(|m| m.as_f64().unwrap() - 1.0)
            };
            if let Some(bound) = bound {
                map.insert(name, json!(bound as i64));
            }
        }
        Mutation::Overlong(i) => {
            let name = pick(*i);
            if let Some(max) = schema.schema["properties"][&name].get("maxLength").and_then(Value::as_u64) {
                map.insert(name, Value::from("x".repeat(max as usize + 1)));
            }
        }
        Mutation::Null(i) => {
            map.insert(pick(*i), Value::Null);
        }
    }
    args
}

// ------------------------------------------------------------ the property

fn check(tool: &str, schema: &Schema, args: &Value, as_text: bool) -> Result<(), TestCaseError> {
    let arguments = if as_text { Arguments::Text(args.to_string().into()) } else { Arguments::Value(args.clone()) };
    let result = runtime().block_on(registry().invoke(&Arc::new(Shop::demo()), tool, arguments));
    let accepted = result.kind != ResultKind::InvalidArguments;
    let verdict = schema.accepts(args);
    if verdict && let Some(name) = schema.beyond_type_range(args) {
        prop_assert!(!accepted, "{tool}: {args} has `{name}` beyond its type's range, yet was accepted");
        prop_assert!(result.text.contains(&name), "{tool}: {args}: {}", result.text);
        return Ok(());
    }
    prop_assert_eq!(accepted, verdict, "{}: {} (schema says {}, registry: {})", tool, args, verdict, result.text);
    if as_text {
        // The fast path decides nothing the full path would decide otherwise.
        let full = runtime().block_on(full_path_registry().invoke(&Arc::new(Shop::demo()), tool, args.to_string()));
        let seen = |result: &CallResult| (result.kind, result.text.clone(), result.error_code.clone(), result.structured.clone());
        prop_assert_eq!(seen(&result), seen(&full), "{}: {}: fast path and full path differ", tool, args);
    }
    Ok(())
}

fn agree(tool: &'static str) {
    let case = case(tool);
    let schema = schema_of(tool);
    let inputs = prop_oneof![
        (generated(&case), any::<bool>()).prop_map(|(args, text)| (args, None, text)),
        (valid(&case), mutation(), any::<bool>()).prop_map(|(args, m, text)| (args, Some(m), text)),
    ];
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(10_000) });
    runner
        .run(&inputs, |(args, mutation, as_text)| {
            let args = match &mutation {
                Some(mutation) => mutate(args, mutation, &schema),
                None => args,
            };
            check(tool, &schema, &args, as_text)
        })
        .unwrap();
}

/// Text the generators do not write (whitespace, escapes, repeated keys,
/// nulls, integral floats, deep nesting, malformed JSON) gets the same
/// result on the fast path as on the full path.
#[test]
fn tricky_texts_get_the_same_result_on_the_fast_path_and_the_full_path() {
    let deep = format!(r#"{{"order_id":"A-1","tags":{}"x"{}}}"#, "[".repeat(70), "]".repeat(70));
    let deep_meta = format!(r#"{{"weight":1,"meta":{}1{}}}"#, "[".repeat(63), "]".repeat(63));
    let deeper_meta = format!(r#"{{"weight":1,"meta":{}1{}}}"#, "[".repeat(64), "]".repeat(64));
    let texts: Vec<(&str, String)> = [
        ("lookup", r#"{"order_id":"A-1","tags":[]}"#),
        ("lookup", "  { \"order_id\" : \"A-1\" , \"tags\" : [ \"x\" ] , \"limit\" : 3 }  "),
        ("lookup", "{\n\t\"order_id\":\"A-1\",\r\n\"tags\":[]}"),
        ("lookup", r#"{"order_\u0069d":"A-1","tags":[]}"#),
        ("lookup", r#"{"order_id":"A\u002d1","tags":["\ud83d\ude00"]}"#),
        ("lookup", r#"{"order_id":"A-1","order_id":"B-2","tags":[]}"#),
        ("lookup", r#"{"order_id":"A-1","tags":[]} x"#),
        ("lookup", r#"{"order_id":"A-1","tags":[],}"#),
        ("lookup", r#"{"order_id":"A-1","tags":[],"limit":null}"#),
        ("lookup", r#"{"order_id":"A-1","tags":[],"with_items":null}"#),
        ("lookup", r#"{"order_id":"A-1","tags":[],"limit":5.0}"#),
        ("lookup", r#"{"order_id":"A-1","tags":[],"limit":5e0}"#),
        ("lookup", r#"{"order_id":"A-1","tags":[],"limit":5.5}"#),
        ("lookup", r#"{"order_id":"A-1","tags":[],"limit":-1}"#),
        ("lookup", r#"{"order_id":"A-1","tags":[],"limit":4294967296}"#),
        ("lookup", r#"{"order_id":"A-1","tags":[],"extra":1}"#),
        ("lookup", r#"{"order_id":"A-1"}"#),
        ("lookup", r#"{"order_id":1,"tags":[]}"#),
        ("lookup", "{}"),
        ("lookup", ""),
        ("lookup", "null"),
        ("lookup", "[]"),
        ("lookup", "{"),
        ("lookup", r#"{"order_id":"A-1","tags":[]"#),
        ("lookup", "\u{feff}{\"order_id\":\"A-1\",\"tags\":[]}"),
        ("lookup", "{\"order_id\":\"A\nB\",\"tags\":[]}"),
        ("lookup", "{\"order\nid\":\"A\",\"tags\":[]}"),
        ("lookup", &deep),
        ("measure", r#"{"weight":2.5}"#),
        ("measure", r#"{"weight":5.0}"#),
        ("measure", r#"{"weight":1e400}"#),
        ("measure", r#"{"weight":-0.0,"meta":{"a":null,"b":1.0,"c":[1,2.50]}}"#),
        ("measure", r#"{"weight":3,"meta":{"a":"b"}}"#),
        ("measure", r#"{"weight":3,"meta":null}"#),
        ("measure", &deep_meta),
        ("measure", &deeper_meta),
        ("tag", r#"{"label":"x"}"#),
        ("tag", r#"{"label":"x","count":2}"#),
        ("tag", r#"{"label":"x","name":"y"}"#),
        ("tag", r#"{"name":"x"}"#),
        ("tag", r#"{"label":"x","count":2.0}"#),
        ("tag", r#"{"label":"x","count":null}"#),
        ("tag", r#"{"label":"x","label":"y"}"#),
        ("vote", r#"{"choice":"a","weight":3}"#),
        ("vote", r#"{"choice":"a","weight":7}"#),
        ("vote", r#"{"choice":"a","weight":70}"#),
        ("vote", r#"{"choice":"a","weight":7.0}"#),
        ("vote", r#"{"choice":"a","weight":"7"}"#),
        ("vote", r#"{"choice":"a"}"#),
        ("wipe", r#"{"record":"r-1"}"#),
        ("wipe", r#"{"record":"r-1","force":null}"#),
        ("wipe", r#"{"record":"r-1","force":1}"#),
        ("lookup_order", r#"{"order_id":"A-1002"}"#),
        ("lookup_order", r#"{"order_id":"nope"}"#),
        ("refund", r#"{"order_id":"A-1002","amount_cents":100,"reason":"broken"}"#),
        ("scale", r#"{"ratio":-0.0}"#),
        ("scale", r#"{"ratio":-0,"offset":-0}"#),
        ("scale", r#"{"ratio":1,"offset":-0.0}"#),
        ("scale", r#"{"ratio":1,"offset":-9223372036854775808}"#),
        ("scale", r#"{"ratio":1,"offset":-9223372036854775809}"#),
        ("scale", r#"{"ratio":1,"offset":-9223372036854775808.0}"#),
        ("scale", r#"{"ratio":1,"offset":9223372036854775808}"#),
        ("scale", r#"{"ratio":1,"offset":18446744073709551616}"#),
        ("settle", r#"{"big":18446744073709551615,"signed":-9223372036854775808,"ratio":-0.0}"#),
        ("settle", r#"{"big":18446744073709551616,"signed":0,"ratio":1}"#),
        ("settle", r#"{"big":0,"signed":-9223372036854775809,"ratio":1}"#),
        ("settle", r#"{"big":0,"signed":340282366920938463463374607431768211455,"ratio":1}"#),
        ("settle", r#"{"big":-0,"signed":-0.0,"ratio":-0,"spare":-0}"#),
        ("book", r#"{"total":18446744073709551615,"entries":[{"delta":-0,"weight":-0.0}]}"#),
        ("book", r#"{"total":18446744073709551616,"entries":[]}"#),
        ("book", r#"{"total":1,"entries":[{"delta":-9223372036854775809,"weight":1}]}"#),
    ]
    .into_iter()
    .map(|(tool, text)| (tool, text.to_owned()))
    .collect();
    let seen = |result: &CallResult| (result.kind, result.text.clone(), result.error_code.clone(), result.structured.clone());
    let mut fast_successes = 0;
    for (tool, text) in &texts {
        let fast = runtime().block_on(registry().invoke(&Arc::new(Shop::demo()), tool, text.as_str()));
        let full = runtime().block_on(full_path_registry().invoke(&Arc::new(Shop::demo()), tool, text.as_str()));
        assert_eq!(seen(&fast), seen(&full), "{tool}: {text:?}");
        fast_successes += usize::from(fast.kind == ResultKind::Success);
    }
    assert!(fast_successes >= 10, "only {fast_successes} of the texts succeeded: the comparison says little");
}

/// Numbers at the edges (beyond 64 bits, `-0`) are read alike on every
/// path: as text on the fast path and on the full path, and as a value
/// already parsed (as MCP hands it over).
#[test]
fn numbers_at_the_edges_read_alike_as_text_and_as_a_parsed_value() {
    // (tool, arguments, `Ok(output)` or `Err(the property the refusal names)`)
    let cases: &[(&str, &str, Result<&str, &str>)] = &[
        ("scale", r#"{"ratio":-0.0}"#, Ok("-0 0")),
        ("scale", r#"{"ratio":-0}"#, Ok("-0 0")),
        ("scale", r#"{"ratio":2,"offset":-0}"#, Ok("2 0")),
        ("scale", r#"{"ratio":2,"offset":-0.0}"#, Ok("2 0")),
        ("scale", r#"{"ratio":2,"offset":-9223372036854775808}"#, Ok("2 -9223372036854775808")),
        ("scale", r#"{"ratio":2,"offset":-9223372036854775809}"#, Err("offset")),
        ("scale", r#"{"ratio":2,"offset":-1e30}"#, Err("offset")),
        ("scale", r#"{"ratio":2,"offset":9223372036854775808}"#, Err("offset")),
        (
            "settle",
            r#"{"big":18446744073709551615,"signed":-9223372036854775808,"ratio":-0.0}"#,
            Ok("18446744073709551615 -9223372036854775808 -0 None"),
        ),
        ("settle", r#"{"big":-0,"signed":18446744073709551615,"ratio":0.5,"spare":-0.0}"#, Ok("0 18446744073709551615 0.5 Some(0)")),
        ("settle", r#"{"big":18446744073709551616,"signed":0,"ratio":1}"#, Err("big")),
        ("settle", r#"{"big":340282366920938463463374607431768211455,"signed":0,"ratio":1}"#, Err("big")),
        ("settle", r#"{"big":0,"signed":-9223372036854775809,"ratio":1}"#, Err("signed")),
        ("settle", r#"{"big":0,"signed":18446744073709551616,"ratio":1}"#, Err("signed")),
        ("settle", r#"{"big":0,"signed":0,"ratio":1,"spare":-9223372036854775809}"#, Err("spare")),
        (
            "book",
            r#"{"total":18446744073709551615,"entries":[{"delta":-0,"weight":-0.0},{"delta":-9223372036854775808,"weight":5}]}"#,
            Ok("18446744073709551615 [(0, -0.0), (-9223372036854775808, 5.0)]"),
        ),
        ("book", r#"{"total":18446744073709551616,"entries":[]}"#, Err("total")),
        ("book", r#"{"total":1,"entries":[{"delta":-9223372036854775809,"weight":1}]}"#, Err("delta")),
        ("book", r#"{"total":1,"entries":[{"delta":18446744073709551616,"weight":1}]}"#, Err("delta")),
    ];
    let seen = |result: &CallResult| (result.kind, result.text.clone(), result.error_code.clone(), result.structured.clone());
    let mut wrong = Vec::new();
    for &(tool, text, expected) in cases {
        let value: Value = serde_json::from_str(text).unwrap();
        let fast = runtime().block_on(registry().invoke(&Arc::new(Shop::demo()), tool, text));
        let full = runtime().block_on(full_path_registry().invoke(&Arc::new(Shop::demo()), tool, text));
        let parsed = runtime().block_on(registry().invoke(&Arc::new(Shop::demo()), tool, value));
        if seen(&fast) != seen(&full) {
            wrong.push(format!("{tool}: {text}: the fast path and the full path differ: {} / {}", fast.text, full.text));
        }
        if seen(&fast) != seen(&parsed) {
            wrong.push(format!("{tool}: {text}: text and a parsed value differ: {} / {}", fast.text, parsed.text));
        }
        match expected {
            Ok(output) if (fast.kind, fast.text.as_str()) != (ResultKind::Success, output) => {
                wrong.push(format!("{tool}: {text}: expected {output:?}, got {:?} {}", fast.kind, fast.text));
            }
            Err(property) if fast.kind != ResultKind::InvalidArguments || !fast.text.contains(property) => {
                wrong.push(format!("{tool}: {text}: expected a refusal naming `{property}`, got {:?} {}", fast.kind, fast.text));
            }
            _ => {}
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The schema says what a 128-bit integer accepts: `i64::MIN..=u64::MAX`,
/// as a parameter and nested in a derived input's `$defs`.
#[test]
fn wide_integers_state_their_range_in_the_schema() {
    let settle = registry().definition("settle").unwrap().input_schema.clone();
    let range = |schema: &Value| (schema["minimum"].clone(), schema["maximum"].clone());
    assert_eq!(range(&settle["properties"]["big"]), (json!(0), json!(u64::MAX)));
    assert_eq!(range(&settle["properties"]["signed"]), (json!(i64::MIN), json!(u64::MAX)));
    assert_eq!(range(&settle["properties"]["spare"]), (json!(i64::MIN), json!(u64::MAX)));
    let book = registry().definition("book").unwrap().input_schema.clone();
    assert_eq!(range(&book["properties"]["total"]), (json!(0), json!(u64::MAX)));
    assert_eq!(range(&book["$defs"]["Entry"]["properties"]["delta"]), (json!(i64::MIN), json!(u64::MAX)));
    let offset = &registry().definition("scale").unwrap().input_schema["properties"]["offset"];
    assert_eq!(range(offset), (json!(i64::MIN), json!(i64::MAX)), "a 64-bit type states its own range");
}

#[test]
fn classify_request_agrees_with_its_schema() {
    agree("classify_request");
}

#[test]
fn lookup_order_agrees_with_its_schema() {
    agree("lookup_order");
}

#[test]
fn refund_agrees_with_its_schema() {
    agree("refund");
}

#[test]
fn issue_voucher_agrees_with_its_schema() {
    agree("issue_voucher");
}

#[test]
fn hand_over_agrees_with_its_schema() {
    agree("hand_over");
}

#[test]
fn transfer_with_constraints_agrees_with_its_schema() {
    agree("transfer");
}

#[test]
fn a_tool_on_the_fast_path_agrees_with_its_schema() {
    agree("lookup");
}

#[test]
fn an_enum_agrees_with_its_schema() {
    agree("pick");
}

#[test]
fn a_nested_struct_agrees_with_its_schema() {
    agree("ship");
}

#[test]
fn a_float_and_an_integer_on_the_fast_path_agree_with_their_schema() {
    agree("scale");
}

#[test]
fn wide_integers_agree_with_their_schema() {
    agree("settle");
}

#[test]
fn a_derived_input_with_nested_wide_integers_agrees_with_its_schema() {
    agree("book");
}

#[test]
fn the_generators_reach_both_verdicts() {
    // Guards against a generator that only ever makes valid (or invalid)
    // inputs, which would make the agreement above vacuous.
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for tool in
        ["classify_request", "lookup_order", "refund", "issue_voucher", "hand_over", "transfer", "lookup", "pick", "ship", "scale", "settle", "book"]
    {
        let case = case(tool);
        let schema = schema_of(tool);
        let strategy = generated(&case);
        let (mut yes, mut no) = (0, 0);
        for _ in 0..500 {
            let args = strategy.new_tree(&mut runner).unwrap().current();
            if schema.accepts(&args) { yes += 1 } else { no += 1 }
        }
        assert!(yes > 10 && no > 10, "{tool}: {yes} valid, {no} invalid of 500");
    }
}

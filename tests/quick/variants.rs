//! Variants of a typed tool, made at registration (`Variant::of`): other
//! keys (name, title, description, tags, policy, approval, a narrowed input
//! schema) over the same function, checked at build as the macro checks its
//! own, the tool itself unchanged.
//!
//! ```text
//! cargo test --test quick variants::
//! ```

use std::sync::Arc;

use serde_json::json;
use tool_runtime::prelude::*;
use tool_runtime::{BuildProblem, CallOutcome, Origin, PolicyKind, ResultKind, Variant};

/// Refund part of an order.
#[tool(tags("billing"), title = "Refund", policy = under_a_thousand)]
async fn refund(
    order_id: String,
    /// In cents.
    cents: u32,
    /// Where the money goes.
    #[tool(default = String::from("card"))]
    to: String,
) -> String {
    format!("refunded {cents} on {order_id} to {to}")
}

fn under_a_thousand<App>(input: &refund, _ctx: &Ctx<App>) -> Verdict {
    if input.cents > 100_000 { Verdict::deny("Refunds over 1,000.00 go through finance.") } else { Verdict::Allow }
}

fn registry(variants: Vec<BoxedTool<()>>) -> Result<Registry<()>, tool_runtime::BuildError> {
    Registry::builder().tools(tools![refund]).tools(variants).build()
}

#[tokio::test]
async fn a_variant_has_keys_of_its_own_and_leaves_the_tool_unchanged() {
    let alone = registry(Vec::new()).unwrap();
    let desk_refund = Variant::of::<refund>()
        .name("desk_refund")
        .title("Refund at the desk")
        .description("Refund part of an order, up to 50.00, to the card.")
        .tags(["desk"])
        .narrow(|schema| {
            schema["properties"]["cents"]["maximum"] = json!(5_000);
            schema["properties"]["to"]["enum"] = json!(["card"]);
        })
        .needs_approval();
    let registry = registry(vec![desk_refund.into()]).unwrap();
    assert_eq!(registry.definition("refund"), alone.definition("refund"), "the tool itself is unchanged");

    let variant = registry.definition("desk_refund").unwrap();
    assert_eq!(variant.title.as_deref(), Some("Refund at the desk"));
    assert_eq!(variant.description, "Refund part of an order, up to 50.00, to the card.");
    assert_eq!((variant.tags.as_slice(), variant.origin), (&["desk".to_owned()][..], Origin::Typed));
    assert_eq!(variant.input_schema["properties"]["cents"]["maximum"], 5_000);
    assert_eq!(variant.policy, PolicyKind::Predicate, "the tool's predicate, raised");

    let app = Arc::new(());
    // Outside the narrowed schema, as text and as a value: the model reads the field.
    for too_much in [json!({"order_id": "A-1", "cents": 9_000}), json!({"order_id": "A-1", "cents": 500, "to": "cash"})] {
        let refused = registry.invoke(&app, "desk_refund", too_much.to_string()).await;
        assert_eq!(refused.kind, ResultKind::InvalidArguments, "{}", refused.text);
        assert_eq!(registry.invoke(&app, "desk_refund", too_much).await.kind, ResultKind::InvalidArguments);
    }
    // The tool's own policy still denies; what it allows now waits for a human.
    let denied = registry.invoke(&app, "refund", r#"{"order_id": "A-1", "cents": 200000}"#).await;
    assert_eq!(denied.kind, ResultKind::Denied);
    let CallOutcome::NeedsApproval(pending) = registry.call(&app, "desk_refund", r#"{"order_id": "A-1", "cents": 500}"#).await else {
        panic!("the variant raises the approval");
    };
    // An edited input is validated against the variant's schema too.
    let edited = registry.approve_with(pending, r#"{"order_id": "A-1", "cents": 7000}"#).await;
    assert_eq!(edited.kind, ResultKind::InvalidArguments, "{}", edited.text);
    let CallOutcome::NeedsApproval(pending) = registry.call(&app, "desk_refund", r#"{"order_id": "A-1", "cents": 500}"#).await else {
        panic!("the variant raises the approval");
    };
    assert_eq!(registry.approve(pending).await.text, "refunded 500 on A-1 to card", "the tool's own function runs");
    let tool = registry.invoke(&app, "refund", r#"{"order_id": "A-1", "cents": 9000, "to": "cash"}"#).await;
    assert_eq!(tool.text, "refunded 9000 on A-1 to cash");

    // The variant's tags are what a user's floor reads.
    let user = Arc::new(UserContext::new("u-1").with_floor(ApprovalFloor::default().tag("billing")));
    let by_tag = registry.call(&app, "refund", r#"{"order_id": "A-1", "cents": 1}"#).user(user).await;
    assert!(matches!(by_tag, CallOutcome::NeedsApproval(_)), "{by_tag:?}");
}

#[tokio::test]
async fn a_variants_policy_replaces_the_tools_and_a_typed_predicate_reads_the_tools_input() {
    let frozen = Variant::of::<refund>().name("frozen_refund").policy(PolicyKind::Deny);
    let card_only = Variant::of::<refund>()
        .name("card_refund")
        .policy_fn(|input: &refund, _ctx| if input.to == "card" { Verdict::Allow } else { Verdict::deny("Refund to the card only.") });
    let registry = registry(vec![frozen.into(), card_only.into()]).unwrap();
    let app = Arc::new(());
    assert_eq!(registry.invoke(&app, "frozen_refund", r#"{"order_id": "A-1", "cents": 1}"#).await.kind, ResultKind::Denied);
    let cash = registry.invoke(&app, "card_refund", r#"{"order_id": "A-1", "cents": 1, "to": "cash"}"#).await;
    assert!(cash.text.contains("Refund to the card only."), "{}", cash.text);
    // The variant's predicate replaces the tool's: a large refund to the card runs.
    let large = registry.invoke(&app, "card_refund", r#"{"order_id": "A-1", "cents": 200000}"#).await;
    assert_eq!(large.text, "refunded 200000 on A-1 to card");
}

#[test]
fn a_variants_contradictions_fail_the_build_as_the_macros_fail_the_compile() {
    let problems = |variant: Variant<(), refund>| registry(vec![variant.into()]).expect_err("the build refuses it").problems;
    let reason = |problems: Vec<BuildProblem>| match problems.as_slice() {
        [BuildProblem::Variant { tool, of, reason }] => {
            assert_eq!((tool.as_str(), of.as_str()), ("other_refund", "refund"));
            reason.clone()
        }
        other => panic!("{other:?}"),
    };
    let named = || Variant::of::<refund>().name("other_refund");

    let both = reason(problems(named().policy(PolicyKind::Deny).needs_approval()));
    assert!(both.starts_with("`policy(Deny)` contradicts `needs_approval()`"), "{both}");
    let twice = reason(problems(named().tags(["desk", "desk"])));
    assert!(twice.contains("`tags` lists \"desk\" twice"), "{twice}");

    // Narrowing only: a looser bound, a removed requirement and a new property all widen.
    let looser = reason(problems(named().narrow(|schema| schema["properties"]["cents"]["maximum"] = json!(u64::MAX))));
    assert!(looser.contains("/properties/cents"), "{looser}");
    let optional = reason(problems(named().narrow(|schema| schema["required"] = json!(["order_id"]))));
    assert!(optional.contains("would accept more than the tool's own"), "{optional}");
    let added = reason(problems(named().narrow(|schema| schema["properties"]["note"] = json!({"type": "string"}))));
    assert!(added.contains("/properties: `note` is added"), "{added}");
    let panicked = reason(problems(named().narrow(|_| panic!("a narrowing with a bug"))));
    assert!(panicked.contains("its narrowing function panicked: a narrowing with a bug"), "{panicked}");

    // A name as any tool's; the tool's own name twice.
    let error = registry(vec![Variant::of::<refund>().name("Other refund").into()]).unwrap_err();
    assert!(matches!(error.problems.as_slice(), [BuildProblem::InvalidName { .. }]), "{error}");
    let error = registry(vec![Variant::of::<refund>().into()]).unwrap_err();
    assert!(matches!(error.problems.as_slice(), [BuildProblem::DuplicateName { .. }]), "{error}");
    assert!(error.to_string().contains("two tools are named `refund`"), "{error}");
}

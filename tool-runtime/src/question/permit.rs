//! An approval as a permit: what a human approved is bound to the call it
//! was asked for, and a permit whose binding no longer matches runs
//! nothing.
//!
//! A call parked for approval records its [`Binding`]: the digest of its
//! arguments (in canonical form: every object's members sorted, so the
//! same object written in another order is the same call) and the digest
//! of its tool's definition (its name, input schema and policy). Beside
//! them the parked call holds the principal (the user it is for) and its
//! expiry. When a decision to run it is carried out, [`check`] compares
//! the binding with the call about to run: the tool's definition now (a
//! tool changed between park and decision, by a deploy, is another tool),
//! the arguments it runs with (unless a human approved edited ones, which
//! are then the ones approved), and the principal it runs for. Any
//! difference runs nothing, and says which ([`PermitMismatch`]). A permit
//! is used once: its call's effect is started once under the call's key,
//! and the approval is settled once carried out.

use std::fmt;

use serde_json::Value;

use crate::definition::ToolDefinition;
use crate::memory::asked::{Binding, arguments_digest, definition_digest};

/// Why an approved call was not run: its permit's binding no longer
/// matches the call about to run.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PermitMismatch {
    /// The tool's definition (name, input schema or policy) changed
    /// between the call's parking and the decision's carrying out.
    Definition,
    /// The call carries other arguments than those approved.
    Arguments,
    /// The call would run for another principal than the one it was
    /// approved for.
    Principal {
        /// The user the call was parked for.
        parked: String,
        /// The user it would run for now.
        now: Option<String>,
    },
}

impl fmt::Display for PermitMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PermitMismatch::Definition => f.write_str("the tool's definition (its name, input schema or policy) changed since the call was approved"),
            PermitMismatch::Arguments => f.write_str("the call's arguments differ from the ones approved"),
            PermitMismatch::Principal { parked, now } => {
                write!(f, "the call was approved for user {parked:?} and would run for {}", now.as_deref().unwrap_or("no user"))
            }
        }
    }
}

/// Checks the permit of a call parked for `parked_user` with `binding`,
/// about to run as a call of `definition` for `principal`, with
/// `arguments` (`None`: a human approved edited arguments, which are the
/// ones approved). A call parked for no user is bound to its run alone.
pub(crate) fn check(
    binding: &Binding,
    parked_user: Option<&str>,
    definition: &ToolDefinition,
    arguments: Option<&Value>,
    principal: Option<&str>,
) -> Result<(), PermitMismatch> {
    if binding.definition.as_ref().is_some_and(|bound| *bound != definition_digest(definition)) {
        return Err(PermitMismatch::Definition);
    }
    if let Some(arguments) = arguments
        && binding.arguments != arguments_digest(arguments)
    {
        return Err(PermitMismatch::Arguments);
    }
    match parked_user {
        Some(parked) if Some(parked) != principal => Err(PermitMismatch::Principal { parked: parked.to_owned(), now: principal.map(str::to_owned) }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::PolicyKind;

    fn definition(schema: Value, policy: PolicyKind) -> ToolDefinition {
        let mut definition = ToolDefinition::new("refund", "Refund an order.", schema);
        definition.policy = policy;
        definition
    }

    #[test]
    fn a_permit_runs_only_the_call_it_was_given_for() {
        let schema = json!({"type": "object", "properties": {"order": {"type": "string"}}});
        let refund = definition(schema.clone(), PolicyKind::NeedsApproval);
        let binding = Binding::new(&refund, &json!({"order": "A-1", "cents": 5}));
        let same = json!({"cents": 5, "order": "A-1"});
        assert_eq!(check(&binding, Some("u-1"), &refund, Some(&same), Some("u-1")), Ok(()), "members in another order are the same call");
        assert_eq!(check(&binding, Some("u-1"), &refund, Some(&json!({"order": "A-2"})), Some("u-1")), Err(PermitMismatch::Arguments));
        assert_eq!(check(&binding, Some("u-1"), &refund, None, Some("u-1")), Ok(()), "edited arguments are the ones approved");
        let wider =
            definition(json!({"type": "object", "properties": {"order": {"type": "string"}, "all": {"type": "boolean"}}}), PolicyKind::NeedsApproval);
        assert_eq!(check(&binding, Some("u-1"), &wider, Some(&same), Some("u-1")), Err(PermitMismatch::Definition));
        let allowed = definition(schema, PolicyKind::Allow);
        assert_eq!(check(&binding, Some("u-1"), &allowed, Some(&same), Some("u-1")), Err(PermitMismatch::Definition), "the policy is bound too");
        let other = check(&binding, Some("u-1"), &refund, Some(&same), Some("u-2"));
        assert_eq!(other, Err(PermitMismatch::Principal { parked: "u-1".into(), now: Some("u-2".into()) }));
        assert_eq!(check(&binding, None, &refund, Some(&same), Some("u-2")), Ok(()), "a call parked for no user is bound to its run");
        let before = Binding::of_arguments(&same);
        assert_eq!(check(&before, None, &wider, Some(&same), None), Ok(()), "no definition was bound before version 9");
    }
}

//! An edited input judged again before it is journaled, as
//! [`Registry::approve_with`] judges it: through the guard, parsing and
//! validation (`pipeline::read_input`, stages 1 to 3) and the tool's
//! policy (`pipeline::judge`, stage 4), in the context of the user the
//! call is for. A refusal is shown to the approver, and nothing is
//! journaled: the call still waits, to be rejected with a reason or edited
//! again. The run judges the input once more when it carries the decision
//! out, with its own user and state.

use std::sync::Arc;

use serde_json::Value;
use smol_str::SmolStr;

use crate::call::Arguments;
use crate::context::{CallState, Ctx, UserContext};
use crate::journal::ParkedCall;
use crate::policy::Verdict;
use crate::registry::Registry;

/// What the registry makes of an edited input.
#[derive(Debug, PartialEq)]
pub(crate) enum Recheck {
    /// The input may be approved (the policy allows it or asks a human,
    /// and a human is approving it).
    Accepted,
    /// The input does not fit the tool: what the model would read.
    Invalid(String),
    /// The policy refuses the input (or could not decide): why.
    Refused(String),
    /// The registry has no tool of the call's name.
    UnknownTool,
}

/// Judges `edited`, an input for `call`, as `approve_with` would.
pub(crate) async fn recheck<App: Send + Sync + 'static>(registry: &Registry<App>, app: &Arc<App>, call: &ParkedCall, edited: &Value) -> Recheck {
    let tools = registry.tools();
    let Some(entry) = tools.entry(&call.tool) else { return Recheck::UnknownTool };
    let id = SmolStr::new(&call.call_id);
    let mut input = match crate::pipeline::read_input(tools, entry, &id, Arguments::Value(edited.clone())) {
        Ok(input) => input,
        Err(result) => return Recheck::Invalid(result.text),
    };
    let user = call.user_id.as_deref().map(UserContext::new).unwrap_or_default();
    let ctx = Ctx::new(app.clone()).with_user(user);
    let mut state = CallState::shared(&ctx);
    match crate::pipeline::judge(tools, entry, &mut input, &mut state).await {
        Ok(Verdict::Deny { reason }) => Recheck::Refused(reason.unwrap_or_else(|| "The tool's policy refuses this input.".to_owned())),
        Ok(_) => Recheck::Accepted,
        Err(why) => Recheck::Refused(crate::pipeline::no_verdict(entry, &id, why).text),
    }
}

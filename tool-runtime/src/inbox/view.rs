//! What the pages show of the journal's records: a waiting call with its
//! tool's title and description and its arguments labelled from the input
//! schema, and a decision with its decider, time, kind and outcome. Values
//! are shown as the model wrote them (money in cents stays in cents, a
//! date stays the text it was); the templates escape every one.

use std::time::{SystemTime, UNIX_EPOCH};

use super::form;
use crate::journal::{Approval, Decision, EXPIRED_BY, GONE_BY, SettledDecision};
use crate::registry::Registry;

/// One argument as shown: the label from the parameter's docs, the
/// property's name, and the value as written.
pub(crate) struct Argument {
    pub(crate) label: String,
    pub(crate) name: String,
    pub(crate) value: String,
}

/// A call waiting for a decision.
pub(crate) struct Waiting {
    pub(crate) run_id: String,
    pub(crate) call_id: String,
    pub(crate) user: String,
    pub(crate) tool: String,
    pub(crate) title: String,
    pub(crate) description: String,
    pub(crate) asked: String,
    pub(crate) asked_ms: i64,
    pub(crate) expires: Option<String>,
    pub(crate) expires_ms: Option<i64>,
    pub(crate) arguments: Vec<Argument>,
    /// Whether the registry knows the tool, so its input can be edited.
    pub(crate) editable: bool,
}

/// A decision made, and what came of it.
pub(crate) struct Made {
    pub(crate) run_id: String,
    pub(crate) call_id: String,
    pub(crate) user: String,
    pub(crate) tool: String,
    /// `approved`, `edited`, `rejected` or `expired`.
    pub(crate) how: &'static str,
    pub(crate) by: String,
    pub(crate) at: String,
    /// The rejection's reason, or the edited input (as JSON).
    pub(crate) detail: Option<String>,
    /// What came of the call, in words.
    pub(crate) outcome: String,
}

/// A waiting call as the list shows it.
pub(crate) fn waiting<App: Send + Sync + 'static>(registry: &Registry<App>, approval: &Approval) -> Waiting {
    let call = &approval.call;
    let definition = registry.definition(&call.tool);
    let arguments = match definition {
        Some(definition) => form::fields(&definition.input_schema, &call.input)
            .into_iter()
            .filter(|field| call.input.get(&field.name).is_some())
            .map(|field| Argument { value: form::shown(&call.input[&field.name]), label: field.label, name: field.name })
            .collect(),
        None => call
            .input
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, value)| Argument { label: name.clone(), name: name.clone(), value: form::shown(value) })
            .collect(),
    };
    Waiting {
        run_id: call.run_id.clone(),
        call_id: call.call_id.clone(),
        user: call.user_id.clone().unwrap_or_else(|| "(no user)".to_owned()),
        tool: call.tool.clone(),
        title: definition.and_then(|d| d.title.clone()).unwrap_or_else(|| call.tool.clone()),
        description: definition.map(|d| d.description.clone()).unwrap_or_else(|| "This tool is not in the inbox's registry.".to_owned()),
        asked: time(call.parked_at),
        asked_ms: millis(call.parked_at),
        expires: call.expires_at.map(time),
        expires_ms: call.expires_at.map(millis),
        arguments,
        editable: definition.is_some(),
    }
}

/// A decision as the list shows it.
pub(crate) fn made(decision: &SettledDecision) -> Made {
    let call = &decision.approval.call;
    let (how, by, at, detail) = match &decision.approval.decided {
        Some(decided) => {
            let (how, detail) = match &decided.decision {
                Decision::Approve => ("approved", None),
                Decision::ApproveEdited(input) => ("edited", Some(input.to_string())),
                Decision::Reject(_) if decided.by == EXPIRED_BY => ("expired", None),
                Decision::Reject(text) => ("rejected", Some(text.clone()).filter(|t| !t.is_empty())),
            };
            let by = match decided.by.as_str() {
                EXPIRED_BY => "nobody: it expired".to_owned(),
                GONE_BY => "the runtime: its run could no longer carry it out".to_owned(),
                by => by.to_owned(),
            };
            (how, by, time(decided.at), detail)
        }
        None => ("approved", String::new(), String::new(), None),
    };
    let outcome = match (&decision.outcome, decision.settled_at) {
        (Some(outcome), _) => format!("{} at {}: {}", outcome.kind.as_str(), time(outcome.at), outcome.text),
        (None, Some(settled)) => format!("carried out by its run at {}", time(settled)),
        (None, None) => "waiting for its run to carry the decision out".to_owned(),
    };
    Made {
        run_id: call.run_id.clone(),
        call_id: call.call_id.clone(),
        user: call.user_id.clone().unwrap_or_else(|| "(no user)".to_owned()),
        tool: call.tool.clone(),
        how,
        by,
        at,
        detail,
        outcome,
    }
}

/// Milliseconds since the Unix epoch, as the page's script reads times.
pub(crate) fn millis(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A time as `2026-12-03 16:40:12 UTC` (the page's script shows it in the
/// reader's own zone too).
pub(crate) fn time(time: SystemTime) -> String {
    let seconds = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil(days);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC", rest / 3600, rest % 3600 / 60, rest % 60)
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn times_read_as_utc_dates() {
        assert_eq!(time(UNIX_EPOCH), "1970-01-01 00:00:00 UTC");
        assert_eq!(time(UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29 00:00:00 UTC");
        assert_eq!(time(UNIX_EPOCH + Duration::from_millis(1_796_316_012_345)), "2026-12-03 16:40:12 UTC");
    }
}

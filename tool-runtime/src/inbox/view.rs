//! What the pages show of the journal's records: a waiting call with its
//! tool's title and description and its arguments labelled from the input
//! schema, and a decision with its decider, time, kind and outcome. Values
//! are shown as the model wrote them (money in cents stays in cents, a
//! date stays the text it was); the templates escape every one. A list
//! shows a preview of each value (`preview`) and of at most
//! [`ARGUMENTS_SHOWN`] arguments; a call's own page shows them whole.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::form;
use super::markup::Doc;
use super::preview::{self, Preview};
use crate::journal::{Approval, Decision, EXPIRED_BY, GONE_BY, SettledDecision};
use crate::memory::{Ask, Question};
use crate::registry::Registry;

/// The most arguments of one call a list shows.
pub(crate) const ARGUMENTS_SHOWN: usize = 20;

/// How much of a call's arguments a page shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shown {
    /// A list's: a preview of each value, and of the first arguments.
    Preview,
    /// The call's own page: every argument, whole.
    Whole,
}

/// One argument as shown: the label from the parameter's docs, the
/// property's name, and the value as written (maybe cut).
pub(crate) struct Argument {
    pub(crate) label: Doc,
    pub(crate) name: String,
    pub(crate) value: String,
    /// The bytes of the value a preview left out.
    pub(crate) left_out: Option<usize>,
}

/// A call waiting for a decision.
pub(crate) struct Waiting {
    pub(crate) run_id: String,
    pub(crate) call_id: String,
    pub(crate) user: String,
    pub(crate) tool: String,
    pub(crate) title: String,
    pub(crate) description: Doc,
    pub(crate) asked: String,
    pub(crate) asked_ms: i64,
    pub(crate) expires: Option<String>,
    pub(crate) expires_ms: Option<i64>,
    pub(crate) arguments: Vec<Argument>,
    /// Arguments a preview left out.
    pub(crate) more_arguments: usize,
    /// Whether a preview left anything out, so the list links to the call's page.
    pub(crate) cut: bool,
    /// Whether the registry knows the tool, so its input can be edited
    /// (an approval's).
    pub(crate) editable: bool,
    /// The form the tool asks its user to fill in, for a tool's question;
    /// `None` for an approval.
    pub(crate) asks: Option<Asked>,
}

/// A tool's question, as the form the approver answers: its message, and
/// the fields of its schema, filled with the schema's defaults.
pub(crate) struct Asked {
    pub(crate) message: String,
    pub(crate) fields: Vec<form::Field>,
    /// What a list shows under the fields: nothing (an answer the server
    /// could not read is named in the page's notice).
    pub(crate) problems: Vec<form::Problem>,
}

/// A decision made, and what came of it.
pub(crate) struct Made {
    pub(crate) run_id: String,
    pub(crate) call_id: String,
    pub(crate) user: String,
    pub(crate) tool: String,
    /// `approved`, `edited`, `rejected`, `expired`, `answered` or
    /// `cancelled`.
    pub(crate) how: &'static str,
    pub(crate) by: String,
    pub(crate) at: String,
    /// The rejection's reason, or the edited input (as JSON), previewed.
    pub(crate) detail: Option<Preview>,
    /// What came of the call, in words, previewed.
    pub(crate) outcome: Preview,
}

/// A waiting call as a page shows it.
pub(crate) fn waiting<App: Send + Sync + 'static>(registry: &Registry<App>, approval: &Approval, shown: Shown) -> Waiting {
    let call = &approval.call;
    let definition = registry.definition(&call.tool);
    // Each argument with its label: the schema's properties in its order,
    // then any other the input holds.
    let labelled: Vec<(String, &str, &Value)> = match definition {
        Some(definition) => form::fields(&definition.input_schema, &Value::Null)
            .into_iter()
            .filter_map(|field| {
                let (name, value) = call.input.as_object()?.get_key_value(&field.name)?;
                Some((field.label, name.as_str(), value))
            })
            .chain(unlabelled(&call.input, Some(&definition.input_schema)))
            .collect(),
        None => unlabelled(&call.input, None).collect(),
    };
    let total = labelled.len();
    let keep = if shown == Shown::Preview { ARGUMENTS_SHOWN } else { total };
    let arguments: Vec<Argument> = labelled
        .into_iter()
        .take(keep)
        .map(|(label, name, value)| {
            let Preview { text, left_out } = match shown {
                Shown::Preview => preview::value(value),
                Shown::Whole => Preview { text: form::shown(value), left_out: None },
            };
            Argument { label: Doc::new(&label), name: name.to_owned(), value: text, left_out }
        })
        .collect();
    let more_arguments = total - arguments.len();
    Waiting {
        run_id: call.run_id.clone(),
        call_id: call.call_id.clone(),
        user: call.user_id.clone().unwrap_or_else(|| "(no user)".to_owned()),
        tool: call.tool.clone(),
        title: definition.and_then(|d| d.title.clone()).unwrap_or_else(|| call.tool.clone()),
        description: Doc::new(definition.map_or("This tool is not in the inbox's registry.", |d| d.description.as_str())),
        asked: time(call.parked_at),
        asked_ms: millis(call.parked_at),
        expires: call.expires_at.map(time),
        expires_ms: call.expires_at.map(millis),
        cut: more_arguments > 0 || arguments.iter().any(|argument| argument.left_out.is_some()),
        arguments,
        more_arguments,
        editable: definition.is_some() && matches!(call.question, Question::Approval(_)),
        asks: asked(&call.question),
    }
}

/// The form of a tool's question that asks for one; `None` for any other
/// (an approval, or a completion or the roots, which the MCP client gives).
fn asked(question: &Question) -> Option<Asked> {
    let Question::Tool { ask: Ask::Form { message, schema, .. }, .. } = question else { return None };
    let defaults: serde_json::Map<String, Value> = schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, property)| Some((name.clone(), property.get("default")?.clone())))
        .collect();
    Some(Asked { message: message.clone(), fields: form::fields(schema, &Value::Object(defaults)), problems: Vec::new() })
}

/// The arguments of `input` that `schema` names no property for (every
/// one without a schema), labelled by their names.
fn unlabelled<'a>(input: &'a Value, schema: Option<&'a Value>) -> impl Iterator<Item = (String, &'a str, &'a Value)> + 'a {
    let named = move |name: &str| schema.and_then(|schema| schema.get("properties")?.get(name)).is_some();
    input.as_object().into_iter().flatten().filter(move |(name, _)| !named(name)).map(|(name, value)| (name.clone(), name.as_str(), value))
}

/// A decision as the list shows it.
pub(crate) fn made(decision: &SettledDecision) -> Made {
    let call = &decision.approval.call;
    let (how, by, at, detail) = match &decision.approval.decided {
        Some(decided) => {
            let (how, detail) = match &decided.decision {
                Decision::Approve => ("approved", None),
                Decision::ApproveEdited(input) => ("edited", Some(preview::value(input))),
                Decision::Reject(_) if decided.by == EXPIRED_BY => ("expired", None),
                Decision::Reject(text) => ("rejected", Some(preview::text(text)).filter(|shown| !shown.text.is_empty())),
                Decision::Answer(answer) => ("answered", Some(preview::value(answer))),
                Decision::Cancel => ("cancelled", None),
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
        (Some(outcome), _) => {
            let text = preview::text(&outcome.text);
            Preview { text: format!("{} at {}: {}", outcome.kind.as_str(), time(outcome.at), text.text), left_out: text.left_out }
        }
        (None, Some(settled)) => preview::text(&format!("carried out by its run at {}", time(settled))),
        (None, None) => preview::text("waiting for its run to carry the decision out"),
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

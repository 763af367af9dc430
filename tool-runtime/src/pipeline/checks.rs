//! Stage 3 and the checks of stage 7: the arguments validated and read
//! into the tool's input (and, in a turn that scoped the tool, checked
//! against the scope's schema), and a tool's output and typed failure
//! checked against their schemas where outputs are checked.

use serde_json::Value;
use smol_str::SmolStr;

use super::Input;
use crate::error::ToolError;
use crate::result::{CallResult, ResultKind, lines};
use crate::table::Entry;
use crate::tool::{Output, ParsedFrom};

/// Stage 3 in a turn that scoped the tool: what the model reads when the
/// input, valid for the tool, is outside the turn's scope.
pub(crate) fn out_of_scope<App>(entry: &Entry<App>, call_id: &SmolStr, validator: &jsonschema::Validator, input: &Input<'_>) -> Option<CallResult> {
    let problems = crate::validation::problems(validator, &input.from.to_value());
    (!problems.is_empty())
        .then(|| CallResult::failure(entry.name.clone(), call_id.clone(), ResultKind::InvalidArguments, &lines::schema(&entry.def.name, &problems)))
}

/// Stage 3: validation, and the read into the tool's input.
pub(super) fn validate<App>(entry: &Entry<App>, value: Value) -> Result<Input<'static>, ToolError> {
    let tool = entry.def.name.as_str();
    // Where parsing checks all the schema says, a successful read is the
    // validation; the validator runs only to word a failure.
    if entry.parser_enforces
        && let Value::Object(map) = &value
        && crate::validation::unknown_property(map, entry.properties.names()).is_none()
        && let Ok(input) = entry.tool.parse(map)
    {
        return Ok(Input { value: input, from: ParsedFrom::Value(Box::new(value)) });
    }
    let problems = crate::validation::problems(&entry.validator, &value);
    if !problems.is_empty() {
        return Err(lines::schema(tool, &problems));
    }
    let Value::Object(map) = &value else {
        return Err(lines::schema(tool, &["(root): not an object".to_owned()]));
    };
    match entry.tool.parse(map) {
        Ok(input) => Ok(Input { value: input, from: ParsedFrom::Value(Box::new(value)) }),
        Err(err) => Err(lines::parse(tool, &err)),
    }
}

/// What is wrong with a tool's output, where outputs are checked against
/// the output schema (`RegistryBuilder::validate_outputs`).
pub(super) fn wrong_output<App>(entry: &Entry<App>, output: &mut Output) -> Option<String> {
    let validator = entry.output_validator.as_ref()?;
    let problems = match output {
        Output::Value(value) => crate::validation::problems(validator, value),
        // Checked as the JSON string it is, then given back.
        Output::Text(text) => {
            let value = Value::String(std::mem::take(text));
            let problems = crate::validation::problems(validator, &value);
            let Value::String(back) = value else { unreachable!("made a string above") };
            *text = back;
            problems
        }
        Output::Blocks(_) => return None,
    };
    (!problems.is_empty()).then(|| format!("the output does not match the output schema: {}", problems.join("; ")))
}

/// What is wrong with a tool error's structured value, where outputs are
/// checked: a typed failure is checked against the failure schema too.
pub(super) fn wrong_failure<App>(entry: &Entry<App>, error: &ToolError) -> Option<String> {
    let (validator, value) = (entry.failure_validator.as_ref()?, error.structured()?);
    let problems = crate::validation::problems(validator, value);
    (!problems.is_empty()).then(|| format!("the failure `{}` does not match the failure schema: {}", error.code(), problems.join("; ")))
}

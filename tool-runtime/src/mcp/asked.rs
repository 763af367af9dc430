//! A tool's question as MCP asks a client, at every revision: an [`Ask`]
//! as the request the client answers (`elicitation/create` in form mode,
//! `sampling/createMessage`, `roots/list`), the client capability it needs,
//! and the client's answer as the [`Decision`] recorded through
//! [`question::decide`](crate::question::decide). A session sends the
//! request through rmcp's peer (`mcp/sessions/questions.rs`); the stateless
//! revision puts it among an `input_required` result's `inputRequests`.
#![allow(deprecated, reason = "sampling and roots are deprecated at 2026-07-28, and still served")]

use rmcp::model::{
    ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, InputRequest, ListRootsRequest, ListRootsResult, Role, SamplingMessage, SamplingMessageContentBlock,
};
use serde::Deserialize;
use serde_json::Value;

use crate::memory::{Ask, Decision, Root, Sampled, SamplingRequest, SamplingRole};

/// The client capability a question needs: its name in `capabilities`.
pub(crate) fn capability(ask: &Ask) -> &'static str {
    match ask {
        Ask::Form { .. } => "elicitation",
        Ask::Sample(_) => "sampling",
        Ask::Roots => "roots",
    }
}

/// Whether a client that declared `capabilities` can answer `ask` (a form:
/// elicitation in form mode, or elicitation with no mode named).
pub(crate) fn declared(capabilities: &ClientCapabilities, ask: &Ask) -> bool {
    match ask {
        Ask::Form { .. } => capabilities.elicitation.as_ref().is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none()),
        Ask::Sample(_) => capabilities.sampling.is_some(),
        Ask::Roots => capabilities.roots.is_some(),
    }
}

/// A form's request: `message`, and its `schema` as `requestedSchema`.
///
/// # Errors
///
/// Why the schema is not one of MCP's forms (a `Form` guarantees it is).
pub(crate) fn elicitation(message: &str, schema: &Value) -> Result<ElicitRequestParams, String> {
    let requested_schema = serde_json::from_value(schema.clone()).map_err(|error| format!("the form's schema is not one MCP can carry: {error}"))?;
    Ok(ElicitRequestParams::FormElicitationParams { meta: None, message: message.to_owned(), requested_schema })
}

/// A completion's request: its messages as text content, its system
/// prompt, its token limit and temperature.
pub(crate) fn sampling(request: &SamplingRequest) -> CreateMessageRequestParams {
    let messages = request
        .messages
        .iter()
        .map(|message| {
            let role = match message.role {
                SamplingRole::User => Role::User,
                SamplingRole::Assistant => Role::Assistant,
            };
            SamplingMessage::new(role, SamplingMessageContentBlock::text(message.text.clone()))
        })
        .collect();
    let mut params = CreateMessageRequestParams::new(messages, request.max_tokens);
    params.system_prompt.clone_from(&request.system_prompt);
    // A temperature is between 0 and 1 (or 2): f32 keeps it.
    #[allow(clippy::cast_possible_truncation, reason = "a sampling temperature is a small number")]
    let temperature = request.temperature.map(|temperature| temperature as f32);
    params.temperature = temperature;
    params
}

/// An elicitation's answer: `accept` with its content answers the form,
/// `decline` declines it, `cancel` dismisses it.
pub(crate) fn elicited(result: ElicitResult) -> Decision {
    match result.action {
        ElicitationAction::Accept => Decision::Answer(result.content.unwrap_or_else(|| Value::Object(serde_json::Map::new()))),
        ElicitationAction::Decline => Decision::Reject(String::new()),
        _ => Decision::Cancel,
    }
}

/// A completion, as a [`Sampled`]: its model, its text (the text blocks
/// of its message, joined), why it stopped.
pub(crate) fn sampled(result: CreateMessageResult) -> Decision {
    let text: Vec<&str> = result
        .message
        .content
        .iter()
        .filter_map(|block| match block {
            SamplingMessageContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect();
    let sampled = Sampled { model: result.model.clone(), text: text.join("\n"), stop_reason: result.stop_reason.clone() };
    Decision::Answer(serde_json::to_value(sampled).expect("a completion serialises"))
}

/// The client's roots, as a list of [`Root`]s.
pub(crate) fn roots(result: ListRootsResult) -> Decision {
    let roots: Vec<Root> = result.roots.into_iter().map(|root| Root { uri: root.uri, name: root.name }).collect();
    Decision::Answer(serde_json::to_value(roots).expect("roots serialise"))
}

/// `ask` as one of an `input_required` result's `inputRequests`.
///
/// # Errors
///
/// As [`elicitation`].
pub(crate) fn input_request(ask: &Ask) -> Result<InputRequest, String> {
    Ok(match ask {
        Ask::Form { message, schema, .. } => InputRequest::Elicitation(ElicitRequest::new(elicitation(message, schema)?)),
        Ask::Sample(request) => InputRequest::CreateMessage(CreateMessageRequest::new(sampling(request))),
        Ask::Roots => InputRequest::ListRoots(ListRootsRequest { method: Default::default(), extensions: Default::default() }),
    })
}

/// The client's answer to `ask` in an `inputResponses` entry, as a
/// decision.
///
/// # Errors
///
/// What the answer should have been, where it is not that result.
pub(crate) fn answered(ask: &Ask, response: &Value) -> Result<Decision, String> {
    let not = |what: &str, error: serde_json::Error| format!("the answer to {} is not {what}: {error}", capability(ask));
    match ask {
        Ask::Form { .. } => ElicitResult::deserialize(response).map(elicited).map_err(|error| not("an elicitation result", error)),
        Ask::Sample(_) => CreateMessageResult::deserialize(response).map(sampled).map_err(|error| not("a sampling result", error)),
        Ask::Roots => ListRootsResult::deserialize(response).map(roots).map_err(|error| not("a roots/list result", error)),
    }
}

/// The client capabilities a client must declare to answer `ask`, as
/// `-32021`'s `requiredCapabilities` names them.
pub(crate) fn required(ask: &Ask) -> ClientCapabilities {
    let mut required = serde_json::Map::new();
    required.insert(capability(ask).to_owned(), Value::Object(serde_json::Map::new()));
    serde_json::from_value(Value::Object(required)).expect("one capability, empty, is a client's capabilities")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_question_needs_what_the_client_declared() {
        let form = Ask::Form { message: "Name?".into(), schema: json!({"type": "object", "properties": {}}), name: None };
        let none = ClientCapabilities::default();
        let all: ClientCapabilities = serde_json::from_value(json!({"elicitation": {}, "sampling": {}, "roots": {}})).unwrap();
        let url_only: ClientCapabilities = serde_json::from_value(json!({"elicitation": {"url": {}}})).unwrap();
        for ask in [form.clone(), Ask::Sample(SamplingRequest::new(10)), Ask::Roots] {
            assert!(!declared(&none, &ask), "{ask:?}");
            assert!(declared(&all, &ask), "{ask:?}");
        }
        assert!(!declared(&url_only, &form), "a client that elicits only URLs cannot fill in a form");
        assert_eq!(capability(&Ask::Roots), "roots");
    }

    #[test]
    fn answers_become_decisions() {
        let accepted: ElicitResult = serde_json::from_value(json!({"action": "accept", "content": {"name": "Ada"}})).unwrap();
        assert_eq!(elicited(accepted), Decision::Answer(json!({"name": "Ada"})));
        assert_eq!(elicited(serde_json::from_value(json!({"action": "decline"})).unwrap()), Decision::Reject(String::new()));
        assert_eq!(elicited(serde_json::from_value(json!({"action": "cancel"})).unwrap()), Decision::Cancel);
        let completion: CreateMessageResult =
            serde_json::from_value(json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m", "stopReason": "endTurn"}))
                .unwrap();
        assert_eq!(sampled(completion), Decision::Answer(json!({"model": "m", "text": "Paris", "stopReason": "endTurn"})));
        let listed: ListRootsResult = serde_json::from_value(json!({"roots": [{"uri": "file:///a", "name": "a"}]})).unwrap();
        assert_eq!(roots(listed), Decision::Answer(json!([{"uri": "file:///a", "name": "a"}])));
    }

    #[test]
    fn an_input_request_and_its_response_are_the_requests_and_results_of_the_session_revisions() {
        let form = Ask::Form { message: "Name?".into(), schema: json!({"type": "object", "properties": {"name": {"type": "string"}}}), name: None };
        let request = serde_json::to_value(input_request(&form).unwrap()).unwrap();
        assert_eq!(request["method"], "elicitation/create");
        assert_eq!(request["params"]["requestedSchema"]["properties"]["name"], json!({"type": "string"}));
        assert_eq!(serde_json::to_value(input_request(&Ask::Roots).unwrap()).unwrap()["method"], "roots/list");
        let answer = answered(&form, &json!({"action": "accept", "content": {"name": "Ada"}})).unwrap();
        assert_eq!(answer, Decision::Answer(json!({"name": "Ada"})));
        assert!(answered(&Ask::Roots, &json!({"action": "accept"})).unwrap_err().contains("roots/list"));
        assert_eq!(serde_json::to_value(required(&Ask::Sample(SamplingRequest::new(1)))).unwrap(), json!({"sampling": {}}));
    }

    #[test]
    fn a_completion_is_asked_as_text_messages() {
        let request = SamplingRequest::new(100).system("Be brief.").user("Capital of France?").temperature(0.5);
        let params = serde_json::to_value(sampling(&request)).unwrap();
        assert_eq!(params["messages"], json!([{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}]));
        assert_eq!(
            (params["maxTokens"].clone(), params["systemPrompt"].clone(), params["temperature"].clone()),
            (json!(100), json!("Be brief."), json!(0.5))
        );
    }
}

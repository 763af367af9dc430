//! What a parked call asks, and what decides it: the records of the
//! [`question`](crate::question) module, kept by every
//! [`RunMemory`](super::RunMemory). A [`ParkedCall`](super::ParkedCall)
//! holds its [`Question`]: an approval's [`Binding`], or a tool's own
//! [`Ask`] (a form, a completion from the client's model as a
//! [`SamplingRequest`], the client's roots); a [`Decision`] decides it (an
//! answer to a completion is a [`Sampled`], to the roots a list of
//! [`Root`]s, as JSON).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::definition::ToolDefinition;
use crate::policy::PolicyKind;

/// What a parked call asks, and so who may answer it and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Question {
    /// May the call run? Its policy asked a human. A yes is a permit bound
    /// to what the call was parked with.
    Approval(Binding),
    /// A question the tool asked while it ran: the `n`th of its call.
    Tool {
        /// The call that asked it.
        call_id: String,
        /// Its position among the call's questions, from 1.
        n: u32,
        /// What it asks.
        ask: Ask,
    },
}

/// What a tool's own question asks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ask {
    /// A form for the user to fill in ([`Ctx::elicit`](crate::Ctx::elicit)).
    Form {
        /// What the user is asked, in words.
        message: String,
        /// The form's fields: a flat object schema in the restricted shape
        /// of MCP's elicitation forms.
        schema: Value,
        /// The name the tool gave the question
        /// ([`Ctx::elicit_named`](crate::Ctx::elicit_named)), unique in its
        /// call: the key it goes by where a client answers it by key
        /// (2026-07-28's `inputRequests` and `inputResponses`). The memory
        /// keys it by its id all the same.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// A completion from the client's model ([`Ctx::sample`](crate::Ctx::sample)).
    Sample(SamplingRequest),
    /// The client's roots ([`Ctx::roots`](crate::Ctx::roots)).
    Roots,
}

impl Ask {
    /// The key the question of id `id` goes by where a client answers it
    /// by key: the name the tool gave it, else its id.
    ///
    /// ```
    /// use tool_runtime::question::Ask;
    /// let form = |name: Option<&str>| Ask::Form { message: "Name?".into(), schema: serde_json::json!({}), name: name.map(Into::into) };
    /// assert_eq!(form(Some("user_name")).key("c1#0"), "user_name");
    /// assert_eq!(form(None).key("c1#0"), "c1#0");
    /// assert_eq!(Ask::Roots.key("c1#1"), "c1#1");
    /// ```
    pub fn key<'a>(&'a self, id: &'a str) -> &'a str {
        match self {
            Ask::Form { name: Some(name), .. } => name,
            _ => id,
        }
    }
}

impl Question {
    /// The id of the `n`th question call `call_id` asks in its run.
    ///
    /// ```
    /// assert_eq!(tool_runtime::question::Question::id_of("call_7", 1), "call_7#1");
    /// ```
    pub fn id_of(call_id: &str, n: u32) -> String {
        format!("{call_id}#{n}")
    }

    /// The question of an approval of a call of `definition` with
    /// `arguments`.
    pub fn approval(definition: &ToolDefinition, arguments: &Value) -> Self {
        Question::Approval(Binding::new(definition, arguments))
    }

    /// Its kind as the journal keeps it: `approval`, `form`, `sample` or
    /// `roots`.
    pub fn kind(&self) -> &'static str {
        match self {
            Question::Approval(_) => "approval",
            Question::Tool { ask: Ask::Form { .. }, .. } => "form",
            Question::Tool { ask: Ask::Sample(_), .. } => "sample",
            Question::Tool { ask: Ask::Roots, .. } => "roots",
        }
    }
}

/// A decision on a parked call's question: the one type every decider,
/// every memory and every door speaks.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Run the call as it is (an approval).
    Approve,
    /// Run the call with this input instead (an approval; validated and
    /// judged again when it runs).
    ApproveEdited(Value),
    /// Do not run it, or decline a tool's question; the model reads this
    /// text (an approval's rejection).
    Reject(String),
    /// A tool's question answered: the form's values, a [`Sampled`] or a
    /// list of [`Root`]s, as JSON.
    Answer(Value),
    /// The question dismissed without a choice (MCP's `cancel`): an
    /// approval is not run, a tool reads [`Reply::Cancelled`](crate::question::Reply::Cancelled).
    Cancel,
}

/// What an approval was asked for, beside the parked call's user and
/// expiry: the digests of the call's arguments and of its tool's
/// definition. See [`Question::Approval`](super::Question::Approval).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// The SHA-256 (hex) of the call's arguments in canonical form.
    pub arguments: String,
    /// The SHA-256 (hex) of the tool's name, input schema (canonical) and
    /// policy when the call was parked; `None` for a call parked by a
    /// version that bound no definition (the journal's schema before
    /// version 9), which is checked for its arguments and principal only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
}

impl Binding {
    /// The binding of a call of `definition` with `arguments`.
    pub fn new(definition: &ToolDefinition, arguments: &Value) -> Self {
        Binding { arguments: arguments_digest(arguments), definition: Some(definition_digest(definition)) }
    }

    /// The binding of a call with `arguments`, whose tool's definition is
    /// not known (a call parked before definitions were bound).
    pub fn of_arguments(arguments: &Value) -> Self {
        Binding { arguments: arguments_digest(arguments), definition: None }
    }
}

/// A completion a tool asks of the client's model
/// ([`Ctx::sample`](crate::Ctx::sample)).
///
/// ```
/// use tool_runtime::question::SamplingRequest;
///
/// let request = SamplingRequest::new(200).system("Answer in one word.").user("What is the capital of France?");
/// assert_eq!(request.messages.len(), 1);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingRequest {
    /// The conversation to complete, oldest first.
    pub messages: Vec<SamplingMessage>,
    /// The system prompt the tool asks for; the client may change it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The most tokens the completion may take.
    pub max_tokens: u32,
    /// The sampling temperature, when the tool asks for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
}

impl SamplingRequest {
    /// A request of at most `max_tokens` tokens, with no messages yet.
    pub fn new(max_tokens: u32) -> Self {
        SamplingRequest { messages: Vec::new(), system_prompt: None, max_tokens, temperature: None }
    }

    /// Adds a message of the user.
    pub fn user(mut self, text: impl Into<String>) -> Self {
        self.messages.push(SamplingMessage { role: SamplingRole::User, text: text.into() });
        self
    }

    /// Adds a message of the assistant.
    pub fn assistant(mut self, text: impl Into<String>) -> Self {
        self.messages.push(SamplingMessage { role: SamplingRole::Assistant, text: text.into() });
        self
    }

    /// Sets the system prompt.
    pub fn system(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Sets the temperature.
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }
}

/// One message of a [`SamplingRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// Who said it.
    pub role: SamplingRole,
    /// What was said.
    pub text: String,
}

/// Who said a [`SamplingMessage`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SamplingRole {
    /// The user.
    User,
    /// The assistant (the model).
    Assistant,
}

/// The client model's completion of a [`SamplingRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sampled {
    /// The model that wrote it, as the client names it.
    pub model: String,
    /// What it wrote.
    pub text: String,
    /// Why it stopped (`endTurn`, `maxTokens`, ...), when the client says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

/// One of the client's roots ([`Ctx::roots`](crate::Ctx::roots)): a
/// directory or file the client lets the server work in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    /// Its URI (`file:///home/user/project`).
    pub uri: String,
    /// Its name, when the client gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// `value` as one text whatever the order of its objects' members: every
/// object's members sorted by key.
pub(crate) fn canonical(value: &Value) -> String {
    let mut sorted = value.clone();
    sorted.sort_all_objects();
    sorted.to_string()
}

/// The SHA-256 of `bytes`, in lowercase hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let mut hex = String::with_capacity(64);
    for byte in Sha256::digest(bytes) {
        hex.push(char::from_digit(u32::from(byte >> 4), 16).expect("a nibble is a hex digit"));
        hex.push(char::from_digit(u32::from(byte & 0xf), 16).expect("a nibble is a hex digit"));
    }
    hex
}

/// The digest of a call's arguments a [`Binding`] holds.
pub(crate) fn arguments_digest(arguments: &Value) -> String {
    sha256_hex(canonical(arguments).as_bytes())
}

/// The digest of what a permit binds of a tool: its name, its input
/// schema and its policy (a JSON array, so no two differ only in where one
/// part ends).
pub(crate) fn definition_digest(definition: &ToolDefinition) -> String {
    let policy = match definition.policy {
        PolicyKind::Allow => "allow",
        PolicyKind::Deny => "deny",
        PolicyKind::NeedsApproval => "needs_approval",
        PolicyKind::Predicate => "predicate",
    };
    let mut schema = Value::clone(&definition.input_schema);
    schema.sort_all_objects();
    let bound = serde_json::json!([definition.name, schema, policy]);
    sha256_hex(bound.to_string().as_bytes())
}

// `#[tool_data]` derives from the runtime's serde and schemars: the
// attributes of both keep their meaning, on a struct and on an enum.

use std::sync::Arc;

use tool_runtime::prelude::*;

#[tool_data(Deserialize, JsonSchema)]
#[derive(Debug)]
#[serde(rename_all = "camelCase")]
struct NewTicket {
    /// One line.
    title_line: String,
    #[serde(default)]
    priority: Priority,
}

#[tool_data(Serialize, Deserialize, JsonSchema)]
#[derive(Debug, Default, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Priority {
    #[default]
    Normal,
    Urgent,
}

#[tool_data(JsonSchema, Serialize, crate = ::tool_runtime)]
struct Ticket {
    id: u32,
    title: String,
    priority: Priority,
}

/// Open a support ticket.
#[tool]
async fn open_ticket(Input(ticket): Input<NewTicket>) -> Ticket {
    Ticket { id: 7, title: ticket.title_line, priority: ticket.priority }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::<()>::builder().tools(tools![open_ticket]).build().unwrap();
    let definition = registry.definition("open_ticket").unwrap();
    assert!(definition.input_schema["properties"].get("titleLine").is_some(), "{}", definition.input_schema);
    assert_eq!(definition.output_schema.as_deref().unwrap()["properties"]["id"]["type"], "integer");
    let result = registry.invoke(&Arc::new(()), "open_ticket", r#"{"titleLine": "Broken kettle", "priority": "urgent"}"#).await;
    assert_eq!(result.text, r#"{"id":7,"title":"Broken kettle","priority":"urgent"}"#);
}

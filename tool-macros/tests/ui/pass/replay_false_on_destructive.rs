use tool_runtime::prelude::*;

/// Delete a file: in a durable run, every call deletes again rather than
/// reading last time's result from the journal.
#[tool(destructive, replay = false)]
async fn delete_file(path: String) -> String {
    path
}

fn main() {
    let registry = Registry::<()>::builder().tools(tools![delete_file]).build().unwrap();
    let definition = registry.definition("delete_file").unwrap();
    assert!(!definition.replay);
    assert_eq!(definition.annotations.destructive, Some(true));
    assert_eq!(definition.annotations.idempotent, None);
}

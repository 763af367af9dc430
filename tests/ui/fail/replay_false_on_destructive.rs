use tool_runtime::prelude::*;

/// Delete a file.
#[tool(destructive, replay = false)]
async fn delete_file(path: String) -> String {
    path
}

fn main() {}

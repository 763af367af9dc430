use tool_runtime::prelude::*;

/// Say hello.
#[tool]
async fn hello() -> String {
    "hello".into()
}

/// Say goodbye.
#[tool]
async fn goodbye() -> String {
    "goodbye".into()
}

fn main() {
    let _tools: Vec<BoxedTool<()>> = tools![hello, goodbye, hello];
}

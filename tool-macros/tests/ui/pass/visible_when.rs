use tool_runtime::prelude::*;

fn after_login<App>(view: &StepView<'_, App>) -> bool {
    view.has_executed("login")
}

/// Log in.
#[tool]
async fn login() -> String {
    "ok".into()
}

/// Show the basket.
#[tool(visible_when = after_login)]
async fn basket() -> String {
    "empty".into()
}

fn main() {
    let registry = Registry::<()>::builder().tools(tools![login, basket]).build().unwrap();
    assert!(registry.definition("basket").unwrap().has_visibility_predicate);
    assert!(!registry.definition("login").unwrap().has_visibility_predicate);
}

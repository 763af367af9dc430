//! The turn of a run: the tools it offers after an intent classifier chose
//! them ([`Run::select`](crate::Run::select)), and each scoped tool rebuilt
//! with the validator of its schema (`intent::scope`).

use crate::error_report::{ErrorKind, ErrorReport};
use crate::intent::{ScopeProblem, Scoped, Selection};
use crate::table::ToolTable;

/// What a turn offers, after [`Run::select`](crate::Run::select).
#[derive(Debug)]
pub(crate) struct Turn {
    /// The tools the turn may offer: those selected, those always active,
    /// and what they require.
    pub(crate) names: Vec<String>,
    pub(crate) scoped: Vec<Scoped>,
}

impl Turn {
    /// The turn `selection` makes of `tools`: the tools it names, those
    /// `always_active`, and what they `require`, each scoped tool rebuilt
    /// for its scope value; `None` (every tool) for a selection that failed
    /// open. A tool that could not be scoped keeps its own definition: its
    /// problem is returned and reported.
    pub(crate) fn select<App: Send + Sync + 'static>(tools: &ToolTable<App>, selection: &Selection) -> (Option<Turn>, Vec<ScopeProblem>) {
        if selection.failed_open.is_some() {
            return (None, Vec::new());
        }
        let mut names: Vec<String> = Vec::new();
        let mut queue: Vec<&str> = selection.tools.iter().map(String::as_str).filter(|name| tools.definition(name).is_some()).collect();
        queue.extend(tools.definitions().filter(|def| def.always_active).map(|def| def.name.as_str()));
        while let Some(name) = queue.pop() {
            if names.iter().any(|known| known == name) {
                continue;
            }
            names.push(name.to_owned());
            if let Some(def) = tools.definition(name) {
                queue.extend(def.requires.iter().map(String::as_str));
            }
        }
        let mut problems = Vec::new();
        let mut scoped = Vec::new();
        for (tool, scope) in &selection.scopes {
            match crate::intent::scope(tools, tool, scope) {
                Some(Ok(tool)) => scoped.push(tool),
                Some(Err(problem)) => {
                    tools.report(ErrorReport::new(tool, "", ErrorKind::Scope, "SCOPE_REJECTED", problem.clone()));
                    problems.push(ScopeProblem { tool: tool.clone(), problem });
                }
                None => {}
            }
        }
        (Some(Turn { names, scoped }), problems)
    }

    pub(crate) fn offers(&self, name: &str) -> bool {
        self.names.iter().any(|offered| offered == name)
    }

    pub(crate) fn scoped(&self, name: &str) -> Option<&Scoped> {
        self.scoped.iter().find(|scoped| scoped.def.name == name)
    }
}

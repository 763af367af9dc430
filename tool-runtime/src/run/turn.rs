//! The turn of a run: the tools it offers after an intent classifier chose
//! them ([`Run::select`](crate::Run::select)), and each scoped tool rebuilt
//! with the validator of its schema.

use std::sync::Arc;

use crate::tool::ToolDefinition;

/// What a turn offers, after [`Run::select`](crate::Run::select).
#[derive(Debug)]
pub(crate) struct Turn {
    /// The tools the turn may offer: those selected, those always active,
    /// and what they require.
    pub(crate) names: Vec<String>,
    pub(crate) scoped: Vec<Scoped>,
}

/// A tool rebuilt for the turn, and the validator of its rebuilt schema.
#[derive(Debug)]
pub(crate) struct Scoped {
    pub(crate) def: ToolDefinition,
    pub(crate) validator: Arc<jsonschema::Validator>,
}

impl Turn {
    pub(crate) fn offers(&self, name: &str) -> bool {
        self.names.iter().any(|offered| offered == name)
    }

    pub(crate) fn scoped(&self, name: &str) -> Option<&Scoped> {
        self.scoped.iter().find(|scoped| scoped.def.name == name)
    }
}

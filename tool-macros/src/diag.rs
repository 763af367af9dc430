//! Compile errors: spanned on the user's tokens, lowercase, with a `help:`
//! line where it says what to do, and all of an item's errors at once.

use std::fmt::Display;

use proc_macro2::TokenStream;
use quote::ToTokens;

/// One error, not yet rendered: the tokens it points at and its text.
pub struct Diag {
    tokens: TokenStream,
    message: String,
}

/// An error spanned on every token of `node`.
pub fn error_at(node: &impl ToTokens, message: impl Display) -> Diag {
    Diag { tokens: node.to_token_stream(), message: message.to_string() }
}

/// Adds a `help:` line. Stable Rust has no API for child diagnostics, so the
/// line is part of the message: rustc prints it under the message, aligned
/// with it and above the code, where a bare `help:` reads best (rustc's own
/// `= help:` lines hang off the code's gutter, which this one cannot).
pub fn with_help(diag: Diag, help: impl Display) -> Diag {
    Diag { message: format!("{}\nhelp: {help}", diag.message), ..diag }
}

impl From<Diag> for syn::Error {
    fn from(diag: Diag) -> Self {
        syn::Error::new_spanned(diag.tokens, diag.message)
    }
}

/// Every error found in one item, in the order they were found.
#[derive(Default)]
pub struct Errors(Vec<syn::Error>);

impl Errors {
    pub fn push(&mut self, error: impl Into<syn::Error>) {
        self.0.push(error.into());
    }

    /// The value, or `None` after recording the error.
    pub fn handle<T, E: Into<syn::Error>>(&mut self, result: Result<T, E>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(error) => {
                self.push(error);
                None
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn to_compile_errors(&self) -> TokenStream {
        self.0.iter().map(syn::Error::to_compile_error).collect()
    }

    #[cfg(test)]
    pub fn messages(&self) -> Vec<String> {
        self.0.iter().map(ToString::to_string).collect()
    }
}

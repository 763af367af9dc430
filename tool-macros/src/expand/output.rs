//! What the tool returns, as schemas: `Tool::output_schema` (of `T` of
//! `Result<T, E>`, or of the items of `Streamed<T>`) and, for a tool
//! written `Result<T, E>` with its own error type, `Tool::failure_schema`.

use proc_macro2::TokenStream;
use quote::quote;

use super::Gen;
use crate::signature::{stream_item, typed_failure};

/// `Tool::output_schema`: the runtime's probe gives a schema when the
/// output implements `JsonSchema`, and none otherwise.
pub(super) fn output_schema_fn(g: &Gen<'_>) -> TokenStream {
    let p = &g.p;
    let output_ty = &g.tool_fn.output;
    // A streaming tool (`-> Streamed<T>`): `T` is its output.
    let schema_ty = stream_item(output_ty).unwrap_or(output_ty);
    quote! {
        fn output_schema(
            generator: &mut #p::schemars::SchemaGenerator,
        ) -> ::core::option::Option<#p::schemars::Schema> {
            #[allow(unused_imports)]
            use #p::{NoOutputSchema as _, PlainOutputSchema as _};
            (&#p::OutputSchema::<#schema_ty>::new()).get(generator)
        }
    }
}

/// `Tool::failure_schema`, only for a tool written `Result<T, E>` with an
/// `E` not written `ToolError`: every other tool emits what it did before
/// typed failures existed.
pub(super) fn failure_schema_fn(g: &Gen<'_>) -> Option<TokenStream> {
    let p = &g.p;
    let error_ty = typed_failure(&g.tool_fn.output)?;
    Some(quote! {
        fn failure_schema(
            generator: &mut #p::schemars::SchemaGenerator,
        ) -> ::core::option::Option<#p::schemars::Schema> {
            #[allow(unused_imports)]
            use #p::NoFailureSchema as _;
            (&#p::FailureSchema::<#error_ty>::new()).get(generator)
        }
    })
}

//! The shape of a tool's return type, read from how it is written: its
//! success and error types (where the expansion points an error), whether
//! its error may be a typed failure, and whether it streams.

/// The success type of a return type: `T` of `Result<T, E>` (and of
/// `io::Result<T>`), else the type itself; where an output error points.
pub fn success_type(ty: &syn::Type) -> &syn::Type {
    result_argument(ty, 0).unwrap_or(ty)
}

/// The error type of a return type written `Result<T, E>`, else the type
/// itself; where an error type that is not an error points.
pub fn error_type(ty: &syn::Type) -> &syn::Type {
    result_argument(ty, 1).unwrap_or(ty)
}

/// The error type `E` of a return type written `Result<T, E>` with an `E`
/// not written `ToolError`: the tools whose error may be a typed failure
/// (decided by the runtime's `FailureProbe`). A `Result` alias or
/// `io::Result<T>` hides its error type, and `ToolError` is never one.
pub fn typed_failure(ty: &syn::Type) -> Option<&syn::Type> {
    let error = result_argument(ty, 1)?;
    match error {
        syn::Type::Path(path) if path.qself.is_none() && path.path.segments.last().is_some_and(|last| last.ident == "ToolError") => None,
        other => Some(other),
    }
}

/// The type argument at `index` of a type written `...Result<...>`.
fn result_argument(ty: &syn::Type, index: usize) -> Option<&syn::Type> {
    let syn::Type::Path(path) = ty else { return None };
    let last = path.path.segments.last().filter(|last| last.ident == "Result")?;
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else { return None };
    match args.args.iter().nth(index)? {
        syn::GenericArgument::Type(ty) => Some(ty),
        _ => None,
    }
}

/// `T` of a return type written `Streamed<T>`: a streaming tool.
pub fn stream_item(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(path) = ty else { return None };
    let last = path.path.segments.last().filter(|last| last.ident == "Streamed")?;
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else { return None };
    match args.args.first()? {
        syn::GenericArgument::Type(ty) if args.args.len() == 1 => Some(ty),
        _ => None,
    }
}

/// Whether a return type is written `Streamed<T>`.
pub fn is_streamed(ty: &syn::Type) -> bool {
    stream_item(ty).is_some()
}

/// Whether a return type is written as a `Result` (`Result<T, E>`,
/// `io::Result<T>`, `anyhow::Result<T>`).
pub fn returns_result(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(path) if path.path.segments.last().is_some_and(|last| last.ident == "Result"))
}

//! What a value must be to be journaled, the same on both backends.
//!
//! Postgres refuses a text holding a NUL character, and an index entry over
//! about 2.7 KB (its B-tree row limit); SQLite takes both. So every value
//! is checked before it is written, and a value Postgres would refuse is
//! refused on SQLite too, with an error naming the field:
//!
//! - an id that is indexed (run id, call id, user) is at most
//!   [`MAX_ID_BYTES`] bytes, without NUL;
//! - any other text (a tool's name, a result's text and error code, a
//!   rejection, who decided) has no NUL;
//! - an effect key is never refused: one longer than [`MAX_KEY_BYTES`], or
//!   holding a NUL, is stored as `sha256:` and its SHA-256 digest in hex
//!   (as is a key that already starts with `sha256:`, so no key a host
//!   writes can be mistaken for another's digest). A row journaled under
//!   the long key itself, before keys were hashed, is still found under
//!   it: its effect is replayed, never run again.
//!
//! JSON columns need no check: JSON text writes a NUL as `\u0000`.

use std::borrow::Cow;

use sha2::{Digest, Sha256};

use super::JournalError;

/// The longest id the journal keeps, in bytes: far under the index limit
/// of Postgres, with room for the effect keys made from two ids.
pub const MAX_ID_BYTES: usize = 1024;

/// The longest effect key stored as it is, in bytes; a longer one is stored
/// as its digest.
pub const MAX_KEY_BYTES: usize = 512;

const DIGEST_PREFIX: &str = "sha256:";

/// The effect key as stored: itself, or its digest when Postgres could not
/// index it (see the [module docs](self)).
pub(crate) fn stored_key(key: &str) -> Cow<'_, str> {
    if key.len() <= MAX_KEY_BYTES && !key.contains('\0') && !key.starts_with(DIGEST_PREFIX) {
        return Cow::Borrowed(key);
    }
    let mut stored = String::with_capacity(DIGEST_PREFIX.len() + 64);
    stored.push_str(DIGEST_PREFIX);
    for byte in Sha256::digest(key.as_bytes()) {
        stored.push(char::from_digit(u32::from(byte >> 4), 16).expect("a nibble is a hex digit"));
        stored.push(char::from_digit(u32::from(byte & 0xf), 16).expect("a nibble is a hex digit"));
    }
    Cow::Owned(stored)
}

/// Whether `key` is a digest [`stored_key`] made: the form in which the
/// journal stores, and lists, a long key.
pub(crate) fn is_digest(key: &str) -> bool {
    key.strip_prefix(DIGEST_PREFIX).is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// An id: at most [`MAX_ID_BYTES`], without NUL.
pub(crate) fn id(field: &'static str, value: &str) -> Result<(), JournalError> {
    if value.len() > MAX_ID_BYTES {
        let why = format!("it is {} bytes, over the limit of {MAX_ID_BYTES}; use a shorter id", value.len());
        return Err(JournalError::Refused { field, why });
    }
    text(field, value)
}

/// A text: without NUL.
pub(crate) fn text(field: &'static str, value: &str) -> Result<(), JournalError> {
    match value.find('\0') {
        None => Ok(()),
        Some(at) => {
            Err(JournalError::Refused { field, why: format!("it holds a NUL character (at byte {at}), which Postgres cannot store; remove it") })
        }
    }
}

/// [`id`] of a value that may be absent.
pub(crate) fn optional_id(field: &'static str, value: Option<&str>) -> Result<(), JournalError> {
    value.map_or(Ok(()), |value| id(field, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_key_is_stored_as_it_is_and_a_long_one_as_its_digest() {
        assert_eq!(stored_key("refund:A-1"), "refund:A-1");
        let long = "k".repeat(513);
        assert_eq!(MAX_KEY_BYTES, 512);
        let stored = stored_key(&long);
        assert!(stored.starts_with("sha256:") && stored.len() == 7 + 64, "{stored}");
        assert_eq!(stored, stored_key(&long), "the same key, the same digest");
        assert_ne!(stored, stored_key(&"k".repeat(MAX_KEY_BYTES + 2)));
        // A key that looks like a digest is hashed too, so it cannot meet one.
        assert_ne!(stored_key(&stored), stored);
        assert!(stored_key("a\0b").starts_with("sha256:"));
        // As `sha256sum` computes it.
        assert_eq!(stored, "sha256:45a7c7ef95c3417e800362f5672aba16da807261fe7121f3a81b0a0fb6b9a05c");
    }

    #[test]
    fn ids_over_the_limit_or_with_nul_are_refused_naming_the_field() {
        assert!(id("run_id", &"r".repeat(MAX_ID_BYTES)).is_ok());
        let error = id("run_id", &"r".repeat(MAX_ID_BYTES + 1)).unwrap_err().to_string();
        assert!(error.contains("run_id") && error.contains("1025 bytes") && error.contains("1024"), "{error}");
        let error = text("text", "ok\0no").unwrap_err().to_string();
        assert!(error.contains("text") && error.contains("NUL") && error.contains("byte 2"), "{error}");
    }
}

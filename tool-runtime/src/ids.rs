//! The ids the runtime makes: a call's id when the model gave none
//! (`call_...`, and Gemini's `gemini_call_...`), and an MCP session's run
//! id. Durable runs journal them, and several processes share one journal,
//! so an id must be unique across processes and time, not only within one
//! process: a counter restarting at 1 in every process would give a new
//! process's first call the id, and so the journaled effect or approval,
//! of an earlier process's first call.
//!
//! Each id is a prefix, a tag drawn once per process from the operating
//! system's random source (60 bits, twelve base-32 characters), and a
//! counter of this process. Two processes share a tag with a probability
//! of about n² / 2⁶¹ for n processes (below one in a million for a million
//! processes), and within a process the counter never repeats.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use smol_str::SmolStr;

/// The lowercase RFC 4648 base-32 alphabet: ids stay readable and need no
/// escaping anywhere (URLs, SQL, JSON, logs).
const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// This process's tag: twelve base-32 characters from 60 random bits.
static PROCESS_TAG: LazyLock<String> = LazyLock::new(|| {
    let bits = random_bits();
    (0..12).map(|i| char::from(ALPHABET[((bits >> (5 * i)) & 31) as usize])).collect()
});

/// 64 bits from the operating system's random source. Should that fail
/// (no entropy source at all), the standard library's per-process random
/// hasher keys, the time and the process id stand in: still distinct
/// across processes.
fn random_bits() -> u64 {
    let mut bytes = [0u8; 8];
    match getrandom::fill(&mut bytes) {
        Ok(()) => u64::from_le_bytes(bytes),
        Err(_) => {
            use std::hash::{BuildHasher, Hasher};
            let mut hasher = std::hash::RandomState::new().build_hasher();
            hasher.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
            hasher.write_u32(std::process::id());
            hasher.finish()
        }
    }
}

static NEXT: AtomicU64 = AtomicU64::new(1);

/// How many ids a thread takes from the shared counter at a time.
const BLOCK: u64 = 1024;

thread_local! {
    /// The numbers this thread may hand out: `(next, end)` of its current block.
    static NUMBERS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// The next number of this process. Each thread takes blocks of numbers
/// from a shared counter, so numbers are unique but not in call order
/// across threads.
fn next_number() -> u64 {
    NUMBERS.with(|numbers| {
        let (mut next, mut end) = numbers.get();
        if next == end {
            next = NEXT.fetch_add(BLOCK, Ordering::Relaxed);
            end = next + BLOCK;
        }
        numbers.set((next + 1, end));
        next
    })
}

/// `{prefix}{tag}_{n}`: unique across processes and time (see the
/// [module docs](self)).
pub(crate) fn fresh_id(prefix: &str) -> SmolStr {
    // Not `format!`: it costs a call as much as the rest of its setup.
    let mut id = smol_str::SmolStrBuilder::new();
    for part in [prefix, PROCESS_TAG.as_str(), "_", itoa::Buffer::new().format(next_number())] {
        id.push_str(part);
    }
    id.finish()
}

/// A fresh call id, `call_{tag}_{n}`; up to the 100,000th of a process it
/// fits a `SmolStr` inline (no allocation).
pub(crate) fn fresh_call_id() -> SmolStr {
    fresh_id("call_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_in_a_process_and_carry_its_tag() {
        let ids: std::collections::HashSet<SmolStr> = (0..10_000).map(|_| fresh_call_id()).collect();
        assert_eq!(ids.len(), 10_000);
        let tag = PROCESS_TAG.as_str();
        assert!(ids.iter().all(|id| id.starts_with(&format!("call_{tag}_"))));
        assert!(tag.bytes().all(|b| ALPHABET.contains(&b)) && tag.len() == 12);
    }
}

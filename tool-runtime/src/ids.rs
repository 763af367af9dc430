//! The ids the runtime makes: a call's id when the model gave none
//! (`call_...`, and Gemini's `gemini_call_...`), and an MCP session's run
//! id. Durable runs journal them, and several processes share one journal,
//! so an id must be unique across processes and time, not only within one
//! process: a counter restarting at 1 in every process would give a new
//! process's first call the id, and so the journaled effect or approval,
//! of an earlier process's first call.
//!
//! Each id is a prefix, a tag (twelve base-32 characters, 60 bits) and a
//! number of up to five base-32 characters. The process counts its ids;
//! every 2²⁵ (about 33 million) of them start a new epoch, whose tag is
//! the process's random key (60 bits from the operating system's random
//! source, drawn once) plus the epoch's index. Within a process no two
//! epochs share a tag and no number repeats in an epoch. Two processes
//! share a tag with a probability of about n²·e / 2⁶⁰ for n processes of
//! e epochs each (below one in a million for a thousand processes of a
//! thousand epochs, 33 billion ids each).
//!
//! An id is at most 23 bytes, so a [`SmolStr`] holds it inline: making
//! one, cloning it and dropping it never allocate, however many calls a
//! process has made.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use smol_str::SmolStr;

/// The lowercase RFC 4648 base-32 alphabet: ids stay readable and need no
/// escaping anywhere (URLs, SQL, JSON, logs).
const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// Base-32 characters in a tag.
const TAG_CHARS: usize = 12;
/// The tags' bits (`TAG_CHARS` characters of five bits).
const TAG_MASK: u64 = (1 << (5 * TAG_CHARS)) - 1;
/// Numbers in an epoch: those of at most five base-32 characters.
const EPOCH_BITS: u32 = 25;
/// The longest prefix that keeps an id inline (`SmolStr` holds 23 bytes).
const MAX_PREFIX: usize = 23 - TAG_CHARS - 1 - 5;

/// This process's random key, from which each epoch's tag is made.
static PROCESS_KEY: LazyLock<u64> = LazyLock::new(random_bits);

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

static NEXT: AtomicU64 = AtomicU64::new(0);

/// How many ids a thread takes from the shared counter at a time (a
/// power of two below an epoch's size, so that no block spans two epochs).
const BLOCK: u64 = 1024;

thread_local! {
    /// The numbers this thread may hand out: `(next, end)` of its current block.
    static NUMBERS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
    /// The tag of the current block's epoch.
    static TAG: std::cell::Cell<[u8; TAG_CHARS]> = const { std::cell::Cell::new([0; TAG_CHARS]) };
}

/// The tag of epoch `epoch`: the process's key plus the epoch, in base 32.
fn tag(epoch: u64) -> [u8; TAG_CHARS] {
    let bits = PROCESS_KEY.wrapping_add(epoch) & TAG_MASK;
    std::array::from_fn(|i| ALPHABET[((bits >> (5 * i)) & 31) as usize])
}

/// The next number of this process, as its epoch's tag and its number in
/// the epoch. Each thread takes blocks of numbers from a shared counter,
/// so numbers are unique but not in call order across threads.
fn next_number() -> ([u8; TAG_CHARS], u64) {
    let (mut next, mut end) = NUMBERS.get();
    if next == end {
        next = NEXT.fetch_add(BLOCK, Ordering::Relaxed);
        end = next + BLOCK;
        TAG.set(tag(next >> EPOCH_BITS));
    }
    NUMBERS.set((next + 1, end));
    (TAG.get(), next & ((1 << EPOCH_BITS) - 1))
}

/// `{prefix}{tag}_{n}`: unique across processes and time (see the
/// [module docs](self)).
#[inline]
pub(crate) fn fresh_id(prefix: &str) -> SmolStr {
    let (tag, number) = next_number();
    written(prefix, &tag, number)
}

/// The id of `number` in the epoch of `tag`, its number in base 32, most
/// significant character first. `prefix` is at most five bytes, so that
/// the id is held inline.
#[inline]
fn written(prefix: &str, tag: &[u8; TAG_CHARS], number: u64) -> SmolStr {
    assert!(prefix.len() <= MAX_PREFIX, "an id's prefix of over {MAX_PREFIX} bytes: {prefix}");
    let mut id = [0u8; 23];
    let mut len = 0;
    for &byte in prefix.as_bytes() {
        id[len] = byte;
        len += 1;
    }
    id[len..len + TAG_CHARS].copy_from_slice(tag);
    id[len + TAG_CHARS] = b'_';
    len += TAG_CHARS + 1;
    let digits = (1..5).take_while(|shift| number >> (5 * shift) != 0).count() + 1;
    for (i, slot) in id[len..len + digits].iter_mut().enumerate() {
        *slot = ALPHABET[((number >> (5 * (digits - 1 - i))) & 31) as usize];
    }
    len += digits;
    // Every byte is the prefix's or the alphabet's.
    SmolStr::new_inline(std::str::from_utf8(&id[..len]).expect("an id is ASCII"))
}

/// A fresh call id, `call_{tag}_{n}`.
#[inline]
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
        let tag = std::str::from_utf8(&tag(0)).unwrap().to_owned();
        assert!(ids.iter().all(|id| id.starts_with(&format!("call_{tag}_"))), "{:?}", ids.iter().next());
        assert!(tag.bytes().all(|b| ALPHABET.contains(&b)) && tag.len() == TAG_CHARS);
    }

    #[test]
    fn a_number_is_written_in_base_32_and_the_longest_id_is_held_inline() {
        let tag = *b"abcdefghijkl";
        assert_eq!(written("call_", &tag, 0), "call_abcdefghijkl_a");
        assert_eq!(written("call_", &tag, 31), "call_abcdefghijkl_7");
        assert_eq!(written("call_", &tag, 32), "call_abcdefghijkl_ba");
        assert_eq!(written("run-", &tag, 1025), "run-abcdefghijkl_bab");
        // The last number of an epoch, with the longest prefix.
        let longest = written("call_", &tag, (1 << EPOCH_BITS) - 1);
        assert_eq!(longest, "call_abcdefghijkl_77777");
        assert!(!longest.is_heap_allocated(), "{longest} is {} bytes", longest.len());
    }

    #[test]
    fn a_threads_ids_count_up() {
        // A new thread takes a block of its own: its ids are consecutive.
        let ids: Vec<SmolStr> = std::thread::spawn(|| (0..100).map(|_| fresh_call_id()).collect()).join().unwrap();
        let (first_tag, first) = ids[0].rsplit_once('_').unwrap();
        let number = |digits: &str| digits.bytes().fold(0, |n, b| n * 32 + ALPHABET.iter().position(|&a| a == b).unwrap() as u64);
        for (i, id) in ids.iter().enumerate() {
            let (tag, digits) = id.rsplit_once('_').unwrap();
            assert_eq!((tag, number(digits)), (first_tag, number(first) + i as u64), "{ids:?}");
        }
    }

    #[test]
    fn epochs_have_distinct_tags_and_no_block_spans_two() {
        let tags: std::collections::HashSet<[u8; TAG_CHARS]> = (0..1_000).map(tag).collect();
        assert_eq!(tags.len(), 1_000);
        assert_eq!((1u64 << EPOCH_BITS) % BLOCK, 0);
    }
}

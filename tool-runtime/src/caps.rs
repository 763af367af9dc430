//! Places counted per key and capped: how many connections one peer of the
//! MCP server holds, how many live pages one approver of the inbox keeps
//! open. A place is held by a guard ([`Place`]) and freed when it is
//! dropped, so a place is never leaked by a path that forgets to free it.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

/// At most `max` places for each key.
pub(crate) struct Capped<K: Eq + Hash> {
    max: usize,
    held: Mutex<HashMap<K, usize>>,
}

/// One place of a key, held until dropped.
pub(crate) struct Place<K: Eq + Hash> {
    capped: Arc<Capped<K>>,
    key: K,
}

impl<K: Eq + Hash + Clone> Capped<K> {
    /// At most `max` places a key (at least 1).
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Capped { max: max.max(1), held: Mutex::default() })
    }

    /// How many places one key may hold.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// One more place for `key`, or `None` when it holds `max` already.
    pub(crate) fn take(self: &Arc<Self>, key: K) -> Option<Place<K>> {
        // Only counting runs under the lock: a poisoned one is whole.
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let count = held.entry(key.clone()).or_insert(0);
        if *count >= self.max {
            return None;
        }
        *count += 1;
        Some(Place { capped: self.clone(), key })
    }
}

impl<K: Eq + Hash> Drop for Place<K> {
    fn drop(&mut self) {
        let mut held = self.capped.held.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = held.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_holds_at_most_its_cap_and_a_dropped_place_is_freed() {
        let capped = Capped::new(2);
        let (a, b) = (capped.take("one").unwrap(), capped.take("one").unwrap());
        assert!(capped.take("one").is_none(), "a third place of the same key");
        assert!(capped.take("two").is_some(), "another key");
        drop(a);
        assert!(capped.take("one").is_some(), "a dropped place is freed");
        drop(b);
        assert!(capped.held.lock().unwrap().is_empty(), "no key is kept without a place");
    }
}

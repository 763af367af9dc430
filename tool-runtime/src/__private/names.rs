//! The duplicate-name check of `tools!`, run at compile time.

/// The name of a tool, for the duplicate check of `tools!`.
pub trait Named {
    const NAME: &'static str;
}

/// Fails the build (in `tools!`) when two tools share a name, naming it.
///
/// Runs in the compiler's const evaluator, which has a step budget: names
/// are hashed and sorted (O(n log n)) rather than compared pairwise, so a
/// list of thousands of tools stays cheap.
#[track_caller]
pub const fn assert_unique_names<const N: usize>(names: [&str; N]) {
    let mut keys = [(0u64, 0usize); N];
    let mut i = 0;
    while i < N {
        keys[i] = (fnv1a(names[i]), i);
        i += 1;
    }
    heapsort(&mut keys);
    let mut i = 1;
    while i < N {
        // Equal hashes are neighbours; compare the names of the whole run.
        let mut j = i;
        while j > 0 && keys[j - 1].0 == keys[i].0 {
            if str_eq(names[keys[j - 1].1], names[keys[i].1]) {
                duplicate(names[keys[i].1]);
            }
            j -= 1;
        }
        i += 1;
    }
}

#[track_caller]
const fn duplicate(name: &str) -> ! {
    // A const fn cannot format, so the message is assembled by hand.
    let mut buffer = [0u8; 256];
    let mut len = push(&mut buffer, 0, "tools![...] lists the tool `");
    len = push(&mut buffer, len, name);
    len = push(&mut buffer, len, "` twice; list each tool once");
    match core::str::from_utf8(buffer.split_at(len).0) {
        Ok(message) => panic!("{}", message),
        Err(_) => panic!("tools![...] lists the same tool twice; list each tool once"),
    }
}

const fn fnv1a(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

const fn heapsort<const N: usize>(keys: &mut [(u64, usize); N]) {
    let mut start = N / 2;
    while start > 0 {
        start -= 1;
        sift_down(keys, start, N);
    }
    let mut end = N;
    while end > 1 {
        end -= 1;
        let first = keys[0];
        keys[0] = keys[end];
        keys[end] = first;
        sift_down(keys, 0, end);
    }
}

const fn sift_down<const N: usize>(keys: &mut [(u64, usize); N], mut root: usize, end: usize) {
    loop {
        let mut child = 2 * root + 1;
        if child >= end {
            return;
        }
        if child + 1 < end && keys[child].0 < keys[child + 1].0 {
            child += 1;
        }
        if keys[root].0 >= keys[child].0 {
            return;
        }
        let parent = keys[root];
        keys[root] = keys[child];
        keys[child] = parent;
        root = child;
    }
}

/// Appends `text` to `buffer[len..]`, as much as fits (a name cut inside
/// a char fails `from_utf8`, and the message without the name is used).
const fn push(buffer: &mut [u8; 256], mut len: usize, text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() && len < buffer.len() {
        buffer[len] = bytes[i];
        len += 1;
        i += 1;
    }
    len
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_names_pass() {
        assert_unique_names(["a", "b", "ab"]);
        assert_unique_names([]);
    }

    #[test]
    #[should_panic(expected = "lists the tool `a` twice")]
    fn duplicate_names_panic() {
        assert_unique_names(["a", "b", "a"]);
    }

    #[test]
    fn thousands_of_names_are_checked_in_n_log_n() {
        let owned: Vec<String> = (0..5000).map(|i| format!("tool_with_a_long_shared_prefix_{i}")).collect();
        let mut names = [""; 5000];
        for (slot, name) in names.iter_mut().zip(&owned) {
            *slot = name;
        }
        assert_unique_names(names);
        names[4321] = names[17];
        let caught = std::panic::catch_unwind(|| assert_unique_names(names));
        let message = *caught.unwrap_err().downcast::<String>().unwrap();
        assert_eq!(message, "tools![...] lists the tool `tool_with_a_long_shared_prefix_17` twice; list each tool once");
    }
}

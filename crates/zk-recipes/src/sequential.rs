//! Helpers shared by the recipes built on sequential nodes: sequence numbers, Curator-compatible
//! "protected" names and ordering, and finding one's own node again after a lost create reply.

use std::cmp::Ordering;
use std::fmt::Write as _;

/// The prefix Curator puts before a protected node's id (`_c_<uuid>-<name>`).
pub const PROTECTED_PREFIX: &str = "_c_";

/// A new per-attempt id in the textual form of a random (version 4) UUID, as Curator's
/// `ProtectedUtils` uses, so that our names sort and parse like Curator's.
pub fn attempt_id() -> String {
    let mut rng = fastrand::Rng::new();
    let mut bytes = [0u8; 16];
    rng.fill(&mut bytes);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let mut id = String::with_capacity(36);
    for (i, byte) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            id.push('-');
        }
        let _ = write!(id, "{byte:02x}");
    }
    id
}

/// The protected name prefix `_c_<id>-<name>` (the server appends the sequence number).
pub fn protected_name(id: &str, name: &str) -> String {
    format!("{PROTECTED_PREFIX}{id}-{name}")
}

/// Whether `child` is a node created by the attempt `id`.
pub fn is_own_node(child: &str, id: &str) -> bool {
    child
        .strip_prefix(PROTECTED_PREFIX)
        .is_some_and(|rest| rest.starts_with(id) && rest[id.len()..].starts_with('-'))
}

/// The sequence number the server appended to a sequential node's name (its last 10 digits).
///
/// `None` when there is none, and when the parent's counter has wrapped past `i32::MAX`: the
/// server then formats negative numbers (`-000000005`, `-2147483648`), which no longer sort
/// after the earlier ones; recipes treat such a name as a reason to stop, not to guess.
pub fn sequence_of(name: &str) -> Option<i64> {
    let digits = name.get(name.len().checked_sub(10)?..)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value: i64 = digits.parse().ok()?;
    (value <= i64::from(i32::MAX)).then_some(value)
}

/// Sorts sequential children by their sequence number (names without one go last, by name),
/// as Curator's lock drivers do. Owned names or borrowed ones (`Vec<&str>` from a
/// [`StringList`](zk_proto::StringList)'s `iter`).
pub fn sort_by_sequence<T: AsRef<str>>(children: &mut [T]) {
    children.sort_by(|a, b| {
        let (a, b) = (a.as_ref(), b.as_ref());
        match (sequence_of(a), sequence_of(b)) {
            (Some(x), Some(y)) => x.cmp(&y).then_with(|| a.cmp(b)),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.cmp(b),
        }
    });
}

/// The key by which Apache Curator's lock recipes sort a child: the text after the last
/// occurrence of the lock name (the whole name when it does not occur), with each of
/// `lock_names` stripped in turn.
///
/// This is `StandardLockInternalsDriver.fixForSorting` (Curator 5.4); `InterProcessMutex` and
/// `LeaderLatch` strip one name (`lock-`, `latch-`), `InterProcessReadWriteLock` strips
/// `__READ__` then `__WRIT__`. For a node of the recipe the key is its 10-digit sequence
/// number, whatever the protected prefix `_c_<uuid>-` before the name.
pub fn curator_sort_key<'a>(child: &'a str, lock_names: &[&str]) -> &'a str {
    let mut key = child;
    for name in lock_names {
        if let Some(at) = key.rfind(name) {
            key = &key[at + name.len()..];
        }
    }
    key
}

/// Compares as Java's `String.compareTo`: by UTF-16 code units (which orders characters
/// above U+FFFF before U+E000..U+FFFF, unlike a byte comparison of UTF-8).
fn java_string_cmp(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Sorts `children` exactly as Curator's `LockInternals.getSortedChildren` does for a recipe
/// whose node names are `lock_names`: every child takes part, ordered by
/// [`curator_sort_key`] compared as Java strings, with a stable sort (children with equal
/// keys keep their order, as with Java's `Collections.sort`).
///
/// For the recipe's own nodes this is the order of their sequence numbers. A child without
/// the name sorts by its whole name: after every sequence number when its name starts with a
/// character above `9` (a letter, `_`), before them when it starts with a digit or with
/// `-`, `.`, and a child named just the lock name (an empty key) sorts first.
pub fn sort_like_curator<T: AsRef<str>>(children: &mut [T], lock_names: &[&str]) {
    if children.len() < 2 {
        return;
    }
    // Each key once (two `rfind`s), not twice per comparison.
    let mut keyed: Vec<(usize, usize)> = children
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let c = c.as_ref();
            (c.len() - curator_sort_key(c, lock_names).len(), i)
        })
        .collect();
    keyed.sort_by(|&(ka, a), &(kb, b)| {
        java_string_cmp(&children[a].as_ref()[ka..], &children[b].as_ref()[kb..])
    });
    let order: Vec<usize> = keyed.into_iter().map(|(_, i)| i).collect();
    // Apply the permutation in place.
    for i in 0..order.len() {
        let mut j = order[i];
        while j < i {
            j = order[j];
        }
        children.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempt_ids_look_like_uuids_and_differ() {
        let (a, b) = (attempt_id(), attempt_id());
        assert_eq!(a.len(), 36);
        assert_eq!(a.matches('-').count(), 4);
        assert_ne!(a, b);
    }

    #[test]
    fn own_nodes_are_found_by_their_id() {
        let id = attempt_id();
        let name = format!("{}0000000007", protected_name(&id, "lock-"));
        assert!(is_own_node(&name, &id));
        assert!(!is_own_node(&name, &attempt_id()));
        assert_eq!(sequence_of(&name), Some(7));
        assert_eq!(sequence_of("lock--000000005"), None);
        assert_eq!(sequence_of("lock--2147483648"), None);
        assert_eq!(sequence_of("lock-2147483647"), Some(2_147_483_647));
    }

    #[test]
    fn children_sort_by_sequence_not_by_prefix() {
        let mut children = vec![
            "_c_ffff-lock-0000000003".to_owned(),
            "_c_0000-lock-0000000010".to_owned(),
            "lock-0000000001".to_owned(),
            "junk".to_owned(),
        ];
        sort_by_sequence(&mut children);
        assert_eq!(
            children,
            [
                "lock-0000000001",
                "_c_ffff-lock-0000000003",
                "_c_0000-lock-0000000010",
                "junk"
            ]
        );
    }

    #[test]
    fn curator_order_is_the_order_of_the_keys_compared_pairwise() {
        // The keys are computed once and the order applied in place: the same order (stable,
        // ties kept as they came) as comparing the two keys at every step.
        let mut rng = fastrand::Rng::with_seed(28);
        let parts = [
            "_c_0f-", "lock-", "__READ__", "__WRIT__", "0000000", "9", "1", "x", "",
        ];
        for _ in 0..500 {
            let children: Vec<String> = (0..rng.usize(0..40))
                .map(|_| {
                    (0..rng.usize(1..4))
                        .map(|_| parts[rng.usize(..parts.len())])
                        .collect()
                })
                .collect();
            let names = ["__READ__", "__WRIT__"];
            let mut expected = children.clone();
            expected.sort_by(|a, b| {
                java_string_cmp(curator_sort_key(a, &names), curator_sort_key(b, &names))
            });
            let mut sorted = children.clone();
            sort_like_curator(&mut sorted, &names);
            assert_eq!(sorted, expected, "from {children:?}");
        }
    }

    #[test]
    fn curator_keys_strip_each_lock_name_in_turn() {
        assert_eq!(
            curator_sort_key("_c_0f-__READ__0000000003", &["__READ__", "__WRIT__"]),
            "0000000003"
        );
        assert_eq!(
            curator_sort_key("_c_0f-__WRIT__0000000004", &["__READ__", "__WRIT__"]),
            "0000000004"
        );
        // Not a `__WRIT__` name: kept whole.
        assert_eq!(
            curator_sort_key("_c_0f-__WRITE__0000000005", &["__READ__", "__WRIT__"]),
            "_c_0f-__WRITE__0000000005"
        );
        assert_eq!(curator_sort_key("lock-", &["lock-"]), "");
        assert_eq!(
            curator_sort_key("lock-lock-0000000001", &["lock-"]),
            "0000000001"
        );
    }

    #[test]
    fn curator_order_compares_like_java_strings() {
        // U+1F600 is a surrogate pair in UTF-16 (0xD83D ...), which sorts before U+FFFD; in
        // UTF-8 bytes it would sort after.
        let mut children = vec![
            "\u{FFFD}".to_owned(),
            "\u{1F600}".to_owned(),
            "b".to_owned(),
        ];
        sort_like_curator(&mut children, &["lock-"]);
        assert_eq!(children, ["b", "\u{1F600}", "\u{FFFD}"]);
        let mut children = vec![
            "zz".to_owned(),
            "_c_ab-lock-0000000002".to_owned(),
            "0".to_owned(),
            "lock-0000000001".to_owned(),
        ];
        sort_like_curator(&mut children, &["lock-"]);
        assert_eq!(
            children,
            ["0", "lock-0000000001", "_c_ab-lock-0000000002", "zz"]
        );
    }
}

//! Who holds and whom a waiter watches: the pure ordering rules of the three recipes, from
//! one listing of the children (Curator's rules for the mutex and the read-write lock).

use super::{MUTEX_NAME, READ_NAME, WRITE_NAME};
use crate::sequential::{curator_sort_key, sort_like_curator};
use crate::{Error, Result};

/// Which contenders stand in the way of which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rule {
    /// Every earlier contender blocks (mutex and write lock): one holder.
    Exclusive,
    /// Only earlier writers block (read lock).
    Read,
    /// Every earlier contender blocks, up to `n` holders (semaphore).
    Permits(usize),
}

/// One kind of contender: its node name, its rule, and which children form its queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Kind {
    pub(super) name: &'static str,
    pub(super) rule: Rule,
    /// The lock names stripped from a child's name to sort it (Curator's `fixForSorting`):
    /// the recipe's own, and for the read-write lock the names of both sides.
    pub(super) sort_names: &'static [&'static str],
    /// Every child of the path is in the queue, as in Curator's recipes; otherwise only the
    /// children named `name` with a sequence number (this crate's semaphore).
    pub(super) every_child: bool,
}

pub(super) const MUTEX: Kind = Kind {
    name: MUTEX_NAME,
    rule: Rule::Exclusive,
    sort_names: &[MUTEX_NAME],
    every_child: true,
};
pub(super) const READ: Kind = Kind {
    name: READ_NAME,
    rule: Rule::Read,
    sort_names: &[READ_NAME, WRITE_NAME],
    every_child: true,
};
pub(super) const WRITE: Kind = Kind {
    name: WRITE_NAME,
    rule: Rule::Exclusive,
    sort_names: &[READ_NAME, WRITE_NAME],
    every_child: true,
};

/// What a contender does after a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Decision {
    /// It holds the lock.
    Acquired,
    /// It waits for `node` to go: its immediate predecessor (mutex, write lock) or the
    /// nearest write node before it (read lock). `last`: that node is the only one in its way,
    /// so its deletion grants the lock (sequence numbers only grow, so no node created later
    /// sorts before ours). `before`: the child just before `node` in the queue (any kind),
    /// watched too when `node` is not the last, because its deletion may make `node` the last.
    Watch {
        node: String,
        last: bool,
        before: Option<String>,
    },
    /// It waits for any change of the children (semaphore).
    WatchChildren,
    /// Its own node is not among the children.
    Missing,
}

/// Whether the sort key of a recipe's node (the text after its name) is a sequence number
/// the server formatted after the parent's counter wrapped: a negative number (`-000000005`,
/// `-2147483648`), or ten digits above `i32::MAX`.
pub(super) fn is_wrapped(key: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match key.strip_prefix('-') {
        Some(rest) => matches!(rest.len(), 9 | 10) && digits(rest),
        None => {
            key.len() == 10
                && digits(key)
                && key.parse::<i64>().is_ok_and(|v| v > i64::from(i32::MAX))
        }
    }
}

/// The queue of a listing, in order.
///
/// For the Curator recipes this is Curator's own order: every child, sorted by
/// [`sort_like_curator`] with the kind's lock names. For the semaphore, only the children
/// named [`LEASE_NAME`] with a sequence number, by that number. A node with a recipe's name
/// and a wrapped sequence number stops the decision ([`Error::SequenceWrapped`]).
pub(super) fn queue_of<S: AsRef<str>>(kind: Kind, children: &[S]) -> Result<Vec<&str>> {
    let mut queue: Vec<&str> = Vec::with_capacity(children.len());
    for child in children {
        let child = child.as_ref();
        let key = curator_sort_key(child, kind.sort_names);
        if kind.sort_names.iter().any(|name| child.contains(name)) && is_wrapped(key) {
            return Err(Error::SequenceWrapped {
                child: child.to_owned(),
            });
        }
        let sequential = key.len() == 10 && key.bytes().all(|b| b.is_ascii_digit());
        if kind.every_child || (child.contains(kind.name) && sequential) {
            queue.push(child);
        }
    }
    sort_like_curator(&mut queue, kind.sort_names);
    Ok(queue)
}

/// Decides from a listing. `own` is the contender's node name (without the parent).
///
/// The rules are Curator's (`StandardLockInternalsDriver.getsTheLock` and the read predicate
/// of `InterProcessReadWriteLock`): a mutex or write-lock contender holds when it is first in
/// the queue; a reader holds when no child whose name contains [`WRITE_NAME`] is before it; a
/// semaphore contender holds when fewer than `permits` nodes are before it.
pub(super) fn decide<S: AsRef<str>>(kind: Kind, children: &[S], own: &str) -> Result<Decision> {
    let queue = queue_of(kind, children)?;
    let Some(index) = queue.iter().position(|c| *c == own) else {
        return Ok(Decision::Missing);
    };
    let before = &queue[..index];
    // The node just before `node` in the queue, if `node` is not the last one in the way.
    let before_of = |node: &str, last: bool| {
        let at = before.iter().position(|c| *c == node)?;
        (!last && at > 0).then(|| before[at - 1].to_string())
    };
    match kind.rule {
        Rule::Exclusive => Ok(match before.last() {
            None => Decision::Acquired,
            Some(node) => {
                let last = before.len() == 1;
                Decision::Watch {
                    node: node.to_string(),
                    last,
                    before: before_of(node, last),
                }
            }
        }),
        Rule::Read => {
            // Any write node before ours blocks; we watch the nearest one (Curator watches
            // the first, and lists again at each deletion).
            let mut writers = before.iter().filter(|c| c.contains(WRITE_NAME));
            let nearest = writers.next_back();
            Ok(match nearest {
                None => Decision::Acquired,
                Some(node) => {
                    let last = writers.next().is_none();
                    Decision::Watch {
                        node: node.to_string(),
                        last,
                        before: before_of(node, last),
                    }
                }
            })
        }
        Rule::Permits(n) if before.len() < n => Ok(Decision::Acquired),
        Rule::Permits(_) => Ok(Decision::WatchChildren),
    }
}

/// The Curator programs' runner of the interop tests, for the ordering oracle below.
#[cfg(test)]
#[path = "../../tests/curator_support/java.rs"]
mod curator_java;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::LEASE_NAME;
    use crate::sequential::{attempt_id, protected_name};

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn mutex_waits_for_its_immediate_predecessor() {
        let children = names(&[
            "_c_b-lock-0000000003",
            "_c_a-lock-0000000001",
            "_c_c-lock-0000000002",
            "other",
        ]);
        assert_eq!(
            decide(MUTEX, &children, "_c_a-lock-0000000001"),
            Ok(Decision::Acquired)
        );
        assert_eq!(
            decide(MUTEX, &children, "_c_c-lock-0000000002"),
            Ok(Decision::Watch {
                node: "_c_a-lock-0000000001".into(),
                last: true,
                before: None,
            })
        );
        assert_eq!(
            decide(MUTEX, &children, "_c_b-lock-0000000003"),
            Ok(Decision::Watch {
                node: "_c_c-lock-0000000002".into(),
                last: false,
                before: Some("_c_a-lock-0000000001".into()),
            })
        );
        assert_eq!(
            decide(MUTEX, &children, "_c_d-lock-0000000004"),
            Ok(Decision::Missing)
        );
    }

    #[test]
    fn wrapped_sequences_are_refused() {
        for wrapped in [
            "_c_b-lock--2147483648",
            "_c_b-lock--000000005",
            "lock-4294967295",
        ] {
            let children = names(&["_c_a-lock-2147483647", wrapped]);
            assert!(
                matches!(
                    decide(MUTEX, &children, "_c_a-lock-2147483647"),
                    Err(Error::SequenceWrapped { .. })
                ),
                "{wrapped}"
            );
        }
        // A name without a sequence number is not a contender.
        let children = names(&["_c_a-lock-0000000002", "my-lock-notes"]);
        assert_eq!(
            decide(MUTEX, &children, "_c_a-lock-0000000002"),
            Ok(Decision::Acquired)
        );
    }

    #[test]
    fn readers_wait_only_for_writers() {
        let children = names(&[
            "_c_a-__READ__0000000001",
            "_c_b-__WRIT__0000000002",
            "_c_c-__READ__0000000003",
            "_c_d-__WRIT__0000000004",
            "_c_e-__READ__0000000005",
        ]);
        assert_eq!(
            decide(READ, &children, "_c_a-__READ__0000000001"),
            Ok(Decision::Acquired)
        );
        assert_eq!(
            decide(WRITE, &children, "_c_b-__WRIT__0000000002"),
            Ok(Decision::Watch {
                node: "_c_a-__READ__0000000001".into(),
                last: true,
                before: None,
            })
        );
        assert_eq!(
            decide(READ, &children, "_c_c-__READ__0000000003"),
            Ok(Decision::Watch {
                node: "_c_b-__WRIT__0000000002".into(),
                last: true,
                before: None,
            })
        );
        assert_eq!(
            decide(READ, &children, "_c_e-__READ__0000000005"),
            Ok(Decision::Watch {
                node: "_c_d-__WRIT__0000000004".into(),
                last: false,
                before: Some("_c_c-__READ__0000000003".into()),
            })
        );
    }

    /// A node name as Curator 5's `withProtection()` creates it: `_c_<uuid>-<name><seq>`.
    fn curator(uuid_tail: u32, name: &str, seq: u32) -> String {
        format!("_c_2f1c4a9e-6b1d-4f3a-9c2e-{uuid_tail:012x}-{name}{seq:010}")
    }

    fn watch(node: &str, last: bool, before: Option<&str>) -> Result<Decision> {
        Ok(Decision::Watch {
            node: node.to_owned(),
            last,
            before: before.map(str::to_owned),
        })
    }

    #[test]
    fn node_names_are_curators() {
        // InterProcessMutex.LOCK_NAME, InterProcessReadWriteLock.READ_LOCK_NAME and
        // WRITE_LOCK_NAME (Curator 5.4).
        assert_eq!(MUTEX_NAME, "lock-");
        assert_eq!(READ_NAME, "__READ__");
        assert_eq!(WRITE_NAME, "__WRIT__");
    }

    #[test]
    fn a_curator_writer_blocks_our_readers_and_writers() {
        let (reader, writer) = (curator(1, "__READ__", 1), curator(2, "__WRIT__", 2));
        let (our_reader, our_writer) = (curator(3, READ_NAME, 3), curator(4, WRITE_NAME, 4));
        let children = vec![
            our_writer.clone(),
            reader.clone(),
            our_reader.clone(),
            writer.clone(),
        ];
        // A reader is blocked by any writer before it (InterProcessReadWriteLock's read
        // predicate), whichever library created it.
        assert_eq!(
            decide(READ, &children, &our_reader),
            watch(&writer, true, None)
        );
        // A writer holds only at index 0 of all the sorted children.
        assert_eq!(
            decide(WRITE, &children, &our_writer),
            watch(&our_reader, false, Some(&writer))
        );
        assert_eq!(decide(READ, &children, &reader), Ok(Decision::Acquired));
    }

    #[test]
    fn our_writer_blocks_curator_readers_queued_after_it() {
        // Curator sorts by the text after `__READ__` / `__WRIT__`: our writer must sort by its
        // sequence number among Curator's nodes, so that a Curator reader after it waits.
        let our_writer = curator(1, WRITE_NAME, 7);
        let reader = curator(2, "__READ__", 8);
        let mut children = vec![reader.clone(), our_writer.clone()];
        sort_like_curator(&mut children, &[READ_NAME, WRITE_NAME]);
        assert_eq!(children, [our_writer.clone(), reader.clone()]);
        assert_eq!(
            decide(READ, &children, &reader),
            watch(&our_writer, true, None)
        );
    }

    #[test]
    fn every_child_takes_part_in_curators_order() {
        // LockInternals.getSortedChildren sorts every child by the text after the last
        // occurrence of the lock name (the whole name when it has none), as Java strings.
        let (a, b) = (curator(1, "lock-", 5), "lock-0000000003".to_owned());
        let children = names(&["zz-notes", &a, "0000000004", &b]);
        let mut sorted = children.clone();
        sort_like_curator(&mut sorted, &[MUTEX_NAME]);
        assert_eq!(sorted, names(&[&b, "0000000004", &a, "zz-notes"]));
        // The foreign "0000000004" sorts before `a` and is in its way, as for Curator.
        assert_eq!(
            decide(MUTEX, &children, &a),
            watch("0000000004", false, Some(&b))
        );
        // A child named just "lock-" sorts first (empty key) and blocks everyone.
        let children = names(&[&a, "lock-"]);
        assert_eq!(decide(MUTEX, &children, &a), watch("lock-", true, None));
    }

    #[test]
    fn read_write_order_strips_both_names() {
        // SortingLockInternalsDriver strips `__READ__`, then `__WRIT__`: readers and writers
        // sort together by number; the old `__WRITE__` name matches neither and sorts after
        // every number, and it is not a writer.
        let legacy = curator(1, "__WRITE__", 1);
        let reader = curator(2, READ_NAME, 2);
        let writer = curator(3, WRITE_NAME, 3);
        let foreign = "0000000000".to_owned();
        let children = vec![
            legacy.clone(),
            writer.clone(),
            reader.clone(),
            foreign.clone(),
        ];
        let mut sorted = children.clone();
        sort_like_curator(&mut sorted, &[READ_NAME, WRITE_NAME]);
        assert_eq!(
            sorted,
            [
                foreign.clone(),
                reader.clone(),
                writer.clone(),
                legacy.clone()
            ]
        );
        // The foreign node is not a writer: the reader holds; the writer waits for both.
        assert_eq!(decide(READ, &children, &reader), Ok(Decision::Acquired));
        assert_eq!(
            decide(WRITE, &children, &writer),
            watch(&reader, false, Some(&foreign))
        );
    }

    #[test]
    fn semaphore_grants_the_first_permits() {
        let kind = Kind {
            name: LEASE_NAME,
            rule: Rule::Permits(2),
            sort_names: &[LEASE_NAME],
            every_child: false,
        };
        let children = names(&[
            "_c_a-lease-0000000001",
            "_c_b-lease-0000000002",
            "_c_c-lease-0000000003",
        ]);
        assert_eq!(
            decide(kind, &children, "_c_b-lease-0000000002"),
            Ok(Decision::Acquired)
        );
        assert_eq!(
            decide(kind, &children, "_c_c-lease-0000000003"),
            Ok(Decision::WatchChildren)
        );
    }

    /// One random listing for the oracle: Curator's and our nodes of every recipe, with and
    /// without the protected prefix, and foreign children sorting before, between and after
    /// them. Returns the own node of `recipe` and the children (distinct names).
    fn random_listing(rng: &mut fastrand::Rng, recipe: &str) -> (String, Vec<String>) {
        const FOREIGN: &[&str] = &[
            "junk",
            "lock-",
            "__READ__",
            "__WRIT__",
            "latch-",
            "0",
            "0000000004",
            "00000000005",
            "-000000003",
            "9",
            "leader",
            "Zebra",
            "my-lock-notes",
            "x__WRIT__y",
            "\u{e9}-lock-9",
            "\u{1F600}",
            "\u{FFFD}",
        ];
        let own_name = match recipe {
            "mutex" => MUTEX_NAME,
            "read" => READ_NAME,
            "write" => WRITE_NAME,
            _ => crate::election::LATCH_NAME,
        };
        let node_names = [
            MUTEX_NAME,
            READ_NAME,
            WRITE_NAME,
            crate::election::LATCH_NAME,
            "__WRITE__",
        ];
        let mut seqs = std::collections::HashSet::new();
        let mut node = |rng: &mut fastrand::Rng, name: &str| {
            let seq = loop {
                // Small numbers too, so that the foreign digit names fall in between.
                let seq = if rng.bool() {
                    rng.u32(0..20)
                } else {
                    rng.u32(0..=i32::MAX as u32)
                };
                if seqs.insert(seq) {
                    break seq;
                }
            };
            if rng.u8(0..4) == 0 {
                format!("{name}{seq:010}")
            } else {
                format!("{}{seq:010}", protected_name(&attempt_id(), name))
            }
        };
        let own = node(rng, own_name);
        let mut children = vec![own.clone()];
        for _ in 0..rng.usize(0..12) {
            let child = if rng.u8(0..4) == 0 {
                FOREIGN[rng.usize(..FOREIGN.len())].to_owned()
            } else if rng.bool() {
                node(rng, own_name)
            } else {
                let name = node_names[rng.usize(..node_names.len())];
                node(rng, name)
            };
            if !children.contains(&child) {
                children.push(child);
            }
        }
        rng.shuffle(&mut children);
        (own, children)
    }

    /// The order and the grants of random listings equal those of Curator 5's own code
    /// (`tests/curator/CuratorOrder.java` runs `LockInternals.getSortedChildren` and the
    /// drivers' `getsTheLock` on the same listings): for the mutex, both sides of the
    /// read-write lock and the leader latch.
    #[test]
    fn ordering_and_grants_equal_curators() {
        use std::io::Write as _;

        const CASES: usize = 600;
        let mut rng = fastrand::Rng::with_seed(0x5eed_c0de);
        let recipes = ["mutex", "read", "write", "latch"];
        let cases: Vec<(&str, String, Vec<String>)> = (0..CASES)
            .map(|i| {
                let recipe = recipes[i % recipes.len()];
                let (own, children) = random_listing(&mut rng, recipe);
                (recipe, own, children)
            })
            .collect();
        let mut input = String::new();
        for (recipe, own, children) in &cases {
            input.push_str(&format!("{recipe}\t{own}\t{}\n", children.join("\t")));
        }
        let mut java = curator_java::curator_program("CuratorOrder")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start java CuratorOrder");
        java.stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write the cases");
        let output = java.wait_with_output().expect("java output");
        assert!(output.status.success(), "java CuratorOrder failed");
        let stdout = String::from_utf8(output.stdout).expect("utf-8");
        let replies: Vec<&str> = stdout.lines().collect();
        assert_eq!(replies.len(), CASES);

        for ((recipe, own, children), reply) in cases.iter().zip(replies) {
            let (sorted, verdict) = reply.split_once("\t|\t").expect("reply");
            let curator_order: Vec<&str> = sorted.split('\t').collect();
            let (holds, watch) = verdict.split_once('\t').expect("verdict");
            let holds = holds == "true";
            let context = format!("{recipe} {own} in {children:?}");
            if *recipe == "latch" {
                let mut ours = children.clone();
                sort_like_curator(&mut ours, &[crate::election::LATCH_NAME]);
                assert_eq!(ours, curator_order, "latch order: {context}");
                continue;
            }
            let kind = match *recipe {
                "mutex" => MUTEX,
                "read" => READ,
                _ => WRITE,
            };
            let ours = queue_of(kind, children).expect("no wrapped sequence");
            assert_eq!(ours, curator_order, "order: {context}");
            match decide(kind, children, own).expect("decide") {
                Decision::Acquired => assert!(holds, "we hold, Curator does not: {context}"),
                Decision::Watch { node, .. } => {
                    assert!(!holds, "Curator holds, we wait: {context}");
                    if kind.rule == Rule::Exclusive {
                        // Both watch the immediate predecessor.
                        assert_eq!(node, watch, "watched node: {context}");
                    } else {
                        // We watch the nearest writer before us, Curator the first one.
                        assert!(node.contains(WRITE_NAME) && watch.contains(WRITE_NAME));
                    }
                }
                other => panic!("{other:?}: {context}"),
            }
        }
    }
}

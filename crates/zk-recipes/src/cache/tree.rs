//! The cached tree: an ordered map of immutable, `Arc`-shared nodes, and the changes the cache's
//! task applies to it (each returns the events it caused).
//!
//! A node is keyed by `<parent path>\0<name>` (`\0` for `/` itself): ZooKeeper paths never
//! contain NUL, so the key is unique, and the children of a node are one contiguous range of
//! keys (`<path>\0` up to `<path>\x01`), found without walking the descendants. The map sits
//! behind an `Arc`: a [`Snapshot`] clones the `Arc`, and the task writes through
//! [`Arc::make_mut`], which copies the map (its keys and node pointers, never the nodes) only
//! while a snapshot taken before is still held.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use zk_proto::{Stat, StringList};

/// One cached node: its path, its data (unless only its Stat is kept) and its Stat.
///
/// Immutable: a change replaces the node, so a node handed out (by a read, a snapshot or an
/// event) never changes under its holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheNode {
    path: Arc<str>,
    data: Option<Bytes>,
    stat: Stat,
}

impl CacheNode {
    /// The node's path (relative to the client's chroot, as every path of the client).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The last component of the path (`""` for `/`).
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or_default()
    }

    /// The node's data; `None` when the cache keeps only the Stat of this node
    /// ([`Keep::Stat`](super::Keep::Stat)).
    pub fn data(&self) -> Option<&Bytes> {
        self.data.as_ref()
    }

    /// The Stat read with the node's current data. Its fields about the children
    /// (`cversion`, `pzxid`, `num_children`) are as of that read: a recursive watch does not
    /// report child-list changes to the parent, so they are not kept current (the cache's
    /// [`children`](super::TreeCache::children) are).
    pub fn stat(&self) -> &Stat {
        &self.stat
    }
}

/// A cached node and what the task knows beside it.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    pub(crate) node: Arc<CacheNode>,
    /// The highest `pzxid` of this node's child list applied so far: an older list is never
    /// applied over a newer one.
    pzxid: i64,
}

/// The map of the cached tree.
pub(crate) type Map = BTreeMap<Arc<str>, Slot>;

/// The key of `path` in the map (see the module docs).
pub(crate) fn key(path: &str) -> String {
    match path.rfind('/') {
        Some(0) if path.len() == 1 => "\0".to_owned(),
        Some(0) => format!("/\0{}", &path[1..]),
        Some(i) => format!("{}\0{}", &path[..i], &path[i + 1..]),
        None => path.to_owned(),
    }
}

/// The bounds of the keys of `path`'s children.
fn children_bounds(path: &str) -> (String, String) {
    (format!("{path}\0"), format!("{path}\u{1}"))
}

/// The parent of `path` (`None` for `/`).
pub(crate) fn parent_path(path: &str) -> Option<&str> {
    match path.rfind('/') {
        Some(0) if path.len() == 1 => None,
        Some(0) => Some("/"),
        Some(i) => Some(&path[..i]),
        None => None,
    }
}

fn slots_in<'a>(map: &'a Map, path: &str) -> impl DoubleEndedIterator<Item = &'a Slot> + 'a {
    let (low, high) = children_bounds(path);
    map.range::<str, _>((
        std::ops::Bound::Included(low.as_str()),
        std::ops::Bound::Excluded(high.as_str()),
    ))
    .map(|(_, slot)| slot)
}

/// An immutable view of the whole cached tree, taken in O(1); reading it never blocks the
/// cache.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub(crate) map: Arc<Map>,
}

impl Snapshot {
    /// The node at `path`, if cached.
    pub fn get(&self, path: &str) -> Option<&Arc<CacheNode>> {
        self.map.get(key(path).as_str()).map(|slot| &slot.node)
    }

    /// The cached children of `path`, ordered by name (empty when `path` is not cached).
    pub fn children(&self, path: &str) -> impl Iterator<Item = &Arc<CacheNode>> + '_ {
        slots_in(&self.map, path).map(|slot| &slot.node)
    }

    /// Every cached node, children after their parent's siblings (ordered by parent path, then
    /// name).
    pub fn nodes(&self) -> impl Iterator<Item = &Arc<CacheNode>> + '_ {
        self.map.values().map(|slot| &slot.node)
    }

    /// How many nodes are cached.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no node is cached (the root does not exist, or is filtered out).
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// A change of the cached tree, as the cache's event stream reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheEvent {
    /// A node entered the cache (created, or found by a reconciliation).
    Added(Arc<CacheNode>),
    /// A cached node's data changed (its `mzxid` grew): the node before and after.
    Updated {
        /// The node as cached before.
        old: Arc<CacheNode>,
        /// The node as cached now.
        new: Arc<CacheNode>,
    },
    /// A node left the cache (deleted, or found gone by a reconciliation): the node as last
    /// cached. A node's descendants are removed before it.
    Removed(Arc<CacheNode>),
    /// The first full load is done: the cache holds the whole (selected) subtree, and every
    /// later event is a change from that view. Sent once, before any other event.
    Initialized,
}

/// What applying a node read did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Applied {
    /// The node is new in the cache (or replaced an older incarnation).
    Added,
    /// Its data changed.
    Updated,
    /// Nothing new (same data), or an older read than the one cached (ignored).
    Unchanged,
}

/// The task's writes to the map; each pushes the events it causes onto `out`.
pub(crate) struct Writer<'a> {
    pub(crate) map: &'a mut Map,
    pub(crate) out: &'a mut Vec<CacheEvent>,
}

impl Writer<'_> {
    /// Whether `path` is cached.
    pub(crate) fn contains(&self, path: &str) -> bool {
        self.map.contains_key(key(path).as_str())
    }

    /// Applies a read of `path` (data and Stat). A read of an older incarnation (smaller
    /// `czxid`) or of older data (smaller `mzxid`) than the cached one is ignored; a newer
    /// incarnation replaces the node and its subtree (a deletion and a re-creation).
    pub(crate) fn put(&mut self, path: &str, data: Option<Bytes>, stat: Stat) -> Applied {
        let key = key(path);
        if let Some(current) = self.map.get(key.as_str()) {
            let cached = &current.node.stat;
            if stat.czxid < cached.czxid
                || (stat.czxid == cached.czxid && stat.mzxid <= cached.mzxid)
            {
                return Applied::Unchanged;
            }
            if stat.czxid == cached.czxid {
                let old = current.node.clone();
                let pzxid = current.pzxid.max(stat.pzxid);
                let new = Arc::new(CacheNode {
                    path: old.path.clone(),
                    data,
                    stat,
                });
                self.map.insert(
                    Arc::from(key),
                    Slot {
                        node: new.clone(),
                        pzxid,
                    },
                );
                self.out.push(CacheEvent::Updated { old, new });
                return Applied::Updated;
            }
            self.remove(path);
        }
        let pzxid = stat.pzxid;
        let node = Arc::new(CacheNode {
            path: Arc::from(path),
            data,
            stat,
        });
        self.map.insert(
            Arc::from(key),
            Slot {
                node: node.clone(),
                pzxid,
            },
        );
        self.out.push(CacheEvent::Added(node));
        Applied::Added
    }

    /// Removes `path` and its cached subtree, descendants first.
    pub(crate) fn remove(&mut self, path: &str) {
        let mut stack = vec![(path.to_owned(), false)];
        while let Some((path, expanded)) = stack.pop() {
            if expanded {
                if let Some(slot) = self.map.remove(key(&path).as_str()) {
                    self.out.push(CacheEvent::Removed(slot.node));
                }
                continue;
            }
            stack.push((path.clone(), true));
            // Reversed, so that children are removed in name order.
            for child in slots_in(self.map, &path).rev() {
                stack.push((child.node.path.to_string(), false));
            }
        }
    }

    /// Applies the child list of `parent` read with `pzxid` (and the parent's `czxid`):
    /// removes the cached children it does not name. Returns `false` (nothing applied) when
    /// the parent is not cached, is another incarnation, or a newer list was applied before.
    pub(crate) fn retain_children(
        &mut self,
        parent: &str,
        czxid: i64,
        pzxid: i64,
        listed: &StringList,
    ) -> bool {
        let Some(slot) = self.map.get_mut(key(parent).as_str()) else {
            return false;
        };
        if slot.node.stat.czxid != czxid || pzxid < slot.pzxid {
            return false;
        }
        slot.pzxid = pzxid;
        let gone: Vec<String> = slots_in(self.map, parent)
            .filter(|child| !listed.contains(child.node.name()))
            .map(|child| child.node.path.to_string())
            .collect();
        for path in gone {
            self.remove(&path);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(czxid: i64, mzxid: i64, pzxid: i64) -> Stat {
        Stat {
            czxid,
            mzxid,
            pzxid,
            ..Stat::default()
        }
    }

    fn names(snapshot: &Snapshot, path: &str) -> Vec<String> {
        snapshot
            .children(path)
            .map(|n| n.name().to_owned())
            .collect()
    }

    #[test]
    fn keys_keep_children_together_and_apart_from_grandchildren() {
        assert_eq!(key("/"), "\0");
        assert_eq!(key("/a"), "/\0a");
        assert_eq!(key("/a/b"), "/a\0b");
        assert_eq!(parent_path("/"), None);
        assert_eq!(parent_path("/a"), Some("/"));
        assert_eq!(parent_path("/a/b"), Some("/a"));

        let (mut map, mut out) = (Map::new(), Vec::new());
        let mut writer = Writer {
            map: &mut map,
            out: &mut out,
        };
        for (i, path) in ["/", "/a", "/a/b", "/a/b/c", "/a/c", "/ab", "/a-"]
            .iter()
            .enumerate()
        {
            let i = i as i64;
            assert_eq!(writer.put(path, None, stat(i, i, i)), Applied::Added);
        }
        let snapshot = Snapshot { map: Arc::new(map) };
        assert_eq!(names(&snapshot, "/"), ["a", "a-", "ab"]);
        assert_eq!(names(&snapshot, "/a"), ["b", "c"]);
        assert_eq!(names(&snapshot, "/a/b"), ["c"]);
        assert_eq!(snapshot.get("/a/b/c").map(|n| n.name()), Some("c"));
        assert_eq!(snapshot.get("/").map(|n| n.name()), Some(""));
        assert_eq!(snapshot.len(), 7);
    }

    #[test]
    fn older_reads_never_replace_newer_state() {
        let (mut map, mut out) = (Map::new(), Vec::new());
        let mut writer = Writer {
            map: &mut map,
            out: &mut out,
        };
        writer.put("/a", Some(Bytes::from("v2")), stat(5, 9, 5));
        assert_eq!(
            writer.put("/a", Some(Bytes::from("v1")), stat(5, 7, 5)),
            Applied::Unchanged
        );
        assert_eq!(
            writer.put("/a", Some(Bytes::from("v2")), stat(5, 9, 5)),
            Applied::Unchanged
        );
        // An older incarnation (deleted, then this one created).
        assert_eq!(
            writer.put("/a", Some(Bytes::from("old")), stat(3, 3, 3)),
            Applied::Unchanged
        );
        assert_eq!(
            writer.put("/a", Some(Bytes::from("v3")), stat(5, 11, 5)),
            Applied::Updated
        );
        // An older child list is not applied; a newer one is.
        writer.put("/a/x", None, stat(12, 12, 12));
        assert!(!writer.retain_children("/a", 5, 4, &StringList::new()));
        assert!(writer.contains("/a/x"));
        assert!(
            !writer.retain_children("/a", 6, 20, &StringList::new()),
            "another incarnation"
        );
        assert!(writer.retain_children("/a", 5, 13, &StringList::new()));
        assert!(!writer.contains("/a/x"));
        let data: Vec<_> = out
            .iter()
            .map(|e| match e {
                CacheEvent::Added(n) => format!("+{}", n.path()),
                CacheEvent::Updated { old, new } => {
                    format!("~{} {:?}>{:?}", new.path(), old.data(), new.data())
                }
                CacheEvent::Removed(n) => format!("-{}", n.path()),
                CacheEvent::Initialized => "init".to_owned(),
            })
            .collect();
        assert_eq!(
            data,
            ["+/a", "~/a Some(b\"v2\")>Some(b\"v3\")", "+/a/x", "-/a/x"]
        );
    }

    #[test]
    fn a_new_incarnation_replaces_the_subtree_descendants_first() {
        let (mut map, mut out) = (Map::new(), Vec::new());
        let mut writer = Writer {
            map: &mut map,
            out: &mut out,
        };
        writer.put("/a", None, stat(1, 1, 1));
        writer.put("/a/b", None, stat(2, 2, 2));
        writer.put("/a/b/c", None, stat(3, 3, 3));
        writer.put("/a/d", None, stat(4, 4, 4));
        out.clear();
        let mut writer = Writer {
            map: &mut map,
            out: &mut out,
        };
        assert_eq!(writer.put("/a", None, stat(9, 9, 9)), Applied::Added);
        let kinds: Vec<_> = out
            .iter()
            .map(|e| match e {
                CacheEvent::Added(n) => format!("+{}", n.path()),
                CacheEvent::Removed(n) => format!("-{}", n.path()),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(kinds, ["-/a/b/c", "-/a/b", "-/a/d", "-/a", "+/a"]);
        assert_eq!(map.len(), 1);
    }
}

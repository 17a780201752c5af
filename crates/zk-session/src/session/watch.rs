//! The registry of the session's watches, keyed by server path and kind.

use std::collections::HashMap;

use jute::{EventType, SetWatches, SetWatches2, StringList};

use super::RequestId;

/// The kind of a watch, as the server keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WatchKind {
    /// Set by getData: fires on data change and deletion.
    Data,
    /// Set by exists: fires on creation, data change and deletion.
    Exist,
    /// Set by getChildren: fires on child list change and deletion.
    Child,
    /// Set by addWatch PERSISTENT: every change of the node, until removed.
    Persistent,
    /// Set by addWatch PERSISTENT_RECURSIVE: every change of the node and its descendants
    /// (child list changes excluded), until removed.
    PersistentRecursive,
}

impl WatchKind {
    /// Whether the watch stays after firing.
    pub fn is_persistent(self) -> bool {
        matches!(self, Self::Persistent | Self::PersistentRecursive)
    }
}

/// A mode a path's persistent watchers hold on the server, beyond one-shot watches (what
/// [`super::modes`] tracks path by path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    /// addWatch `PERSISTENT`.
    Persistent,
    /// addWatch `PERSISTENT_RECURSIVE`.
    Recursive,
}

/// A watcher the registry forgot ([`WatchRegistry::forget`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Forgotten {
    /// Its server path (chroot included).
    pub(crate) path: String,
    /// Its kind.
    pub(crate) kind: WatchKind,
    /// No other watcher of this session is left on the path.
    pub(crate) path_is_free: bool,
}

/// A watcher an event fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fired {
    pub(crate) id: RequestId,
    /// The watch is gone after this event (a one-shot watch fires once).
    pub(crate) last: bool,
}

impl Fired {
    fn last(id: RequestId) -> Fired {
        Fired { id, last: true }
    }

    fn again(id: RequestId) -> Fired {
        Fired { id, last: false }
    }
}

#[derive(Debug, Default)]
struct PathWatches {
    data: Vec<RequestId>,
    exist: Vec<RequestId>,
    child: Vec<RequestId>,
    persistent: Vec<RequestId>,
    recursive: Vec<RequestId>,
}

impl PathWatches {
    fn list(&mut self, kind: WatchKind) -> &mut Vec<RequestId> {
        match kind {
            WatchKind::Data => &mut self.data,
            WatchKind::Exist => &mut self.exist,
            WatchKind::Child => &mut self.child,
            WatchKind::Persistent => &mut self.persistent,
            WatchKind::PersistentRecursive => &mut self.recursive,
        }
    }

    fn held(&self) -> Option<Held> {
        if !self.recursive.is_empty() {
            Some(Held::Recursive)
        } else if !self.persistent.is_empty() {
            Some(Held::Persistent)
        } else {
            None
        }
    }

    fn is_empty(&self) -> bool {
        self.data.is_empty()
            && self.exist.is_empty()
            && self.child.is_empty()
            && self.persistent.is_empty()
            && self.recursive.is_empty()
    }
}

/// Every live watch of the session. A watch enters on a successful reply to the request that
/// set it, and leaves when it fires (one-shot kinds), when it is removed, or when the session
/// ends (then it is reported lost).
#[derive(Debug, Default)]
pub(crate) struct WatchRegistry {
    by_path: HashMap<String, PathWatches>,
    count: usize,
}

impl WatchRegistry {
    pub(crate) fn add(&mut self, server_path: String, kind: WatchKind, id: RequestId) {
        self.by_path
            .entry(server_path)
            .or_default()
            .list(kind)
            .push(id);
        self.count += 1;
    }

    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// The watchers an event of `event_type` on `server_path` fires, with one-shot ones
    /// removed (the table of the Java client's `ZKWatchManager.materialize`), each with
    /// whether this event is its last (a one-shot watch's only one).
    pub(crate) fn fire(&mut self, event_type: EventType, server_path: &str) -> Vec<Fired> {
        let mut fired = Vec::new();
        let (one_shot, recursive): (&[WatchKind], bool) = match event_type {
            EventType::NODE_CREATED | EventType::NODE_DATA_CHANGED => {
                (&[WatchKind::Data, WatchKind::Exist], true)
            }
            EventType::NODE_CHILDREN_CHANGED => (&[WatchKind::Child], false),
            EventType::NODE_DELETED => {
                (&[WatchKind::Data, WatchKind::Exist, WatchKind::Child], true)
            }
            _ => return fired,
        };
        if let Some(watches) = self.by_path.get_mut(server_path) {
            for &kind in one_shot {
                let taken = std::mem::take(watches.list(kind));
                self.count -= taken.len();
                fired.extend(taken.into_iter().map(Fired::last));
            }
            fired.extend(watches.persistent.iter().copied().map(Fired::again));
            if watches.is_empty() {
                self.by_path.remove(server_path);
            }
        }
        if recursive {
            for ancestor in ancestors_and_self(server_path) {
                if let Some(watches) = self.by_path.get(ancestor) {
                    fired.extend(watches.recursive.iter().copied().map(Fired::again));
                }
            }
        }
        fired
    }

    /// Removes the watches of `kinds` on `server_path`, returning them with their kind.
    pub(crate) fn remove(
        &mut self,
        server_path: &str,
        kinds: &[WatchKind],
    ) -> Vec<(RequestId, WatchKind)> {
        let mut removed = Vec::new();
        if let Some(watches) = self.by_path.get_mut(server_path) {
            for &kind in kinds {
                removed.extend(
                    std::mem::take(watches.list(kind))
                        .into_iter()
                        .map(|id| (id, kind)),
                );
            }
            if watches.is_empty() {
                self.by_path.remove(server_path);
            }
        }
        self.count -= removed.len();
        removed
    }

    /// Forgets one watcher whose consumer is gone: it is no longer delivered to nor
    /// re-registered after a reconnect (on the server it stays armed until it fires, the
    /// session ends, or it is removed). Returns its server path and kind, and whether no
    /// other watcher is left on that path.
    pub(crate) fn forget(&mut self, id: RequestId) -> Option<Forgotten> {
        let mut forgotten = None;
        for (path, watches) in &mut self.by_path {
            for kind in ALL_KINDS {
                let list = watches.list(kind);
                if let Some(at) = list.iter().position(|&w| w == id) {
                    list.remove(at);
                    self.count -= 1;
                    forgotten = Some(Forgotten {
                        path: path.clone(),
                        kind,
                        path_is_free: watches.is_empty(),
                    });
                    break;
                }
            }
            if forgotten.is_some() {
                break;
            }
        }
        if let Some(Forgotten {
            path,
            path_is_free: true,
            ..
        }) = &forgotten
        {
            self.by_path.remove(path);
        }
        forgotten
    }

    /// The persistent kind of the live watchers on `server_path`, if any (recursive first:
    /// the session never arms both kinds on one path).
    pub(crate) fn held(&self, server_path: &str) -> Option<Held> {
        self.by_path.get(server_path).and_then(PathWatches::held)
    }

    /// Every path with live persistent watchers, with their kind.
    pub(crate) fn held_paths(&self) -> impl Iterator<Item = (&str, Held)> {
        self.by_path
            .iter()
            .filter_map(|(path, watches)| Some((path.as_str(), watches.held()?)))
    }

    /// Fires the one-shot child-list watchers of `server_path` (a child of it was created or
    /// deleted, and the server, holding the path in a recursive mode, sends no child-list
    /// change): they are removed and returned.
    pub(crate) fn fire_children(&mut self, server_path: &str) -> Vec<RequestId> {
        let Some(watches) = self.by_path.get_mut(server_path) else {
            return Vec::new();
        };
        let fired = std::mem::take(&mut watches.child);
        self.count -= fired.len();
        if watches.is_empty() {
            self.by_path.remove(server_path);
        }
        fired
    }

    /// The persistent watchers (both kinds), in id order: they outlive a connection, so they
    /// are told when it is lost and when the next one is ready.
    pub(crate) fn persistent(&self) -> Vec<RequestId> {
        let mut ids: Vec<RequestId> = self
            .by_path
            .values()
            .flat_map(|watches| watches.persistent.iter().chain(&watches.recursive))
            .copied()
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Empties the registry, returning every watcher (to report them lost).
    pub(crate) fn drain(&mut self) -> Vec<RequestId> {
        self.count = 0;
        let mut all = Vec::new();
        for (_, mut watches) in self.by_path.drain() {
            for kind in ALL_KINDS {
                all.append(watches.list(kind));
            }
        }
        all.sort_unstable();
        all
    }

    /// The SetWatches (or SetWatches2, when persistent watches exist) requests that re-arm
    /// every watch after a reconnect, each under `max_bytes` of encoded paths (a single path
    /// longer than that still gets its own request).
    pub(crate) fn set_watches(&self, relative_zxid: i64, max_bytes: usize) -> Vec<SetWatchesBatch> {
        let mut paths: Vec<&String> = self.by_path.keys().collect();
        paths.sort();
        let mut batches = Vec::new();
        let mut current = SetWatches2 {
            relative_zxid,
            data_watches: Some(StringList::new()),
            exist_watches: Some(StringList::new()),
            child_watches: Some(StringList::new()),
            persistent_watches: Some(StringList::new()),
            persistent_recursive_watches: Some(StringList::new()),
        };
        let mut size = 0;
        for kind in ALL_KINDS {
            for path in &paths {
                let Some(watches) = self.by_path.get(*path) else {
                    continue;
                };
                let has = match kind {
                    WatchKind::Data => !watches.data.is_empty(),
                    WatchKind::Exist => !watches.exist.is_empty(),
                    WatchKind::Child => !watches.child.is_empty(),
                    WatchKind::Persistent => !watches.persistent.is_empty(),
                    WatchKind::PersistentRecursive => !watches.recursive.is_empty(),
                };
                if !has {
                    continue;
                }
                let cost = 4 + path.len();
                if size > 0 && size + cost > max_bytes {
                    batches.push(SetWatchesBatch::new(std::mem::replace(
                        &mut current,
                        SetWatches2 {
                            relative_zxid,
                            data_watches: Some(StringList::new()),
                            exist_watches: Some(StringList::new()),
                            child_watches: Some(StringList::new()),
                            persistent_watches: Some(StringList::new()),
                            persistent_recursive_watches: Some(StringList::new()),
                        },
                    )));
                    size = 0;
                }
                size += cost;
                let list = match kind {
                    WatchKind::Data => &mut current.data_watches,
                    WatchKind::Exist => &mut current.exist_watches,
                    WatchKind::Child => &mut current.child_watches,
                    WatchKind::Persistent => &mut current.persistent_watches,
                    WatchKind::PersistentRecursive => &mut current.persistent_recursive_watches,
                };
                list.get_or_insert_with(StringList::new).push(path);
            }
        }
        if size > 0 {
            batches.push(SetWatchesBatch::new(current));
        }
        batches
    }
}

const ALL_KINDS: [WatchKind; 5] = [
    WatchKind::Data,
    WatchKind::Exist,
    WatchKind::Child,
    WatchKind::Persistent,
    WatchKind::PersistentRecursive,
];

/// One re-registration request: SetWatches when it has no persistent watches (so servers
/// before 3.6 keep working), SetWatches2 otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SetWatchesBatch {
    V1(SetWatches),
    V2(SetWatches2),
}

impl SetWatchesBatch {
    fn new(batch: SetWatches2) -> Self {
        let no_persistent = batch
            .persistent_watches
            .as_ref()
            .is_none_or(StringList::is_empty)
            && batch
                .persistent_recursive_watches
                .as_ref()
                .is_none_or(StringList::is_empty);
        if no_persistent {
            Self::V1(SetWatches {
                relative_zxid: batch.relative_zxid,
                data_watches: batch.data_watches,
                exist_watches: batch.exist_watches,
                child_watches: batch.child_watches,
            })
        } else {
            Self::V2(batch)
        }
    }
}

/// `/a/b/c` → `/a/b/c`, `/a/b`, `/a`, `/`.
fn ancestors_and_self(path: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(path);
    std::iter::from_fn(move || {
        let current = next?;
        next = match current.rfind('/') {
            _ if current == "/" => None,
            Some(0) => Some("/"),
            Some(at) => Some(&current[..at]),
            None => None,
        };
        Some(current)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u64) -> RequestId {
        RequestId(n)
    }

    #[test]
    fn ancestors_walk_up_to_the_root() {
        let all: Vec<_> = ancestors_and_self("/a/b/c").collect();
        assert_eq!(all, ["/a/b/c", "/a/b", "/a", "/"]);
        assert_eq!(ancestors_and_self("/").collect::<Vec<_>>(), ["/"]);
    }

    #[test]
    fn one_shot_watches_fire_once_by_the_java_table() {
        let mut registry = WatchRegistry::default();
        registry.add("/n".into(), WatchKind::Data, id(1));
        registry.add("/n".into(), WatchKind::Exist, id(2));
        registry.add("/n".into(), WatchKind::Child, id(3));
        assert_eq!(
            registry.fire(EventType::NODE_CHILDREN_CHANGED, "/n"),
            [Fired::last(id(3))]
        );
        assert_eq!(
            registry.fire(EventType::NODE_DATA_CHANGED, "/n"),
            [Fired::last(id(1)), Fired::last(id(2))]
        );
        assert!(registry.fire(EventType::NODE_DELETED, "/n").is_empty());
        assert_eq!(registry.len(), 0);
    }

    #[test]
    fn persistent_watches_stay_and_recursive_ones_skip_child_events() {
        let mut registry = WatchRegistry::default();
        registry.add("/a".into(), WatchKind::Persistent, id(1));
        registry.add("/".into(), WatchKind::PersistentRecursive, id(2));
        assert_eq!(
            registry.fire(EventType::NODE_DATA_CHANGED, "/a"),
            [Fired::again(id(1)), Fired::again(id(2))]
        );
        assert_eq!(
            registry.fire(EventType::NODE_CHILDREN_CHANGED, "/a"),
            [Fired::again(id(1))]
        );
        assert_eq!(
            registry.fire(EventType::NODE_CREATED, "/a/b/c"),
            [Fired::again(id(2))]
        );
        assert_eq!(registry.len(), 2);
        assert_eq!(
            registry.remove("/a", &[WatchKind::Persistent]),
            [(id(1), WatchKind::Persistent)]
        );
        registry.forget(id(2));
        assert_eq!(registry.len(), 0);
        assert!(registry.fire(EventType::NODE_CREATED, "/a").is_empty());
    }

    #[test]
    fn set_watches_uses_v1_without_persistent_watches_and_splits_batches() {
        let mut registry = WatchRegistry::default();
        for n in 0..10 {
            registry.add(format!("/node-{n}"), WatchKind::Data, id(n));
        }
        registry.add("/node-0".into(), WatchKind::Child, id(100));
        let batches = registry.set_watches(42, 40);
        let mut paths = 0;
        for batch in &batches {
            let SetWatchesBatch::V1(batch) = batch else {
                panic!("expected SetWatches: {batch:?}")
            };
            assert_eq!(batch.relative_zxid, 42);
            let in_batch = batch.data_watches.as_ref().map_or(0, StringList::len)
                + batch.child_watches.as_ref().map_or(0, StringList::len);
            assert!(in_batch * (4 + 7) <= 40, "batch over the cap: {batch:?}");
            paths += in_batch;
        }
        assert_eq!(paths, 11);
        registry.add("/p".into(), WatchKind::PersistentRecursive, id(200));
        let batches = registry.set_watches(42, 1 << 20);
        assert!(matches!(batches.as_slice(), [SetWatchesBatch::V2(_)]));
    }

    #[test]
    fn drain_reports_every_watch() {
        let mut registry = WatchRegistry::default();
        registry.add("/a".into(), WatchKind::Data, id(2));
        registry.add("/b".into(), WatchKind::PersistentRecursive, id(1));
        assert_eq!(registry.drain(), [id(1), id(2)]);
        assert_eq!(registry.len(), 0);
        assert!(registry.set_watches(0, 100).is_empty());
    }
}

//! The watch modes a 3.8 server holds for this session beyond one-shot watches, path by path.
//!
//! A 3.8 server keeps, for each session and path, one mode for the watches that fire on the
//! node's data (set by getData and exists, and by addWatch) and one for those that fire on its
//! child list (set by getChildren, and by addWatch), and the last request that sets a mode
//! wins (ZOOKEEPER-4466, fixed in 3.9). A one-shot watch asked for on a path held in a
//! persistent mode turns it into a one-shot mode; a `PERSISTENT` addWatch replaces a recursive
//! mode (no more events below the path), and a `PERSISTENT_RECURSIVE` one replaces a
//! persistent child-list mode with a recursive one, which sends no child-list changes.
//!
//! So the session tracks those modes, as the server holds them once it has run the requests
//! answered so far, and decides how to send each request from them (`Session::as_sent`): a
//! one-shot watch that a held mode covers is armed locally and not asked of the server, a
//! removal of such one-shot watches is sent as a checkWatches, and the two persistent kinds
//! are never mixed on one path (the second is refused at submit). A one-shot child-list watch
//! on a path held recursively is fired by the creation or deletion of a child, which the
//! recursive mode sends.

use std::collections::HashMap;

use jute::{OpCode, WatcherType};

use super::request::{AfterReply, Encoded};
use super::watch::{Held, WatchRegistry};
use super::{Session, WatchKind};
use crate::error::Error;

/// The two modes of one path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PathModes {
    /// The data mode: the node's creation, data change and deletion are sent (and, when
    /// recursive, those of every node below).
    pub(crate) data: Option<Held>,
    /// The child-list mode: child-list changes are sent when persistent, not when recursive.
    pub(crate) children: Option<Held>,
}

/// What a request does to the modes of its path once the server has run it successfully.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ModeChange {
    /// Nothing (one-shot modes are not tracked).
    None,
    /// addWatch: both modes of the path.
    Add(String, Held),
    /// removeWatches of this type.
    Remove(String, WatcherType),
}

impl PathModes {
    /// The modes after `change` (of this path).
    pub(crate) fn apply(&mut self, change: &ModeChange) {
        match change {
            ModeChange::None => {}
            ModeChange::Add(_, held) => {
                self.data = Some(*held);
                self.children = Some(*held);
            }
            ModeChange::Remove(_, watcher_type) => match *watcher_type {
                WatcherType::DATA => self.data = None,
                WatcherType::CHILDREN => self.children = None,
                _ => *self = PathModes::default(),
            },
        }
    }
}

impl ModeChange {
    /// The path it changes.
    pub(crate) fn path(&self) -> Option<&str> {
        match self {
            ModeChange::None => None,
            ModeChange::Add(path, _) | ModeChange::Remove(path, _) => Some(path),
        }
    }
}

/// The held modes of every path of this session's connection.
#[derive(Debug, Default)]
pub(crate) struct ServerModes {
    by_path: HashMap<String, PathModes>,
}

impl ServerModes {
    pub(crate) fn get(&self, path: &str) -> PathModes {
        self.by_path.get(path).copied().unwrap_or_default()
    }

    /// The server has run a request that made `change`.
    pub(crate) fn apply(&mut self, change: &ModeChange) {
        let Some(path) = change.path() else {
            return;
        };
        let mut modes = self.get(path);
        modes.apply(change);
        if modes == PathModes::default() {
            self.by_path.remove(path);
        } else {
            self.by_path.insert(path.to_owned(), modes);
        }
    }

    /// A new connection's watches are the ones SetWatches sets again, from the registry, in
    /// the server's order (one-shot kinds, then persistent, then recursive: a path holds the
    /// mode of its persistent watch kind, as the two kinds are never mixed on one path).
    pub(crate) fn reset_from(&mut self, registry: &WatchRegistry) {
        self.by_path = registry
            .held_paths()
            .map(|(path, held)| {
                let modes = PathModes {
                    data: Some(held),
                    children: Some(held),
                };
                (path.to_owned(), modes)
            })
            .collect();
    }
}

impl Session {
    /// Refuses an addWatch of one persistent kind on a path this session watches with the
    /// other (confirmed, in flight or queued): on a 3.8 server either order silences one.
    pub(super) fn refuse_mixed_persistent_kinds(&self, encoded: &Encoded) -> Result<(), Error> {
        if encoded.op_code == OpCode::ADD_WATCH
            && let AfterReply::Watch(path, kind) = &encoded.after
        {
            let (persistent, recursive) = self.persistent_kinds_on(path);
            let other = match kind {
                WatchKind::Persistent if recursive => "PERSISTENT_RECURSIVE",
                WatchKind::PersistentRecursive if persistent => "PERSISTENT",
                _ => "",
            };
            if !other.is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "{path} has a {other} watch of this session: a 3.8 server keeps one watch \
                     mode per session and path (ZOOKEEPER-4466), and the other persistent \
                     kind would silence it (PERSISTENT ends a recursive watch's events below \
                     the path, PERSISTENT_RECURSIVE a persistent watch's child-list changes); \
                     use one kind per path, or another client"
                )));
            }
        }
        Ok(())
    }

    /// The persistent kind this session watches `server_path` with, or has asked to
    /// (confirmed, in flight or queued; a removal on the way is not counted): the other kind
    /// is refused on the path (see the module documentation).
    fn persistent_kinds_on(&self, server_path: &str) -> (bool, bool) {
        let mut kinds = match self.watches.held(server_path) {
            Some(Held::Persistent) => (true, false),
            Some(Held::Recursive) => (false, true),
            None => (false, false),
        };
        let mut asked = |op_code: OpCode, after: &AfterReply| match after {
            AfterReply::Watch(path, WatchKind::Persistent)
                if op_code == OpCode::ADD_WATCH && path == server_path =>
            {
                kinds.0 = true;
            }
            AfterReply::Watch(path, WatchKind::PersistentRecursive)
                if op_code == OpCode::ADD_WATCH && path == server_path =>
            {
                kinds.1 = true;
            }
            _ => {}
        };
        for sent in &self.pending {
            asked(sent.op_code, &sent.after);
        }
        for (_, queued) in &self.outbox {
            asked(queued.op_code, &queued.after);
        }
        kinds
    }

    /// The modes the server holds on `server_path` once it has run every request in flight
    /// (each assumed to succeed): the next request sent runs right after them.
    fn modes_before_next(&self, server_path: &str) -> PathModes {
        let mut modes = self.server_modes.get(server_path);
        for sent in &self.pending {
            if sent.change.path() == Some(server_path) {
                modes.apply(&sent.change);
            }
        }
        modes
    }

    /// How a request goes on the wire, given the modes held on its path (see the module documentation): its
    /// op code, whether its watch flag (the body's last byte) is cleared, and what it changes
    /// in the modes. A one-shot watch that a held mode covers is not asked of the server (the
    /// watcher is armed all the same, and the held mode's events fire it); a removal of
    /// one-shot watches that a held mode covers goes as a checkWatches (a removal would take
    /// the held mode with it; the local watchers are removed on its OK as on a removal's).
    pub(super) fn as_sent(&self, encoded: &Encoded) -> (OpCode, bool, ModeChange) {
        let op_code = encoded.op_code;
        match (&encoded.after, op_code) {
            (
                AfterReply::Watch(path, kind),
                OpCode::EXISTS | OpCode::GET_DATA | OpCode::GET_CHILDREN | OpCode::GET_CHILDREN2,
            ) => {
                let modes = self.modes_before_next(path);
                let covered = match kind {
                    WatchKind::Child => modes.children.is_some(),
                    _ => modes.data.is_some(),
                };
                (op_code, covered, ModeChange::None)
            }
            (AfterReply::Watch(path, kind), OpCode::ADD_WATCH) => {
                let held = if *kind == WatchKind::PersistentRecursive {
                    Held::Recursive
                } else {
                    Held::Persistent
                };
                (op_code, false, ModeChange::Add(path.clone(), held))
            }
            (AfterReply::RemoveWatches(path, kinds), OpCode::REMOVE_WATCHES) => {
                let watcher_type = removal_type(kinds);
                let modes = self.modes_before_next(path);
                let covered = match watcher_type {
                    WatcherType::DATA => modes.data.is_some(),
                    WatcherType::CHILDREN => modes.children.is_some(),
                    _ => false,
                };
                if covered {
                    (OpCode::CHECK_WATCHES, false, ModeChange::None)
                } else {
                    let change = ModeChange::Remove(path.clone(), watcher_type);
                    (op_code, false, change)
                }
            }
            _ => (op_code, false, ModeChange::None),
        }
    }
}

/// The watcher type of a removal of these kinds (as `request.rs` maps types to kinds).
fn removal_type(kinds: &[WatchKind]) -> WatcherType {
    match kinds {
        [WatchKind::Child] => WatcherType::CHILDREN,
        [WatchKind::Data, WatchKind::Exist] => WatcherType::DATA,
        [WatchKind::Persistent] => WatcherType::PERSISTENT,
        [WatchKind::PersistentRecursive] => WatcherType::PERSISTENT_RECURSIVE,
        _ => WatcherType::ANY,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_request_that_sets_a_mode_wins() {
        let mut modes = ServerModes::default();
        modes.apply(&ModeChange::Add("/p".into(), Held::Persistent));
        modes.apply(&ModeChange::Add("/p".into(), Held::Recursive));
        assert_eq!(
            modes.get("/p"),
            PathModes {
                data: Some(Held::Recursive),
                children: Some(Held::Recursive)
            }
        );
        modes.apply(&ModeChange::Remove("/p".into(), WatcherType::CHILDREN));
        assert_eq!(modes.get("/p").children, None);
        assert_eq!(modes.get("/p").data, Some(Held::Recursive));
        modes.apply(&ModeChange::Remove("/p".into(), WatcherType::ANY));
        assert_eq!(modes.get("/p"), PathModes::default());
        assert!(modes.by_path.is_empty());
    }
}

//! The owner of a re-entrant lock and its count of holds: what a guard gives back when it is
//! dropped. How an owner acquires and re-enters is `reentrant.rs`.

use std::sync::{Mutex, MutexGuard};

use super::node::OwnNode;

/// The owner of a re-entrant lock: its node while it holds the lock, and how many guards
/// hold it.
#[derive(Debug, Default)]
pub(super) struct Owner {
    /// Taken by the owner's acquire that creates the node, so that another acquire of the same
    /// owner waits for it and then re-enters instead of queueing a second node.
    pub(super) turn: tokio::sync::Mutex<()>,
    held: Mutex<Option<Held>>,
}

/// The owner's node and its count of holds.
#[derive(Debug)]
pub(super) struct Held {
    pub(super) node: OwnNode,
    pub(super) count: usize,
}

impl Owner {
    pub(super) fn held(&self) -> MutexGuard<'_, Option<Held>> {
        // A panic while the lock was held cannot leave the count half-updated (each update is
        // one statement): carry on with it.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many guards of this owner hold the lock now.
    pub(super) fn count(&self) -> usize {
        self.held().as_ref().map_or(0, |held| held.count)
    }

    /// Gives one hold back; returns the node to delete when it was the last one.
    pub(super) fn leave(&self) -> Option<String> {
        let mut held = self.held();
        let last = held.as_mut().is_some_and(|held| {
            held.count -= 1;
            held.count == 0
        });
        if last {
            held.take().map(|held| held.node.path)
        } else {
            None
        }
    }
}

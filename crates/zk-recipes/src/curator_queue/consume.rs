//! Taking items: a [`Consumer`] lists the queue once and then follows it with a persistent
//! recursive watch on the queue node, whose events (an item created, an item deleted) keep its
//! sorted view of the queue up to date, so that draining n items costs one listing, not one
//! per item or per change; it claims each item in one round trip (two requests queued back to
//! back).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use futures_util::FutureExt;
use tokio::time::Instant;
use zk_proto::{
    AddWatchMode, Client, CreateMode, CreateOptions, Error, EventType, KeeperState,
    PersistentWatcher, WatchedEvent,
};

use super::{HeldLock, Kind, Message, QueueCore, deserialize, format, now_ms};
use crate::barrier::{ensure_path, join_path};
use crate::cleanup::withdraw;
use crate::deadline::{deadline_of, until};
use crate::{Error as RecipeError, Result};

/// The names of the items whose message was dropped without being completed (lock-safe
/// mode): the consumer that took them tries them again.
pub(super) type Returned = Arc<Mutex<Vec<String>>>;

/// An item node known to a consumer, ordered as Curator's consumers take them: by due time
/// (delay queue; 0 for the other kinds), then by the name without the id (id queue), then by
/// name (the FIFO and priority queues, whose names sort in their order).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    epoch: i64,
    key: Option<String>,
    name: String,
}

impl Entry {
    fn new(kind: Kind, name: &str) -> Self {
        Self {
            epoch: if kind == Kind::Delay {
                format::epoch_of(name)
            } else {
                0
            },
            key: (kind == Kind::Id).then(|| format::parse_id(name).1),
            name: name.to_owned(),
        }
    }
}

/// A consumer of one queue: the stream of its messages, in Curator's order
/// ([`next`](Self::next)).
///
/// It lists the queue once (with a persistent recursive watch on the queue node, added in the
/// same round trip) and from then on follows the watch's events: an item created goes into its
/// sorted view of the queue at its place, an item deleted (by any consumer) leaves it. So a new
/// item that sorts first (a lower priority, an earlier time) comes first as soon as its event
/// has arrived, and draining n items costs one getChildren, not one per batch or per change
/// (Curator's priority and delay consumers list the queue again on every change of its
/// children, their own deletes included: n listings of up to n names). It lists again only
/// when the events may have missed a change: after a reconnection (a persistent watch does not
/// replay the changes made while disconnected), when it fell more than the client's
/// [`watch_capacity`](zk_proto::ClientBuilder::watch_capacity) events behind, or when the
/// watch was removed. Each event costs the consumer an ordered-set update, no request.
///
/// Dropping the consumer removes its watch on the server (see [`PersistentWatcher`]).
///
/// Made by `consumer()` on any queue kind ([`DistributedQueue::consumer`](super::DistributedQueue::consumer), ...).
pub struct Consumer {
    core: QueueCore,
    /// The items in the queue not tried since they were found held, in order: the listing,
    /// kept up to date by the watch's events.
    pending: BTreeSet<Entry>,
    /// The items found held by another consumer: tried again when this consumer has nothing
    /// else to take and something changed (an event, the first one's lock gone), or by the
    /// next `try_next`.
    held: BTreeSet<Entry>,
    /// The persistent recursive watch on the queue node; `None` before the first listing and
    /// once it ended (an overflow, the session's end).
    watch: Option<PersistentWatcher>,
    /// The view may have missed changes: list again before the next item.
    stale: bool,
    /// The names of this consumer's messages dropped without completion.
    returned: Returned,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("path", &self.core.path)
            .field("lock_path", &self.core.lock_path)
            .field("pending", &self.pending.len())
            .field("held", &self.held.len())
            .field("watching", &self.watch.is_some())
            .finish_non_exhaustive()
    }
}

/// The outcome of one claim.
pub(super) enum Claim {
    /// The item's data, and its lock in lock-safe mode.
    Taken(Bytes, Option<HeldLock>),
    /// Taken by another consumer, or changed: skip it.
    Gone,
    /// Locked by another consumer.
    Held,
}

/// What ended a wait.
enum Woken {
    /// An event of the queue's watch, or the error that ended it.
    Event(zk_proto::Result<WatchedEvent>),
    /// The first held item's lock changed (deleted: its holder is gone), or the session ended.
    Lock(zk_proto::Result<()>),
    /// The first delayed item is due.
    Due,
}

/// What an event means for a waiting consumer.
#[derive(Debug, PartialEq, Eq)]
enum Wake {
    /// Try the queue again.
    Yes,
    /// Keep waiting (the connection was lost: nothing can be taken until the next one).
    No,
}

impl Consumer {
    pub(super) fn new(core: QueueCore) -> Self {
        Self {
            core,
            pending: BTreeSet::new(),
            held: BTreeSet::new(),
            watch: None,
            stale: true,
            returned: Returned::default(),
        }
    }

    /// The next message, waiting at most `timeout` (`None`: no limit) for an item that is
    /// there, due, and not held by another consumer.
    ///
    /// Round trips per item: 1 (default mode: getData and the delete at version 0 queued
    /// back to back, Curator's items are never changed; an item whose version is not 0 costs
    /// 1 more; lock-safe mode: the lock's create and getData queued back to back). The first
    /// call lists the queue (addWatch and getChildren queued back to back: 1 round trip);
    /// later calls list again only after a reconnection, a watch overflow or the watch's
    /// removal (see [`Consumer`]). When nothing can be taken, it waits for an event of the
    /// queue, for the lock of the first held item to go (its holder died: an exists watch,
    /// 1 round trip) or for the first delayed item's time.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Timeout`] when `timeout` passed first (nothing was taken); the
    /// connection errors. Default mode: an item whose delete was applied but whose reply was
    /// lost ([`Error::ConnectionLoss`]) is lost (at most once). A disconnection while
    /// waiting is not an error: the watch is set again on reconnection, and the queue listed
    /// again.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe while it lists or waits. Dropped once a claim was sent, default mode may
    /// lose that item (use the `timeout` argument: it never interrupts a claim); lock-safe
    /// mode deletes the lock it created (only if this session's) in the background and the
    /// item stays.
    ///
    /// # Session loss
    ///
    /// Fails with [`Error::SessionExpired`] (also while waiting: the watch reports it); items
    /// not taken stay, and a lock-safe consumer's locks go with its session. A later call
    /// adds the watch again (which fails the same way unless the client renewed its session).
    pub async fn next(&mut self, timeout: Option<Duration>) -> Result<Message> {
        match self.poll(deadline_of(timeout), true).await? {
            Some(message) => Ok(message),
            // Unreachable: a waiting poll returns a message or an error.
            None => Err(RecipeError::Timeout),
        }
    }

    /// The next message if one can be taken now, without waiting; as [`next`](Self::next).
    /// Items found held by another consumer are tried again by the next call.
    ///
    /// # Errors
    ///
    /// As [`next`](Self::next), without the timeout.
    ///
    /// # Cancellation safety
    ///
    /// As [`next`](Self::next).
    ///
    /// # Session loss
    ///
    /// As [`next`](Self::next).
    pub async fn try_next(&mut self) -> Result<Option<Message>> {
        self.poll(None, false).await
    }

    /// The item named by an event's path, if it is a child of the queue node.
    fn item_name<'a>(&self, path: &'a str) -> Option<&'a str> {
        let rest = path.strip_prefix(self.core.path.trim_end_matches('/'))?;
        let name = rest.strip_prefix('/')?;
        (!name.contains('/') && name.starts_with(super::ITEM_PREFIX)).then_some(name)
    }

    /// Applies one event of the watch to the view.
    fn apply(&mut self, event: &WatchedEvent) -> Wake {
        match event.event_type {
            EventType::NONE => match event.state {
                // Changes may be missed until the next connection of the session, whose
                // marker comes once the watch is armed again: list again then.
                KeeperState::DISCONNECTED => {
                    self.stale = true;
                    Wake::No
                }
                KeeperState::SYNC_CONNECTED | KeeperState::CONNECTED_READ_ONLY => {
                    self.stale = true;
                    Wake::Yes
                }
                _ => Wake::No,
            },
            EventType::NODE_CREATED => {
                if let Some(name) = self.item_name(&event.path) {
                    let entry = Entry::new(self.core.kind, name);
                    if !self.held.contains(&entry) {
                        self.pending.insert(entry);
                    }
                }
                Wake::Yes
            }
            EventType::NODE_DELETED => {
                if let Some(name) = self.item_name(&event.path) {
                    let entry = Entry::new(self.core.kind, name);
                    self.pending.remove(&entry);
                    self.held.remove(&entry);
                }
                Wake::Yes
            }
            EventType::PERSISTENT_WATCH_REMOVED => {
                // Removed by someone else's `remove_watches`: added again with a listing.
                self.watch = None;
                self.stale = true;
                Wake::Yes
            }
            _ => Wake::No,
        }
    }

    /// The watch ended with `error`: an overflow is made up for by a listing; the session's
    /// end is the caller's error.
    fn watch_ended(&mut self, error: Error) -> Result<()> {
        self.watch = None;
        self.stale = true;
        match error {
            Error::WatchOverflow { .. } => Ok(()),
            error => Err(error.into()),
        }
    }

    /// Applies the events already buffered, and the names of dropped messages, without
    /// waiting.
    fn absorb(&mut self) -> Result<()> {
        while let Some(next) = self.watch.as_mut().and_then(|w| w.next().now_or_never()) {
            match next {
                Ok(event) => {
                    self.apply(&event);
                }
                Err(error) => return self.watch_ended(error),
            }
        }
        let returned = match self.returned.lock() {
            Ok(mut returned) => std::mem::take(&mut *returned),
            Err(_) => Vec::new(),
        };
        for name in returned {
            self.pending.insert(Entry::new(self.core.kind, &name));
        }
        Ok(())
    }

    /// Lists the queue, adding the watch first (queued back to back) when there is none.
    /// Events that arrived before the listing's reply describe changes it already shows:
    /// applied after it, they change nothing (an item's name is never used twice).
    async fn list(&mut self, deadline: Option<Instant>) -> Result<()> {
        let client = &self.core.client;
        let watch = self
            .watch
            .is_none()
            .then(|| client.add_watch(&self.core.path, AddWatchMode::PERSISTENT_RECURSIVE));
        let listed = client.get_children(&self.core.path);
        let (watch, listed) = until(deadline, async move {
            let watch = match watch {
                Some(watch) => Some(watch.await),
                None => None,
            };
            (watch, listed.await)
        })
        .await?;
        if let Some(watch) = watch {
            self.watch = Some(watch?);
        }
        let children = match listed {
            Ok(children) => children,
            // Its creation will be an event of the watch.
            Err(Error::NoNode) => Default::default(),
            Err(error) => return Err(error.into()),
        };
        let kind = self.core.kind;
        self.pending = children
            .iter()
            .filter(|name| name.starts_with(super::ITEM_PREFIX))
            .map(|name| Entry::new(kind, name))
            .collect();
        self.held.clear();
        self.stale = false;
        Ok(())
    }

    async fn poll(&mut self, deadline: Option<Instant>, wait: bool) -> Result<Option<Message>> {
        loop {
            self.absorb()?;
            if self.stale || self.watch.is_none() {
                self.list(deadline).await?;
                continue;
            }
            let mut due_in = None;
            let now = now_ms();
            while let Some(first) = self.pending.first() {
                if self.core.kind == Kind::Delay {
                    let delay = first.epoch.saturating_sub(now);
                    if delay > 0 {
                        // Sorted by time: every later item is due later.
                        due_in = Some(Duration::from_millis(delay.unsigned_abs()));
                        break;
                    }
                }
                if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                    return Err(RecipeError::Timeout);
                }
                let Some(entry) = self.pending.pop_first() else {
                    break;
                };
                let claimed = match self.core.claim(&entry.name).await {
                    Ok(claimed) => claimed,
                    Err(error) => {
                        // Tried again by the next call (gone by then if the claim went through).
                        self.pending.insert(entry);
                        return Err(error);
                    }
                };
                match claimed {
                    Claim::Taken(data, mut lock) => {
                        if let Some(lock) = lock.as_mut() {
                            lock.returned = Arc::downgrade(&self.returned);
                        }
                        let items = deserialize(&data);
                        if let Err(error) = &items {
                            tracing::warn!(item = entry.name, %error, "a queue item not in Curator's format");
                        }
                        return Ok(Some(Message {
                            name: entry.name,
                            data,
                            items,
                            lock,
                        }));
                    }
                    Claim::Gone => {}
                    Claim::Held => {
                        self.held.insert(entry);
                    }
                }
                // An item put meanwhile that sorts first comes next.
                self.absorb()?;
                if self.stale {
                    break;
                }
            }
            if self.stale {
                continue;
            }
            if !wait {
                // Nothing to wait for them: the next call tries the held items again.
                let mut held = std::mem::take(&mut self.held);
                self.pending.append(&mut held);
                return Ok(None);
            }
            self.wait(deadline, due_in).await?;
            // Something changed: the held items are tried again.
            let mut held = std::mem::take(&mut self.held);
            self.pending.append(&mut held);
        }
    }

    /// Waits until something may let this consumer take an item: an event of the queue, the
    /// lock of the first held item gone, the first delayed item's time.
    async fn wait(&mut self, deadline: Option<Instant>, due_in: Option<Duration>) -> Result<()> {
        let lock_watch = match (self.held.first(), self.core.lock_path.as_deref()) {
            (Some(first), Some(lock_path)) => {
                let lock = join_path(lock_path, &first.name);
                match until(deadline, self.core.client.exists_watch(&lock)).await? {
                    Ok((Some(_), watch)) => Some(watch),
                    // Released since: try again.
                    Ok((None, _)) => return Ok(()),
                    Err(error) => return Err(error.into()),
                }
            }
            _ => None,
        };
        let lock_gone = async {
            match lock_watch {
                Some(lock) => lock.changed().await.map(drop),
                None => std::future::pending().await,
            }
        };
        let due = async {
            match due_in {
                Some(due_in) => tokio::time::sleep(due_in).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(lock_gone, due);
        loop {
            let Some(watch) = self.watch.as_mut() else {
                return Ok(());
            };
            let woken = until(deadline, async {
                tokio::select! {
                    event = watch.next() => Woken::Event(event),
                    gone = &mut lock_gone => Woken::Lock(gone),
                    () = &mut due => Woken::Due,
                }
            })
            .await?;
            match woken {
                Woken::Lock(Err(error)) => return Err(error.into()),
                Woken::Lock(Ok(())) | Woken::Due => return Ok(()),
                Woken::Event(Ok(event)) => {
                    if self.apply(&event) == Wake::Yes {
                        return Ok(());
                    }
                }
                Woken::Event(Err(error)) => return self.watch_ended(error),
            }
        }
    }
}

impl QueueCore {
    /// Claims the item `name` in one round trip.
    async fn claim(&self, name: &str) -> Result<Claim> {
        let path = join_path(&self.path, name);
        match &self.lock_path {
            None => self.claim_by_delete(&path).await,
            Some(lock_path) => self.claim_by_lock(&path, join_path(lock_path, name)).await,
        }
    }

    /// Default mode: getData, then the delete at version 0 (Curator's items are never
    /// changed), queued back to back; at the version read when it was changed.
    async fn claim_by_delete(&self, path: &str) -> Result<Claim> {
        let read = self.client.get_data(path);
        let delete = self.client.delete(path, Some(0));
        let (read, delete) = (read.await, delete.await);
        let (data, stat) = match read {
            Ok(read) => read,
            Err(Error::NoNode) => return Ok(Claim::Gone),
            Err(error) => return Err(error.into()),
        };
        let deleted = match delete {
            Err(Error::BadVersion) if stat.version != 0 => {
                self.client.delete(path, Some(stat.version)).await
            }
            deleted => deleted,
        };
        match deleted {
            Ok(()) => Ok(Claim::Taken(data, None)),
            // Taken by another consumer, or changed since read.
            Err(Error::NoNode | Error::BadVersion) => Ok(Claim::Gone),
            Err(error) => Err(error.into()),
        }
    }

    /// Lock-safe mode: the item's ephemeral lock's create and getData of the item, queued
    /// back to back.
    async fn claim_by_lock(&self, path: &str, lock_path: String) -> Result<Claim> {
        let mut lock = PendingLock::new(&self.client, lock_path);
        let created = self
            .client
            .create(&lock.path, Bytes::new(), &lock_options());
        let read = self.client.get_data(path);
        let (mut created, mut read) = (created.await, read.await);
        if matches!(created, Err(Error::NoNode)) {
            // The lock path is missing (Curator's `start` creates it).
            if let Some(parent) = self.lock_path.as_deref() {
                ensure_path(&self.client, parent).await?;
            }
            created = self
                .client
                .create(&lock.path, Bytes::new(), &lock_options())
                .await;
            read = self.client.get_data(path).await;
        }
        match created {
            Ok(_) => lock.owned = Owned::Yes,
            Err(Error::NodeExists) => {
                lock.owned = Owned::No;
                return Ok(Claim::Held);
            }
            Err(error) => return Err(error.into()),
        }
        match read {
            Ok((data, _)) => Ok(Claim::Taken(data, Some(lock.hand_over(path)))),
            // Completed by its previous holder between our listing and our lock.
            Err(Error::NoNode) => Ok(Claim::Gone),
            Err(error) => Err(error.into()),
        }
    }

    /// The lock of an item for its removal ([`super::DistributedIdQueue::remove`]): `None`
    /// when another consumer holds it. Dropped, it deletes the lock.
    pub(super) async fn lock_for_removal(&self, lock_path: String) -> Result<Option<PendingLock>> {
        let mut lock = PendingLock::new(&self.client, lock_path);
        let mut created = self
            .client
            .create(&lock.path, Bytes::new(), &lock_options())
            .await;
        if matches!(created, Err(Error::NoNode)) {
            if let Some(parent) = self.lock_path.as_deref() {
                ensure_path(&self.client, parent).await?;
            }
            created = self
                .client
                .create(&lock.path, Bytes::new(), &lock_options())
                .await;
        }
        match created {
            Ok(_) => {
                lock.owned = Owned::Yes;
                Ok(Some(lock))
            }
            Err(Error::NodeExists) => {
                lock.owned = Owned::No;
                Ok(None)
            }
            Err(error) => Err(error.into()),
        }
    }
}

fn lock_options() -> CreateOptions {
    CreateOptions::new(CreateMode::EPHEMERAL)
}

/// Whether a lock create was ours: unknown while it is in flight.
#[derive(Debug, PartialEq, Eq)]
enum Owned {
    Unknown,
    Yes,
    No,
}

/// A lock being created: dropped before it is handed over (an error, a cancelled call), it is
/// deleted if it is ours; when unknown (the create was in flight) the node is deleted only if
/// its ephemeral owner is this session, never another consumer's lock.
pub(super) struct PendingLock {
    client: Client,
    path: String,
    owned: Owned,
}

impl PendingLock {
    fn new(client: &Client, path: String) -> Self {
        Self {
            client: client.clone(),
            path,
            owned: Owned::Unknown,
        }
    }

    fn hand_over(mut self, item_path: &str) -> HeldLock {
        self.owned = Owned::No;
        HeldLock {
            client: self.client.clone(),
            item_path: item_path.to_owned(),
            lock_path: std::mem::take(&mut self.path),
            held: true,
            returned: Weak::new(),
        }
    }
}

impl Drop for PendingLock {
    fn drop(&mut self) {
        let path = std::mem::take(&mut self.path);
        match self.owned {
            Owned::No => {}
            Owned::Yes => withdraw(&self.client, path),
            Owned::Unknown => {
                let Ok(handle) = tokio::runtime::Handle::try_current() else {
                    return;
                };
                let client = self.client.clone();
                // Queued after the create on the same session: it sees the create's outcome.
                let exists = client.exists(&path);
                handle.spawn(async move {
                    if let Ok(Some(stat)) = exists.await
                        && stat.ephemeral_owner == client.session_id()
                    {
                        let _ = client.delete(&path, Some(stat.version)).await;
                    }
                });
            }
        }
    }
}

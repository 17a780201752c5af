//! Queues in Apache Curator's layout (Curator 5.4's `DistributedQueue`, `DistributedIdQueue`,
//! `DistributedPriorityQueue` and `DistributedDelayQueue`): our producers and consumers share
//! one queue with Curator's.
//!
//! ```text
//! /app/q                                  persistent (created on demand)
//! /app/q/queue-0000000000                 DistributedQueue item
//! /app/q/queue-|job-7|0000000001          DistributedIdQueue item (id "job-7")
//! /app/q/queue-1000000050000000002        DistributedPriorityQueue item (priority 5)
//! /app/q/queue-|18C2F3A9B00|0000000003    DistributedDelayQueue item (due at that epoch ms)
//! /app/locks/queue-0000000000             ephemeral: the item is being processed (lock-safe)
//! ```
//!
//! Every item node is persistent sequential, named `queue-`, then the kind's part, then the
//! server's sequence number; its data is Curator's `ItemSerializer` format (the version
//! `0x00010001`, each item as the marker `1`, a 4-byte length and its bytes, the marker `2`), so
//! one node can hold several items ([`DistributedQueue::put_multi`]). Items come out in
//! Curator's order: by name (FIFO, or priority then FIFO), by name without the id (id queue),
//! by due time (delay queue, whose items are not taken before their time).
//!
//! Two ways to consume, chosen per queue value as Curator's `QueueBuilder.lockPath` does; every
//! consumer of a queue must use the same one:
//!
//! - **Default** ([`DistributedQueue::new`]): a consumer reads an item then deletes it at the
//!   version read; only one delete succeeds, so each item goes to one consumer, and the item
//!   is gone before it is processed (**at most once**: a consumer that dies while processing
//!   loses the item, as in Curator).
//! - **Lock-safe** ([`DistributedQueue::with_lock_path`]): a consumer first creates the
//!   ephemeral `<lock path>/<item name>`, reads the item, and the item is deleted only once
//!   the caller says it is done ([`Message::complete`]); then the lock goes. A consumer killed
//!   mid-item leaves the item in place and its lock goes with its session, so another consumer
//!   takes it (**at least once**: an item whose processing was cut short is processed again).
//!
//! See `docs/recipes-curator-queue.md` for round trips, promises and their tests.
//!
//! The ZooKeeper errors these docs name come wrapped in [`crate::Error::Zk`].

mod consume;
mod format;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use zk_proto::{Client, CreateMode, CreateOptions, Error};

pub use consume::Consumer;
pub use format::{ITEM_PREFIX, ItemFormatError, deserialize, serialize};

use crate::Result;
use crate::barrier::{ensure_path, join_path};
use crate::cleanup::withdraw;

/// The kind of a queue: how its item names are made and ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Fifo,
    Id,
    Priority,
    Delay,
}

/// What every queue kind shares: the client, the paths, the consumption mode.
#[derive(Debug, Clone)]
struct QueueCore {
    client: Client,
    path: String,
    lock_path: Option<String>,
    kind: Kind,
}

/// One item node taken from a queue: its name, its data, the items it holds.
///
/// Taken from a lock-safe queue, the message holds the item's lock: the item stays in the
/// queue until [`complete`](Self::complete). Dropping the message without completing it
/// releases the lock (a delete queued in the background) and leaves the item for another
/// consumer, as a consumer that died would.
#[derive(Debug)]
pub struct Message {
    name: String,
    data: Bytes,
    items: std::result::Result<Vec<Bytes>, ItemFormatError>,
    lock: Option<HeldLock>,
}

/// The lock of an item being processed (lock-safe mode); released in the background when
/// dropped unless [`Message::complete`] released it.
#[derive(Debug)]
struct HeldLock {
    client: Client,
    item_path: String,
    lock_path: String,
    held: bool,
    /// The consumer that took the item, told of it when the lock is released without the
    /// item's completion, so that it tries the item again.
    returned: std::sync::Weak<std::sync::Mutex<Vec<String>>>,
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        if self.held {
            // Queued now: before any later claim of the item by this session.
            withdraw(&self.client, std::mem::take(&mut self.lock_path));
            if let Some(returned) = self.returned.upgrade()
                && let Ok(mut returned) = returned.lock()
                && let Some(name) = self.item_path.rsplit('/').next()
            {
                returned.push(name.to_owned());
            }
        }
    }
}

impl Message {
    /// The item node's name (`queue-...`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The node's data as stored (Curator's `ItemSerializer` format).
    pub fn data(&self) -> &Bytes {
        &self.data
    }

    /// The items of the node (one per `put`, several per `put_multi`), or why its data is not
    /// in Curator's format. A malformed item is taken out of the queue like any other (Curator
    /// logs "Corrupted queue item" and drops it), so that it never blocks the queue.
    pub fn items(&self) -> std::result::Result<&[Bytes], &ItemFormatError> {
        self.items.as_deref()
    }

    /// The id of an item of a [`DistributedIdQueue`] (`queue-|<id>|<sequence>`); `None` for a
    /// name without one.
    pub fn id(&self) -> Option<&str> {
        let (id, _) = format::parse_id(&self.name);
        (id != self.name).then_some(id)
    }

    /// Whether the message holds the item's lock (lock-safe mode): the item is still in the
    /// queue until [`complete`](Self::complete).
    pub fn is_locked(&self) -> bool {
        self.lock.as_ref().is_some_and(|lock| lock.held)
    }

    /// Says the message was processed. Lock-safe mode: deletes the item, then its lock
    /// (Curator's order: no other consumer can lock the item between the two). Default mode:
    /// nothing to do (the item was deleted when taken).
    ///
    /// Round trips: 1 in lock-safe mode (the item's and the lock's deletes are queued back
    /// to back; a lock's delete whose outcome is unknown is retried in the background), 0
    /// otherwise.
    ///
    /// # Errors
    ///
    /// The item's delete is retried while its outcome is unknown ([`Error::ConnectionLoss`]):
    /// it is safe, the lock is ours. It fails when the session ends
    /// ([`Error::SessionExpired`], [`Error::Closed`]): the item may then be processed again by
    /// another consumer once the lock has gone with the session (at least once).
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future before it completes releases the lock in the background: the item
    /// may stay in the queue and be processed again.
    ///
    /// # Session loss
    ///
    /// The lock is ephemeral: once the session has expired it is gone, and the item, if its
    /// delete was not applied, goes to another consumer.
    pub async fn complete(mut self) -> Result<()> {
        let Some(lock) = self.lock.as_mut() else {
            return Ok(());
        };
        // Both deletes are queued back to back (1 round trip): the lock goes after the item.
        let mut item = lock.client.delete(&lock.item_path, None);
        let mut unlock = lock.client.delete(&lock.lock_path, None);
        loop {
            match item.await {
                // NoNode: removed meanwhile (an id queue's `remove`), nothing left to do.
                Ok(()) | Err(Error::NoNode) => break,
                Err(error) if error.is_retryable() => {
                    // Unknown outcome: the item's delete again, then the lock's.
                    item = lock.client.delete(&lock.item_path, None);
                    unlock = lock.client.delete(&lock.lock_path, None);
                }
                Err(error) => return Err(error.into()),
            }
        }
        match unlock.await {
            Ok(()) | Err(Error::NoNode) => lock.held = false,
            // Retried in the background by the drop of the lock.
            Err(error) if error.is_retryable() => {}
            Err(error) => return Err(error.into()),
        }
        Ok(())
    }
}

/// Milliseconds since the epoch, now.
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Milliseconds since the epoch of `time`, at least 1 (Curator refuses times <= 0; a time
/// at or before the epoch is due at once).
fn epoch_ms(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(1, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .max(1)
}

impl QueueCore {
    fn new(client: &Client, path: &str, lock_path: Option<&str>, kind: Kind) -> Self {
        Self {
            client: client.clone(),
            path: path.to_owned(),
            lock_path: lock_path.map(str::to_owned),
            kind,
        }
    }

    /// Creates the item node `queue-<part><sequence>` holding `data`.
    async fn put(&self, part: &str, data: Bytes) -> Result<String> {
        let prefix = join_path(&self.path, &format!("{ITEM_PREFIX}{part}"));
        let options = CreateOptions::new(CreateMode::PERSISTENT_SEQUENTIAL);
        match self.client.create(&prefix, data.clone(), &options).await {
            Ok((path, _)) => Ok(path),
            Err(Error::NoNode) => {
                ensure_path(&self.client, &self.path).await?;
                Ok(self.client.create(&prefix, data, &options).await?.0)
            }
            Err(error) => Err(error.into()),
        }
    }

    /// The item nodes of `children` in the order Curator's consumers take them.
    fn sorted(&self, mut children: Vec<String>) -> Vec<String> {
        children.retain(|name| name.starts_with(ITEM_PREFIX));
        children.sort_by(|a, b| format::compare(self.kind, a, b));
        children
    }

    async fn len(&self) -> Result<usize> {
        match self.client.get_children(&self.path).await {
            Ok(children) => Ok(self.sorted(children.to_vec()).len()),
            Err(Error::NoNode) => Ok(0),
            Err(error) => Err(error.into()),
        }
    }
}

macro_rules! queue_common {
    ($ty:ident) => {
        impl $ty {
            /// The queue node's path.
            pub fn path(&self) -> &str {
                &self.core.path
            }

            /// The lock path (lock-safe mode), `None` in default mode.
            pub fn lock_path(&self) -> Option<&str> {
                self.core.lock_path.as_deref()
            }

            /// The number of item nodes (a snapshot; a `put_multi` node counts once).
            ///
            /// Round trips: 1.
            ///
            /// # Errors
            ///
            /// The connection errors. A missing queue node counts as empty.
            ///
            /// # Cancellation safety
            ///
            /// Cancel-safe: it only reads.
            ///
            /// # Session loss
            ///
            /// Fails with [`Error::SessionExpired`]; the queue is not affected.
            pub async fn len(&self) -> Result<usize> {
                self.core.len().await
            }

            /// A consumer of this queue: the stream of its messages in Curator's order. It
            /// lists the queue once and follows it with a persistent watch (the way to drain
            /// a long queue: one getChildren for all its items, see [`Consumer`]). Nothing is
            /// sent before its first call.
            pub fn consumer(&self) -> Consumer {
                Consumer::new(self.core.clone())
            }

            /// Takes the first item node in Curator's order, waiting at most `timeout`
            /// (`None`: no limit) for one that is there, due, and not held by another
            /// consumer: [`Consumer::next`] on a new consumer, so each call lists the queue
            /// (1 getChildren per call, with the consumer's watch added in the same round trip
            /// and removed when it returns; a [`consumer`](Self::consumer) lists once).
            ///
            /// # Errors
            ///
            /// As [`Consumer::next`].
            ///
            /// # Cancellation safety
            ///
            /// As [`Consumer::next`].
            ///
            /// # Session loss
            ///
            /// As [`Consumer::next`].
            pub async fn take(&self, timeout: Option<Duration>) -> Result<Message> {
                self.consumer().next(timeout).await
            }

            /// Takes the first item node that can be taken now, if any:
            /// [`Consumer::try_next`] on a new consumer.
            ///
            /// # Errors
            ///
            /// As [`Consumer::next`].
            ///
            /// # Cancellation safety
            ///
            /// As [`Consumer::next`].
            ///
            /// # Session loss
            ///
            /// As [`Consumer::next`].
            pub async fn try_take(&self) -> Result<Option<Message>> {
                self.consumer().try_next().await
            }
        }
    };
}

macro_rules! put_docs {
    () => {
        "Round trips: 1 (2 more when the queue node is missing).\n\n# Errors\n\n\
         [`Error::NoAuth`], [`Error::PacketTooLarge`] and the connection errors. After \
         [`Error::ConnectionLoss`] the node may or may not have been created: a sequential \
         create cannot be retried blindly.\n\n# Cancellation safety\n\nThe create is queued \
         when the future is first polled; dropping it afterwards may or may not add the \
         item.\n\n# Session loss\n\nItems are persistent: they outlive the producer's \
         session. An expired session fails the call (nothing is added)."
    };
}

/// Curator's `DistributedQueue`: a FIFO queue (`queue-<sequence>`). Cheap to clone.
#[derive(Debug, Clone)]
pub struct DistributedQueue {
    core: QueueCore,
}

impl DistributedQueue {
    /// The queue at `path`, consumed in default mode (an item is deleted when taken: at most
    /// once). Nothing is sent.
    pub fn new(client: &Client, path: &str) -> Self {
        Self {
            core: QueueCore::new(client, path, None, Kind::Fifo),
        }
    }

    /// The queue at `path`, consumed in lock-safe mode with the locks under `lock_path`
    /// (Curator's `QueueBuilder.lockPath`: an item is deleted only when its
    /// [`Message`] is completed: at least once). Nothing is sent.
    pub fn with_lock_path(client: &Client, path: &str, lock_path: &str) -> Self {
        Self {
            core: QueueCore::new(client, path, Some(lock_path), Kind::Fifo),
        }
    }

    /// Adds one item (one node); returns the node's path.
    ///
    #[doc = put_docs!()]
    pub async fn put(&self, item: impl AsRef<[u8]>) -> Result<String> {
        self.core.put("", serialize([item])).await
    }

    /// Adds several items in one node (Curator's `putMulti`): a consumer takes them together.
    ///
    #[doc = put_docs!()]
    pub async fn put_multi<I>(&self, items: I) -> Result<String>
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.core.put("", serialize(items)).await
    }
}

queue_common!(DistributedQueue);

/// Curator's `DistributedIdQueue`: a FIFO queue whose items carry an id
/// (`queue-|<id>|<sequence>`), so that they can be removed by id. Cheap to clone.
#[derive(Debug, Clone)]
pub struct DistributedIdQueue {
    core: QueueCore,
}

impl DistributedIdQueue {
    /// The queue at `path`, default mode. Nothing is sent.
    pub fn new(client: &Client, path: &str) -> Self {
        Self {
            core: QueueCore::new(client, path, None, Kind::Id),
        }
    }

    /// The queue at `path`, lock-safe mode (see [`DistributedQueue::with_lock_path`]).
    pub fn with_lock_path(client: &Client, path: &str, lock_path: &str) -> Self {
        Self {
            core: QueueCore::new(client, path, Some(lock_path), Kind::Id),
        }
    }

    /// Adds one item with `id` (`/` and `|` in it become `_`, as in Curator); an empty id is
    /// refused with [`Error::BadArguments`], as Curator refuses it.
    ///
    #[doc = put_docs!()]
    pub async fn put(&self, item: impl AsRef<[u8]>, id: &str) -> Result<String> {
        if id.is_empty() {
            return Err(Error::BadArguments.into());
        }
        self.core.put(&format::id_part(id), serialize([item])).await
    }

    /// Removes every item with `id` that no consumer took first; returns how many it removed
    /// (Curator's `remove`). In lock-safe mode an item being processed is left to its
    /// consumer.
    ///
    /// Round trips: 1 (getChildren), then 1 per item removed (2 in lock-safe mode: the lock's
    /// create, the item's delete, and the lock's delete queued behind).
    ///
    /// # Errors
    ///
    /// The connection errors; items removed before the error stay removed.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future may leave some of the items; a lock created meanwhile is deleted
    /// in the background.
    ///
    /// # Session loss
    ///
    /// Fails with [`Error::SessionExpired`].
    pub async fn remove(&self, id: &str) -> Result<usize> {
        let core = &self.core;
        let children = match core.client.get_children(&core.path).await {
            Ok(children) => children,
            Err(Error::NoNode) => return Ok(0),
            Err(error) => return Err(error.into()),
        };
        let fixed = format::id_part(id);
        let fixed = &fixed[1..fixed.len() - 1];
        let mut removed = 0;
        for name in core.sorted(children.to_vec()) {
            if format::parse_id(&name).0 != fixed {
                continue;
            }
            let path = join_path(&core.path, &name);
            let mut lock = None;
            if let Some(lock_path) = &core.lock_path {
                match core.lock_for_removal(join_path(lock_path, &name)).await? {
                    Some(held) => lock = Some(held),
                    // Being processed by a consumer: left to it.
                    None => continue,
                }
            }
            match core.client.delete(&path, None).await {
                Ok(()) => removed += 1,
                Err(Error::NoNode) => {}
                Err(error) => return Err(error.into()),
            }
            drop(lock);
        }
        Ok(removed)
    }
}

queue_common!(DistributedIdQueue);

/// Curator's `DistributedPriorityQueue`: lower priorities first, FIFO within one priority
/// (`queue-<sign><8 hex digits><sequence>`). Cheap to clone.
#[derive(Debug, Clone)]
pub struct DistributedPriorityQueue {
    core: QueueCore,
}

impl DistributedPriorityQueue {
    /// The queue at `path`, default mode. Nothing is sent.
    pub fn new(client: &Client, path: &str) -> Self {
        Self {
            core: QueueCore::new(client, path, None, Kind::Priority),
        }
    }

    /// The queue at `path`, lock-safe mode (see [`DistributedQueue::with_lock_path`]).
    pub fn with_lock_path(client: &Client, path: &str, lock_path: &str) -> Self {
        Self {
            core: QueueCore::new(client, path, Some(lock_path), Kind::Priority),
        }
    }

    /// Adds one item with `priority` (Curator's `int`; lower comes out first).
    ///
    #[doc = put_docs!()]
    pub async fn put(&self, item: impl AsRef<[u8]>, priority: i32) -> Result<String> {
        self.core
            .put(&format::priority_part(priority), serialize([item]))
            .await
    }

    /// Adds several items with one priority in one node (Curator's `putMulti`).
    ///
    #[doc = put_docs!()]
    pub async fn put_multi<I>(&self, items: I, priority: i32) -> Result<String>
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.core
            .put(&format::priority_part(priority), serialize(items))
            .await
    }
}

queue_common!(DistributedPriorityQueue);

/// Curator's `DistributedDelayQueue`: an item is not taken before its time
/// (`queue-|<hex epoch millis>|<sequence>`), and items come out in the order of their times.
/// The time is the producer's wall clock, compared with the consumer's: clocks that differ
/// shift the delays. Cheap to clone.
#[derive(Debug, Clone)]
pub struct DistributedDelayQueue {
    core: QueueCore,
}

impl DistributedDelayQueue {
    /// The queue at `path`, default mode. Nothing is sent.
    pub fn new(client: &Client, path: &str) -> Self {
        Self {
            core: QueueCore::new(client, path, None, Kind::Delay),
        }
    }

    /// The queue at `path`, lock-safe mode (see [`DistributedQueue::with_lock_path`]).
    pub fn with_lock_path(client: &Client, path: &str, lock_path: &str) -> Self {
        Self {
            core: QueueCore::new(client, path, Some(lock_path), Kind::Delay),
        }
    }

    /// Adds one item due at `due` (a time at or before the epoch is due at once).
    ///
    #[doc = put_docs!()]
    pub async fn put(&self, item: impl AsRef<[u8]>, due: SystemTime) -> Result<String> {
        self.core
            .put(&format::delay_part(epoch_ms(due)), serialize([item]))
            .await
    }

    /// Adds several items due at `due` in one node (Curator's `putMulti`).
    ///
    #[doc = put_docs!()]
    pub async fn put_multi<I>(&self, items: I, due: SystemTime) -> Result<String>
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.core
            .put(&format::delay_part(epoch_ms(due)), serialize(items))
            .await
    }
}

queue_common!(DistributedDelayQueue);

/// The example of `docs/recipes-curator-queue.md`, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../../docs/recipes-curator-queue.md")]
pub struct CuratorQueueGuideDoctests;

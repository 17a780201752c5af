//! A distributed FIFO queue ([`Queue`]) and its bounded variant ([`BoundedQueue`]).
//!
//! ```text
//! /app/queue                    (persistent, created on demand)
//! /app/queue/qn-0000000000      (persistent sequential, one per item, data = payload)
//! /app/queue/qn-0000000001
//! ```
//!
//! Producers add `qn-` persistent sequential nodes; consumers list the children, sort them by
//! sequence number and claim the first they can: read the item (getData), then delete it at
//! the version read. A delete that fails with [`Error::NoNode`] means another consumer got
//! that item, and the consumer tries the next one. Only one delete of a node can succeed, so
//! every item goes to exactly one consumer.
//!
//! See `docs/recipes-barrier-queue.md` for round trips and failure behaviour.
//!
//! The ZooKeeper errors these docs name ([`Error::NoAuth`], [`Error::SessionExpired`], ...)
//! come wrapped in [`crate::Error::Zk`]; a timeout is [`crate::Error::Timeout`].

use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;
use zk_proto::{Client, CreateMode, CreateOptions, Error, MultiItem, MultiOperation, StringList};

use crate::barrier::{ensure_path, join_path};
use crate::deadline::{deadline_of, until, wait_watch};
use crate::sequential::{sequence_of, sort_by_sequence};
use crate::{Result, as_len};

/// The name prefix of an item node (the server appends a 10-digit sequence number).
pub const ITEM_PREFIX: &str = "qn-";

/// One item taken from a queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The item node's name (`qn-<sequence>`).
    pub name: String,
    /// The payload.
    pub data: Bytes,
}

impl Item {
    /// The item's sequence number: items are taken in this order.
    pub fn sequence(&self) -> Option<i64> {
        sequence_of(&self.name)
    }
}

/// Whether `name` is an item node of a queue.
fn is_item(name: &str) -> bool {
    name.starts_with(ITEM_PREFIX) && sequence_of(name).is_some()
}

/// A distributed FIFO queue (unbounded). Cheap to clone; every clone is the same queue.
#[derive(Debug, Clone)]
pub struct Queue {
    client: Client,
    path: String,
}

impl Queue {
    /// The queue at `path` (nothing is sent; the node is created by the first
    /// [`put`](Self::put)).
    pub fn new(client: &Client, path: &str) -> Self {
        Self {
            client: client.clone(),
            path: path.to_owned(),
        }
    }

    /// The queue node's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Adds an item; returns the path of its node.
    ///
    /// Round trips: 1 (2 more when the queue node is missing).
    ///
    /// # Errors
    ///
    /// [`Error::NoAuth`], [`Error::PacketTooLarge`] and the connection errors. After
    /// [`Error::ConnectionLoss`] or [`Error::RequestTimeout`] **the item may or may not have
    /// been added**: a sequential create cannot be retried blindly (a retry may add it
    /// twice).
    ///
    /// # Cancellation safety
    ///
    /// The create is queued when `put` is first polled; dropping the future afterwards may
    /// or may not add the item.
    ///
    /// # Session loss
    ///
    /// Items are persistent: they outlive the producer's session. An expired session fails
    /// the call with [`Error::SessionExpired`] (nothing is added).
    pub async fn put(&self, data: impl Into<Bytes>) -> Result<String> {
        let data = data.into();
        let prefix = join_path(&self.path, ITEM_PREFIX);
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

    /// The number of items (a snapshot).
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
        match self.client.get_children(&self.path).await {
            Ok(children) => Ok(children.iter().filter(|c| is_item(c)).count()),
            Err(Error::NoNode) => Ok(0),
            Err(error) => Err(error.into()),
        }
    }

    /// Takes the oldest item if there is one, without waiting.
    ///
    /// Round trips: 1 (getChildren), plus 2 (getData, delete) per item tried: 3 when no other
    /// consumer competes for the head.
    ///
    /// # Errors
    ///
    /// The connection errors. **An item whose delete succeeded but whose reply was lost
    /// ([`Error::ConnectionLoss`] on the delete) is lost**: the queue gives at-most-once
    /// delivery under connection loss, exactly-once otherwise.
    ///
    /// # Cancellation safety
    ///
    /// Not cancel-safe: dropping the future after the delete was sent loses the item.
    ///
    /// # Session loss
    ///
    /// Fails with [`Error::SessionExpired`]; items not yet deleted stay in the queue.
    pub async fn try_take(&self) -> Result<Option<Item>> {
        let children = match self.client.get_children(&self.path).await {
            Ok(children) => children,
            Err(Error::NoNode) => return Ok(None),
            Err(error) => return Err(error.into()),
        };
        Ok(self.claim_first(children, None).await?.0)
    }

    /// Takes the oldest item, waiting at most `timeout` (`None`: no limit) for one to be
    /// added.
    ///
    /// Round trips: as [`try_take`](Self::try_take) (the getChildren also leaves a watch);
    /// when the queue is empty, 1 more getChildren per wake-up of the watch.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Timeout`] when `timeout` passed first (no item was taken); otherwise as
    /// [`try_take`](Self::try_take). A disconnection while waiting is not an error: the
    /// client re-registers the watch on reconnect.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe while it waits for an item (nothing has been claimed); not cancel-safe
    /// once a delete was sent (see [`try_take`](Self::try_take)). A `tokio::time::timeout`
    /// around it may therefore lose an item; use the `timeout` argument instead, which ends
    /// every step (listing, reading an item, waiting; also while no server answers) except
    /// the delete that claims an item: once sent, that one is awaited, so the item is
    /// either returned or left in the queue (or lost as [`try_take`](Self::try_take) says).
    ///
    /// # Session loss
    ///
    /// Fails with [`Error::SessionExpired`] (also while waiting); no item is lost by it.
    pub async fn take(&self, timeout: Option<Duration>) -> Result<Item> {
        let deadline = deadline_of(timeout);
        loop {
            let listed = until(deadline, self.client.get_children_watch(&self.path)).await?;
            let (children, watch) = match listed {
                Ok(listed) => listed,
                Err(Error::NoNode) => {
                    // Wait for the queue node itself.
                    let (stat, watch) =
                        until(deadline, self.client.exists_watch(&self.path)).await??;
                    if stat.is_none() {
                        wait_watch(watch, deadline).await?;
                    }
                    continue;
                }
                Err(error) => return Err(error.into()),
            };
            match self.claim_first(children, deadline).await? {
                (Some(item), _) => return Ok(item),
                // An item changed under us: list again rather than wait for a child change.
                (None, true) => continue,
                (None, false) => {}
            }
            wait_watch(watch, deadline).await?;
        }
    }

    /// Claims the first item of `children` (in sequence order) that no other consumer got.
    /// The flag tells whether an item was skipped because its version changed between the
    /// read and the delete (it is still there: worth listing again). Past `deadline` it
    /// reads no more items ([`crate::Error::Timeout`]); a delete once sent is awaited.
    async fn claim_first(
        &self,
        children: StringList,
        deadline: Option<Instant>,
    ) -> Result<(Option<Item>, bool)> {
        let mut children: Vec<&str> = children.iter().filter(|c| is_item(c)).collect();
        sort_by_sequence(&mut children);
        let mut changed = false;
        for name in children {
            let path = join_path(&self.path, name);
            let (data, stat) = match until(deadline, self.client.get_data(&path)).await? {
                Ok(read) => read,
                Err(Error::NoNode) => continue,
                Err(error) => return Err(error.into()),
            };
            match self.client.delete(&path, Some(stat.version)).await {
                Ok(()) => {
                    let name = name.to_owned();
                    return Ok((Some(Item { name, data }), changed));
                }
                // Taken by another consumer: try the next one.
                Err(Error::NoNode) => {}
                // Changed since read: try the next one; the next listing sees it again.
                Err(Error::BadVersion) => changed = true,
                Err(error) => return Err(error.into()),
            }
        }
        Ok((None, changed))
    }
}

/// A [`Queue`] holding at most `capacity` items: [`put`](BoundedQueue::put) blocks while it is
/// full.
///
/// **The bound is exact** as long as every producer of the queue goes through a
/// `BoundedQueue` (consumers may use either type): a put reads the children together with
/// the queue node's Stat (getChildren2), and adds its item in a multi that also sets the
/// queue node's data at the version read. Two producers that both saw room race on that
/// version: one multi fails with [`Error::BadVersion`] and that producer counts again.
/// Consumers only remove items, which can only make room. (The multi check works on the data
/// version, not on the cversion, so the data version of the queue node serves as the
/// producers' counter; its data is left empty.)
#[derive(Debug, Clone)]
pub struct BoundedQueue {
    queue: Queue,
    capacity: u32,
}

impl BoundedQueue {
    /// The queue at `path` holding at most `capacity` items (nothing is sent).
    pub fn new(client: &Client, path: &str, capacity: u32) -> Self {
        Self {
            queue: Queue::new(client, path),
            capacity,
        }
    }

    /// The unbounded view of the same queue, for consumers.
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// The capacity.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Adds an item, waiting at most `timeout` (`None`: no limit) while the queue is full.
    /// Returns the item's node path.
    ///
    /// Round trips: 2 when there is room and no other producer races (getChildren2, then the
    /// multi); 1 more per lost race; while full, 1 getChildren with a watch per wake-up.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Timeout`] when `timeout` passed first: nothing was added. Otherwise as
    /// [`Queue::put`]: after [`Error::ConnectionLoss`] on the multi the item may or may not
    /// have been added.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe while waiting for room; dropping it once the multi was sent may or may
    /// not add the item. The `timeout` ends every step (listing, creating the queue node,
    /// waiting; also while no server answers) except the multi: once sent, that one is
    /// awaited, so a timeout always means that nothing was added.
    ///
    /// # Session loss
    ///
    /// Fails with [`Error::SessionExpired`] (also while waiting); items are persistent.
    pub async fn put(&self, data: impl Into<Bytes>, timeout: Option<Duration>) -> Result<String> {
        let data = data.into();
        let client = &self.queue.client;
        let path = &self.queue.path;
        let deadline = deadline_of(timeout);
        loop {
            let (children, stat) = match until(deadline, client.get_children2(path)).await? {
                Ok(listed) => listed,
                Err(Error::NoNode) => {
                    until(deadline, ensure_path(client, path)).await??;
                    continue;
                }
                Err(error) => return Err(error.into()),
            };
            if children.len() < as_len(self.capacity) {
                let ops = vec![
                    MultiOperation::set_data(path.clone(), Bytes::new(), Some(stat.version)),
                    MultiOperation::create(
                        join_path(path, ITEM_PREFIX),
                        data.clone(),
                        &CreateOptions::new(CreateMode::PERSISTENT_SEQUENTIAL),
                    ),
                ];
                let items = client.multi(ops).await?;
                match items.iter().find_map(MultiItem::error) {
                    None => {
                        let created = items.into_iter().find_map(|item| match item {
                            MultiItem::Created { path, .. } => Some(path),
                            _ => None,
                        });
                        return Ok(created.unwrap_or_default());
                    }
                    Some(Error::BadVersion) => continue,
                    Some(error) => return Err(error.clone().into()),
                }
            }
            let (children, watch) = match until(deadline, client.get_children_watch(path)).await? {
                Ok(listed) => listed,
                Err(Error::NoNode) => continue,
                Err(error) => return Err(error.into()),
            };
            if children.len() < as_len(self.capacity) {
                continue;
            }
            wait_watch(watch, deadline).await?;
        }
    }

    /// Takes the oldest item, waiting at most `timeout`; see [`Queue::take`].
    ///
    /// Round trips: as [`Queue::take`].
    ///
    /// # Errors
    ///
    /// As [`Queue::take`].
    ///
    /// # Cancellation safety
    ///
    /// As [`Queue::take`]: not cancel-safe once a delete was sent.
    ///
    /// # Session loss
    ///
    /// As [`Queue::take`].
    pub async fn take(&self, timeout: Option<Duration>) -> Result<Item> {
        self.queue.take(timeout).await
    }

    /// Takes the oldest item without waiting; see [`Queue::try_take`].
    ///
    /// Round trips: as [`Queue::try_take`].
    ///
    /// # Errors
    ///
    /// As [`Queue::try_take`].
    ///
    /// # Cancellation safety
    ///
    /// As [`Queue::try_take`].
    ///
    /// # Session loss
    ///
    /// As [`Queue::try_take`].
    pub async fn try_take(&self) -> Result<Option<Item>> {
        self.queue.try_take().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sequential_qn_nodes_are_items() {
        assert!(is_item("qn-0000000042"));
        assert!(!is_item("qn-"));
        assert!(!is_item("lock-0000000001"));
        assert!(
            !is_item("qn--000000005"),
            "a wrapped counter is not trusted"
        );
        let item = Item {
            name: "qn-0000000042".to_owned(),
            data: Bytes::from_static(b"x"),
        };
        assert_eq!(item.sequence(), Some(42));
    }

    #[test]
    fn item_paths_under_the_root_and_below() {
        assert_eq!(join_path("/", ITEM_PREFIX), "/qn-");
        assert_eq!(join_path("/app/queue", ITEM_PREFIX), "/app/queue/qn-");
    }
}

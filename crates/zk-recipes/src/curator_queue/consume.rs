//! Taking items: a [`Consumer`] keeps the sorted listing between takes, as Curator's consumer
//! loop does (one getChildren per batch of items, not per item), and claims each item in one
//! round trip (two requests queued back to back).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::FutureExt;
use tokio::time::Instant;
use zk_proto::{Client, CreateMode, CreateOptions, Error, WatchedEvent};

use super::{HeldLock, Kind, Message, QueueCore, deserialize, format, now_ms};
use crate::barrier::{ensure_path, join_path};
use crate::cleanup::withdraw;
use crate::deadline::{deadline_of, until};
use crate::{Error as RecipeError, Result};

/// A children watch of the queue node, waiting.
type ChildrenWatch = Pin<Box<dyn Future<Output = zk_proto::Result<WatchedEvent>> + Send>>;

/// A consumer of one queue: the stream of its messages, in Curator's order
/// ([`next`](Self::next)). It keeps the last listing of the queue and takes its items in
/// order before it lists again (Curator's consumer loop), so a queue of n items costs about
/// n / (items per listing) listings rather than n. A priority or delay queue lists again as
/// soon as its children change (Curator's `refreshOnWatch`), so that a new item that sorts
/// first comes first.
///
/// Made by `consumer()` on any queue kind ([`DistributedQueue::consumer`](super::DistributedQueue::consumer), ...).
pub struct Consumer {
    core: QueueCore,
    /// Item names of the last listing not tried yet, in order.
    pending: VecDeque<String>,
    /// The children watch set by the last listing; `None` once it fired.
    watch: Option<ChildrenWatch>,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("path", &self.core.path)
            .field("lock_path", &self.core.lock_path)
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

/// The outcome of one claim.
pub(super) enum Claim {
    /// The item's data, and its lock in lock-safe mode.
    Taken(Bytes, Option<HeldLock>),
    /// Taken by another consumer, or changed: skip it.
    Gone,
    /// Locked by another consumer (the lock node's path).
    Held(String),
}

impl Consumer {
    pub(super) fn new(core: QueueCore) -> Self {
        Self {
            core,
            pending: VecDeque::new(),
            watch: None,
        }
    }

    /// The next message, waiting at most `timeout` (`None`: no limit) for an item that is
    /// there, due, and not held by another consumer.
    ///
    /// Round trips per item: 1 (default mode: getData and the delete at version 0 queued
    /// back to back, Curator's items are never changed; an item whose version is not 0 costs
    /// 1 more; lock-safe mode: the lock's create and getData queued back to back), plus 1
    /// getChildren per listing (a listing serves every item it names). When nothing can be
    /// taken, it waits for a child change, for the lock of the first held item to go (its
    /// holder died: an exists watch, 1 round trip) or for the first delayed item's time.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Timeout`] when `timeout` passed first (nothing was taken); the
    /// connection errors. Default mode: an item whose delete was applied but whose reply was
    /// lost ([`Error::ConnectionLoss`]) is lost (at most once). A disconnection while
    /// waiting is not an error: the watches are set again on reconnection.
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
    /// Fails with [`Error::SessionExpired`] (also while waiting); items not taken stay, and
    /// a lock-safe consumer's locks go with its session.
    pub async fn next(&mut self, timeout: Option<Duration>) -> Result<Message> {
        match self.poll(deadline_of(timeout), true).await? {
            Some(message) => Ok(message),
            // Unreachable: a waiting poll returns a message or an error.
            None => Err(RecipeError::Timeout),
        }
    }

    /// The next message if one can be taken now, without waiting; as [`next`](Self::next).
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

    /// Whether the listing should be read again before the next item: a priority or delay
    /// queue whose children changed since it was listed.
    fn refresh_wanted(&mut self) -> bool {
        if !matches!(self.core.kind, Kind::Priority | Kind::Delay) {
            return false;
        }
        match self.watch.as_mut().map(FutureExt::now_or_never) {
            Some(None) => false,
            Some(Some(_)) => {
                self.watch = None;
                true
            }
            None => true,
        }
    }

    /// Lists the queue (with a children watch); `false` when the queue node is missing.
    async fn list(&mut self, deadline: Option<Instant>) -> Result<bool> {
        let listed = until(
            deadline,
            self.core.client.get_children_watch(&self.core.path),
        )
        .await?;
        let (children, watch) = match listed {
            Ok(listed) => listed,
            Err(Error::NoNode) => return Ok(false),
            Err(error) => return Err(error.into()),
        };
        self.pending = self.core.sorted(children.to_vec()).into();
        self.watch = Some(Box::pin(watch.changed()));
        Ok(true)
    }

    async fn poll(&mut self, deadline: Option<Instant>, wait: bool) -> Result<Option<Message>> {
        loop {
            let mut fresh = false;
            if self.pending.is_empty() || self.refresh_wanted() {
                if !self.list(deadline).await? {
                    if !wait {
                        return Ok(None);
                    }
                    // Wait for the queue node itself.
                    let (stat, watch) =
                        until(deadline, self.core.client.exists_watch(&self.core.path)).await??;
                    if stat.is_none() {
                        until(deadline, watch.changed()).await??;
                    }
                    continue;
                }
                fresh = true;
            }
            let mut locked = None;
            let mut due_in = None;
            let now = now_ms();
            while let Some(name) = self.pending.front() {
                if self.core.kind == Kind::Delay {
                    let delay = format::epoch_of(name).saturating_sub(now);
                    if delay > 0 {
                        // Sorted by time: every later item is due later.
                        due_in = Some(Duration::from_millis(delay.unsigned_abs()));
                        break;
                    }
                }
                let Some(name) = self.pending.pop_front() else {
                    break;
                };
                if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                    self.pending.push_front(name);
                    return Err(RecipeError::Timeout);
                }
                match self.core.claim(&name).await? {
                    Claim::Taken(data, lock) => {
                        let items = deserialize(&data);
                        if let Err(error) = &items {
                            tracing::warn!(item = name, %error, "a queue item not in Curator's format");
                        }
                        return Ok(Some(Message {
                            name,
                            data,
                            items,
                            lock,
                        }));
                    }
                    Claim::Gone => {}
                    Claim::Held(lock) => {
                        locked.get_or_insert(lock);
                    }
                }
                if self.refresh_wanted() {
                    break;
                }
            }
            if !fresh {
                // The listing was older than this call: read it again before waiting.
                self.pending.clear();
                continue;
            }
            if !wait {
                return Ok(None);
            }
            self.pending.clear();
            let lock_watch = match locked {
                Some(lock) => match until(deadline, self.core.client.exists_watch(&lock)).await? {
                    Ok((Some(_), watch)) => Some(watch),
                    // Released since: list again.
                    Ok((None, _)) => continue,
                    Err(error) => return Err(error.into()),
                },
                None => None,
            };
            let children = self.watch.take();
            until(deadline, async {
                tokio::select! {
                    event = async {
                        match children {
                            Some(children) => children.await.map(drop),
                            // Fired already: list again.
                            None => Ok(()),
                        }
                    } => event,
                    event = async {
                        match lock_watch {
                            Some(lock) => lock.changed().await,
                            None => std::future::pending().await,
                        }
                    } => event.map(drop),
                    () = async {
                        match due_in {
                            Some(due_in) => tokio::time::sleep(due_in).await,
                            None => std::future::pending().await,
                        }
                    } => Ok(()),
                }
            })
            .await??;
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
                return Ok(Claim::Held(std::mem::take(&mut lock.path)));
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

//! A counting semaphore on Apache Curator's `InterProcessSemaphoreV2` layout.

use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;
use zk_proto::{Client, OneshotWatcher};

use super::attempt::{Attempt, Contenders};
use super::guard::LockGuard;
use super::node::OwnNode;
use super::rules::{Kind, Rule};
use super::{LEASE_NAME, Lock};
use crate::counter::{SharedCount, decode};
use crate::deadline::{deadline_of, until};
use crate::sequential::attempt_id;
use crate::{Error, Result};

/// The child of a [`SemaphoreV2`]'s path under which its mutex's nodes are (Curator's
/// `LOCK_PARENT`).
pub const SEMAPHORE_LOCKS: &str = "locks";
/// The child of a [`SemaphoreV2`]'s path under which its lease nodes are (Curator's
/// `LEASE_PARENT`); each lease is `_c_<uuid>-lease-<seq>` ([`LEASE_NAME`], Curator's
/// `LEASE_BASE_NAME`).
pub const SEMAPHORE_LEASES: &str = "leases";

/// Where a [`SemaphoreV2`] finds its maximum number of leases.
#[derive(Debug, Clone)]
pub enum MaxLeases {
    /// A number every contender is given (Curator's `maxLeases` argument): nothing checks that
    /// all contenders use the same one.
    Fixed(u32),
    /// The value of a [`SharedCount`] (Curator's `SharedCountReader` argument): every
    /// contender reads the same node, and a waiter watches it, so raising it lets waiters in.
    Shared(SharedCount),
}

/// A counting semaphore compatible with Apache Curator's `InterProcessSemaphoreV2` on the same
/// path: Curator's and this crate's contenders share one set of leases, so together they never
/// hold more than the maximum.
///
/// The layout and the algorithm are Curator's:
///
/// - `<path>/locks` is an [`InterProcessMutex`-compatible](Lock) mutex that an acquire holds
///   while it takes its lease, so leases are granted one at a time, in the mutex's order;
/// - under the mutex, the contender creates `<path>/leases/_c_<uuid>-lease-<seq>` (ephemeral,
///   sequential, holding the [node data](Self::with_node_data)) and lists `<path>/leases`
///   with a watch: it holds a lease when **the number of children is at most the maximum**
///   (every child counts, whoever made it); otherwise it waits for a change of the children
///   (or of the [shared maximum](MaxLeases::Shared)) and counts again;
/// - then it releases the mutex. Releasing the lease deletes its node.
///
/// Uncontended, an acquire is three round trips (the mutex, the lease node with the listing,
/// the mutex's release). The parents are created as container nodes when missing.
///
/// ```no_run
/// # async fn example(client: zk_proto::Client) -> zk_recipes::Result<()> {
/// use zk_recipes::lock::SemaphoreV2;
///
/// let semaphore = SemaphoreV2::new(&client, "/app/slots", 3);
/// let lease = semaphore.acquire(Some(std::time::Duration::from_secs(5))).await?;
/// // ... at most 3 holders, Curator's included ...
/// lease.release().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct SemaphoreV2 {
    client: Client,
    lock: Lock,
    leases: Contenders,
    max: MaxLeases,
    data: Bytes,
}

/// The lease nodes' kind (only its name is used: the grant rule is the count of children).
const LEASE_V2: Kind = Kind {
    name: LEASE_NAME,
    rule: Rule::Permits(1),
    sort_names: &[LEASE_NAME],
    every_child: true,
};

impl SemaphoreV2 {
    /// A semaphore of `max_leases` leases under `path` (all contenders must agree on it).
    pub fn new(client: &Client, path: &str, max_leases: u32) -> SemaphoreV2 {
        SemaphoreV2::with_max(client, path, MaxLeases::Fixed(max_leases))
    }

    /// A semaphore under `path` whose maximum is the value of `count` (created with its seed
    /// when missing; a negative value lets no one in).
    pub fn with_shared_count(client: &Client, path: &str, count: SharedCount) -> SemaphoreV2 {
        SemaphoreV2::with_max(client, path, MaxLeases::Shared(count))
    }

    fn with_max(client: &Client, path: &str, max: MaxLeases) -> SemaphoreV2 {
        let path = path.trim_end_matches('/');
        SemaphoreV2 {
            client: client.clone(),
            lock: Lock::new(client, &format!("{path}/{SEMAPHORE_LOCKS}")),
            leases: Contenders::new(
                client.clone(),
                &format!("{path}/{SEMAPHORE_LEASES}"),
                LEASE_V2,
            ),
            max,
            data: Bytes::new(),
        }
    }

    /// The data of the lease nodes this semaphore creates (Curator's `setNodeData`; empty by
    /// default).
    #[must_use]
    pub fn with_node_data(mut self, data: impl Into<Bytes>) -> SemaphoreV2 {
        self.data = data.into();
        self
    }

    /// The lease nodes now (Curator's `getParticipantNodes`): the names of the children of
    /// `<path>/leases`, holders and the one waiter alike, unordered.
    ///
    /// # Errors
    ///
    /// [`Error::Zk`] with the session's end or a refusal.
    pub async fn participant_nodes(&self) -> Result<Vec<String>> {
        match self.client.get_children(&self.leases.parent).await {
            Ok(children) => Ok(children.to_vec()),
            Err(zk_proto::Error::NoNode) => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    /// Waits for one lease, at most `timeout` (`None`: no limit).
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when `timeout` passed first (the lease node and the mutex node are
    /// then deleted); [`Error::Lost`] when the lease node was deleted by someone else while
    /// waiting; [`Error::BadValue`] when the [shared maximum](MaxLeases::Shared) is not a
    /// 4-byte count; the errors of [`Lock::acquire`] for the mutex.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future deletes the lease node and the mutex node, as for
    /// [`Lock::acquire`].
    ///
    /// # Session loss
    ///
    /// A disconnection while waiting is survived; the session's expiry fails the acquire.
    ///
    /// A zero timeout is a try, as Curator's `acquire(0, unit)`: see
    /// [`try_acquire`](Self::try_acquire).
    pub async fn acquire(&self, timeout: Option<Duration>) -> Result<LockGuard> {
        if timeout == Some(Duration::ZERO) {
            return self.take(None, true).await;
        }
        self.acquire_until(deadline_of(timeout)).await
    }

    /// Takes a lease if one is free now, without waiting: `None` when the semaphore's mutex
    /// is held by another contender or every lease is taken (Curator's `acquire(0, unit)`
    /// returning false). Two round trips at least (the mutex, then the lease node and the
    /// listing); whatever it created is deleted again when it gives up.
    ///
    /// # Errors
    ///
    /// As [`acquire`](Self::acquire), but for [`Error::Timeout`].
    ///
    /// # Cancellation safety
    ///
    /// As [`acquire`](Self::acquire).
    ///
    /// # Session loss
    ///
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        match self.take(None, true).await {
            Ok(guard) => Ok(Some(guard)),
            Err(Error::Timeout) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Waits for `qty` leases, taken one after the other, all within `timeout` (`None`: no
    /// limit). On any error the leases already taken are released (Curator's
    /// `acquire(qty, ...)`).
    ///
    /// # Errors
    ///
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancellation safety
    ///
    /// As [`acquire`](Self::acquire); the leases already taken are released.
    pub async fn acquire_many(
        &self,
        qty: u32,
        timeout: Option<Duration>,
    ) -> Result<Vec<LockGuard>> {
        let deadline = deadline_of(timeout);
        let mut leases = Vec::new();
        for _ in 0..qty {
            leases.push(self.acquire_until(deadline).await?);
        }
        Ok(leases)
    }

    async fn acquire_until(&self, deadline: Option<Instant>) -> Result<LockGuard> {
        self.take(deadline, false).await
    }

    /// One lease until `deadline`; with `give_up`, no wait at all: [`Error::Timeout`] as soon
    /// as the mutex or a lease is not free.
    async fn take(&self, deadline: Option<Instant>, give_up: bool) -> Result<LockGuard> {
        let mutex = if give_up {
            self.lock.acquire(Some(Duration::ZERO)).await?
        } else {
            let remaining = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            self.lock.acquire(remaining).await?
        };
        let mut attempt = Attempt {
            client: self.client.clone(),
            parent: self.leases.parent.clone(),
            id: attempt_id(),
            node: None,
            unsure: false,
            armed: true,
        };
        // On an error or a timeout, dropping the armed attempt deletes the lease node and
        // dropping the mutex's guard deletes its node (both queued at once).
        let own = until(deadline, self.take_lease(&mut attempt, give_up)).await??;
        mutex.release().await?;
        attempt.armed = false;
        Ok(self.leases.guard(own))
    }

    /// Under the mutex: creates the lease node and waits until the children of the leases
    /// node are no more than the maximum.
    async fn take_lease(&self, attempt: &mut Attempt, give_up: bool) -> Result<OwnNode> {
        let (own, mut listing) = self
            .leases
            .create_listed(attempt, self.data.clone(), true)
            .await?;
        let own_name = own.name();
        loop {
            // The maximum is read (and, when shared, watched) after each listing.
            let (children, children_watch) = match listing.take() {
                Some((children, watch)) => (children, watch),
                None => match self.leases.listing(true).await {
                    Ok(listing) => listing,
                    Err(e) if e.is_retryable() => continue,
                    Err(e) => return Err(e.into()),
                },
            };
            let (max, max_watch) = self.max().await?;
            if !children.contains(&own_name) {
                return Err(Error::Lost);
            }
            if i64::try_from(children.len()).is_ok_and(|n| n <= max) {
                return Ok(own);
            }
            if give_up {
                return Err(Error::Timeout);
            }
            let children_changed = async {
                match children_watch {
                    Some(watch) => watch.changed().await.map(drop),
                    None => Ok(()),
                }
            };
            let max_changed = async {
                match max_watch {
                    Some(watch) => watch.changed().await.map(drop),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                changed = children_changed => changed?,
                changed = max_changed => changed?,
            }
        }
    }

    /// The maximum number of leases, and for a shared maximum a watch on its node.
    async fn max(&self) -> Result<(i64, Option<OneshotWatcher>)> {
        let count = match &self.max {
            MaxLeases::Fixed(max) => return Ok((i64::from(*max), None)),
            MaxLeases::Shared(count) => count,
        };
        loop {
            match self.client.get_data_watch(count.path()).await {
                Ok((data, _, watch)) => {
                    let bytes = decode::<4>(count.path(), &data)?;
                    return Ok((i64::from(i32::from_be_bytes(bytes)), Some(watch)));
                }
                // Missing: created with its seed (as Curator's `SharedCount.start`).
                Err(zk_proto::Error::NoNode) => {
                    count.get().await?;
                }
                Err(e) if e.is_retryable() => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

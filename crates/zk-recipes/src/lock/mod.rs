//! Distributed locks on ephemeral-sequential nodes: a mutex ([`Lock`], optionally
//! [re-entrant](Lock::reentrant)), a read-write lock ([`ReadWriteLock`]) and two counting
//! semaphores ([`SemaphoreV2`], [`Semaphore`]).
//!
//! **Curator compatibility.** The mutex and the read-write lock interoperate with Apache
//! Curator 5's `InterProcessMutex` and `InterProcessReadWriteLock` on the same path: the same
//! node names (`_c_<uuid>-lock-<seq>`; `_c_<uuid>-__READ__<seq>` and `_c_<uuid>-__WRIT__<seq>`),
//! the same order of the children and the same rule of who holds (see
//! [`sort_like_curator`](crate::sequential::sort_like_curator)). [`SemaphoreV2`] shares
//! Curator's `InterProcessSemaphoreV2` layout (`locks/` and `leases/`) and lease count. The
//! [`Semaphore`] is this crate's own design and is **not** compatible with Curator's
//! semaphores.
//!
//! [`MultiLock`] takes several locks as one (Curator's `InterProcessMultiLock`), and
//! [`SemaphoreMutex`] is a [`SemaphoreV2`] of one lease (Curator's
//! `InterProcessSemaphoreMutex`).
//!
//! The design, the round-trip counts and the failure cases are described in
//! `docs/recipes-lock.md`. In short:
//!
//! - every contender creates `<path>/_c_<uuid>-<name><seq>` (ephemeral, sequential) and lists
//!   the children in the same round trip (the two requests are sent back to back);
//! - the children are ordered as Curator orders them: every child of the path, by the text
//!   after the lock name (for the recipes' nodes, the sequence number); a mutex or write-lock
//!   contender holds when it is first, a reader when no write node is before it;
//! - a waiter watches the node it waits for (its immediate predecessor; for a reader, the
//!   nearest write node before it), and when that node is the only one in its way, its
//!   deletion alone grants the lock (no new listing);
//! - when that node is not the only one in its way, the waiter also watches the node just
//!   before it: when that one goes, the waiter lists again while its predecessor takes the
//!   lock, so that it learns in time that its predecessor is the last node in its way and
//!   then takes the lock on the deletion alone. A deletion thus wakes at most two waiters;
//! - a lost create reply is recovered by finding the node by its per-attempt `<uuid>`;
//! - a cancelled, failed or timed-out acquire deletes its node;
//! - the held lock is a [`LockGuard`] that tells when the session (and so possibly the lock) is
//!   suspended or lost, and carries a fencing token (the node's czxid).

mod attempt;
mod guard;
mod multi;
mod node;
mod node_data;
mod owner;
mod reentrant;
mod rules;
mod semaphore_mutex;
mod semaphore_v2;

use std::sync::Arc;
use std::time::Duration;

use zk_proto::Client;

use crate::{Error, Result, as_len};
use attempt::Contenders;
pub(crate) use attempt::ensure_parents;
pub use guard::{LockGuard, Validity};
pub use multi::{MultiLock, MultiLockGuard};
use rules::{Kind, MUTEX, READ, Rule, WRITE};
pub use semaphore_mutex::SemaphoreMutex;
pub use semaphore_v2::{MaxLeases, SEMAPHORE_LEASES, SEMAPHORE_LOCKS, SemaphoreV2};

/// The node name Curator's `InterProcessMutex` uses (`LOCK_NAME`; `_c_<uuid>-lock-<seq>`).
pub const MUTEX_NAME: &str = "lock-";
/// The node name of the read side of Curator's `InterProcessReadWriteLock`
/// (`READ_LOCK_NAME`; `_c_<uuid>-__READ__<seq>`).
pub const READ_NAME: &str = "__READ__";
/// The node name of the write side of Curator's `InterProcessReadWriteLock`
/// (`WRITE_LOCK_NAME`; `_c_<uuid>-__WRIT__<seq>`: Curator keeps both names the same length).
pub const WRITE_NAME: &str = "__WRIT__";
/// The node name of the leases of this crate's [`Semaphore`] (whose layout is not Curator's)
/// and of [`SemaphoreV2`] (Curator's `LEASE_BASE_NAME`, under `<path>/leases`).
pub const LEASE_NAME: &str = "lease-";

/// A distributed mutex, compatible with Apache Curator's `InterProcessMutex` on the same
/// path: `<path>/_c_<uuid>-lock-<seq>` nodes in Curator's order (every child of the path,
/// sorted by the text after `lock-`); the first holds the lock.
///
/// Not re-entrant by default: a second acquire through the same `Lock` waits behind the first
/// like any other contender. [`Lock::reentrant`] makes a lock whose owner acquires it again
/// without waiting, as Curator's `InterProcessMutex` does for a thread. The lock's parent node
/// is created as a container node when missing.
///
/// ```no_run
/// # async fn example(client: zk_proto::Client) -> zk_recipes::Result<()> {
/// let lock = zk_recipes::lock::Lock::new(&client, "/locks/jobs");
/// let guard = lock.acquire(None).await?;
/// tokio::select! {
///     _ = guard.wait_lost(None) => { /* stop: the lock may be gone */ }
///     _ = async { /* the protected work, fenced with guard.fencing_token() */ } => {}
/// }
/// guard.release().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Lock {
    contenders: Contenders,
    /// The owner's holds, for a re-entrant lock; shared by the clones.
    owner: Option<Arc<owner::Owner>>,
}

impl Lock {
    /// A mutex under `path` (the parent of the contenders' nodes).
    pub fn new(client: &Client, path: &str) -> Lock {
        Lock {
            contenders: Contenders::new(client.clone(), path, MUTEX),
            owner: None,
        }
    }

    /// A re-entrant mutex under `path`, on the same nodes as [`Lock::new`] (so it excludes
    /// them and Curator's `InterProcessMutex`), whose owner may hold it several times at once.
    ///
    /// **The owner** is the returned `Lock` value **and its clones**: not a thread or a task,
    /// which an async program does not tie its work to. While a guard of the owner holds the
    /// lock, [`acquire`](Self::acquire) through the owner returns at once with a new guard
    /// for the same node (no request), and each guard counts as one hold; releasing or
    /// dropping a guard gives its hold back, and the node is deleted with the last one, as
    /// Curator's `InterProcessMutex` counts a thread's holds. Hand a clone to the code that
    /// runs under the lock and may take it again; create another `Lock` (with `reentrant` or
    /// `new`) for an independent contender, which waits for the owner like any other.
    ///
    /// Concurrent acquires of one owner that does not hold the lock yet queue one node: the
    /// first waits for the lock, the others wait for it and then re-enter (so they all hold
    /// together: clones are one owner). An acquire after the session ended fails with
    /// [`Error::Lost`] instead of re-entering.
    pub fn reentrant(client: &Client, path: &str) -> Lock {
        Lock {
            contenders: Contenders::new(client.clone(), path, MUTEX),
            owner: Some(Arc::default()),
        }
    }

    /// Whether this lock is re-entrant ([`Lock::reentrant`]).
    pub fn is_reentrant(&self) -> bool {
        self.owner.is_some()
    }

    /// How many guards of this owner hold the lock now (0 when it is not held, and always 0
    /// for a lock that is not re-entrant).
    pub fn hold_count(&self) -> usize {
        self.owner.as_ref().map_or(0, |owner| owner.count())
    }

    /// The lock's parent path.
    pub fn path(&self) -> &str {
        &self.contenders.parent
    }

    /// Waits for the lock, at most `timeout` (`None`: no limit).
    ///
    /// Uncontended, this is one round trip (create and listing sent back to back); for a
    /// [re-entrant](Self::reentrant) lock that its owner holds already, none.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when `timeout` passed first, even with no server reachable;
    /// [`Error::Zk`] with the session's end ([`zk_proto::Error::SessionExpired`], ...) or
    /// another refusal (ACL); [`Error::Lost`] when the contender's node was deleted by someone
    /// else; [`Error::SequenceWrapped`]. Before any error is returned, the delete of the
    /// contender's node is queued (so any later call of this client sees it gone); a node
    /// whose name is not known yet (its create's reply was lost) is found and deleted by a
    /// background task. Nothing waits for a server: the error comes at once even when none
    /// is reachable.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future withdraws from the queue: the delete of the node is queued at once
    /// from `Drop` (and sent even if nothing polls it), and when the node's name is not known
    /// yet (create in flight or its reply lost) a background task finds it by its attempt id
    /// and deletes it (this needs a tokio runtime; without one the node stays until the
    /// session ends).
    ///
    /// # Session loss
    ///
    /// A disconnection while waiting is survived (watches are re-registered, a lost create
    /// reply is recovered). Session expiry fails the acquire.
    ///
    /// A zero timeout is a try, as Curator's `acquire(0, unit)`: a free lock is taken (the
    /// guard is returned), a held one gives [`Error::Timeout`] after one round trip (see
    /// [`try_acquire`](Self::try_acquire)).
    pub async fn acquire(&self, timeout: Option<Duration>) -> Result<LockGuard> {
        if timeout == Some(Duration::ZERO) {
            return self.try_once().await;
        }
        match &self.owner {
            Some(owner) => reentrant::acquire(owner, &self.contenders, timeout).await,
            None => self.contenders.acquire(timeout).await,
        }
    }

    /// Takes the lock if it is free now, without waiting: `Some(guard)` when it was taken,
    /// `None` when another contender holds it or waits before (Curator's `acquire(0, unit)`
    /// returning false). For a [re-entrant](Self::reentrant) lock its owner holds, a new hold.
    ///
    /// One round trip: the contender's node is created and the children listed back to back;
    /// when the listing does not grant the lock, the node's delete is queued before `None`
    /// is returned. While the client is disconnected the round trip waits for the next
    /// connection, as any call does (a client's request timeout bounds it).
    ///
    /// # Errors
    ///
    /// As [`acquire`](Self::acquire), but for [`Error::Timeout`].
    ///
    /// # Cancellation safety
    ///
    /// As [`acquire`](Self::acquire): dropping the future withdraws the node.
    ///
    /// # Session loss
    ///
    /// A disconnection is survived (the create's lost reply is recovered); session expiry
    /// fails it.
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        match self.try_once().await {
            Ok(guard) => Ok(Some(guard)),
            Err(Error::Timeout) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn try_once(&self) -> Result<LockGuard> {
        match &self.owner {
            Some(owner) => reentrant::try_acquire(owner, &self.contenders).await,
            None => self.contenders.try_acquire().await,
        }
    }
}

/// A distributed read-write lock, compatible with Apache Curator's
/// `InterProcessReadWriteLock` on the same path: `_c_<uuid>-__READ__<seq>` and
/// `_c_<uuid>-__WRIT__<seq>` nodes under one path, in Curator's order (every child of the
/// path, sorted by the text after `__READ__` / `__WRIT__`).
///
/// A reader holds the lock when no write node (a child whose name contains `__WRIT__`, of
/// either library) is before it, so readers share the lock and a reader queued behind a
/// writer waits for it (writers do not starve); a writer holds it when it is first among all
/// the children. Grants are in node order. Unlike Curator's, the lock is not re-entrant (a
/// holder of the write lock does not get the read lock for free).
#[derive(Debug, Clone)]
pub struct ReadWriteLock {
    read: Lock,
    write: Lock,
}

impl ReadWriteLock {
    /// A read-write lock under `path`.
    pub fn new(client: &Client, path: &str) -> ReadWriteLock {
        ReadWriteLock {
            read: Lock {
                contenders: Contenders::new(client.clone(), path, READ),
                owner: None,
            },
            write: Lock {
                contenders: Contenders::new(client.clone(), path, WRITE),
                owner: None,
            },
        }
    }

    /// The read side (shared): [`Lock::acquire`] on it takes a read lock, which any number of
    /// readers hold at once while no writer holds or waits before them (`__READ__` nodes).
    pub fn read_lock(&self) -> &Lock {
        &self.read
    }

    /// The write side (exclusive): [`Lock::acquire`] on it takes the write lock, which
    /// excludes every other writer and reader (`__WRIT__` nodes).
    pub fn write_lock(&self) -> &Lock {
        &self.write
    }
}

/// A counting semaphore: at most `permits` leases at a time, granted in node order
/// (`<path>/_c_<uuid>-lease-<seq>`; the first `permits` nodes hold a lease).
///
/// **Not compatible with Apache Curator**: this is this crate's own design, simpler than
/// Curator's `InterProcessSemaphoreV2` (a lock plus lease nodes, under `locks/` and `leases/`;
/// see [`SemaphoreV2`] for a compatible one) and `InterProcessSemaphoreMutex`; a Curator
/// semaphore and this one on the same path do not see each other. It needs no mutex: waiters
/// do not wait in turn for a lock, and a lease is granted in one round trip. All contenders must agree on `permits`. A waiter watches the children (so
/// every release wakes every waiter: fine for the small queues semaphores usually have).
#[derive(Debug, Clone)]
pub struct Semaphore {
    lock: Lock,
}

impl Semaphore {
    /// A semaphore with `permits` leases (at least 1) under `path`.
    pub fn new(client: &Client, path: &str, permits: u32) -> Semaphore {
        let kind = Kind {
            name: LEASE_NAME,
            rule: Rule::Permits(as_len(permits.max(1))),
            sort_names: &[LEASE_NAME],
            every_child: false,
        };
        Semaphore {
            lock: Lock {
                contenders: Contenders::new(client.clone(), path, kind),
                owner: None,
            },
        }
    }

    /// Waits for a lease, at most `timeout` (`None`: no limit).
    ///
    /// # Errors
    ///
    /// As [`Lock::acquire`] ([`Error::Timeout`] when `timeout` passed first; the lease node
    /// is then deleted).
    ///
    /// # Cancellation safety
    ///
    /// As [`Lock::acquire`].
    ///
    /// # Session loss
    ///
    /// As [`Lock::acquire`].
    pub async fn acquire(&self, timeout: Option<Duration>) -> Result<LockGuard> {
        self.lock.acquire(timeout).await
    }

    /// Takes a lease if one is free now, without waiting (`None` otherwise), as
    /// [`Lock::try_acquire`]; `acquire(Some(Duration::ZERO))` is the same try.
    ///
    /// # Errors
    ///
    /// As [`Lock::try_acquire`].
    ///
    /// # Cancellation safety
    ///
    /// As [`Lock::acquire`].
    ///
    /// # Session loss
    ///
    /// As [`Lock::acquire`].
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        self.lock.try_acquire().await
    }
}

//! [`MultiLock`]: several locks taken as one (Curator's `InterProcessMultiLock`).

use std::time::Duration;

use futures_util::future::select_all;
use zk_proto::Client;

use super::Lock;
use super::guard::{LockGuard, Validity};
use crate::deadline::{deadline_of, until};
use crate::{Error, Result};

/// All of several locks or none, as Apache Curator's `InterProcessMultiLock`: the locks are
/// acquired one after the other, in the order given, within one timeout; when one of them
/// cannot be taken (timeout, error, cancellation), the ones already held are released.
///
/// Each lock is an ordinary [`Lock`] on its own path, so a multi-lock excludes every holder of
/// any of its locks: Curator's `InterProcessMutex` (and `InterProcessMultiLock`) on one of the
/// paths, and this crate's [`Lock`]s. Two multi-locks that share paths must list them in the
/// same order, or each may hold one lock and wait for the other's (a deadlock that only the
/// timeout ends), as with Curator's.
///
/// ```no_run
/// # async fn example(client: zk_proto::Client) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// let both = zk_recipes::lock::MultiLock::new(&client, &["/locks/a", "/locks/b"]);
/// let guard = both.acquire(Some(Duration::from_secs(5))).await?;
/// // ... both held ...
/// guard.release().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct MultiLock {
    locks: Vec<Lock>,
}

/// The held locks of a [`MultiLock`]: released together (in the reverse order of their
/// acquisition) by [`release`](Self::release), or when dropped (each guard's delete queued).
#[derive(Debug)]
#[must_use = "the locks are released when the guard is dropped"]
pub struct MultiLockGuard {
    /// In the order of the acquisition.
    guards: Vec<LockGuard>,
}

impl MultiLock {
    /// A mutex on each of `paths` (as [`Lock::new`]; Curator's
    /// `InterProcessMultiLock(client, paths)`), taken in this order.
    pub fn new(client: &Client, paths: &[&str]) -> MultiLock {
        MultiLock {
            locks: paths.iter().map(|path| Lock::new(client, path)).collect(),
        }
    }

    /// A multi-lock of the given locks (any kind: mutexes, re-entrant ones, a read-write
    /// lock's sides; Curator's `InterProcessMultiLock(locks)`), taken in this order.
    pub fn from_locks(locks: Vec<Lock>) -> MultiLock {
        MultiLock { locks }
    }

    /// The locks, in the order they are taken.
    pub fn locks(&self) -> &[Lock] {
        &self.locks
    }

    /// Waits for every lock, one after the other, all within `timeout` (`None`: no limit).
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when `timeout` passed before the last lock was taken; the errors of
    /// [`Lock::acquire`]. Either way, the locks already held are released (their deletes
    /// queued, in the reverse order) and the waiting contender's node is withdrawn before the
    /// error is returned.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future releases the locks already held and withdraws the waiting one, as
    /// for [`Lock::acquire`].
    ///
    /// # Session loss
    ///
    /// As [`Lock::acquire`]: a disconnection while waiting is survived, an expiry fails the
    /// acquire.
    pub async fn acquire(&self, timeout: Option<Duration>) -> Result<MultiLockGuard> {
        let deadline = deadline_of(timeout);
        let mut held = MultiLockGuard { guards: Vec::new() };
        for lock in &self.locks {
            // The whole call is bounded: each lock gets what is left of the timeout.
            let guard = until(deadline, lock.acquire(None)).await??;
            held.guards.push(guard);
        }
        Ok(held)
    }

    /// Takes every lock if each is free now, without waiting (Curator's `acquire(0, unit)`):
    /// `None` when one of them is held or waited for by another contender (the ones taken
    /// before it are then released). One round trip per lock.
    ///
    /// # Errors
    ///
    /// As [`acquire`](Self::acquire), but for [`Error::Timeout`].
    ///
    /// # Cancellation safety
    ///
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire(&self) -> Result<Option<MultiLockGuard>> {
        let mut held = MultiLockGuard { guards: Vec::new() };
        for lock in &self.locks {
            match lock.try_acquire().await? {
                Some(guard) => held.guards.push(guard),
                None => return Ok(None),
            }
        }
        Ok(Some(held))
    }
}

impl MultiLockGuard {
    /// The held locks, in the order they were taken.
    pub fn guards(&self) -> &[LockGuard] {
        &self.guards
    }

    /// The worst validity of the held locks (see [`Validity`]): [`Validity::Held`] only while
    /// every one is held.
    pub fn validity(&self) -> Validity {
        let all: Vec<Validity> = self.guards.iter().map(LockGuard::validity).collect();
        if all.contains(&Validity::Lost) {
            Validity::Lost
        } else if all.contains(&Validity::Suspended) {
            Validity::Suspended
        } else {
            Validity::Held
        }
    }

    /// Resolves when one of the locks may no longer be held (see [`LockGuard::wait_lost`]),
    /// with that lock's validity; waits at most `timeout` (`None`: no limit).
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when `timeout` passed while every lock was held.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only watches the sessions' states.
    pub async fn wait_lost(&self, timeout: Option<Duration>) -> Result<Validity> {
        if self.guards.is_empty() {
            return match timeout {
                Some(timeout) => {
                    tokio::time::sleep(timeout).await;
                    Err(Error::Timeout)
                }
                None => std::future::pending().await,
            };
        }
        let waits = self
            .guards
            .iter()
            .map(|guard| Box::pin(guard.wait_lost(timeout)));
        select_all(waits).await.0
    }

    /// Releases every lock, in the reverse order of their acquisition (as Curator), each
    /// tried even when one before failed.
    ///
    /// # Errors
    ///
    /// The first error of a release ([`LockGuard::release`]: [`Error::Lost`] when a lock was
    /// lost before).
    ///
    /// # Cancellation safety
    ///
    /// Every delete not yet sent is queued when the future is dropped (the guards' drop).
    pub async fn release(mut self) -> Result<()> {
        let mut first = Ok(());
        while let Some(guard) = self.guards.pop() {
            let released = guard.release().await;
            if first.is_ok() {
                first = released;
            }
        }
        first
    }
}

impl Drop for MultiLockGuard {
    fn drop(&mut self) {
        // Reverse order, as `release`: each guard's drop queues its delete.
        while let Some(guard) = self.guards.pop() {
            drop(guard);
        }
    }
}

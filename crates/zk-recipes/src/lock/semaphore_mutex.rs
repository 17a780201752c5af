//! [`SemaphoreMutex`]: a mutex on a one-lease semaphore (Curator's
//! `InterProcessSemaphoreMutex`).

use std::time::Duration;

use bytes::Bytes;
use zk_proto::Client;

use super::guard::LockGuard;
use super::semaphore_v2::SemaphoreV2;
use crate::Result;

/// A mutex that is a [`SemaphoreV2`] of one lease, as Apache Curator's
/// `InterProcessSemaphoreMutex` (`new InterProcessSemaphoreV2(client, path, 1)`): the same
/// nodes (`<path>/locks/_c_<uuid>-lock-<seq>` while taking the lease,
/// `<path>/leases/_c_<uuid>-lease-<seq>` while holding it), so it excludes Curator's
/// semaphore mutex and every one-lease `InterProcessSemaphoreV2` on the path.
///
/// Not re-entrant: a second acquire, through the same value or another, waits for the first
/// to be released (as Curator's, which would block its own thread). Unlike a [`Lock`](super::Lock),
/// it has no notion of an owner: any code holding the guard may release it.
///
/// ```no_run
/// # async fn example(client: zk_proto::Client) -> zk_recipes::Result<()> {
/// let mutex = zk_recipes::lock::SemaphoreMutex::new(&client, "/locks/report");
/// let guard = mutex.acquire(None).await?;
/// guard.release().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct SemaphoreMutex {
    semaphore: SemaphoreV2,
}

impl SemaphoreMutex {
    /// A semaphore mutex under `path`.
    pub fn new(client: &Client, path: &str) -> SemaphoreMutex {
        SemaphoreMutex {
            semaphore: SemaphoreV2::new(client, path, 1),
        }
    }

    /// The data of the lease nodes (as [`SemaphoreV2::with_node_data`]; empty by default).
    #[must_use]
    pub fn with_node_data(self, data: impl Into<Bytes>) -> SemaphoreMutex {
        SemaphoreMutex {
            semaphore: self.semaphore.with_node_data(data),
        }
    }

    /// The semaphore of one lease underneath.
    pub fn semaphore(&self) -> &SemaphoreV2 {
        &self.semaphore
    }

    /// Waits for the mutex, at most `timeout` (`None`: no limit): [`SemaphoreV2::acquire`]
    /// of its one lease. A zero timeout is a try ([`try_acquire`](Self::try_acquire)).
    ///
    /// # Errors
    ///
    /// As [`SemaphoreV2::acquire`].
    ///
    /// # Cancellation safety
    ///
    /// As [`SemaphoreV2::acquire`]: dropping the future deletes what it created.
    ///
    /// # Session loss
    ///
    /// As [`SemaphoreV2::acquire`].
    pub async fn acquire(&self, timeout: Option<Duration>) -> Result<LockGuard> {
        self.semaphore.acquire(timeout).await
    }

    /// Takes the mutex if it is free now, without waiting (`None` otherwise), as
    /// [`SemaphoreV2::try_acquire`].
    ///
    /// # Errors
    ///
    /// As [`SemaphoreV2::try_acquire`].
    ///
    /// # Cancellation safety
    ///
    /// As [`SemaphoreV2::acquire`].
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        self.semaphore.try_acquire().await
    }
}

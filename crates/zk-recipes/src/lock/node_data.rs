//! A mutex contender whose node holds data: Curator's `InterProcessMutex.getLockNodeBytes`,
//! which its `LeaderSelector` overrides to store the participant id in the lock node.

use std::time::Duration;

use bytes::Bytes;

use super::Lock;
use super::guard::LockGuard;
use crate::Result;

impl Lock {
    /// As [`Lock::acquire`] (for a lock that is not re-entrant), with `data` in the
    /// contender's node from its create on, so that every reader of the queue sees it (a
    /// leader selector's participant id).
    ///
    /// The node is created with its data and the children listed in one round trip; then the
    /// contender waits as [`Lock::acquire`] does: the same attempt, queue, rules and watches.
    pub(crate) async fn acquire_holding(
        &self,
        data: Bytes,
        timeout: Option<Duration>,
    ) -> Result<LockGuard> {
        self.contenders.attempt(timeout, false, data).await
    }
}

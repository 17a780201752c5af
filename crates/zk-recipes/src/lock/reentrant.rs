//! Re-entrancy of the mutex: the holds of one owner (a [`Lock`](super::Lock) value and its
//! clones) are counted on one node.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::attempt::Contenders;
use super::guard::{LockGuard, Validity};
use super::node::OwnNode;
use super::owner::{Held, Owner};
use crate::deadline::{deadline_of, until};
use crate::{Error, Result};

impl Owner {
    /// One more hold of the node this owner holds, if it holds one.
    fn reenter(self: &Arc<Self>, contenders: &Contenders) -> Result<Option<LockGuard>> {
        let mut held = self.held();
        let Some(held) = held.as_mut() else {
            return Ok(None);
        };
        let mut guard = contenders.guard(held.node.clone());
        if guard.validity() == Validity::Lost {
            // The session is over: so is the lock; no new hold of it.
            guard.node = None;
            return Err(Error::Lost);
        }
        held.count += 1;
        guard.owner = Some(self.clone());
        Ok(Some(guard))
    }
}

/// A re-entrant acquire: a new hold of the owner's node when the owner holds the lock, else an
/// acquire of the lock (one at a time per owner), which becomes the owner's first hold.
pub(super) async fn acquire(
    owner: &Arc<Owner>,
    contenders: &Contenders,
    timeout: Option<Duration>,
) -> Result<LockGuard> {
    if let Some(guard) = owner.reenter(contenders)? {
        return Ok(guard);
    }
    let deadline = deadline_of(timeout);
    let _turn = until(deadline, owner.turn.lock()).await?;
    if let Some(guard) = owner.reenter(contenders)? {
        return Ok(guard);
    }
    let remaining = deadline.map(|d| d.saturating_duration_since(Instant::now()));
    let guard = contenders.acquire(remaining).await?;
    Ok(own(owner, guard))
}

/// The owner's try ([`Lock::try_acquire`](super::Lock::try_acquire)): a new hold when it holds
/// already, else one try for the node; [`Error::Timeout`] also while another acquire of the
/// same owner is under way (it waits for the lock: the lock is not free).
pub(super) async fn try_acquire(owner: &Arc<Owner>, contenders: &Contenders) -> Result<LockGuard> {
    if let Some(guard) = owner.reenter(contenders)? {
        return Ok(guard);
    }
    let Ok(_turn) = owner.turn.try_lock() else {
        return Err(Error::Timeout);
    };
    if let Some(guard) = owner.reenter(contenders)? {
        return Ok(guard);
    }
    let guard = contenders.try_acquire().await?;
    Ok(own(owner, guard))
}

/// Makes `guard`, just granted, the owner's first hold.
fn own(owner: &Arc<Owner>, mut guard: LockGuard) -> LockGuard {
    *owner.held() = Some(Held {
        node: OwnNode {
            path: guard.node().to_owned(),
            czxid: guard.fencing_token(),
            session: guard.session,
        },
        count: 1,
    });
    guard.owner = Some(owner.clone());
    guard
}

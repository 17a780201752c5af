//! A held lock: [`LockGuard`], its validity from the session's state, and its release.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use zk_proto::{Client, QuorumCheck, SessionState};

use super::owner::Owner;
use crate::cleanup::withdraw;
use crate::deadline::within;
use crate::sequential::sequence_of;
use crate::{Error, Result};

/// Whether a held lock can still be trusted, from the session's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Validity {
    /// Connected: the lock is held.
    Held,
    /// The connection is lost (or the client is on a read-only server): the session, and
    /// the lock with it, may still be alive, or may expire at any moment. Stop the work
    /// that needs the lock until it is [`Held`](Validity::Held) again.
    Suspended,
    /// The session is over (expired, closed, authentication failed): the lock is gone. Also
    /// when the client has gone on with a new session
    /// ([`renew_expired_sessions`](zk_proto::ClientBuilder::renew_expired_sessions)): the
    /// lock belonged to the old one.
    Lost,
}

impl Validity {
    /// The validity of a lock whose node belongs to session `owner`, when the client's state
    /// is `state` and its session `current` (another session, once an expired one was
    /// renewed, holds nothing of the old one's).
    fn of(state: SessionState, owner: i64, current: i64) -> Validity {
        if current != owner && !state.is_terminal() {
            return Validity::Lost;
        }
        match state {
            SessionState::Connected => Validity::Held,
            SessionState::Expired | SessionState::AuthFailed | SessionState::Closed => {
                Validity::Lost
            }
            _ => Validity::Suspended,
        }
    }
}

/// A held lock (or read lock, write lock, semaphore lease).
///
/// Released by [`release`](LockGuard::release), or when dropped: the delete is then queued at
/// once (`zk_proto` queues a call when it is made) and retried in a background task if its
/// connection drops (when a tokio runtime is available).
///
/// A guard of a [re-entrant](super::Lock::reentrant) lock is one hold of its owner's node:
/// releasing or dropping it gives that hold back, and the node is deleted with the last one.
///
/// # Session loss
///
/// The lock is an ephemeral node: it lives as long as the session. While the client is
/// disconnected, the session may expire on the server without the client knowing yet, so
/// [`validity`](LockGuard::validity) is [`Validity::Suspended`]; after expiry it is
/// [`Validity::Lost`]. Await [`wait_lost`](LockGuard::wait_lost) next to the protected work to
/// stop it, and pass the [`fencing_token`](LockGuard::fencing_token) to the protected resource
/// so that it can refuse a late writer.
#[derive(Debug)]
#[must_use = "the lock is released when the guard is dropped"]
pub struct LockGuard {
    pub(super) client: Client,
    pub(super) node: Option<String>,
    pub(super) czxid: i64,
    /// The session that owns the node.
    pub(super) session: i64,
    pub(super) states: watch::Receiver<SessionState>,
    /// The owner of a re-entrant lock, whose count of holds this guard is one of.
    pub(super) owner: Option<Arc<Owner>>,
    /// The session's quorum check, held while the lock is: a server cut off from the leader
    /// is left before the ensemble could expire the session and grant the lock to another.
    pub(super) _quorum: QuorumCheck,
}

impl LockGuard {
    /// The full path of the lock node.
    pub fn node(&self) -> &str {
        self.node.as_deref().unwrap_or_default()
    }

    /// The node's sequence number (the holders' order).
    pub fn sequence(&self) -> Option<i64> {
        sequence_of(self.node())
    }

    /// A fencing token: the zxid that created the lock node. It strictly increases from one
    /// holder of the lock to the next (the nodes are granted in creation order).
    pub fn fencing_token(&self) -> i64 {
        self.czxid
    }

    /// Whether the lock can still be trusted (see [`Validity`]).
    pub fn validity(&self) -> Validity {
        // The state first: a new session's id is published before its state.
        let state = *self.states.borrow();
        Validity::of(state, self.session, self.client.session_id())
    }

    /// Whether the lock is held and the session connected.
    pub fn is_valid(&self) -> bool {
        self.validity() == Validity::Held
    }

    /// Resolves when the lock may no longer be held: the session is
    /// [`Suspended`](Validity::Suspended) (disconnected; it may come back) or
    /// [`Lost`](Validity::Lost). Returns that validity at once if it is not held now. Waits at
    /// most `timeout` (`None`: no limit).
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when `timeout` passed while the lock was held (the guard is not
    /// affected); no other: the returned validity is the answer.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only watches the session state.
    ///
    /// # Session loss
    ///
    /// This is how session loss is reported.
    pub async fn wait_lost(&self, timeout: Option<Duration>) -> Result<Validity> {
        let mut states = self.states.clone();
        let (client, owner) = (&self.client, self.session);
        let validity = |state: SessionState| Validity::of(state, owner, client.session_id());
        let lost = async move {
            // Every change of state wakes this, even one a renewed session hides (`Expired`
            // then `Connected` again, seen as `Connected`): the session id tells.
            match states.wait_for(|s| validity(*s) != Validity::Held).await {
                Ok(state) => validity(*state),
                // The client is gone: so is the session.
                Err(_) => Validity::Lost,
            }
        };
        within(timeout, lost).await
    }

    /// Releases the lock (deletes its node) and waits for it. For a re-entrant lock, gives
    /// this guard's hold back, and deletes the node only if it was the owner's last hold (no
    /// request otherwise).
    ///
    /// # Errors
    ///
    /// [`Error::Lost`] when the session ended (the lock was lost before the release, and
    /// the work it protected may have overlapped with another holder's), or when the node was
    /// already deleted by someone else; other ZooKeeper errors as they come.
    ///
    /// # Cancellation safety
    ///
    /// The delete is queued when this is called; dropping the future leaves it to be sent
    /// (the guard is consumed either way).
    ///
    /// # Session loss
    ///
    /// Retried across reconnects until the session ends (then `Lost`).
    pub async fn release(mut self) -> Result<()> {
        let Some(node) = self.take_node() else {
            return Ok(());
        };
        // After a delete whose outcome is unknown (connection lost before its reply), a
        // missing node means that delete was applied: released, not lost.
        let mut maybe_deleted = false;
        loop {
            match self.client.delete(&node, None).await {
                Ok(()) => return Ok(()),
                Err(e) if e.is_retryable() => {
                    maybe_deleted |= e.is_outcome_unknown();
                    continue;
                }
                Err(zk_proto::Error::NoNode) if maybe_deleted => return Ok(()),
                Err(zk_proto::Error::NoNode) => return Err(Error::Lost),
                Err(e) if e.is_terminal() => return Err(Error::Lost),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl LockGuard {
    /// The node to delete when this guard goes: its node, or for a re-entrant lock the
    /// owner's node when this was its last hold.
    fn take_node(&mut self) -> Option<String> {
        let node = self.node.take()?;
        match &self.owner {
            Some(owner) => owner.leave(),
            None => Some(node),
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let Some(node) = self.take_node() else {
            return;
        };
        withdraw(&self.client, node);
    }
}

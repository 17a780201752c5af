//! [`Client::quorum_check`]: recipes hold the session's quorum check while they hold
//! something that another session could be granted once this one expires.

use tokio::sync::mpsc;

use super::Client;
use crate::driver::Command;

/// One hold of the session's quorum check ([`Client::quorum_check`]): while any hold is
/// alive, the session proves at a fixed interval that its server still reaches the leader,
/// and drops a connection that cannot (see [`ClientBuilder::quorum_check`]). Dropping it
/// releases the hold.
///
/// [`ClientBuilder::quorum_check`]: crate::ClientBuilder::quorum_check
#[derive(Debug)]
#[must_use = "the quorum check is released when the hold is dropped"]
pub struct QuorumCheck {
    commands: mpsc::UnboundedSender<Command>,
}

impl Drop for QuorumCheck {
    fn drop(&mut self) {
        // A client whose driver is gone has no session to check.
        let _ = self.commands.send(Command::QuorumCheck(false));
    }
}

impl Client {
    /// Turns the quorum check on until the returned hold is dropped (holds are counted).
    /// The recipes take one while they hold a lock, a leadership, a semaphore lease or a
    /// cache; use [`ClientBuilder::quorum_check`](crate::ClientBuilder::quorum_check) to run
    /// it for the whole session instead.
    ///
    /// While it runs, a server cut off from the ensemble's leader is left within half the
    /// session timeout (plus a sixteenth): [`SessionState::Disconnected`] is published, as for
    /// any lost connection, before the ensemble can expire the session, and the session
    /// moves to another server if it can.
    ///
    /// [`SessionState::Disconnected`]: crate::SessionState::Disconnected
    pub fn quorum_check(&self) -> QuorumCheck {
        let _ = self.shared.tx.send(Command::QuorumCheck(true));
        QuorumCheck {
            commands: self.shared.tx.clone(),
        }
    }
}

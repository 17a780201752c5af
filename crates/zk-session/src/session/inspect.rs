//! What the session says about itself: read-only views for the driver, the client handle,
//! tools and tests. Nothing here changes the session.

use std::time::Duration;

use super::{Link, Session, SessionState, Timing};
use crate::connect_string::HostAddr;

impl Session {
    /// The current state.
    pub fn state(&self) -> SessionState {
        self.state
    }

    /// The session id, 0 before the first connection.
    pub fn session_id(&self) -> i64 {
        self.session_id
    }

    /// The server of the current connection, once the session is established on it.
    pub fn connected_server(&self) -> Option<&HostAddr> {
        match self.link {
            Link::Up { .. } => self.current_host.and_then(|i| self.hosts.hosts().get(i)),
            _ => None,
        }
    }

    /// The session password the server gave (opaque; 16 zero bytes before the first
    /// connection).
    pub fn password(&self) -> &crate::Secret {
        &self.passwd
    }

    /// The session timeout the server granted, `None` before the first connection.
    pub fn negotiated_timeout(&self) -> Option<Duration> {
        self.negotiated
    }

    /// The timer intervals in force.
    pub fn timing(&self) -> Timing {
        self.timing
    }

    /// The last zxid seen in a reply.
    pub fn last_zxid(&self) -> i64 {
        self.last_zxid
    }

    /// Whether the session wants a connection (it has none and is not over).
    pub fn wants_connection(&self) -> bool {
        matches!(self.link, Link::Down { .. })
            && !self.state.is_terminal()
            && self.closing.is_none()
    }

    /// Whether a connection attempt handed out by [`poll_connect`](Self::poll_connect) is
    /// still wanted: when it is not (it timed out, the session ended), the driver drops it.
    pub fn is_dialing(&self) -> bool {
        matches!(self.link, Link::Dialing { .. })
    }

    /// Whether the connection is open and its ConnectRequest not answered yet.
    pub fn is_handshaking(&self) -> bool {
        matches!(self.link, Link::Handshaking { .. })
    }

    /// The hosts, in visiting order.
    pub fn hosts(&self) -> &[HostAddr] {
        self.hosts.hosts()
    }

    /// The index (in [`hosts`](Self::hosts)) of the host of the current or last connection
    /// attempt.
    pub fn current_host(&self) -> Option<usize> {
        match self.link {
            Link::Dialing { host, .. } => Some(host),
            _ => self.current_host,
        }
    }

    /// Failed connection attempts in a row (the reconnect backoff grows with them).
    pub fn consecutive_failures(&self) -> u32 {
        self.backoff.failures()
    }

    /// Requests sent and not answered yet.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Requests waiting to be sent.
    pub fn queued(&self) -> usize {
        self.outbox.len()
    }

    /// Live watches.
    pub fn watch_count(&self) -> usize {
        self.watches.len()
    }
}

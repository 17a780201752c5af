//! The states a session goes through, as callers see them.

use std::fmt;

/// The state of a session, as reported by [`Client::state`] and the
/// state stream.
///
/// ```text
/// Connecting ──▶ Connected ◀──▶ Disconnected ──▶ Expired
///     │      └─▶ ConnectedReadOnly ◀─┘     └──▶ AuthFailed
///     └──────────────────────────────────────▶ Closed
/// ```
///
/// `Expired`, `AuthFailed` and `Closed` are terminal: the session is over, and every later
/// call fails. A new session is the caller's choice, or the client's when it renews expired
/// sessions ([`ClientBuilder::renew_expired_sessions`]):
/// then `Expired` is followed by `Connecting`, and the client goes on with a new session.
///
/// [`Client::state`]: https://docs.rs/zk-proto/latest/zk_proto/struct.Client.html#method.state
/// [`ClientBuilder::renew_expired_sessions`]: https://docs.rs/zk-proto/latest/zk_proto/struct.ClientBuilder.html#method.renew_expired_sessions
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SessionState {
    /// No session yet: the first connection is being made.
    Connecting,
    /// Connected to a read/write server.
    Connected,
    /// Connected to a read-only server (only when read-only mode is allowed): reads work,
    /// writes fail with [`NotReadOnly`](crate::Error::NotReadOnly). The client looks for a
    /// read/write server in the background.
    ConnectedReadOnly,
    /// The connection was lost; the client is reconnecting and the session may still be
    /// alive on the ensemble.
    Disconnected,
    /// The session expired (told by the server, or no server answered for a whole session
    /// timeout). Terminal, unless the client renews expired sessions.
    Expired,
    /// Authentication failed. Terminal.
    AuthFailed,
    /// The client was closed. Terminal.
    Closed,
}

impl SessionState {
    /// Whether the client is connected (read/write or read-only).
    pub fn is_connected(self) -> bool {
        matches!(self, Self::Connected | Self::ConnectedReadOnly)
    }

    /// Whether the session is over for good (a client that renews expired sessions goes on
    /// with a new one after `Expired`).
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Expired | Self::AuthFailed | Self::Closed)
    }
}

impl fmt::Display for SessionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

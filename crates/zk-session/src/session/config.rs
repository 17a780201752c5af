//! [`SessionConfig`]: everything the session is configured with, and its defaults.

use std::time::Duration;

use super::{DEFAULT_MAX_BACKOFF, DEFAULT_MIN_BACKOFF};
use crate::connect_string::HostAddr;
use crate::path::Chroot;
use crate::sasl::SaslConfig;

/// The default of [`SessionConfig::max_frame_len`]: ZooKeeper's `jute.maxbuffer`, 1,048,575
/// bytes, as `jute::DEFAULT_MAX_FRAME_LEN` (behind jute's feature `frame`, which this crate
/// leaves off: it brings tokio-util) gives it; a test checks that the two agree.
pub(crate) const DEFAULT_MAX_FRAME_LEN: usize = 0xfffff;

/// The settings a session runs with.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The session timeout asked for; the server clamps it to `[2, 20]` ticks by default.
    pub session_timeout: Duration,
    /// Accept read-only servers.
    pub read_only: bool,
    /// The most requests sent and not yet answered; more wait in the session's queue.
    pub max_in_flight: usize,
    /// Under a deep pipeline (64 requests or more in flight), how long after the last frame
    /// replies may gather in the kernel before the reader is woken
    /// ([`Session::read_low_water`](super::Session::read_low_water)); `Duration::ZERO` reads
    /// every reply as it comes. 1 ms by default.
    pub read_gather_limit: Duration,
    /// The largest frame sent or accepted (`jute.maxbuffer`, 1,048,575 bytes by default).
    pub max_frame_len: usize,
    /// The chroot applied to every path.
    pub chroot: Chroot,
    /// The servers, from the connect string (never empty: an empty list is taken as
    /// `127.0.0.1:2181`). One attempt may take `T / hosts` (at most `T/3`).
    pub hosts: Vec<HostAddr>,
    /// Visit the hosts in a random order (shuffled once), not in the given one.
    pub shuffle_hosts: bool,
    /// Seeds the host shuffle and the backoff jitter (deterministic tests); `None` seeds from
    /// the system.
    pub rng_seed: Option<u64>,
    /// The reconnect backoff's base and cap (see [`Backoff`](super::Backoff)).
    pub backoff: (Duration, Duration),
    /// Before the first session: give up ([`Error::NoServerReachable`](crate::Error::NoServerReachable)) once one attempt on
    /// every host failed.
    pub fail_fast: bool,
    /// Before the first session: give up ([`Error::NoServerReachable`](crate::Error::NoServerReachable)) when no session was
    /// established this long after the first attempt began; `None` tries without bound.
    pub connect_timeout: Option<Duration>,
    /// How long `close` waits for the server's reply.
    pub close_timeout: Duration,
    /// The cap on the encoded paths of one SetWatches request.
    pub set_watches_max_bytes: usize,
    /// SASL authentication, run on every new connection before any other request.
    pub sasl: Option<SaslConfig>,
    /// An existing session to attach to (its id and password) instead of a new one.
    pub resume: Option<(i64, crate::Secret)>,
    /// After the session expires, start a new one: [`Session::poll_event`](super::Session::poll_event)
    /// does, once every event of the expiry was handed out.
    pub renew_expired: bool,
    /// Run the quorum check for the whole session, not only while it is held
    /// ([`Session::hold_quorum_check`](super::Session::hold_quorum_check)).
    pub quorum_check: bool,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            session_timeout: Duration::from_secs(30),
            read_only: false,
            max_in_flight: 1024,
            read_gather_limit: Duration::from_millis(1),
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
            chroot: Chroot::none(),
            hosts: Vec::new(),
            shuffle_hosts: true,
            rng_seed: None,
            backoff: (DEFAULT_MIN_BACKOFF, DEFAULT_MAX_BACKOFF),
            fail_fast: false,
            connect_timeout: Some(Duration::from_secs(30)),
            close_timeout: Duration::from_secs(2),
            set_watches_max_bytes: 128 * 1024,
            sasl: None,
            resume: None,
            renew_expired: false,
            quorum_check: false,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_default_frame_limit_is_the_codec_s() {
        assert_eq!(super::DEFAULT_MAX_FRAME_LEN, jute::DEFAULT_MAX_FRAME_LEN);
    }
}

//! [`ClientBuilder`]: the session's settings, and `connect`, which starts the connection task.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

use super::{Client, Shared};
use crate::connect_string::ConnectString;
use crate::driver::{Dialer, Driver, Published, tcp_dialer};
use crate::error::{Error, Result};
use crate::sasl::SaslConfig;
use crate::session::{Session, SessionConfig, SessionState};

/// Builds a [`Client`].
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    session_timeout: Duration,
    read_only: bool,
    max_in_flight: usize,
    max_frame_len: usize,
    request_timeout: Option<Duration>,
    shuffle_hosts: bool,
    fail_fast: bool,
    /// `None`: the session timeout.
    connect_timeout: Option<Option<Duration>>,
    backoff: (Duration, Duration),
    close_timeout: Duration,
    watch_capacity: usize,
    sasl: Option<SaslConfig>,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        // The session's own defaults, stated once (`SessionConfig::default`).
        let session = SessionConfig::default();
        Self {
            session_timeout: session.session_timeout,
            read_only: session.read_only,
            max_in_flight: session.max_in_flight,
            max_frame_len: session.max_frame_len,
            request_timeout: None,
            shuffle_hosts: session.shuffle_hosts,
            fail_fast: session.fail_fast,
            connect_timeout: None,
            backoff: session.backoff,
            close_timeout: session.close_timeout,
            watch_capacity: 1024,
            sasl: None,
        }
    }
}

impl ClientBuilder {
    /// The defaults: 30 s session timeout, 1,024 requests in flight, the 3.8 frame limit, no
    /// request timeout, shuffled hosts, no fail-fast, `connect` gives up after the session
    /// timeout, reconnect backoff from 20 ms to 1 s.
    pub fn new() -> Self {
        Self::default()
    }

    /// The session timeout to ask for (the server clamps it).
    #[must_use]
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// Accept read-only servers ([`SessionState::ConnectedReadOnly`]).
    #[must_use]
    pub fn read_only(mut self, allowed: bool) -> Self {
        self.read_only = allowed;
        self
    }

    /// The most requests in flight on the connection; the rest wait in order.
    #[must_use]
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.max_in_flight = max.max(1);
        self
    }

    /// The largest frame sent or accepted (must match the server's `jute.maxbuffer`).
    #[must_use]
    pub fn max_frame_len(mut self, max: usize) -> Self {
        self.max_frame_len = max;
        self
    }

    /// The default timeout of every call ([`Error::RequestTimeout`]); `None` waits for the
    /// reply or the end of the session.
    #[must_use]
    pub fn request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Keep the hosts in the connect string's order instead of shuffling them.
    #[must_use]
    pub fn keep_host_order(mut self, keep: bool) -> Self {
        self.shuffle_hosts = !keep;
        self
    }

    /// Make [`connect`](Self::connect) fail with [`Error::NoServerReachable`] when one
    /// attempt on every host failed, instead of retrying until a server answers.
    #[must_use]
    pub fn fail_fast(mut self, fail_fast: bool) -> Self {
        self.fail_fast = fail_fast;
        self
    }

    /// How long [`connect`](Self::connect) tries before it fails with
    /// [`Error::NoServerReachable`] (naming the hosts tried and the last failure) when no
    /// server gives it a session. The default is the session timeout; `None` tries without
    /// bound. Once a session is established, reconnection is bounded by the session's expiry
    /// instead.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// The reconnect backoff: `min` is its base (zero: reconnect at once), `max` its cap (never
    /// more than a sixth of the session timeout). Every reconnection waits: up to `min` after a
    /// connection that stayed up, then twice as long after each further failure in a row (with
    /// jitter), up to `max`. See [`Backoff`](crate::session::Backoff).
    #[must_use]
    pub fn reconnect_backoff(mut self, min: Duration, max: Duration) -> Self {
        self.backoff = (min, max.max(min));
        self
    }

    /// How long [`Client::close`] waits for the server's reply.
    #[must_use]
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// The buffer of each persistent watch stream (at least 1).
    #[must_use]
    pub fn watch_capacity(mut self, capacity: usize) -> Self {
        self.watch_capacity = capacity.max(1);
        self
    }

    /// Authenticates with SASL on every connection, before any other request (see
    /// [`sasl`](crate::sasl)). `connect` returns once the first exchange succeeded; a refused
    /// authentication ends the session with [`Error::AuthFailed`] (not retried: the same
    /// credentials would be refused again).
    #[must_use]
    pub fn sasl(mut self, config: SaslConfig) -> Self {
        self.sasl = Some(config);
        self
    }

    /// SASL DIGEST-MD5 with `user` and `password` ([`SaslConfig::digest_md5`]): the session
    /// is authenticated as `sasl:<user>`.
    #[must_use]
    pub fn sasl_digest(self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.sasl(SaslConfig::digest_md5(user, password))
    }

    /// SASL with Kerberos (GSSAPI) ([`SaslConfig::kerberos`], cargo feature `kerberos`): a
    /// ticket for `<service>@<host>` from the credentials the system's GSSAPI library finds.
    #[cfg(feature = "kerberos")]
    #[must_use]
    pub fn sasl_kerberos(self, options: crate::sasl::KerberosOptions) -> Self {
        self.sasl(SaslConfig::kerberos(options))
    }

    /// Connects: spawns the connection task on the current tokio runtime and waits until a
    /// session is established.
    ///
    /// # Errors
    ///
    /// A malformed connect string; [`Error::NoServerReachable`] with fail-fast or when the
    /// connect timeout passed; the session's end (for example [`Error::AuthFailed`]) if it
    /// came first.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub async fn connect(self, connect_string: &str) -> Result<Client> {
        self.connect_with(connect_string, tcp_dialer()).await
    }

    /// [`connect`](Self::connect) over the streams `dialer` opens (tests: in-memory streams).
    pub(crate) async fn connect_with(self, connect_string: &str, dialer: Dialer) -> Result<Client> {
        let parsed: ConnectString = connect_string.parse()?;
        let (hosts, chroot) = parsed.into_parts();
        let session = Session::new(SessionConfig {
            session_timeout: self.session_timeout,
            read_only: self.read_only,
            max_in_flight: self.max_in_flight,
            max_frame_len: self.max_frame_len,
            chroot,
            hosts,
            shuffle_hosts: self.shuffle_hosts,
            rng_seed: None,
            backoff: self.backoff,
            fail_fast: self.fail_fast,
            connect_timeout: self.connect_timeout.unwrap_or(Some(self.session_timeout)),
            close_timeout: self.close_timeout,
            sasl: self.sasl,
            ..SessionConfig::default()
        });
        let (tx, commands) = mpsc::unbounded_channel();
        let (published_tx, published) = watch::channel(Published {
            state: SessionState::Connecting,
            session_id: 0,
            negotiated_timeout: None,
        });
        let (states_tx, states) = watch::channel(SessionState::Connecting);
        let (first_tx, first_rx) = oneshot::channel();
        let driver = Driver {
            session,
            dialer,
            commands,
            published: published_tx,
            states: states_tx,
            max_frame_len: self.max_frame_len,
            first_connect: Some(first_tx),
            replies: Default::default(),
            watches: Default::default(),
        };
        tokio::spawn(driver.run());
        let client = Client {
            shared: Arc::new(Shared {
                tx,
                published,
                states,
                watch_capacity: self.watch_capacity,
            }),
            request_timeout: self.request_timeout,
        };
        first_rx.await.unwrap_or(Err(Error::Closed))?;
        Ok(client)
    }
}

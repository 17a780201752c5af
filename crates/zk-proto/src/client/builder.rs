//! [`ClientBuilder`]: the session's settings, and `connect`, which starts the connection task.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

use super::{Client, Shared};
use crate::connect_string::{ConnectString, Security};
use crate::driver::{Driver, Published};
use crate::ensemble_config::TlsPorts;
use crate::request_timing::{Recorder, SendStamps};
use crate::sasl::SaslConfig;
use crate::session::{Session, SessionConfig, SessionState};
#[cfg(feature = "tls")]
use crate::tls::TlsOptions;
use crate::transport::{Dialer, Transport};
use crate::{Error, Result, TlsConfigError};

/// Builds a [`Client`].
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    session_timeout: Duration,
    read_only: bool,
    max_in_flight: usize,
    read_gather_limit: Duration,
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
    #[cfg(feature = "tls")]
    tls: Option<TlsOptions>,
    /// `None`: on.
    follow_ensemble: Option<bool>,
    ensemble_tls_ports: TlsPorts,
    resume: Option<(i64, crate::Secret)>,
    rng_seed: Option<u64>,
    renew_expired: bool,
    quorum_check: bool,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        // The session's own defaults, stated once (`SessionConfig::default`).
        let session = SessionConfig::default();
        Self {
            session_timeout: session.session_timeout,
            read_only: session.read_only,
            max_in_flight: session.max_in_flight,
            read_gather_limit: session.read_gather_limit,
            max_frame_len: session.max_frame_len,
            request_timeout: None,
            shuffle_hosts: session.shuffle_hosts,
            fail_fast: session.fail_fast,
            connect_timeout: None,
            backoff: session.backoff,
            close_timeout: session.close_timeout,
            watch_capacity: 1024,
            sasl: None,
            #[cfg(feature = "tls")]
            tls: None,
            follow_ensemble: None,
            ensemble_tls_ports: TlsPorts::Infer,
            resume: None,
            rng_seed: None,
            renew_expired: session.renew_expired,
            quorum_check: session.quorum_check,
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

    /// Under a deep pipeline (64 requests or more in flight on a plaintext connection), how
    /// long after the last frame replies may gather in the kernel before the client reads
    /// them: one wake-up for some 40 small replies instead of one for every few, 20-40 % less
    /// of the client's CPU per pipelined call. A reply waits at most this long for the ones
    /// behind it. `Duration::ZERO` reads every reply as it comes. 1 ms by default; see
    /// docs/client.md, "Backpressure and memory".
    #[must_use]
    pub fn read_gather_limit(mut self, limit: Duration) -> Self {
        self.read_gather_limit = limit;
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

    /// Follows the ensemble's configuration (on by default): the client watches
    /// `/zookeeper/config` and applies every new list of servers with
    /// [`Client::update_hosts`], keeping the chroot. Nothing happens on servers without
    /// dynamic reconfiguration (before 3.5, or with no member lines in the configuration).
    /// Over TLS, the configuration lists only plaintext client ports: the TLS ports come
    /// from [`ensemble_tls_ports`](Self::ensemble_tls_ports), and the new servers are
    /// verified with the same TLS settings as the first. Turn it off when the servers'
    /// configured client addresses are not the ones this client must dial (a proxy, a NAT).
    #[must_use]
    pub fn follow_ensemble(mut self, follow: bool) -> Self {
        self.follow_ensemble = Some(follow);
        self
    }

    /// Over TLS, how the client finds the members' TLS ports when it follows the ensemble's
    /// configuration (see [`TlsPorts`]; by default inferred from the connect string, and not
    /// followed when that is ambiguous).
    #[must_use]
    pub fn ensemble_tls_ports(mut self, ports: TlsPorts) -> Self {
        self.ensemble_tls_ports = ports;
        self
    }

    /// Seeds the session's random choices (the host shuffle, the reconnect jitter, the
    /// rebalancing draws of [`Client::update_hosts`]) instead of seeding them from the
    /// system: for reproducible tests and simulations. Sessions with the same seed make the
    /// same choices, so do not use it to spread real clients.
    #[must_use]
    pub fn rng_seed(mut self, seed: u64) -> Self {
        self.rng_seed = Some(seed);
        self
    }

    /// Attaches to an existing session instead of starting a new one: its id and password
    /// ([`Client::session_id`], [`Client::session_password`]), handed over by the process
    /// that owns it. The server then serves the session to this client; the previous owner's
    /// connection is closed by the server. A wrong password or a session that expired ends
    /// `connect` with [`Error::SessionExpired`].
    #[must_use]
    pub fn resume(mut self, session_id: i64, password: impl Into<crate::Secret>) -> Self {
        self.resume = Some((session_id, password.into()));
        self
    }

    /// Starts a new session on the same client when the session expires (off by default: an
    /// expired session ends the client, as in the Java client).
    ///
    /// The expiry itself is reported as without renewal, and first: every call in flight or
    /// queued fails with [`Error::SessionExpired`], every watch ends with it, and the state
    /// goes to [`SessionState::Expired`]. Then the state goes to
    /// [`Connecting`](SessionState::Connecting) and the client looks for a server as after a
    /// connection loss, without giving up, until a new session is established
    /// ([`Connected`](SessionState::Connected), a new [`Client::session_id`]). Calls made from
    /// then on go to the new session. Credentials added with [`Client::add_auth`] and the
    /// SASL settings carry over; the ephemeral nodes and watches of the old session do not.
    ///
    /// Recipes that live within one session end with it even so (`zk-recipes`: a held lock
    /// is lost, an election candidate ends); those made to outlive sessions (a persistent
    /// node, a tree cache, a group member) carry on in the new session. A
    /// state watcher may miss the short `Expired` state: compare
    /// [`Client::session_id`] to tell a new session.
    ///
    /// A session that expires on its first connection ([`resume`](Self::resume) of an
    /// expired session) is not renewed: `connect` fails. Nor is one after
    /// [`Client::close`]: a close ends the client for good, also when it comes between an
    /// expiry and the renewal.
    #[must_use]
    pub fn renew_expired_sessions(mut self, renew: bool) -> Self {
        self.renew_expired = renew;
        self
    }

    /// Runs the quorum check for the whole session (off by default; the recipes turn it on
    /// while they hold a lock, a leadership, a lease or a cache, through
    /// [`Client::quorum_check`]).
    ///
    /// A follower cut off from its leader goes on answering pings for `syncLimit x
    /// tickTime` (10 s with the defaults), while the leader expires the session after its
    /// timeout: without the check, the client stays `Connected` to a server that can no
    /// longer vouch for it. With it, the session sends a `sync` (which only the leader can
    /// complete) every `T/16` of the negotiated session timeout `T`, and drops a connection
    /// whose `sync` is not answered within `T/2`, then reconnects elsewhere. The client so
    /// learns of the cut before the ensemble can expire the session (with `tickTime <= T/2`,
    /// the server's default). Cost: `16/T` requests per second on the leader (4 per second
    /// with a 4 s session). docs/client.md, "The quorum check", derives the bound.
    #[must_use]
    pub fn quorum_check(mut self, on: bool) -> Self {
        self.quorum_check = on;
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

    /// Connects to every host over TLS with these settings (see [`TlsOptions`]): the
    /// session's connections, its reconnections and the read-only search's probes. A
    /// `zk+tls://` connect string asks for TLS without code; its options (`ca`, `cert`,
    /// `key`, `server_name`) and these cannot both be given.
    ///
    /// TLS failures (an untrusted certificate, a name mismatch, a client certificate
    /// required or refused, a plaintext server) are permanent: when every host fails so
    /// before the first session, [`connect`](Self::connect) gives up at once with
    /// [`Error::NoServerReachable`] ([`Error::tls_failure`] names the failure).
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls(mut self, options: TlsOptions) -> Self {
        self.tls = Some(options);
        self
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
    /// A malformed connect string; [`Error::TlsConfig`] for TLS settings that cannot be used
    /// (nothing is dialed); [`Error::NoServerReachable`] with fail-fast, when the connect
    /// timeout passed, or when every host failed permanently (a TLS failure); the session's
    /// end (for example [`Error::AuthFailed`]) if it came first.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub async fn connect(self, connect_string: &str) -> Result<Client> {
        self.connect_over(connect_string, None).await
    }

    /// [`connect`](Self::connect) over the streams `dialer` opens (tests: in-memory streams).
    #[cfg(test)]
    pub(crate) async fn connect_with(self, connect_string: &str, dialer: Dialer) -> Result<Client> {
        self.connect_over(connect_string, Some(dialer)).await
    }

    /// How to reach the servers: TLS when the connect string or the builder says so.
    fn transport(&self, parsed: &ConnectString) -> Result<Transport, TlsConfigError> {
        #[cfg(feature = "tls")]
        {
            let options = match (parsed.security(), &self.tls) {
                (Security::Plain, Some(_)) => {
                    return Err(TlsConfigError::Conflict(
                        "the connect string says zk:// (plaintext) and the builder has TLS options"
                            .into(),
                    ));
                }
                (Security::Plain | Security::Unspecified, None) => return Ok(Transport::Tcp),
                (Security::Unspecified, Some(options)) => options.clone(),
                (Security::Tls(params), None) => TlsOptions::from_params(params),
                (Security::Tls(params), Some(options)) if params.is_empty() => options.clone(),
                (Security::Tls(_), Some(_)) => {
                    return Err(TlsConfigError::Conflict(
                        "TLS options both in the connect string and the builder; give them in one place"
                            .into(),
                    ));
                }
                (other, _) => {
                    return Err(TlsConfigError::Conflict(format!(
                        "the connect string asks for {other:?}, which this client does not know"
                    )));
                }
            };
            let connector = options.connector()?;
            connector.check_hosts(parsed.hosts())?;
            Ok(Transport::Tls(std::sync::Arc::new(connector)))
        }
        #[cfg(not(feature = "tls"))]
        match parsed.security() {
            Security::Plain | Security::Unspecified => Ok(Transport::Tcp),
            // `Security::Tls`, or another security this build cannot provide.
            _ => Err(TlsConfigError::Unavailable),
        }
    }

    async fn connect_over(self, connect_string: &str, dialer: Option<Dialer>) -> Result<Client> {
        let parsed: ConnectString = connect_string.parse()?;
        let transport = self.transport(&parsed)?;
        let follow_ensemble = self.follow_ensemble.unwrap_or(true);
        let follow_tls = transport.is_tls().then(|| super::follow::TlsFollow {
            ports: self.ensemble_tls_ports,
            connect: parsed.hosts().to_vec(),
        });
        let dialer = dialer.unwrap_or_else(|| transport.dialer());
        let (hosts, chroot) = parsed.into_parts();
        let session = Session::new(SessionConfig {
            session_timeout: self.session_timeout,
            read_only: self.read_only,
            max_in_flight: self.max_in_flight,
            read_gather_limit: self.read_gather_limit,
            max_frame_len: self.max_frame_len,
            chroot,
            hosts,
            shuffle_hosts: self.shuffle_hosts,
            rng_seed: self.rng_seed,
            backoff: self.backoff,
            fail_fast: self.fail_fast,
            connect_timeout: self.connect_timeout.unwrap_or(Some(self.session_timeout)),
            close_timeout: self.close_timeout,
            sasl: self.sasl,
            resume: self.resume,
            renew_expired: self.renew_expired,
            quorum_check: self.quorum_check,
            ..SessionConfig::default()
        });
        let (tx, commands) = mpsc::unbounded_channel();
        let (published_tx, published) = watch::channel(Published {
            state: SessionState::Connecting,
            session_id: 0,
            password: crate::Secret::default(),
            negotiated_timeout: None,
            auth_failure: None,
            gave_up_with: None,
            hosts: Arc::from(Vec::new()),
            server: None,
        });
        let (states_tx, states) = watch::channel(SessionState::Connecting);
        let (first_tx, first_rx) = oneshot::channel();
        let timing = Recorder::new();
        let driver = Driver {
            session,
            dialer,
            probes: transport,
            commands,
            published: published_tx,
            states: states_tx,
            max_frame_len: self.max_frame_len,
            first_connect: Some(first_tx),
            replies: Default::default(),
            watches: Default::default(),
            stamps: SendStamps::new(timing.clone()),
        };
        tokio::spawn(driver.run());
        let client = Client {
            shared: Arc::new(Shared {
                tx,
                published,
                states,
                watch_capacity: self.watch_capacity,
                renews_expired: self.renew_expired,
                max_frame_len: self.max_frame_len,
                timing,
            }),
            request_timeout: self.request_timeout,
        };
        first_rx.await.unwrap_or(Err(Error::Closed))?;
        if follow_ensemble {
            super::follow::spawn(&client, follow_tls);
        }
        Ok(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn tls_config_error(builder: ClientBuilder, connect_string: &str) -> TlsConfigError {
        match builder.connect(connect_string).await {
            Err(Error::TlsConfig(error)) => error,
            other => panic!("{connect_string}: expected a TLS settings error, got {other:?}"),
        }
    }

    #[cfg(feature = "tls")]
    #[tokio::test]
    async fn tls_settings_come_from_one_place() {
        let tls = || ClientBuilder::new().tls(TlsOptions::new().ca_pem("x"));
        assert!(matches!(
            tls_config_error(tls(), "zk://127.0.0.1:1").await,
            TlsConfigError::Conflict(_)
        ));
        assert!(matches!(
            tls_config_error(tls(), "zk+tls://127.0.0.1:1?ca=/ca.pem").await,
            TlsConfigError::Conflict(_)
        ));
        // Without options, the string takes the builder's (which fail here: no PEM in "x").
        assert!(matches!(
            tls_config_error(tls(), "zk+tls://127.0.0.1:1").await,
            TlsConfigError::Pem { .. }
        ));
    }

    #[cfg(not(feature = "tls"))]
    #[tokio::test]
    async fn tls_without_the_feature_is_a_typed_error() {
        assert_eq!(
            tls_config_error(ClientBuilder::new(), "zk+tls://127.0.0.1:1").await,
            TlsConfigError::Unavailable
        );
    }
}

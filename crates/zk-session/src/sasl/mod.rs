//! SASL authentication (op code 102): the mechanism a session runs on every new connection,
//! before any other request, as the Java client does.
//!
//! The exchange: the client sends a first token (empty for mechanisms without an initial
//! response), the server answers each token with one of its own, and the mechanism decides
//! what to send next until it is done. The server adds the authenticated identity to the
//! connection (`sasl:<user>`), so ACLs with `sasl` ids apply and `who_am_i` reports it; on a
//! failure the server answers `AuthFailed` and closes the connection.
//!
//! [`SaslConfig::digest_md5`] is built in ([`DigestMd5`]); with the cargo feature `kerberos`,
//! so is `SaslConfig::kerberos` (`Gssapi`, Kerberos V5 through the system's GSSAPI library;
//! see the Kerberos section of docs/security.md). Other mechanisms plug in with [`SaslConfig::custom`].

mod digest_md5;
#[cfg(feature = "kerberos")]
mod gssapi;

use std::fmt;
use std::sync::Arc;

pub use digest_md5::DigestMd5;
#[cfg(feature = "kerberos")]
pub use gssapi::{DEFAULT_SERVICE, Gssapi, KerberosOptions};

/// Why a SASL exchange failed on the client's side.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SaslError {
    /// The server's token does not follow the mechanism's grammar.
    #[error("malformed SASL challenge: {0}")]
    MalformedChallenge(String),
    /// The server asked for something this client does not do (a quality of protection
    /// other than `auth`, another algorithm, a charset).
    #[error("unsupported SASL option: {0}")]
    Unsupported(String),
    /// The server's proof of knowing the password was wrong: it is not the server it claims
    /// to be.
    #[error("the server failed mutual authentication")]
    ServerNotAuthenticated,
    /// The server sent a token after the mechanism was done, or the mechanism failed on its
    /// own (for example, no credentials).
    #[error("SASL mechanism failed: {0}")]
    Mechanism(String),
    /// The system's GSSAPI library (Kerberos, feature `kerberos`) failed: what was being
    /// done, the library's major and minor status codes, and their messages (e.g. "No
    /// Kerberos credentials available", "Server not found in Kerberos database").
    #[error("GSSAPI failed {operation}: {message} (major {major:#x}, minor {minor})")]
    Gssapi {
        /// What the mechanism was doing, e.g. "acquiring the client's Kerberos credentials".
        operation: String,
        /// The GSSAPI major status code.
        major: u32,
        /// The mechanism's (Kerberos') minor status code.
        minor: u32,
        /// The library's messages for both codes.
        message: String,
    },
}

/// What a mechanism does after a server token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaslStep {
    /// Send this token and wait for the server's next one.
    Send(Vec<u8>),
    /// Authenticated: nothing more to send.
    Done,
}

/// One run of a SASL mechanism, on one connection.
pub trait SaslMechanism: Send + fmt::Debug {
    /// The mechanism's name, e.g. `DIGEST-MD5`.
    fn name(&self) -> &str;

    /// The first token to send (empty for mechanisms without an initial response).
    ///
    /// # Errors
    ///
    /// The mechanism cannot start (for example, no credentials).
    fn initial_token(&mut self) -> Result<Vec<u8>, SaslError>;

    /// The server answered with `token`: what to do next.
    ///
    /// # Errors
    ///
    /// The token is malformed, asks for something unsupported, or fails to authenticate the
    /// server.
    fn step(&mut self, token: &[u8]) -> Result<SaslStep, SaslError>;
}

type Factory = dyn Fn(&str) -> Result<Box<dyn SaslMechanism>, SaslError> + Send + Sync;

/// How a session authenticates with SASL: a fresh mechanism for every connection, made for
/// the host of that connection.
#[derive(Clone)]
pub struct SaslConfig {
    name: String,
    factory: Arc<Factory>,
    /// Its start and steps may block (network I/O inside the mechanism): the session hands
    /// them to the driver, which runs them on a blocking thread.
    blocking: bool,
}

impl SaslConfig {
    /// DIGEST-MD5 (RFC 2831) with a user and password, as the server's `DigestLoginModule`
    /// knows them (`user_<name>="<password>"` in its JAAS `Server` section). The session is
    /// then authenticated as `sasl:<user>`.
    pub fn digest_md5(user: impl Into<String>, password: impl Into<String>) -> Self {
        let (user, password) = (user.into(), zeroize::Zeroizing::new(password.into()));
        // DIGEST-MD5's digest URI names no host (`zookeeper/zk-sasl-md5`, as Java's client).
        SaslConfig::custom("DIGEST-MD5", move |_host| {
            Ok(Box::new(DigestMd5::new(
                user.clone(),
                password.to_string(),
            )?))
        })
    }

    /// Kerberos V5 (the SASL mechanism `GSSAPI`, RFC 4752) through the system's GSSAPI
    /// library, with the credentials the library finds (the credential cache, or the client
    /// keytab) for `options.principal`, and a ticket for `<service>@<host>` (`zookeeper@` the
    /// host of each connection by default). The server's `SASLAuthenticationProvider` then
    /// authenticates the session as `sasl:<principal>` (ZooKeeper's server may shorten it:
    /// the Kerberos section of docs/security.md).
    #[cfg(feature = "kerberos")]
    pub fn kerberos(options: KerberosOptions) -> Self {
        // Acquiring credentials and the first context token may wait for a KDC.
        SaslConfig::custom("GSSAPI", move |host| {
            Ok(Box::new(Gssapi::new(&options, host)?))
        })
        .blocking()
    }

    /// Another mechanism: `start` is called on every new connection, before the first token,
    /// with the host of the connect-string entry being connected to (the name or address as
    /// written there, without the port: what a mechanism that names the server, such as
    /// Kerberos, needs).
    pub fn custom(
        name: impl Into<String>,
        start: impl Fn(&str) -> Result<Box<dyn SaslMechanism>, SaslError> + Send + Sync + 'static,
    ) -> Self {
        SaslConfig {
            name: name.into(),
            factory: Arc::new(start),
            blocking: false,
        }
    }

    /// Declares that the mechanism's start and steps may block (they wait for the network,
    /// as Kerberos waits for a KDC): the client then runs them on a blocking thread, so that
    /// the runtime's workers, the session's timers and other clients go on meanwhile, and
    /// gives up an attempt whose step does not finish within the attempt's budget. Kerberos
    /// is declared so.
    #[must_use]
    pub fn blocking(mut self) -> Self {
        self.blocking = true;
        self
    }

    /// Whether its start and steps run on a blocking thread ([`blocking`](Self::blocking)).
    pub fn is_blocking(&self) -> bool {
        self.blocking
    }

    /// The mechanism's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A fresh run of the mechanism, for a new connection to `host` (as written in the
    /// connect string).
    ///
    /// # Errors
    ///
    /// The mechanism cannot start.
    pub fn start(&self, host: &str) -> Result<Box<dyn SaslMechanism>, SaslError> {
        (self.factory)(host)
    }
}

impl fmt::Debug for SaslConfig {
    // The factory holds credentials: only the mechanism is shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SaslConfig")
            .field("mechanism", &self.name)
            .field("blocking", &self.blocking)
            .finish_non_exhaustive()
    }
}

//! The client's error type: one named variant per server code, plus the client's own.

use std::fmt;

use jute::{DecodeError, ErrorCode};

use crate::connect_string::ConnectStringError;
use crate::path::InvalidPath;

/// Declares the server-code variants of [`Error`] and their mapping to [`ErrorCode`] once.
macro_rules! server_errors {
    ( $( $(#[$meta:meta])* $variant:ident = $code:ident, )* ) => {
        /// Every error of the client.
        ///
        /// The first group of variants are the server's result codes, one per named
        /// [`ErrorCode`] (an unknown code is kept in [`Error::Unknown`]). The rest are
        /// raised by the client itself.
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum Error {
            $(
                $(#[$meta])*
                #[doc = concat!("\n\nServer code [`ErrorCode::", stringify!($code), "`].")]
                $variant,
            )*
            /// Authentication failed ([`ErrorCode::AUTH_FAILED`] from the server, or the
            /// client's own SASL mechanism failing), with why: a typed reason and the
            /// underlying message. The session is over. Terminal.
            AuthFailed(AuthFailure),
            /// A result code this client does not know, kept as it came.
            Unknown(ErrorCode),
            /// The path breaks ZooKeeper's path rules; nothing was sent.
            InvalidPath(InvalidPath),
            /// The connect string could not be parsed.
            InvalidConnectString(ConnectStringError),
            /// An argument is out of range (for example a TTL, or a multi mixing reads and
            /// writes); nothing was sent.
            InvalidArgument(String),
            /// The request would be larger than the frame limit the server accepts; nothing
            /// was sent.
            PacketTooLarge {
                /// Encoded length of the request, header included.
                len: usize,
                /// The configured limit (`jute.maxbuffer`, 1,048,575 bytes by default).
                max: usize,
            },
            /// The reply to this request was larger than the client's frame limit
            /// ([`ClientBuilder::max_frame_len`]). The
            /// server executed the request; its reply was refused from its length prefix,
            /// before any buffer was reserved, and the connection was dropped and is being
            /// re-established (the session survives). Not retryable: a retry gets the same
            /// reply. Raise the limit (up to the server's `jute.maxbuffer`) or ask for less,
            /// for example fewer children under one node.
            ///
            /// [`ClientBuilder::max_frame_len`]: https://docs.rs/zk-proto/latest/zk_proto/struct.ClientBuilder.html#method.max_frame_len
            ReplyTooLarge {
                /// The reply's length, from its length prefix.
                len: usize,
                /// The client's frame limit.
                max: usize,
            },
            /// The server broke the protocol. When a call gets it, that call's reply could
            /// not be decoded (its frame was intact: the connection and the other calls are
            /// not affected); a retry would get the same reply, so it is not retryable.
            Protocol(ProtocolError),
            /// The client was closed, by [`close`] or because every handle was dropped.
            ///
            /// [`close`]: https://docs.rs/zk-proto/latest/zk_proto/struct.Client.html#method.close
            Closed,
            /// A persistent watch's consumer fell more than its capacity behind; the stream
            /// ended and the watch was dropped (events after the last one received are lost).
            WatchOverflow {
                /// The stream's capacity.
                capacity: usize,
            },
            /// No session could be established: with fail-fast, one attempt on every host
            /// failed; otherwise the connect timeout
            /// ([`ClientBuilder::connect_timeout`])
            /// passed. Without waiting for either when every host failed
            /// [permanently](ConnectFailure::is_permanent) in a row, as a TLS failure does
            /// ([`Error::tls_failure`] names it).
            ///
            /// Also how an established session ends when it could not reconnect for a whole
            /// session timeout because every host refused it permanently (a server
            /// certificate the client no longer trusts, say): the counts are those since the
            /// last connection.
            ///
            /// [`ClientBuilder::connect_timeout`]: https://docs.rs/zk-proto/latest/zk_proto/struct.ClientBuilder.html#method.connect_timeout
            NoServerReachable {
                /// How many connection attempts failed.
                attempts: u32,
                /// The hosts tried (`host:port`), in the order of the host list.
                hosts: Vec<String>,
                /// How the last attempt failed.
                last_error: ConnectFailure,
            },
            /// The TLS settings (of the builder or the connect string) cannot be used: a
            /// file that cannot be read, a PEM without a certificate or key, an invalid
            /// server name, or TLS asked for by a build without the `tls` feature. Nothing
            /// was dialed.
            TlsConfig(TlsConfigError),
        }

        impl Error {
            /// The error for a server result code; `None` for OK.
            pub fn from_code(code: ErrorCode) -> Option<Error> {
                match code {
                    ErrorCode::OK => None,
                    ErrorCode::AUTH_FAILED => Some(Error::AuthFailed(AuthFailure::refused_by_server())),
                    $( ErrorCode::$code => Some(Error::$variant), )*
                    other => Some(Error::Unknown(other)),
                }
            }

            /// The server result code this error stands for, `None` for the client's own
            /// errors.
            pub fn code(&self) -> Option<ErrorCode> {
                match self {
                    $( Error::$variant => Some(ErrorCode::$code), )*
                    Error::AuthFailed(_) => Some(ErrorCode::AUTH_FAILED),
                    Error::Unknown(code) => Some(*code),
                    _ => None,
                }
            }
        }
    };
}

server_errors! {
    /// Range marker of system errors; servers do not send it.
    SystemError = SYSTEM_ERROR,
    /// In a failed multi: an operation after the one that failed.
    RuntimeInconsistency = RUNTIME_INCONSISTENCY,
    /// The server found its data inconsistent.
    DataInconsistency = DATA_INCONSISTENCY,
    /// The connection carrying the request was lost before its reply arrived. The request
    /// may or may not have been applied.
    ConnectionLoss = CONNECTION_LOSS,
    /// The server could not decode the request (3.8 also answers this to watcher types it
    /// does not know).
    MarshallingError = MARSHALLING_ERROR,
    /// The server does not implement the operation (or TTL nodes are disabled on it).
    Unimplemented = UNIMPLEMENTED,
    /// The server timed the operation out.
    OperationTimeout = OPERATION_TIMEOUT,
    /// The server rejected an argument (a path on create, a TTL, a flag).
    BadArguments = BAD_ARGUMENTS,
    /// Server-internal.
    UnknownSession = UNKNOWN_SESSION,
    /// reconfig: no quorum of the new configuration is up to date.
    NewConfigNoQuorum = NEW_CONFIG_NO_QUORUM,
    /// reconfig: another reconfiguration is in progress.
    ReconfigInProgress = RECONFIG_IN_PROGRESS,
    /// Range marker of API errors; servers do not send it.
    ApiError = API_ERROR,
    /// The node does not exist.
    NoNode = NO_NODE,
    /// The session lacks the permission the node's ACL asks for.
    NoAuth = NO_AUTH,
    /// The node's version is not the one expected.
    BadVersion = BAD_VERSION,
    /// Ephemeral nodes cannot have children.
    NoChildrenForEphemerals = NO_CHILDREN_FOR_EPHEMERALS,
    /// The node already exists.
    NodeExists = NODE_EXISTS,
    /// The node has children.
    NotEmpty = NOT_EMPTY,
    /// The session has expired: its ephemeral nodes and watches are gone. Terminal.
    SessionExpired = SESSION_EXPIRED,
    /// Client-side code of the Java client; servers do not send it.
    InvalidCallback = INVALID_CALLBACK,
    /// The ACL is invalid (empty, or `auth` scheme without an authenticated identity).
    InvalidAcl = INVALID_ACL,
    /// The session moved to another server.
    SessionMoved = SESSION_MOVED,
    /// A write was sent to a read-only server.
    NotReadOnly = NOT_READ_ONLY,
    /// An ephemeral node cannot be created by a local session.
    EphemeralOnLocalSession = EPHEMERAL_ON_LOCAL_SESSION,
    /// No such watch to check or remove.
    NoWatcher = NO_WATCHER,
    /// The request did not complete within its timeout (the client's per-call or default
    /// request timeout). The request may or may not have been applied.
    RequestTimeout = REQUEST_TIMEOUT,
    /// Reconfiguration is disabled on the server.
    ReconfigDisabled = RECONFIG_DISABLED,
    /// The server requires SASL authentication and closed the session.
    SessionClosedRequireSaslAuth = SESSION_CLOSED_REQUIRE_SASL_AUTH,
    /// A quota on the path was exceeded.
    QuotaExceeded = QUOTA_EXCEEDED,
    /// The server throttled the operation without executing it; retry with back-off.
    Throttled = THROTTLED_OP,
}

impl Error {
    /// Whether retrying the same call may succeed: the connection was lost, the server or the
    /// client timed out, or the server throttled.
    ///
    /// A retry is safe for reads and for conditional writes (a versioned setData or delete);
    /// an unconditional non-idempotent write (a sequential create) may have been applied
    /// before a [`ConnectionLoss`](Error::ConnectionLoss) or
    /// [`RequestTimeout`](Error::RequestTimeout).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::ConnectionLoss
                | Error::OperationTimeout
                | Error::RequestTimeout
                | Error::Throttled
                | Error::SessionMoved
        )
    }

    /// Whether the session is over: no later call on this session can succeed (expired,
    /// authentication failed, closed, no server reachable). A client that renews expired sessions
    /// ([`ClientBuilder::renew_expired_sessions`]) goes on with a new session after
    /// [`Error::SessionExpired`].
    ///
    /// [`ClientBuilder::renew_expired_sessions`]: https://docs.rs/zk-proto/latest/zk_proto/struct.ClientBuilder.html#method.renew_expired_sessions
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Error::SessionExpired
                | Error::AuthFailed(_)
                | Error::Closed
                | Error::SessionClosedRequireSaslAuth
                | Error::NoServerReachable { .. }
        )
    }

    /// The TLS failure that made [`connect`] give up, or an established session end when it
    /// could not reconnect, if that is why: the `last_error` of [`Error::NoServerReachable`]
    /// when it is a [`ConnectFailure::Tls`].
    ///
    /// [`connect`]: https://docs.rs/zk-proto/latest/zk_proto/struct.ClientBuilder.html#method.connect
    pub fn tls_failure(&self) -> Option<&TlsFailure> {
        match self {
            Error::NoServerReachable {
                last_error: ConnectFailure::Tls(failure),
                ..
            } => Some(failure),
            _ => None,
        }
    }

    /// Whether the outcome of the call is unknown: it may have been applied.
    pub fn is_outcome_unknown(&self) -> bool {
        matches!(self, Error::ConnectionLoss | Error::RequestTimeout)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Error::AuthFailed(failure) = self {
            return write!(f, "authentication failed: {failure}");
        }
        if let Some(code) = self.code() {
            return match code.description() {
                Some(description) => write!(f, "{code} ({}): {description}", code.0),
                None => write!(f, "unknown server error code {}", code.0),
            };
        }
        match self {
            Error::InvalidPath(e) => e.fmt(f),
            Error::InvalidConnectString(e) => write!(f, "invalid connect string: {e}"),
            Error::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Error::PacketTooLarge { len, max } => write!(
                f,
                "request of {len} bytes exceeds the packet limit of {max} bytes (jute.maxbuffer)"
            ),
            Error::ReplyTooLarge { len, max } => write!(
                f,
                "reply of {len} bytes exceeds the client's frame limit of {max} bytes (max_frame_len)"
            ),
            Error::Protocol(e) => write!(f, "protocol violation: {e}"),
            Error::Closed => f.write_str("the client is closed"),
            Error::WatchOverflow { capacity } => write!(
                f,
                "the watch consumer fell {capacity} events behind; the watch was dropped"
            ),
            Error::NoServerReachable {
                attempts,
                hosts,
                last_error,
            } => write!(
                f,
                "no server reachable after {attempts} attempts (tried {}); last: {last_error}",
                hosts.join(", ")
            ),
            Error::TlsConfig(e) => write!(f, "invalid TLS settings: {e}"),
            _ => f.write_str("error"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::InvalidPath(e) => Some(e),
            Error::InvalidConnectString(e) => Some(e),
            Error::Protocol(e) => Some(e),
            Error::TlsConfig(e) => Some(e),
            _ => None,
        }
    }
}

impl From<InvalidPath> for Error {
    fn from(e: InvalidPath) -> Self {
        Error::InvalidPath(e)
    }
}

impl From<ConnectStringError> for Error {
    fn from(e: ConnectStringError) -> Self {
        Error::InvalidConnectString(e)
    }
}

impl From<TlsConfigError> for Error {
    fn from(e: TlsConfigError) -> Self {
        Error::TlsConfig(e)
    }
}

/// How one connection attempt failed (the last one is reported in
/// [`Error::NoServerReachable`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectFailure {
    /// Resolving the host or opening the TCP connection failed (refused, unreachable, unknown
    /// host).
    #[error("{message}")]
    Io {
        /// The kind of I/O error.
        kind: std::io::ErrorKind,
        /// The error's text.
        message: String,
    },
    /// The TCP connection was not open within the attempt's budget.
    #[error("connecting timed out after {} ms", .0.as_millis())]
    ConnectTimedOut(std::time::Duration),
    /// The server accepted the connection but did not answer the session handshake within the
    /// attempt's budget.
    #[error("the handshake timed out after {} ms", .0.as_millis())]
    HandshakeTimedOut(std::time::Duration),
    /// The connection ended before a session was established (for example a server that is
    /// not serving, or a read-only server refusing a client that does not accept read-only
    /// mode).
    #[error("the connection ended before a session was established: {0}")]
    Closed(String),
    /// The server's handshake reply was malformed.
    #[error("malformed handshake reply: {0}")]
    Protocol(ProtocolError),
    /// The TLS handshake failed, or the server ended the connection with a TLS alert before
    /// a session was established. Permanent (see [`ConnectFailure::is_permanent`]).
    #[error("TLS: {0}")]
    Tls(TlsFailure),
    /// The SASL exchange did not finish within the attempt's budget: the mechanism's library
    /// was blocked (Kerberos waiting for a KDC that does not answer, typically).
    #[error("SASL: {0}")]
    Sasl(String),
    /// No attempt was made.
    #[error("no attempt was made")]
    NotAttempted,
}

impl ConnectFailure {
    /// The failure for an I/O error of the driver: a [`TlsFailure`] carried by the error
    /// (the TLS transport wraps its failures that way) becomes [`ConnectFailure::Tls`].
    pub fn from_io(error: &std::io::Error) -> Self {
        if let Some(failure) = error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<TlsFailure>())
        {
            return ConnectFailure::Tls(failure.clone());
        }
        ConnectFailure::Io {
            kind: error.kind(),
            message: error.to_string(),
        }
    }

    /// Whether trying again cannot help: the failure comes from the settings of the client or
    /// of the server (every [`ConnectFailure::Tls`]: an untrusted certificate, a name
    /// mismatch, a client certificate required or refused, a plaintext peer), not from the
    /// server's state or the network. Before the first session, the session gives up at once
    /// when every host failed permanently in a row; refused connections, timeouts and closed
    /// connections are transient and retried.
    pub fn is_permanent(&self) -> bool {
        matches!(self, ConnectFailure::Tls(_))
    }

    /// The failure for the cause of a lost connection.
    pub fn from_error(error: &Error) -> Self {
        match error {
            Error::Protocol(error) => ConnectFailure::Protocol(error.clone()),
            other => ConnectFailure::Closed(other.to_string()),
        }
    }
}

/// How a TLS connection to a server failed. Every kind is permanent for the session's
/// reconnection logic ([`ConnectFailure::is_permanent`]): retrying with the same settings
/// gets the same answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsFailure {
    /// The server's certificate does not lead to a trusted CA, or is otherwise invalid
    /// (expired, not yet valid, a bad signature, a usage it may not be used for). Trust the
    /// CA that issued it (`TlsOptions::ca_pem`).
    #[error("the server's certificate is not trusted: {detail}")]
    UntrustedCertificate {
        /// What the verifier said.
        detail: String,
    },
    /// The server's certificate is valid but not for the name the client verifies (the
    /// host of the connect string entry, or
    /// `TlsOptions::server_name`).
    #[error("the server's certificate is not valid for {server_name:?}: {detail}")]
    NameMismatch {
        /// The name verified.
        server_name: String,
        /// What the verifier said (the names the certificate is valid for).
        detail: String,
    },
    /// The server requires a client certificate (`ssl.clientAuth=need`) and the client
    /// sent none: give one (`TlsOptions::client_cert_pem`).
    #[error("the server requires a client certificate and none was configured (alert: {alert})")]
    ClientCertificateRequired {
        /// The TLS alert the server sent.
        alert: String,
    },
    /// The server refused the client certificate sent (not issued by a CA it trusts,
    /// expired, or not valid for the client's address).
    #[error("the server refused the client certificate (alert: {alert})")]
    ClientCertificateRejected {
        /// The TLS alert the server sent.
        alert: String,
    },
    /// The server answered the TLS handshake with bytes that are not TLS: a plaintext
    /// server (a plaintext ZooKeeper port, or another service) on a TLS connection.
    #[error("the server did not answer with TLS (a plaintext port?): {detail}")]
    NotTls {
        /// What the TLS layer said.
        detail: String,
    },
    /// The server closed (or reset) the connection without sending a single TLS byte: a
    /// plaintext ZooKeeper port reads the TLS handshake as a huge frame length and closes.
    /// A TLS server does the same when it cannot serve the client's hello at all (no
    /// protocol version or cipher suite in common, as a 3.8 server set to TLS 1.3 without
    /// TLS 1.3 cipher suites), and when it refuses connections beyond its connection limit.
    #[error(
        "the server closed the connection without answering the TLS handshake: a plaintext port? (or no TLS version or cipher suite in common; {detail})"
    )]
    ClosedBeforeHandshake {
        /// How the connection ended.
        detail: String,
    },
    /// The TLS handshake failed otherwise: the server sent another alert (for example no
    /// protocol version or cipher suite in common), or broke the TLS protocol.
    #[error("the TLS handshake failed: {detail}")]
    Handshake {
        /// What the TLS layer said.
        detail: String,
    },
}

/// Why TLS settings cannot be used ([`Error::TlsConfig`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsConfigError {
    /// A file named by the settings could not be read.
    #[error("cannot read {what} from {}: {message}", path.display())]
    ReadFile {
        /// What the file should hold.
        what: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        message: String,
    },
    /// A PEM text holds no usable item of the kind expected, or is malformed.
    #[error("{what}: {message}")]
    Pem {
        /// What the PEM should hold (`the CA certificates`, `the client certificate`, ...).
        what: &'static str,
        /// What is wrong.
        message: String,
    },
    /// No trusted CA at all: none given, and the platform's store (when asked for) is empty
    /// or unreadable.
    #[error("no trusted CA certificate: {0}")]
    NoTrustAnchors(String),
    /// The server name to verify is neither a DNS name nor an IP address.
    #[error("invalid TLS server name {0:?}")]
    InvalidServerName(String),
    /// rustls refused the settings (for example a key of a type it does not support, or a
    /// key that does not match the certificate).
    #[error("{0}")]
    Rejected(String),
    /// The client key is encrypted (an `ENCRYPTED PRIVATE KEY` PEM block) and no password was
    /// given for it (`TlsOptions::client_key_password`, `key_password_file=` in a connect
    /// string).
    #[error(
        "{what} is encrypted and no password was given for it (TlsOptions::client_key_password, key_password_file= in a zk+tls:// connect string, rzk's --tls-key-password or RZK_TLS_KEY_PASSWORD)"
    )]
    PasswordRequired {
        /// The file that needs it.
        what: &'static str,
    },
    /// The password given does not open the file: a PKCS#12 bundle's integrity check (MAC)
    /// failed with it, or decrypting with it gave no valid key (or the file is damaged).
    #[error("{what}: wrong password (or a damaged file)")]
    WrongPassword {
        /// The file, or the part of it, that the password did not open.
        what: &'static str,
    },
    /// The file is encrypted or protected with an algorithm (or parameters: an iteration
    /// count, scrypt's memory) that this client does not accept.
    #[error("{what}: unsupported algorithm {algorithm}")]
    UnsupportedAlgorithm {
        /// The file, or the part of it, protected so.
        what: &'static str,
        /// The algorithm's name and object identifier, or the parameters refused.
        algorithm: String,
    },
    /// A PKCS#12 bundle given as the client identity holds no private key (a trust store,
    /// say).
    #[error("{what} holds no private key")]
    NoPrivateKey {
        /// The bundle.
        what: &'static str,
    },
    /// A PKCS#12 bundle given as the client identity holds more than one private key: which
    /// to present cannot be told.
    #[error("{what} holds {count} private keys; one is needed")]
    SeveralPrivateKeys {
        /// The bundle.
        what: &'static str,
        /// How many.
        count: usize,
    },
    /// A PKCS#12 bundle given as the client identity holds no certificate for its private
    /// key.
    #[error("{what} holds no certificate for its private key")]
    NoCertificate {
        /// The bundle.
        what: &'static str,
    },
    /// A PKCS#12 bundle or an encrypted key is not well formed (or not DER).
    #[error("{what}: malformed: {message}")]
    Malformed {
        /// The file.
        what: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The connect string and the builder both give TLS settings, or they disagree on
    /// whether to use TLS.
    #[error("{0}")]
    Conflict(String),
    /// TLS was asked for, and this build of `zk-proto` has no TLS (the `tls` feature is
    /// off).
    #[error("TLS is not available: zk-proto was built without its `tls` feature")]
    Unavailable,
}

/// How a server broke the protocol. The client drops the connection and reconnects; the
/// requests in flight fail with [`Error::ConnectionLoss`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// A reply's xid is not the one of the oldest request in flight (ZooKeeper answers in
    /// order).
    #[error("reply xid {got} out of order: expected {expected}")]
    XidOutOfOrder {
        /// The xid of the oldest request in flight.
        expected: i32,
        /// The xid received.
        got: i32,
    },
    /// A reply arrived while no request was in flight, or with a reserved xid nothing was
    /// sent with.
    #[error("reply for unknown xid {0}")]
    UnknownXid(i32),
    /// A frame could not be decoded.
    #[error("undecodable frame: {0}")]
    Decode(#[from] DecodeError),
    /// The length prefix of a frame was negative or above the limit.
    #[error("bad frame: {0}")]
    Frame(String),
    /// The server resumed a different session than the one asked for.
    #[error("asked to resume session {asked:#x}, the server answered with {got:#x}")]
    SessionIdChanged {
        /// The session id sent.
        asked: i64,
        /// The session id received.
        got: i64,
    },
    /// A reply body of a type the request does not get.
    #[error("unexpected reply to {0}")]
    UnexpectedResponse(&'static str),
}

impl From<ProtocolError> for Error {
    fn from(e: ProtocolError) -> Self {
        Error::Protocol(e)
    }
}

/// The result type of the client.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_code_maps_to_a_variant_and_back() {
        for &code in ErrorCode::ALL {
            match Error::from_code(code) {
                None => assert_eq!(code, ErrorCode::OK),
                Some(error) => {
                    assert!(
                        !matches!(error, Error::Unknown(_)),
                        "{code:?} has no named variant"
                    );
                    assert_eq!(error.code(), Some(code));
                }
            }
        }
    }

    #[test]
    fn unknown_codes_are_kept() {
        let error = Error::from_code(ErrorCode(-999)).expect("not OK");
        assert_eq!(error, Error::Unknown(ErrorCode(-999)));
        assert_eq!(error.code(), Some(ErrorCode(-999)));
        assert_eq!(error.to_string(), "unknown server error code -999");
    }

    #[test]
    fn display_names_the_code() {
        assert_eq!(
            Error::NoNode.to_string(),
            "NoNode (-101): node does not exist"
        );
    }

    #[test]
    fn retryable_and_terminal_are_disjoint() {
        let all = ErrorCode::ALL.iter().filter_map(|&c| Error::from_code(c));
        for error in all.chain([Error::Closed, Error::Protocol(ProtocolError::UnknownXid(7))]) {
            assert!(!(error.is_retryable() && error.is_terminal()), "{error:?}");
        }
        assert!(Error::ConnectionLoss.is_retryable());
        assert!(Error::SessionExpired.is_terminal());
        assert!(!Error::NoNode.is_retryable());
    }

    #[test]
    fn a_reply_over_the_frame_limit_is_neither_retryable_nor_terminal() {
        // Retrying would get the same reply and drop the connection again: a reconnect loop.
        let error = Error::ReplyTooLarge {
            len: 70_000,
            max: 65_536,
        };
        assert!(!error.is_retryable());
        assert!(!error.is_terminal());
        assert!(
            !error.is_outcome_unknown(),
            "the server executed the request"
        );
        assert_eq!(
            error.to_string(),
            "reply of 70000 bytes exceeds the client's frame limit of 65536 bytes (max_frame_len)"
        );
    }
}

/// Why authentication failed ([`Error::AuthFailed`]): a typed reason and the underlying
/// message (the server's code, the mechanism's or the GSSAPI library's text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthFailure {
    /// What went wrong, in the user's terms.
    pub reason: AuthReason,
    /// The underlying message.
    pub detail: String,
}

/// The reasons of an [`AuthFailure`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthReason {
    /// The server refused the credentials (a wrong password, an unknown user, a ticket it
    /// cannot accept), answering `AuthFailed`.
    RefusedByServer,
    /// The client has no credentials for the principal or user (no ticket cache, no key in
    /// the keytab).
    NoCredentials,
    /// No KDC answered (Kerberos).
    KdcUnreachable,
    /// The KDC does not know the client's principal, or its key is stale.
    UnknownPrincipal,
    /// The KDC does not know the server's service principal (check the service and host).
    UnknownServicePrincipal,
    /// The server failed to prove its identity (mutual authentication).
    ServerNotAuthenticated,
    /// The server asked for something the mechanism does not do.
    Unsupported,
    /// Another failure of the mechanism (see the detail).
    Mechanism,
}

impl AuthFailure {
    /// The server answered `AuthFailed`.
    pub fn refused_by_server() -> Self {
        AuthFailure {
            reason: AuthReason::RefusedByServer,
            detail: "the server refused the credentials".into(),
        }
    }

    /// The server answered `AuthFailed` to `addAuth` credentials.
    pub(crate) fn add_auth_refused() -> Self {
        AuthFailure {
            reason: AuthReason::RefusedByServer,
            detail: "the server refused the credentials of addAuth".into(),
        }
    }

    /// The failure for a SASL mechanism's error, its reason read from the error (and, for
    /// GSSAPI, from the library's messages).
    pub fn from_sasl(error: &crate::sasl::SaslError) -> Self {
        use crate::sasl::SaslError;
        let detail = error.to_string();
        let reason = match error {
            SaslError::ServerNotAuthenticated => AuthReason::ServerNotAuthenticated,
            SaslError::Unsupported(_) => AuthReason::Unsupported,
            SaslError::Gssapi { message, .. } => gssapi_reason(message),
            SaslError::Mechanism(message) => gssapi_reason(message),
            _ => AuthReason::Mechanism,
        };
        AuthFailure { reason, detail }
    }
}

/// The reason the GSSAPI library's (MIT krb5's) message names.
fn gssapi_reason(message: &str) -> AuthReason {
    let has = |text: &str| message.contains(text);
    if has("Cannot contact any KDC") || has("Cannot find KDC") {
        AuthReason::KdcUnreachable
    } else if has("Server") && has("not found in Kerberos database") {
        AuthReason::UnknownServicePrincipal
    } else if has("not found in Kerberos database") || has("Preauthentication failed") {
        AuthReason::UnknownPrincipal
    } else if has("No Kerberos credentials")
        || has("No credentials cache")
        || has("Can't find client principal")
        || has("does not match desired name")
    {
        AuthReason::NoCredentials
    } else {
        AuthReason::Mechanism
    }
}

impl fmt::Display for AuthFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reason = match self.reason {
            AuthReason::RefusedByServer => "refused by the server",
            AuthReason::NoCredentials => "no credentials",
            AuthReason::KdcUnreachable => "no KDC answered",
            AuthReason::UnknownPrincipal => "the KDC does not know the client's principal or key",
            AuthReason::UnknownServicePrincipal => "the KDC does not know the server's principal",
            AuthReason::ServerNotAuthenticated => "the server failed mutual authentication",
            AuthReason::Unsupported => "the server asked for something unsupported",
            AuthReason::Mechanism => "the mechanism failed",
        };
        write!(f, "{reason}: {}", self.detail)
    }
}

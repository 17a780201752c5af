//! What `--tls` and `--sasl` add: the suffix of the metrics measured over TLS, and the
//! DIGEST-MD5 user of the local SASL server.

/// Appended to the name of every metric measured over TLS (`lock_cycle@tls`).
pub(crate) const TLS_SUFFIX: &str = "@tls";
/// The benchmark's SASL user.
pub(crate) const SASL_USER: &str = "bench";
/// Its password.
pub(crate) const SASL_PASSWORD: &str = "bench-secret";

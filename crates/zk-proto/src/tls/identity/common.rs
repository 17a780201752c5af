//! What the readers of each format share: the bounds on a hostile file, the names errors give
//! the parts of a client identity, the errors themselves, and the identity read.

use der::Decode;
use der::asn1::ObjectIdentifier;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::TlsConfigError;

/// The highest iteration count accepted for a key derivation (PBKDF2, the PKCS#12 one):
/// RFC 8018's count "for especially critical keys". Tools write 2,048 (OpenSSL) to 10,000
/// (Java) by default.
pub(super) const MAX_ITERATIONS: u64 = 10_000_000;

/// The most memory scrypt may take (128 · N · r bytes): 32 MiB, OpenSSL's limit. OpenSSL
/// writes N = 16384, r = 8 (16 MiB).
pub(super) const MAX_SCRYPT_MEMORY: u64 = 32 * 1024 * 1024;

/// The highest scrypt parallelism accepted (each lane costs the whole memory again in time).
pub(super) const MAX_SCRYPT_PARALLELISM: u16 = 16;

/// How deep safe-contents bags may nest.
pub(super) const MAX_NESTING: usize = 4;

/// What the errors of a bundle name.
pub(super) const BUNDLE: &str = "the client PKCS#12 bundle";
/// What the errors of the MAC name.
pub(super) const BUNDLE_MAC: &str = "the client PKCS#12 bundle's integrity check (MAC)";
/// What the errors of a bundle's key name, once the bundle's password passed its MAC.
pub(super) const BUNDLE_KEY: &str = "the private key of the client PKCS#12 bundle (its password is not the bundle's: give it as the key password)";
/// What the errors of an encrypted PEM key name.
pub(super) const PEM_KEY: &str = "the client key (encrypted PKCS#8)";

/// A certificate chain, the client's own certificate first, and its private key.
pub(in crate::tls) struct Identity {
    pub(in crate::tls) chain: Vec<CertificateDer<'static>>,
    pub(in crate::tls) key: PrivateKeyDer<'static>,
}

/// An algorithm's name for an error: its usual name and its OID when the OID database (or
/// the few names it lacks, below) knows it, else the OID.
pub(super) fn algorithm_name(oid: &ObjectIdentifier) -> String {
    const MORE: [(&str, &str); 4] = [
        ("1.2.392.200011.61.1.1.1.2", "camellia-128-cbc"),
        ("1.2.392.200011.61.1.1.1.3", "camellia-192-cbc"),
        ("1.2.392.200011.61.1.1.1.4", "camellia-256-cbc"),
        ("1.2.840.113549.1.5.14", "PBMAC1"),
    ];
    let dotted = oid.to_string();
    let name = const_oid::db::DB.by_oid(oid).or_else(|| {
        MORE.iter()
            .find(|(known, _)| *known == dotted)
            .map(|(_, name)| *name)
    });
    match name {
        Some(name) => format!("{name} ({dotted})"),
        None => dotted,
    }
}

pub(super) fn malformed(what: &'static str, message: impl std::fmt::Display) -> TlsConfigError {
    TlsConfigError::Malformed {
        what,
        message: message.to_string(),
    }
}

pub(super) fn unsupported(what: &'static str, algorithm: impl Into<String>) -> TlsConfigError {
    TlsConfigError::UnsupportedAlgorithm {
        what,
        algorithm: algorithm.into(),
    }
}

/// A DER decoding error: an unknown algorithm named, anything else malformed.
pub(super) fn der_error(what: &'static str, error: der::Error) -> TlsConfigError {
    match error.kind() {
        der::ErrorKind::OidUnknown { oid } => unsupported(what, algorithm_name(&oid)),
        _ => malformed(what, error),
    }
}

/// Whether `der` is a PKCS#8 `PrivateKeyInfo` (checked in place).
pub(super) fn check_pkcs8(der: &[u8]) -> Result<(), ()> {
    ::pkcs8::PrivateKeyInfoRef::from_der(der)
        .map(|_| ())
        .map_err(|_| ())
}

//! Client identities that must be decoded or decrypted before rustls can use them: PKCS#12
//! bundles (`.p12`, `.pfx`: what `openssl pkcs12 -export` and `keytool -storetype PKCS12`
//! write) and encrypted PKCS#8 keys (`-----BEGIN ENCRYPTED PRIVATE KEY-----`).
//!
//! What is read:
//!
//! - **Encryption** of keys and of certificate bags: PBES2 (PBKDF2 with HMAC-SHA-1 or SHA-2,
//!   or scrypt; then AES-128/192/256 in CBC or GCM mode, or DES-EDE3-CBC): OpenSSL 3's and
//!   Java 17's defaults. The legacy PKCS#12 schemes with SHA-1: 3-key and 2-key triple DES,
//!   128-bit and 40-bit RC2 (OpenSSL 1.x's defaults, `openssl pkcs12 -legacy`, Java 8's).
//!   Anything else (RC4, PKCS#5 v1.5 DES, public-key privacy mode) is refused, named.
//! - **Integrity**: the bundle's MAC (HMAC with SHA-1 or SHA-2, keyed by the PKCS#12
//!   derivation), checked before anything is decrypted: a wrong password is told as such.
//!   A bundle without a MAC is read too (its password is then checked by decryption).
//! - **Passwords**: as given (UTF-8 text usually) for PBES2; as PKCS#12's BMPString (UTF-16,
//!   big-endian, two zero bytes after) for the MAC and the legacy schemes, bytes that are not
//!   UTF-8 taken as Latin-1 as OpenSSL does. An empty password also opens a bundle written
//!   with none (OpenSSL's two readings of "no password").
//!
//! Bounds: the file is read whole, and every structure is decoded from it in place (the
//! decoder checks each length against the bytes that are there), so nothing is allocated
//! beyond the size of the file except the derived keys; iteration counts are capped at
//! [`MAX_ITERATIONS`] and scrypt's memory at [`MAX_SCRYPT_MEMORY`] (OpenSSL's own limit),
//! so that a hostile file cannot make the client spin or swap. Decrypted bytes live in
//! zeroizing buffers until the key is handed to rustls.

mod asn1;
mod oids;
mod pbe;
mod pkcs12;
mod pkcs8;

use der::Decode;
use der::asn1::ObjectIdentifier;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::TlsConfigError;

pub(super) use self::pkcs8::{decrypt_pem_key, is_encrypted_pem_key};
pub(super) use self::pkcs12::read_pkcs12;

/// The highest iteration count accepted for a key derivation (PBKDF2, the PKCS#12 one):
/// RFC 8018's count "for especially critical keys". Tools write 2,048 (OpenSSL) to 10,000
/// (Java) by default.
pub(super) const MAX_ITERATIONS: u64 = 10_000_000;

/// The most memory scrypt may take (128 · N · r bytes): 32 MiB, OpenSSL's limit. OpenSSL
/// writes N = 16384, r = 8 (16 MiB).
pub(super) const MAX_SCRYPT_MEMORY: u64 = 32 * 1024 * 1024;

/// The highest scrypt parallelism accepted (each lane costs the whole memory again in time).
const MAX_SCRYPT_PARALLELISM: u16 = 16;

/// How deep safe-contents bags may nest.
const MAX_NESTING: usize = 4;

/// What the errors of a bundle name.
const BUNDLE: &str = "the client PKCS#12 bundle";
/// What the errors of the MAC name.
const BUNDLE_MAC: &str = "the client PKCS#12 bundle's integrity check (MAC)";
/// What the errors of a bundle's key name, once the bundle's password passed its MAC.
const BUNDLE_KEY: &str = "the private key of the client PKCS#12 bundle (its password is not the bundle's: give it as the key password)";
/// What the errors of an encrypted PEM key name.
const PEM_KEY: &str = "the client key (encrypted PKCS#8)";

/// A certificate chain, the client's own certificate first, and its private key.
pub(super) struct Identity {
    pub(super) chain: Vec<CertificateDer<'static>>,
    pub(super) key: PrivateKeyDer<'static>,
}

/// An algorithm's name for an error: its usual name and its OID when the OID database (or
/// the few names it lacks, below) knows it, else the OID.
fn algorithm_name(oid: &ObjectIdentifier) -> String {
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

fn malformed(what: &'static str, message: impl std::fmt::Display) -> TlsConfigError {
    TlsConfigError::Malformed {
        what,
        message: message.to_string(),
    }
}

fn unsupported(what: &'static str, algorithm: impl Into<String>) -> TlsConfigError {
    TlsConfigError::UnsupportedAlgorithm {
        what,
        algorithm: algorithm.into(),
    }
}

/// A DER decoding error: an unknown algorithm named, anything else malformed.
fn der_error(what: &'static str, error: der::Error) -> TlsConfigError {
    match error.kind() {
        der::ErrorKind::OidUnknown { oid } => unsupported(what, algorithm_name(&oid)),
        _ => malformed(what, error),
    }
}

/// Whether `der` is a PKCS#8 `PrivateKeyInfo` (checked in place).
fn check_pkcs8(der: &[u8]) -> Result<(), ()> {
    ::pkcs8::PrivateKeyInfoRef::from_der(der)
        .map(|_| ())
        .map_err(|_| ())
}

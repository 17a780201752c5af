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
//! [`MAX_ITERATIONS`](common::MAX_ITERATIONS) and scrypt's memory at [`MAX_SCRYPT_MEMORY`](common::MAX_SCRYPT_MEMORY) (OpenSSL's own limit),
//! so that a hostile file cannot make the client spin or swap. Decrypted bytes live in
//! zeroizing buffers until the key is handed to rustls.

mod asn1;
mod common;
mod oids;
mod pbe;
mod pkcs12;
mod pkcs8;

pub(super) use self::pkcs8::{decrypt_pem_key, is_encrypted_pem_key};
pub(super) use self::pkcs12::read_pkcs12;

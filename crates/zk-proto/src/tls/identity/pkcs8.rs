//! Encrypted PKCS#8 keys in PEM (`-----BEGIN ENCRYPTED PRIVATE KEY-----`, as `openssl pkcs8
//! -topk8` writes them).

use der::Decode;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use super::asn1::EncryptedPrivateKeyInfo;
use super::common::{PEM_KEY, check_pkcs8, der_error, malformed};
use super::pbe::{Password, decrypt};
use crate::TlsConfigError;

/// Whether `text` holds an encrypted PKCS#8 PEM block.
pub(in crate::tls) fn is_encrypted_pem_key(text: &[u8]) -> bool {
    find(text, b"-----BEGIN ENCRYPTED PRIVATE KEY-----").is_some()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// Decrypts the first `ENCRYPTED PRIVATE KEY` PEM block of `text` with `password`.
pub(in crate::tls) fn decrypt_pem_key(
    text: &[u8],
    password: &[u8],
) -> Result<PrivateKeyDer<'static>, TlsConfigError> {
    const BEGIN: &[u8] = b"-----BEGIN ENCRYPTED PRIVATE KEY-----";
    const END: &[u8] = b"-----END ENCRYPTED PRIVATE KEY-----";
    let start = find(text, BEGIN)
        .map(|at| at + BEGIN.len())
        .ok_or_else(|| malformed(PEM_KEY, "no ENCRYPTED PRIVATE KEY block"))?;
    let length = find(&text[start..], END)
        .ok_or_else(|| malformed(PEM_KEY, "the ENCRYPTED PRIVATE KEY block has no end line"))?;
    let body: Vec<u8> = text[start..start + length]
        .iter()
        .copied()
        .filter(|byte| !byte.is_ascii_whitespace())
        .collect();
    let der = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(&body)
            .map_err(|error| malformed(PEM_KEY, format!("bad base64: {error}")))?
    };
    let info =
        EncryptedPrivateKeyInfo::from_der(&der).map_err(|error| der_error(PEM_KEY, error))?;
    let password = Password::new(password);
    let mut key = decrypt(PEM_KEY, &info.algorithm, info.data.as_bytes(), &password)?;
    check_pkcs8(&key).map_err(|()| TlsConfigError::WrongPassword { what: PEM_KEY })?;
    Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        std::mem::take(&mut *key),
    )))
}

//! Password-based encryption and integrity: PBES2 and the legacy PKCS#12 schemes (decryption,
//! with the bounds on their parameters), a bundle's MAC, and the forms of a password each
//! takes.

use der::asn1::ObjectIdentifier;
use pkcs8::spki::AlgorithmIdentifierRef;
use zeroize::Zeroizing;

use super::asn1::{MacData, Pkcs12PbeParams};
use super::common::{
    BUNDLE_MAC, MAX_ITERATIONS, MAX_SCRYPT_MEMORY, MAX_SCRYPT_PARALLELISM, algorithm_name,
    der_error, malformed, unsupported,
};
use super::oids;
use crate::TlsConfigError;

/// A password in the forms the schemes take it.
pub(super) struct Password<'a> {
    /// As given: PBES2 derives its key from these bytes.
    bytes: &'a [u8],
    /// PKCS#12's BMPString with its two terminating zero bytes (or nothing at all, the other
    /// reading of an empty password): the MAC and the legacy schemes derive from these.
    bmp: Zeroizing<Vec<u8>>,
}

impl<'a> Password<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        // At most two bytes per byte of UTF-8 (or Latin-1), and the terminator: allocated
        // once, so that no copy is left behind by a reallocation.
        let mut bmp = Zeroizing::new(Vec::with_capacity(2 * bytes.len() + 2));
        match std::str::from_utf8(bytes) {
            Ok(text) => {
                for unit in text.encode_utf16() {
                    bmp.extend_from_slice(&unit.to_be_bytes());
                }
            }
            // Not UTF-8: each byte a Latin-1 character, as OpenSSL takes it.
            Err(_) => {
                for byte in bytes {
                    bmp.extend_from_slice(&[0, *byte]);
                }
            }
        }
        bmp.extend_from_slice(&[0, 0]);
        Password { bytes, bmp }
    }
}

fn check_iterations(what: &'static str, scheme: &str, count: u64) -> Result<(), TlsConfigError> {
    if count == 0 {
        return Err(malformed(what, format!("{scheme} with 0 iterations")));
    }
    if count > MAX_ITERATIONS {
        return Err(unsupported(
            what,
            format!("{scheme} with {count} iterations (at most {MAX_ITERATIONS} are accepted)"),
        ));
    }
    Ok(())
}

/// The PKCS#12 key derivation (RFC 7292, appendix B) with SHA-1 (the legacy schemes'):
/// `len` bytes of the kind `id`.
fn pkcs12_sha1_key(
    password: &Password<'_>,
    salt: &[u8],
    id: pkcs12::kdf::Pkcs12KeyType,
    iterations: u64,
    len: usize,
) -> Zeroizing<Vec<u8>> {
    // Checked against MAX_ITERATIONS, which fits.
    let rounds = i32::try_from(iterations).unwrap_or(i32::MAX);
    Zeroizing::new(pkcs12::kdf::derive_key::<sha1_pkcs12::Sha1>(
        &password.bmp,
        salt,
        id,
        rounds,
        len,
    ))
}

/// Decrypts `data`, encrypted with `algorithm` under `password`: the plaintext, in a
/// zeroizing buffer. A padding that does not check out is a wrong password.
pub(super) fn decrypt(
    what: &'static str,
    algorithm: &AlgorithmIdentifierRef<'_>,
    data: &[u8],
    password: &Password<'_>,
) -> Result<Zeroizing<Vec<u8>>, TlsConfigError> {
    let oid = algorithm.oid;
    let parameters = algorithm
        .parameters
        .ok_or_else(|| malformed(what, format!("{} without parameters", algorithm_name(&oid))))?;
    let mut buffer = Zeroizing::new(data.to_vec());
    let length = match oid {
        oids::PBES2 => {
            let parameters = pkcs5::pbes2::Parameters::try_from(parameters)
                .map_err(|error| der_error(what, error))?;
            check_pbes2_kdf(what, &parameters.kdf)?;
            parameters
                .decrypt_in_place(password.bytes, &mut buffer)
                .map_err(|error| match error {
                    pkcs5::Error::DecryptFailed => TlsConfigError::WrongPassword { what },
                    pkcs5::Error::UnsupportedAlgorithm { oid } => {
                        unsupported(what, algorithm_name(&oid))
                    }
                    other => malformed(what, other),
                })?
                .len()
        }
        oids::PBE_SHA1_3DES
        | oids::PBE_SHA1_2DES
        | oids::PBE_SHA1_RC2_128
        | oids::PBE_SHA1_RC2_40 => {
            let parameters: Pkcs12PbeParams<'_> = parameters
                .decode_as()
                .map_err(|error| der_error(what, error))?;
            check_iterations(what, &algorithm_name(&oid), parameters.iterations)?;
            legacy_decrypt(what, oid, &parameters, password, &mut buffer)?
        }
        other => return Err(unsupported(what, algorithm_name(&other))),
    };
    buffer.truncate(length);
    Ok(buffer)
}

fn check_pbes2_kdf(what: &'static str, kdf: &pkcs5::pbes2::Kdf) -> Result<(), TlsConfigError> {
    match kdf {
        pkcs5::pbes2::Kdf::Pbkdf2(pbkdf2) => {
            check_iterations(what, "PBKDF2", u64::from(pbkdf2.iteration_count))
        }
        pkcs5::pbes2::Kdf::Scrypt(scrypt) => {
            let memory = 128u64
                .checked_mul(scrypt.cost_parameter)
                .and_then(|m| m.checked_mul(u64::from(scrypt.block_size)));
            match memory {
                Some(memory)
                    if memory <= MAX_SCRYPT_MEMORY
                        && scrypt.parallelization <= MAX_SCRYPT_PARALLELISM =>
                {
                    Ok(())
                }
                _ => Err(unsupported(
                    what,
                    format!(
                        "scrypt with N = {}, r = {}, p = {} (at most {} MiB and p = {MAX_SCRYPT_PARALLELISM} are accepted)",
                        scrypt.cost_parameter,
                        scrypt.block_size,
                        scrypt.parallelization,
                        MAX_SCRYPT_MEMORY >> 20
                    ),
                )),
            }
        }
        other => Err(unsupported(what, algorithm_name(&other.oid()))),
    }
}

/// The legacy PKCS#12 schemes: key and IV from the PKCS#12 derivation with SHA-1, then CBC
/// with PKCS#7 padding. The plaintext's length.
fn legacy_decrypt(
    what: &'static str,
    oid: ObjectIdentifier,
    parameters: &Pkcs12PbeParams<'_>,
    password: &Password<'_>,
    buffer: &mut [u8],
) -> Result<usize, TlsConfigError> {
    use cbc::cipher::block_padding::Pkcs7;
    use cbc::cipher::{BlockModeDecrypt, InnerIvInit, KeyInit, KeyIvInit};
    use pkcs12::kdf::Pkcs12KeyType;

    let salt = parameters.salt.as_bytes();
    let key_len = match oid {
        oids::PBE_SHA1_3DES => 24,
        oids::PBE_SHA1_2DES | oids::PBE_SHA1_RC2_128 => 16,
        _ => 5,
    };
    let key = pkcs12_sha1_key(
        password,
        salt,
        Pkcs12KeyType::EncryptionKey,
        parameters.iterations,
        key_len,
    );
    let iv = pkcs12_sha1_key(password, salt, Pkcs12KeyType::Iv, parameters.iterations, 8);
    let bad_key = |_| malformed(what, "a key or IV of the wrong length");
    let wrong = |_| TlsConfigError::WrongPassword { what };
    let plaintext = match oid {
        oids::PBE_SHA1_3DES => cbc::Decryptor::<des::TdesEde3>::new_from_slices(&key, &iv)
            .map_err(bad_key)?
            .decrypt_padded::<Pkcs7>(buffer)
            .map_err(wrong)?,
        oids::PBE_SHA1_2DES => cbc::Decryptor::<des::TdesEde2>::new_from_slices(&key, &iv)
            .map_err(bad_key)?
            .decrypt_padded::<Pkcs7>(buffer)
            .map_err(wrong)?,
        _ => {
            let rc2 = if key_len == 16 {
                rc2::Rc2::new_from_slice(&key).map_err(bad_key)?
            } else {
                rc2::Rc2::new_with_eff_key_len(&key, 40)
            };
            cbc::Decryptor::<rc2::Rc2>::inner_iv_slice_init(rc2, &iv)
                .map_err(bad_key)?
                .decrypt_padded::<Pkcs7>(buffer)
                .map_err(wrong)?
        }
    };
    Ok(plaintext.len())
}

/// Checks a bundle's MAC with `password`: whether it matches. An empty password is tried
/// both ways (a BMPString of just the terminator, and no bytes at all); `password` is left
/// with the form that matched.
pub(super) fn verify_mac(
    mac: &MacData<'_>,
    password: &mut Password<'_>,
    content: &[u8],
) -> Result<bool, TlsConfigError> {
    let iterations = mac.iterations.unwrap_or(1);
    let oid = mac.mac.algorithm.oid;
    check_iterations(BUNDLE_MAC, &algorithm_name(&oid), iterations)?;
    // Checked against MAX_ITERATIONS, which fits.
    let rounds = i32::try_from(iterations).unwrap_or(i32::MAX);
    let salt = mac.salt.as_bytes();
    let expected = mac.mac.digest.as_bytes();
    let check = |pass: &[u8]| -> Result<bool, TlsConfigError> {
        macro_rules! hmac_with {
            ($digest:ty) => {{
                use hmac::{KeyInit as _, Mac as _};
                let size = <$digest as hmac::digest::OutputSizeUser>::output_size();
                let key = Zeroizing::new(pkcs12::kdf::derive_key::<$digest>(
                    pass,
                    salt,
                    pkcs12::kdf::Pkcs12KeyType::Mac,
                    rounds,
                    size,
                ));
                let mut hmac = hmac::Hmac::<$digest>::new_from_slice(&key)
                    .map_err(|_| malformed(BUNDLE_MAC, "unusable key length"))?;
                hmac.update(content);
                Ok(hmac.verify_slice(expected).is_ok())
            }};
        }
        match oid {
            oids::SHA1 => hmac_with!(sha1_pkcs12::Sha1),
            oids::SHA224 => hmac_with!(sha2::Sha224),
            oids::SHA256 => hmac_with!(sha2::Sha256),
            oids::SHA384 => hmac_with!(sha2::Sha384),
            oids::SHA512 => hmac_with!(sha2::Sha512),
            oids::SHA512_224 => hmac_with!(sha2::Sha512_224),
            oids::SHA512_256 => hmac_with!(sha2::Sha512_256),
            other => Err(unsupported(BUNDLE_MAC, algorithm_name(&other))),
        }
    };
    if check(&password.bmp)? {
        return Ok(true);
    }
    if password.bytes.is_empty() && check(&[])? {
        password.bmp = Zeroizing::new(Vec::new());
        return Ok(true);
    }
    Ok(false)
}

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

use der::asn1::{AnyRef, ObjectIdentifier, OctetStringRef};
use der::{Decode, Encode, Reader, Sequence, SliceReader, Tag, TagNumber, Tagged};
use pkcs8::spki::AlgorithmIdentifierRef;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use zeroize::Zeroizing;

use crate::TlsConfigError;

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

// ---- ASN.1 structures (RFC 7292, RFC 5652, RFC 5958), borrowed from the input ----

/// `PFX ::= SEQUENCE { version INTEGER {v3(3)}, authSafe ContentInfo, macData MacData OPTIONAL }`
#[derive(Sequence)]
struct Pfx<'a> {
    version: u8,
    auth_safe: ContentInfo<'a>,
    mac_data: Option<MacData<'a>>,
}

/// `ContentInfo ::= SEQUENCE { contentType OID, content [0] EXPLICIT ANY OPTIONAL }`
#[derive(Sequence)]
struct ContentInfo<'a> {
    content_type: ObjectIdentifier,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT", optional = "true")]
    content: Option<AnyRef<'a>>,
}

/// `MacData ::= SEQUENCE { mac DigestInfo, macSalt OCTET STRING, iterations INTEGER DEFAULT 1 }`
#[derive(Sequence)]
struct MacData<'a> {
    mac: DigestInfo<'a>,
    salt: &'a OctetStringRef,
    iterations: Option<u64>,
}

/// `DigestInfo ::= SEQUENCE { digestAlgorithm AlgorithmIdentifier, digest OCTET STRING }`
#[derive(Sequence)]
struct DigestInfo<'a> {
    algorithm: AlgorithmIdentifierRef<'a>,
    digest: &'a OctetStringRef,
}

/// `EncryptedData ::= SEQUENCE { version, encryptedContentInfo, unprotectedAttrs [1] OPTIONAL }`
/// (the attributes, which nothing writes in a bundle, taken as anything).
#[derive(Sequence)]
struct EncryptedData<'a> {
    version: u8,
    info: EncryptedContentInfo<'a>,
    unprotected: Option<AnyRef<'a>>,
}

/// `EncryptedContentInfo ::= SEQUENCE { contentType, contentEncryptionAlgorithm,
/// encryptedContent [0] IMPLICIT OCTET STRING OPTIONAL }`
#[derive(Sequence)]
struct EncryptedContentInfo<'a> {
    content_type: ObjectIdentifier,
    algorithm: AlgorithmIdentifierRef<'a>,
    #[asn1(context_specific = "0", tag_mode = "IMPLICIT", optional = "true")]
    content: Option<&'a OctetStringRef>,
}

/// `SafeBag ::= SEQUENCE { bagId OID, bagValue [0] EXPLICIT ANY, bagAttributes SET OF OPTIONAL }`
#[derive(Sequence)]
struct SafeBag<'a> {
    id: ObjectIdentifier,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT")]
    value: AnyRef<'a>,
    attributes: Option<AnyRef<'a>>,
}

/// `PKCS12Attribute ::= SEQUENCE { attrId OID, attrValues SET OF ANY }`
#[derive(Sequence)]
struct Attribute<'a> {
    id: ObjectIdentifier,
    values: AnyRef<'a>,
}

/// `CertBag ::= SEQUENCE { certId OID, certValue [0] EXPLICIT OCTET STRING }`
#[derive(Sequence)]
struct CertBag<'a> {
    id: ObjectIdentifier,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT")]
    value: &'a OctetStringRef,
}

/// `EncryptedPrivateKeyInfo ::= SEQUENCE { encryptionAlgorithm, encryptedData OCTET STRING }`
#[derive(Sequence)]
struct EncryptedPrivateKeyInfo<'a> {
    algorithm: AlgorithmIdentifierRef<'a>,
    data: &'a OctetStringRef,
}

/// `pkcs-12PbeParams ::= SEQUENCE { salt OCTET STRING, iterations INTEGER }`
#[derive(Sequence)]
struct Pkcs12PbeParams<'a> {
    salt: &'a OctetStringRef,
    iterations: u64,
}

mod oids {
    use der::asn1::ObjectIdentifier as Oid;

    pub(super) const DATA: Oid = Oid::new_unwrap("1.2.840.113549.1.7.1");
    pub(super) const ENCRYPTED_DATA: Oid = Oid::new_unwrap("1.2.840.113549.1.7.6");

    pub(super) const KEY_BAG: Oid = Oid::new_unwrap("1.2.840.113549.1.12.10.1.1");
    pub(super) const SHROUDED_KEY_BAG: Oid = Oid::new_unwrap("1.2.840.113549.1.12.10.1.2");
    pub(super) const CERT_BAG: Oid = Oid::new_unwrap("1.2.840.113549.1.12.10.1.3");
    pub(super) const SAFE_CONTENTS_BAG: Oid = Oid::new_unwrap("1.2.840.113549.1.12.10.1.6");
    pub(super) const X509_CERTIFICATE: Oid = Oid::new_unwrap("1.2.840.113549.1.9.22.1");
    pub(super) const LOCAL_KEY_ID: Oid = Oid::new_unwrap("1.2.840.113549.1.9.21");

    pub(super) const PBES2: Oid = Oid::new_unwrap("1.2.840.113549.1.5.13");
    pub(super) const PBE_SHA1_3DES: Oid = Oid::new_unwrap("1.2.840.113549.1.12.1.3");
    pub(super) const PBE_SHA1_2DES: Oid = Oid::new_unwrap("1.2.840.113549.1.12.1.4");
    pub(super) const PBE_SHA1_RC2_128: Oid = Oid::new_unwrap("1.2.840.113549.1.12.1.5");
    pub(super) const PBE_SHA1_RC2_40: Oid = Oid::new_unwrap("1.2.840.113549.1.12.1.6");

    pub(super) const SHA1: Oid = Oid::new_unwrap("1.3.14.3.2.26");
    pub(super) const SHA224: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.4");
    pub(super) const SHA256: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.1");
    pub(super) const SHA384: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.2");
    pub(super) const SHA512: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.3");
    pub(super) const SHA512_224: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.5");
    pub(super) const SHA512_256: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.6");
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

/// A password in the forms the schemes take it.
struct Password<'a> {
    /// As given: PBES2 derives its key from these bytes.
    bytes: &'a [u8],
    /// PKCS#12's BMPString with its two terminating zero bytes (or nothing at all, the other
    /// reading of an empty password): the MAC and the legacy schemes derive from these.
    bmp: Zeroizing<Vec<u8>>,
}

impl<'a> Password<'a> {
    fn new(bytes: &'a [u8]) -> Self {
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
fn decrypt(
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
fn verify_mac(
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

/// A key found in a bundle: its PKCS#8 DER and its `localKeyId`.
struct FoundKey {
    der: Zeroizing<Vec<u8>>,
    local_key_id: Option<Vec<u8>>,
}

/// A certificate found in a bundle: its DER and its `localKeyId`.
struct FoundCert {
    der: Vec<u8>,
    local_key_id: Option<Vec<u8>>,
}

/// What the bags of a bundle hold.
#[derive(Default)]
struct Found {
    keys: Vec<FoundKey>,
    certs: Vec<FoundCert>,
}

/// How the bags of a bundle are read: with which passwords, and whether the bundle's MAC
/// vouched for the password (then a decryption that fails is no longer the bundle's wrong
/// password but a key with a password of its own).
struct BagReader<'p> {
    password: Password<'p>,
    key_password: Option<Password<'p>>,
    mac_verified: bool,
}

impl BagReader<'_> {
    /// What a failure to decrypt the contents names.
    fn contents_what(&self) -> &'static str {
        BUNDLE
    }

    /// What a wrong password for a key names.
    fn key_what(&self) -> &'static str {
        if self.mac_verified && self.key_password.is_none() {
            BUNDLE_KEY
        } else {
            BUNDLE
        }
    }

    /// Reads a `SafeContents` (a SEQUENCE OF SafeBag) into `found`.
    fn safe_contents(
        &self,
        der: &[u8],
        depth: usize,
        found: &mut Found,
    ) -> Result<(), TlsConfigError> {
        if depth > MAX_NESTING {
            return Err(malformed(BUNDLE, "safe contents nested too deep"));
        }
        let bags: Vec<SafeBag<'_>> =
            Vec::from_der(der).map_err(|error| der_error(BUNDLE, error))?;
        for bag in bags {
            let local_key_id = bag.attributes.map(local_key_id).transpose()?.flatten();
            match bag.id {
                oids::KEY_BAG => {
                    let der = Zeroizing::new(
                        bag.value
                            .to_der()
                            .map_err(|error| der_error(BUNDLE, error))?,
                    );
                    check_pkcs8(&der)
                        .map_err(|()| malformed(BUNDLE, "a key bag that is not PKCS#8"))?;
                    found.keys.push(FoundKey { der, local_key_id });
                }
                oids::SHROUDED_KEY_BAG => {
                    let info: EncryptedPrivateKeyInfo<'_> = bag
                        .value
                        .decode_as()
                        .map_err(|error| der_error(BUNDLE, error))?;
                    let password = self.key_password.as_ref().unwrap_or(&self.password);
                    let wrong = TlsConfigError::WrongPassword {
                        what: self.key_what(),
                    };
                    let der = decrypt(BUNDLE, &info.algorithm, info.data.as_bytes(), password)
                        .map_err(|error| match error {
                            TlsConfigError::WrongPassword { .. } => wrong.clone(),
                            other => other,
                        })?;
                    check_pkcs8(&der).map_err(|()| wrong)?;
                    found.keys.push(FoundKey { der, local_key_id });
                }
                oids::CERT_BAG => {
                    let cert: CertBag<'_> = bag
                        .value
                        .decode_as()
                        .map_err(|error| der_error(BUNDLE, error))?;
                    // Other kinds (SDSI certificates) are nothing rustls could send.
                    if cert.id == oids::X509_CERTIFICATE {
                        found.certs.push(FoundCert {
                            der: cert.value.as_bytes().to_vec(),
                            local_key_id,
                        });
                    }
                }
                oids::SAFE_CONTENTS_BAG => {
                    let nested = bag
                        .value
                        .to_der()
                        .map_err(|error| der_error(BUNDLE, error))?;
                    self.safe_contents(&nested, depth + 1, found)?;
                }
                // CRLs, secrets: nothing for a client identity.
                _ => {}
            }
        }
        Ok(())
    }

    /// Reads one `ContentInfo` of the `AuthenticatedSafe`: plain or password-encrypted data.
    fn content_info(
        &self,
        info: &ContentInfo<'_>,
        found: &mut Found,
    ) -> Result<(), TlsConfigError> {
        let content = info
            .content
            .ok_or_else(|| malformed(BUNDLE, "a content without its content"))?;
        match info.content_type {
            oids::DATA => {
                let octets: &OctetStringRef = content
                    .decode_as()
                    .map_err(|error| der_error(BUNDLE, error))?;
                self.safe_contents(octets.as_bytes(), 0, found)
            }
            oids::ENCRYPTED_DATA => {
                let encrypted: EncryptedData<'_> = content
                    .decode_as()
                    .map_err(|error| der_error(BUNDLE, error))?;
                let Some(data) = encrypted.info.content else {
                    return Ok(());
                };
                let what = self.contents_what();
                let plain = decrypt(
                    what,
                    &encrypted.info.algorithm,
                    data.as_bytes(),
                    &self.password,
                )?;
                self.safe_contents(&plain, 0, found).map_err(|error| {
                    // Without a MAC, garbage that happened to end in valid padding is the
                    // likeliest reason.
                    if self.mac_verified {
                        error
                    } else {
                        TlsConfigError::WrongPassword { what }
                    }
                })
            }
            other => Err(unsupported(
                BUNDLE,
                format!(
                    "content of type {} (only password privacy is supported)",
                    algorithm_name(&other)
                ),
            )),
        }
    }
}

/// The `localKeyId` among a bag's attributes (a SET OF PKCS12Attribute).
fn local_key_id(attributes: AnyRef<'_>) -> Result<Option<Vec<u8>>, TlsConfigError> {
    if attributes.tag() != Tag::Set {
        return Err(malformed(BUNDLE, "bag attributes that are not a SET"));
    }
    let mut reader =
        SliceReader::new(attributes.value()).map_err(|error| der_error(BUNDLE, error))?;
    while !reader.is_finished() {
        let attribute: Attribute<'_> = reader.decode().map_err(|error| der_error(BUNDLE, error))?;
        if attribute.id == oids::LOCAL_KEY_ID {
            let mut values = SliceReader::new(attribute.values.value())
                .map_err(|error| der_error(BUNDLE, error))?;
            let id: &OctetStringRef = values.decode().map_err(|error| der_error(BUNDLE, error))?;
            return Ok(Some(id.as_bytes().to_vec()));
        }
    }
    Ok(None)
}

/// Whether `der` is a PKCS#8 `PrivateKeyInfo` (checked in place).
fn check_pkcs8(der: &[u8]) -> Result<(), ()> {
    pkcs8::PrivateKeyInfoRef::from_der(der)
        .map(|_| ())
        .map_err(|_| ())
}

/// The issuer and subject of a certificate, as their DER encodings (for chaining); `None`
/// when it does not parse that far (rustls then judges it).
fn issuer_and_subject(cert: &[u8]) -> Option<(&[u8], &[u8])> {
    let outer = AnyRef::from_der(cert).ok()?;
    let mut certificate = SliceReader::new(outer.value()).ok()?;
    let tbs: AnyRef<'_> = certificate.decode().ok()?;
    let mut fields = SliceReader::new(tbs.value()).ok()?;
    let mut serial: AnyRef<'_> = fields.decode().ok()?;
    if serial.tag().is_context_specific() && serial.tag().number() == TagNumber(0) {
        // [0] version: the serial number comes next.
        serial = fields.decode().ok()?;
    }
    let _ = serial;
    let _signature: AnyRef<'_> = fields.decode().ok()?;
    let issuer: AnyRef<'_> = fields.decode().ok()?;
    let _validity: AnyRef<'_> = fields.decode().ok()?;
    let subject: AnyRef<'_> = fields.decode().ok()?;
    Some((issuer.value(), subject.value()))
}

/// Reads a PKCS#12 bundle: its one private key and that key's certificate chain (the
/// certificate carrying the key's `localKeyId`, or the only leaf, then its issuers found in
/// the bundle). `key_password` is for a key encrypted under another password than the
/// bundle (`keytool -keypass`); by default the bundle's opens it.
pub(super) fn read_pkcs12(
    bundle: &[u8],
    password: &[u8],
    key_password: Option<&[u8]>,
) -> Result<Identity, TlsConfigError> {
    let pfx = Pfx::from_der(bundle).map_err(|error| {
        let mut error = der_error(BUNDLE, error);
        if let TlsConfigError::Malformed { message, .. } = &mut error {
            message.push_str(" (not a DER-encoded PKCS#12 bundle?)");
        }
        error
    })?;
    if pfx.version != 3 {
        return Err(malformed(
            BUNDLE,
            format!("version {} (3 expected)", pfx.version),
        ));
    }
    if pfx.auth_safe.content_type != oids::DATA {
        return Err(unsupported(
            BUNDLE,
            format!(
                "an authenticated safe of type {} (only password integrity is supported)",
                algorithm_name(&pfx.auth_safe.content_type)
            ),
        ));
    }
    let auth_safe: &OctetStringRef = pfx
        .auth_safe
        .content
        .ok_or_else(|| malformed(BUNDLE, "no authenticated safe"))?
        .decode_as()
        .map_err(|error| der_error(BUNDLE, error))?;
    let mut reader = BagReader {
        password: Password::new(password),
        key_password: key_password.map(Password::new),
        mac_verified: false,
    };
    if let Some(mac) = &pfx.mac_data {
        if !verify_mac(mac, &mut reader.password, auth_safe.as_bytes())? {
            return Err(TlsConfigError::WrongPassword { what: BUNDLE });
        }
        reader.mac_verified = true;
    }
    let contents: Vec<ContentInfo<'_>> =
        Vec::from_der(auth_safe.as_bytes()).map_err(|error| der_error(BUNDLE, error))?;
    let mut found = Found::default();
    for info in &contents {
        reader.content_info(info, &mut found)?;
    }
    identity(found)
}

/// The identity in what a bundle holds.
fn identity(mut found: Found) -> Result<Identity, TlsConfigError> {
    let key = match found.keys.len() {
        0 => return Err(TlsConfigError::NoPrivateKey { what: BUNDLE }),
        1 => found.keys.remove(0),
        count => {
            return Err(TlsConfigError::SeveralPrivateKeys {
                what: BUNDLE,
                count,
            });
        }
    };
    let leaf = leaf_index(&found.certs, key.local_key_id.as_deref())
        .ok_or(TlsConfigError::NoCertificate { what: BUNDLE })?;
    let mut remaining = found.certs;
    let leaf = remaining.remove(leaf);
    let mut chain = vec![leaf.der];
    // The issuers, as far as the bundle has them (each used once: no loop).
    while let Some((issuer, _)) = chain.last().and_then(|cert| issuer_and_subject(cert)) {
        let Some(next) = remaining.iter().position(|candidate| {
            issuer_and_subject(&candidate.der).is_some_and(|(_, subject)| subject == issuer)
        }) else {
            break;
        };
        let next = remaining.remove(next);
        let self_signed =
            issuer_and_subject(&next.der).is_some_and(|(issuer, subject)| issuer == subject);
        chain.push(next.der);
        if self_signed {
            break;
        }
    }
    let mut key_der = key.der;
    Ok(Identity {
        chain: chain.into_iter().map(CertificateDer::from).collect(),
        // Moved out of the zeroizing buffer, not copied: rustls owns the key now.
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(std::mem::take(&mut *key_der))),
    })
}

/// Which certificate is the key's: the one with the key's `localKeyId`; else the only one;
/// else the only one that issued none of the others (the leaf).
fn leaf_index(certs: &[FoundCert], key_id: Option<&[u8]>) -> Option<usize> {
    if let Some(id) = key_id
        && let Some(index) = certs
            .iter()
            .position(|cert| cert.local_key_id.as_deref() == Some(id))
    {
        return Some(index);
    }
    if certs.len() == 1 {
        return Some(0);
    }
    let subjects: Vec<Option<&[u8]>> = certs
        .iter()
        .map(|cert| issuer_and_subject(&cert.der).map(|(_, subject)| subject))
        .collect();
    let mut leaves = certs.iter().enumerate().filter(|(index, _)| {
        subjects[*index].is_some_and(|subject| {
            !certs.iter().enumerate().any(|(other, cert)| {
                other != *index
                    && issuer_and_subject(&cert.der).is_some_and(|(issuer, _)| issuer == subject)
            })
        })
    });
    match (leaves.next(), leaves.next()) {
        (Some((index, _)), None) => Some(index),
        _ => None,
    }
}

/// Whether `text` holds an encrypted PKCS#8 PEM block.
pub(super) fn is_encrypted_pem_key(text: &[u8]) -> bool {
    find(text, b"-----BEGIN ENCRYPTED PRIVATE KEY-----").is_some()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// Decrypts the first `ENCRYPTED PRIVATE KEY` PEM block of `text` with `password`.
pub(super) fn decrypt_pem_key(
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

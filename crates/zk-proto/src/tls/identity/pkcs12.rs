//! PKCS#12 bundles (`.p12`, `.pfx`): the MAC checked, the bags read (decrypted where they
//! are), and the client identity found in them: the one private key, its certificate and
//! that certificate's issuers.

use der::asn1::{AnyRef, OctetStringRef};
use der::{Decode, Encode, Reader, SliceReader, Tag, TagNumber, Tagged};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use zeroize::Zeroizing;

use super::asn1::{
    Attribute, CertBag, ContentInfo, EncryptedData, EncryptedPrivateKeyInfo, Pfx, SafeBag,
};
use super::common::{
    BUNDLE, BUNDLE_KEY, Identity, MAX_NESTING, algorithm_name, check_pkcs8, der_error, malformed,
    unsupported,
};
use super::oids;
use super::pbe::{Password, decrypt, verify_mac};
use crate::TlsConfigError;

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
pub(in crate::tls) fn read_pkcs12(
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

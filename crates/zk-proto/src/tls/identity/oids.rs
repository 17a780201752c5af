//! The object identifiers a bundle or an encrypted key is read by.

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

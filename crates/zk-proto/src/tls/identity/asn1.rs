//! The ASN.1 structures of a PKCS#12 bundle and of an encrypted key (RFC 7292, RFC 5652,
//! RFC 5958), decoded in place: each borrows from the input.

use der::Sequence;
use der::asn1::{AnyRef, ObjectIdentifier, OctetStringRef};
use pkcs8::spki::AlgorithmIdentifierRef;

/// `PFX ::= SEQUENCE { version INTEGER {v3(3)}, authSafe ContentInfo, macData MacData OPTIONAL }`
#[derive(Sequence)]
pub(super) struct Pfx<'a> {
    pub(super) version: u8,
    pub(super) auth_safe: ContentInfo<'a>,
    pub(super) mac_data: Option<MacData<'a>>,
}

/// `ContentInfo ::= SEQUENCE { contentType OID, content [0] EXPLICIT ANY OPTIONAL }`
#[derive(Sequence)]
pub(super) struct ContentInfo<'a> {
    pub(super) content_type: ObjectIdentifier,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT", optional = "true")]
    pub(super) content: Option<AnyRef<'a>>,
}

/// `MacData ::= SEQUENCE { mac DigestInfo, macSalt OCTET STRING, iterations INTEGER DEFAULT 1 }`
#[derive(Sequence)]
pub(super) struct MacData<'a> {
    pub(super) mac: DigestInfo<'a>,
    pub(super) salt: &'a OctetStringRef,
    pub(super) iterations: Option<u64>,
}

/// `DigestInfo ::= SEQUENCE { digestAlgorithm AlgorithmIdentifier, digest OCTET STRING }`
#[derive(Sequence)]
pub(super) struct DigestInfo<'a> {
    pub(super) algorithm: AlgorithmIdentifierRef<'a>,
    pub(super) digest: &'a OctetStringRef,
}

/// `EncryptedData ::= SEQUENCE { version, encryptedContentInfo, unprotectedAttrs [1] OPTIONAL }`
/// (the attributes, which nothing writes in a bundle, taken as anything).
#[derive(Sequence)]
pub(super) struct EncryptedData<'a> {
    pub(super) version: u8,
    pub(super) info: EncryptedContentInfo<'a>,
    pub(super) unprotected: Option<AnyRef<'a>>,
}

/// `EncryptedContentInfo ::= SEQUENCE { contentType, contentEncryptionAlgorithm,
/// encryptedContent [0] IMPLICIT OCTET STRING OPTIONAL }`
#[derive(Sequence)]
pub(super) struct EncryptedContentInfo<'a> {
    pub(super) content_type: ObjectIdentifier,
    pub(super) algorithm: AlgorithmIdentifierRef<'a>,
    #[asn1(context_specific = "0", tag_mode = "IMPLICIT", optional = "true")]
    pub(super) content: Option<&'a OctetStringRef>,
}

/// `SafeBag ::= SEQUENCE { bagId OID, bagValue [0] EXPLICIT ANY, bagAttributes SET OF OPTIONAL }`
#[derive(Sequence)]
pub(super) struct SafeBag<'a> {
    pub(super) id: ObjectIdentifier,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT")]
    pub(super) value: AnyRef<'a>,
    pub(super) attributes: Option<AnyRef<'a>>,
}

/// `PKCS12Attribute ::= SEQUENCE { attrId OID, attrValues SET OF ANY }`
#[derive(Sequence)]
pub(super) struct Attribute<'a> {
    pub(super) id: ObjectIdentifier,
    pub(super) values: AnyRef<'a>,
}

/// `CertBag ::= SEQUENCE { certId OID, certValue [0] EXPLICIT OCTET STRING }`
#[derive(Sequence)]
pub(super) struct CertBag<'a> {
    pub(super) id: ObjectIdentifier,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT")]
    pub(super) value: &'a OctetStringRef,
}

/// `EncryptedPrivateKeyInfo ::= SEQUENCE { encryptionAlgorithm, encryptedData OCTET STRING }`
#[derive(Sequence)]
pub(super) struct EncryptedPrivateKeyInfo<'a> {
    pub(super) algorithm: AlgorithmIdentifierRef<'a>,
    pub(super) data: &'a OctetStringRef,
}

/// `pkcs-12PbeParams ::= SEQUENCE { salt OCTET STRING, iterations INTEGER }`
#[derive(Sequence)]
pub(super) struct Pkcs12PbeParams<'a> {
    pub(super) salt: &'a OctetStringRef,
    pub(super) iterations: u64,
}

//! The TLS settings: what they accept, the typed errors of those they refuse, client
//! identities in every form (PEM, encrypted PKCS#8, PKCS#12 of OpenSSL and keytool), and
//! `Debug` output without secrets.

use super::*;
use crate::connect_string::TlsParams;

fn certs() -> (tempdir::Dir, zk_testkit::TestCerts) {
    let dir = tempdir::Dir::new();
    let certs = zk_testkit::TestCerts::generate(&dir.0).expect("certificates");
    (dir, certs)
}

/// A directory removed on drop.
mod tempdir {
    pub(super) struct Dir(pub(super) std::path::PathBuf);

    impl Dir {
        pub(super) fn new() -> Dir {
            static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Dir(std::env::temp_dir().join(format!("zk-proto-tls-{}-{n}", std::process::id())))
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn error(options: &TlsOptions) -> TlsConfigError {
    options.connector().expect_err("unusable settings")
}

#[test]
fn valid_settings_make_a_connector() {
    let (_dir, certs) = certs();
    let connector = TlsOptions::new()
        .ca_pem_file(certs.ca())
        .client_cert_pem_files(certs.client_cert(), certs.client_key())
        .connector()
        .expect("usable");
    assert!(connector.client_cert);
    let pem = std::fs::read(certs.ca()).expect("read");
    TlsOptions::new()
        .ca_pem(&pem)
        .connector()
        .expect("inline PEM");
}

#[test]
fn unusable_settings_are_typed_errors() {
    let (_dir, certs) = certs();
    assert!(matches!(
        error(&TlsOptions::new().ca_pem_file("/nonexistent/ca.pem")),
        TlsConfigError::ReadFile {
            what: "the CA certificates",
            ..
        }
    ));
    assert!(matches!(
        error(&TlsOptions::new().ca_pem("not a certificate")),
        TlsConfigError::Pem {
            what: "the CA certificates",
            ..
        }
    ));
    // A key where the client certificate should be, and the other way round.
    let swapped = TlsOptions::new()
        .ca_pem_file(certs.ca())
        .client_cert_pem_files(certs.client_key(), certs.client_cert());
    assert!(matches!(
        error(&swapped),
        TlsConfigError::Pem {
            what: "the client certificate",
            ..
        }
    ));
    // A certificate with another certificate's key.
    let mismatched = TlsOptions::new()
        .ca_pem_file(certs.ca())
        .client_cert_pem_files(certs.client_cert(), certs.other_client_key());
    assert!(matches!(error(&mismatched), TlsConfigError::Rejected(_)));
    assert_eq!(
        error(
            &TlsOptions::new()
                .ca_pem_file(certs.ca())
                .server_name("not a name")
        ),
        TlsConfigError::InvalidServerName("not a name".into())
    );
}

#[test]
fn hosts_are_checked_unless_a_server_name_is_fixed() {
    let (_dir, certs) = certs();
    let hosts = [
        HostAddr::new("zk1.example", 2281),
        HostAddr::new("fe80::1%eth0", 2281),
    ];
    let options = TlsOptions::new().ca_pem_file(certs.ca());
    options
        .connector()
        .expect("usable")
        .check_hosts(&hosts)
        .expect("names and addresses");
    let odd = [HostAddr::new("zk 1", 2281)];
    assert_eq!(
        options.connector().expect("usable").check_hosts(&odd),
        Err(TlsConfigError::InvalidServerName("zk 1".into()))
    );
    let fixed = options
        .server_name("zk.example")
        .connector()
        .expect("usable");
    fixed
        .check_hosts(&odd)
        .expect("the fixed name is verified instead");
}

#[test]
fn a_file_that_is_not_pem_says_what_it_is() {
    let der = [0x30, 0x82, 0x01, 0x0a, 0x30, 0x82, 0x00, 0x10];
    assert!(not_pem(&der).is_some_and(|hint| hint.contains("DER")));
    let pkcs12 = [0x30, 0x82, 0x09, 0x00, 0x02, 0x01, 0x03, 0x30];
    assert!(not_pem(&pkcs12).is_some_and(
        |hint| hint.contains("PKCS#12") && hint.contains("client_identity_pkcs12_file")
    ));
    let encrypted =
        b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIF\n-----END ENCRYPTED PRIVATE KEY-----\n";
    assert!(not_pem(encrypted).is_some_and(
        |hint| hint.contains("encrypted PKCS#8") && hint.contains("client_key_password")
    ));
    let traditional = b"-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n";
    assert!(not_pem(traditional).is_some_and(|hint| hint.contains("pkcs8 -topk8")));
    assert_eq!(not_pem(b"garbage"), None);
    let error = parse_certs(&pkcs12, "the CA").expect_err("not PEM");
    assert!(error.to_string().contains("PKCS#12"), "{error}");
}

const PASSWORD: &str = "correct horse";

fn identity_error(options: TlsOptions) -> TlsConfigError {
    match options.client_identity() {
        Ok(_) => panic!("an unusable identity was read"),
        Err(error) => error,
    }
}

/// A bundle of every writer opens with its password: the client's certificate first,
/// then the CA that issued it, and a key rustls takes.
#[test]
fn pkcs12_bundles_of_openssl_and_keytool_are_read() {
    let (_dir, certs) = certs();
    let client = std::fs::read(certs.client_cert()).expect("read");
    let client = CertificateDer::from_pem_slice(&client).expect("PEM");
    let ca = std::fs::read(certs.ca()).expect("read");
    let ca = CertificateDer::from_pem_slice(&ca).expect("PEM");
    for tool in [
        zk_testkit::Pkcs12Tool::OpenSsl,
        zk_testkit::Pkcs12Tool::OpenSslLegacy,
        zk_testkit::Pkcs12Tool::Keytool,
    ] {
        let bundle = certs.client_pkcs12(PASSWORD, tool).expect("bundle");
        let bytes = std::fs::read(&bundle).expect("read");
        let identity = identity::read_pkcs12(&bytes, PASSWORD.as_bytes(), None)
            .unwrap_or_else(|error| panic!("{tool:?}: {error}"));
        assert_eq!(identity.chain, [client.clone(), ca.clone()], "{tool:?}");
        let connector = TlsOptions::new()
            .ca_pem_file(certs.ca())
            .client_identity_pkcs12_file(&bundle, PASSWORD)
            .connector()
            .unwrap_or_else(|error| panic!("{tool:?}: {error}"));
        assert!(connector.client_cert);
        TlsOptions::new()
            .ca_pem_file(certs.ca())
            .client_identity_pkcs12(&bytes, PASSWORD)
            .connector()
            .expect("the bundle's bytes");
    }
}

/// Other shapes OpenSSL writes: triple DES with a SHA-1 MAC, no MAC, no password, no CA.
#[test]
fn pkcs12_bundles_of_other_shapes_are_read() {
    let (_dir, certs) = certs();
    let (cert, key) = (certs.client_cert(), certs.client_key());
    let read = |file: &str, password: &str, extra: &[&str]| {
        let bundle = certs
            .pkcs12_with(file, &cert, &key, password, extra)
            .expect("bundle");
        let bytes = std::fs::read(bundle).expect("read");
        identity::read_pkcs12(&bytes, password.as_bytes(), None)
    };
    let des = [
        "-certpbe",
        "PBE-SHA1-3DES",
        "-keypbe",
        "PBE-SHA1-3DES",
        "-macalg",
        "sha1",
    ];
    let identity = read("3des.p12", PASSWORD, &des).expect("3DES, SHA-1 MAC");
    assert_eq!(identity.chain.len(), 1, "no CA in the bundle");
    read("nomac.p12", PASSWORD, &["-nomac"]).expect("no MAC");
    read("empty.p12", "", &[]).expect("an empty password");
    read(
        "plain.p12",
        PASSWORD,
        &["-keypbe", "NONE", "-certpbe", "NONE"],
    )
    .expect("nothing encrypted");
    read(
        "sha512.p12",
        PASSWORD,
        &["-macalg", "sha512", "-iter", "5000"],
    )
    .expect("SHA-512 MAC");
    // Without a MAC, a wrong password shows in the decryption.
    let bundle = certs
        .pkcs12_with("nomac.p12", &cert, &key, PASSWORD, &["-nomac"])
        .expect("bundle");
    let bytes = std::fs::read(bundle).expect("read");
    assert!(matches!(
        identity::read_pkcs12(&bytes, b"wrong", None),
        Err(TlsConfigError::WrongPassword { .. })
    ));
}

#[test]
fn unusable_pkcs12_bundles_are_typed_errors() {
    let (_dir, certs) = certs();
    let (cert, key) = (certs.client_cert(), certs.client_key());
    let bundle = |file: &str, extra: &[&str]| {
        certs
            .pkcs12_with(file, &cert, &key, PASSWORD, extra)
            .expect("bundle")
    };
    let options = |path: &std::path::Path, password: &str| {
        TlsOptions::new()
            .ca_pem_file(certs.ca())
            .client_identity_pkcs12_file(path, password)
    };
    let good = bundle("good.p12", &[]);
    let error = identity_error(options(&good, "wrong"));
    assert_eq!(
        error,
        TlsConfigError::WrongPassword {
            what: "the client PKCS#12 bundle"
        }
    );
    assert!(error.to_string().contains("wrong password"), "{error}");
    assert!(matches!(
        identity_error(options(&good, "")),
        TlsConfigError::WrongPassword { .. }
    ));
    let no_key = bundle("nokey.p12", &["-nokeys"]);
    let error = identity_error(options(&no_key, PASSWORD));
    assert!(
        matches!(error, TlsConfigError::NoPrivateKey { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("no private key"), "{error}");
    let no_cert = bundle("nocert.p12", &["-nocerts"]);
    let error = identity_error(options(&no_cert, PASSWORD));
    assert!(
        matches!(error, TlsConfigError::NoCertificate { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("no certificate"), "{error}");
    // RC4 (legacy), and Camellia in PBES2: named in the error.
    let rc4 = bundle(
        "rc4.p12",
        &[
            "-legacy",
            "-keypbe",
            "PBE-SHA1-RC4-128",
            "-certpbe",
            "PBE-SHA1-RC4-128",
        ],
    );
    let error = identity_error(options(&rc4, PASSWORD));
    assert!(
        matches!(&error, TlsConfigError::UnsupportedAlgorithm { algorithm, .. } if algorithm.contains("RC4")),
        "{error:?}"
    );
    let camellia = bundle(
        "camellia.p12",
        &[
            "-keypbe",
            "camellia-256-cbc",
            "-certpbe",
            "camellia-256-cbc",
        ],
    );
    let error = identity_error(options(&camellia, PASSWORD));
    assert!(
        matches!(&error, TlsConfigError::UnsupportedAlgorithm { what: "the client PKCS#12 bundle", algorithm } if algorithm.contains("camellia-256-cbc")),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("unsupported algorithm"),
        "{error}"
    );
    // Not a bundle: PEM, garbage, a truncated bundle.
    let error = identity_error(options(&certs.client_cert(), PASSWORD));
    assert!(
        matches!(error, TlsConfigError::Malformed { .. }),
        "{error:?}"
    );
    let bytes = std::fs::read(&good).expect("read");
    for broken in [
        &bytes[..bytes.len() / 2],
        &b"\x30\x84\xff\xff\xff\xff"[..],
        &[],
    ] {
        let error = identity_error(TlsOptions::new().client_identity_pkcs12(broken, PASSWORD));
        assert!(
            matches!(error, TlsConfigError::Malformed { .. }),
            "{error:?}"
        );
    }
    assert!(matches!(
        identity_error(options(std::path::Path::new("/nonexistent.p12"), PASSWORD)),
        TlsConfigError::ReadFile { .. }
    ));
    // A bundle of another certificate's key and certificate: rustls sees the mismatch.
    let mismatched = certs
        .pkcs12_with(
            "mismatched.p12",
            &certs.other_client_cert(),
            &certs.other_client_key(),
            PASSWORD,
            &[],
        )
        .expect("bundle");
    options(&mismatched, PASSWORD)
        .connector()
        .expect("a consistent bundle of another CA is usable");
}

#[test]
fn encrypted_pkcs8_keys_are_decrypted_with_their_password() {
    let (_dir, certs) = certs();
    for (scheme, tag) in [
        (&["-v2", "aes-256-cbc"][..], "aes256"),
        (
            &["-v2", "aes-128-cbc", "-v2prf", "hmacWithSHA1"][..],
            "aes128-sha1",
        ),
        (&["-v2", "des3"][..], "des3"),
        (&["-scrypt"][..], "scrypt"),
        (&["-v1", "PBE-SHA1-3DES"][..], "pbe-sha1-3des"),
    ] {
        let key = certs
            .client_key_encrypted(PASSWORD, scheme, tag)
            .expect("encrypted key");
        let connector = TlsOptions::new()
            .ca_pem_file(certs.ca())
            .client_cert_pem_files(certs.client_cert(), &key)
            .client_key_password(PASSWORD)
            .connector()
            .unwrap_or_else(|error| panic!("{tag}: {error}"));
        assert!(connector.client_cert);
    }
    let key = certs
        .client_key_encrypted(PASSWORD, &["-v2", "aes-256-cbc"], "aes256")
        .expect("encrypted key");
    let options = TlsOptions::new()
        .ca_pem_file(certs.ca())
        .client_cert_pem_files(certs.client_cert(), &key);
    let error = identity_error(options.clone());
    assert_eq!(
        error,
        TlsConfigError::PasswordRequired {
            what: "the client key"
        }
    );
    assert!(error.to_string().contains("client_key_password"), "{error}");
    let error = identity_error(options.clone().client_key_password("wrong"));
    assert!(
        matches!(error, TlsConfigError::WrongPassword { .. }),
        "{error:?}"
    );
    // A password for a key that is not encrypted is not needed, and harmless.
    TlsOptions::new()
        .ca_pem_file(certs.ca())
        .client_cert_pem_files(certs.client_cert(), certs.client_key())
        .client_key_password("unused")
        .connector()
        .expect("a plain key");
    let camellia = certs
        .client_key_encrypted(PASSWORD, &["-v2", "camellia-256-cbc"], "camellia")
        .expect("encrypted key");
    let error = identity_error(
        TlsOptions::new()
            .client_cert_pem_files(certs.client_cert(), &camellia)
            .client_key_password(PASSWORD),
    );
    assert!(
        matches!(error, TlsConfigError::UnsupportedAlgorithm { .. }),
        "{error:?}"
    );
    // A damaged block.
    let error = identity_error(TlsOptions::new().client_cert_pem(
        std::fs::read(certs.client_cert()).expect("read"),
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB!!\n-----END ENCRYPTED PRIVATE KEY-----\n",
    ).client_key_password(PASSWORD));
    assert!(
        matches!(error, TlsConfigError::Malformed { .. }),
        "{error:?}"
    );
}

#[test]
fn passwords_are_read_from_files_without_their_line_end() {
    let (dir, certs) = certs();
    let bundle = certs
        .client_pkcs12(PASSWORD, zk_testkit::Pkcs12Tool::OpenSsl)
        .expect("bundle");
    let password_file = dir.0.join("password");
    for written in [
        format!("{PASSWORD}\n"),
        format!("{PASSWORD}\r\n"),
        PASSWORD.to_owned(),
    ] {
        std::fs::write(&password_file, written).expect("write");
        // TlsParams is zk-session's, and non-exhaustive: built field by field.
        let mut params = TlsParams::default();
        params.ca_file = Some(certs.ca());
        params.keystore_file = Some(bundle.clone());
        params.keystore_password_file = Some(password_file.clone());
        TlsOptions::from_params(&params)
            .connector()
            .expect("the password from its file");
    }
    let mut params = TlsParams::default();
    params.keystore_file = Some(bundle);
    params.keystore_password_file = Some(dir.0.join("missing"));
    assert!(matches!(
        identity_error(TlsOptions::from_params(&params)),
        TlsConfigError::ReadFile { .. }
    ));
}

#[test]
fn debug_never_shows_a_key() {
    let options = TlsOptions::new().client_cert_pem("CERT", "-----BEGIN PRIVATE KEY-----secret");
    let shown = format!("{options:?}");
    assert!(!shown.contains("secret"), "{shown}");
    assert!(shown.contains("bytes>"), "{shown}");
}

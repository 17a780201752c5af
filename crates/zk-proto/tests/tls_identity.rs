//! Client identities that need decoding or decrypting, against real ZooKeeper 3.8 servers
//! that need a client certificate (`ssl.clientAuth=need`): PKCS#12 bundles written by the
//! real tools (`openssl pkcs12 -export`, with OpenSSL 3's defaults and with `-legacy`, and
//! Java's `keytool -importkeystore`), and an encrypted PKCS#8 key (`openssl pkcs8 -topk8 -v2
//! aes-256-cbc`). A wrong password is a typed error before anything is dialed; a bundle whose
//! certificate the server does not trust is refused by the server, once.
#![cfg(feature = "tls")]

mod support;

use std::time::Duration;

use support::tls::{certs, refused, secure, tls_server, trusting};
use zk_proto::{
    ClientBuilder, CreateOptions, Error, SessionState, TlsConfigError, TlsFailure, TlsOptions,
};
use zk_testkit::client::{builder, connect_with, within};
use zk_testkit::{ClientAuth, Pkcs12Tool, TestCerts, ZkServer};

/// The password the bundles and keys are written with (keytool wants 6 characters or more).
const PASSWORD: &str = "tr0ub4dor&3 horse";

async fn server_needing_a_client_certificate() -> ZkServer {
    tls_server(ClientAuth::Need).await
}

/// A session's requests work, and the server authenticated the test CA's client certificate
/// (its `x509` identity is the certificate's subject).
async fn works_as_the_client(builder: ClientBuilder, connect_string: &str, node: &str) {
    let client = connect_with(builder, connect_string).await;
    assert_eq!(client.state(), SessionState::Connected);
    client
        .create(node, "v", &CreateOptions::persistent())
        .await
        .expect("create");
    let (data, _) = client.get_data(node).await.expect("getData");
    assert_eq!(&data[..], b"v");
    // ZooKeeper authenticates a client certificate as `x509:<its subject>`.
    let identities = client.who_am_i().await.expect("whoAmI");
    assert!(
        identities
            .iter()
            .any(|id| id.auth_scheme == "x509" && id.user == "CN=zk-testkit client"),
        "{identities:?}"
    );
    client.close().await.expect("close");
}

#[tokio::test]
async fn pkcs12_bundles_of_openssl_and_keytool_are_accepted_by_a_server_that_needs_a_client_certificate()
 {
    let server = server_needing_a_client_certificate().await;
    let certs = certs(&server);
    for tool in [
        Pkcs12Tool::OpenSsl,
        Pkcs12Tool::Keytool,
        Pkcs12Tool::OpenSslLegacy,
    ] {
        let bundle = certs.client_pkcs12(PASSWORD, tool).expect("the bundle");
        let options = trusting(certs).client_identity_pkcs12_file(&bundle, PASSWORD);
        works_as_the_client(
            builder().tls(options),
            &secure(&server),
            &format!("/pkcs12-{tool:?}"),
        )
        .await;
        // The bundle's bytes rather than its file.
        let bytes = std::fs::read(&bundle).expect("read the bundle");
        let options = trusting(certs).client_identity_pkcs12(bytes, PASSWORD);
        works_as_the_client(
            builder().tls(options),
            &secure(&server),
            &format!("/pkcs12-bytes-{tool:?}"),
        )
        .await;
    }
}

#[tokio::test]
async fn an_encrypted_pkcs8_key_is_accepted_with_its_password() {
    let server = server_needing_a_client_certificate().await;
    let certs = certs(&server);
    let key = certs.encrypted_client_key(PASSWORD, &["-v2", "aes-256-cbc"], "aes256");
    let options = trusting(certs)
        .client_cert_pem_files(certs.client_cert(), &key)
        .client_key_password(PASSWORD);
    works_as_the_client(builder().tls(options), &secure(&server), "/encrypted-key").await;
}

#[tokio::test]
async fn the_connect_string_gives_the_bundle_and_the_passwords_files() {
    let server = server_needing_a_client_certificate().await;
    let certs = certs(&server);
    let bundle = certs
        .client_pkcs12(PASSWORD, Pkcs12Tool::Keytool)
        .expect("the bundle");
    let password_file = certs.dir().join("keystore-password");
    std::fs::write(&password_file, format!("{PASSWORD}\n")).expect("write the password");
    let connect_string = format!(
        "zk+tls://{}?ca={}&keystore={}&keystore_password_file={}",
        secure(&server),
        certs.ca().display(),
        bundle.display(),
        password_file.display()
    );
    works_as_the_client(builder(), &connect_string, "/from-the-connect-string").await;

    let key = certs
        .client_key_encrypted(PASSWORD, &["-v2", "aes-256-cbc"], "aes256-cs")
        .expect("the encrypted key");
    let connect_string = format!(
        "zk+tls://{}?ca={}&cert={}&key={}&key_password_file={}",
        secure(&server),
        certs.ca().display(),
        certs.client_cert().display(),
        key.display(),
        password_file.display()
    );
    works_as_the_client(
        builder(),
        &connect_string,
        "/encrypted-from-the-connect-string",
    )
    .await;
}

/// Connects with `options` to a listener that must see no connection at all: the error,
/// which must come before anything is dialed.
async fn fails_before_dialing(options: TlsOptions) -> TlsConfigError {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("non-blocking");
    let address = listener.local_addr().expect("address");
    let result = within(
        "a connect with unusable TLS settings",
        Duration::from_secs(30),
        builder()
            .connect_timeout(Some(Duration::from_secs(20)))
            .tls(options)
            .connect(&address.to_string()),
    )
    .await;
    let error = match result {
        Err(Error::TlsConfig(error)) => error,
        Err(other) => panic!("expected a TLS configuration error, got {other:?}"),
        Ok(_) => panic!("connected with unusable TLS settings"),
    };
    // A dial would have completed its TCP handshake (the kernel queues it) before the
    // client could have got anything back from it.
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        Err(e) => panic!("accept: {e}"),
        Ok((_, peer)) => panic!("the client dialed ({peer}) despite unusable settings"),
    }
    error
}

#[tokio::test]
async fn a_wrong_password_is_a_typed_error_before_anything_is_dialed() {
    let dir = std::env::temp_dir().join(format!("zk-proto-tls-identity-{}", std::process::id()));
    let certs = TestCerts::generate(&dir).expect("certificates");
    for tool in [Pkcs12Tool::OpenSsl, Pkcs12Tool::Keytool] {
        let bundle = certs.client_pkcs12(PASSWORD, tool).expect("the bundle");
        let error =
            fails_before_dialing(trusting(&certs).client_identity_pkcs12_file(&bundle, "wrong"))
                .await;
        assert!(
            matches!(error, TlsConfigError::WrongPassword { .. }),
            "{tool:?}: {error:?}"
        );
        assert!(error.to_string().contains("wrong password"), "{error}");
    }
    let key = certs
        .client_key_encrypted(PASSWORD, &["-v2", "aes-256-cbc"], "aes256-wrong")
        .expect("the encrypted key");
    let with_key = trusting(&certs).client_cert_pem_files(certs.client_cert(), &key);
    let error = fails_before_dialing(with_key.clone().client_key_password("wrong")).await;
    assert!(
        matches!(error, TlsConfigError::WrongPassword { .. }),
        "{error:?}"
    );
    let error = fails_before_dialing(with_key).await;
    assert!(
        matches!(error, TlsConfigError::PasswordRequired { .. }),
        "{error:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_bundle_whose_certificate_the_server_does_not_trust_is_refused_once() {
    let server = server_needing_a_client_certificate().await;
    let certs = certs(&server);
    // The server serves TLS first: a freshly started server's TLS port now and then takes
    // longer than an attempt's budget to accept its first connection (a transient failure,
    // retried), which is not what this test is about.
    let trusted = certs
        .client_pkcs12(PASSWORD, Pkcs12Tool::OpenSsl)
        .expect("the bundle");
    let options = trusting(certs).client_identity_pkcs12_file(&trusted, PASSWORD);
    works_as_the_client(builder().tls(options), &secure(&server), "/trusted-first").await;
    let bundle = certs
        .other_client_pkcs12(PASSWORD, Pkcs12Tool::OpenSsl)
        .expect("the bundle");
    // Refused for good, fast, after one attempt (no storm): `refused` checks all three.
    let failure = refused(
        trusting(certs).client_identity_pkcs12_file(&bundle, PASSWORD),
        &secure(&server),
        1,
    )
    .await;
    assert!(
        matches!(failure, TlsFailure::ClientCertificateRejected { .. }),
        "{failure:?}"
    );
}

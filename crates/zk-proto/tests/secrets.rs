//! No `Debug` output contains a secret: the session password (through a client, its
//! published state, a builder given `resume`), `addAuth` credentials, a SASL password, a TLS
//! private key, the passwords of a TLS client identity. Every public configuration and
//! client type is formatted with its secrets set, against a real server, and the output
//! searched for each secret in the forms a derived `Debug` would print it. (With the `tls`
//! feature: the builder is given a TLS key too, and the passwords of a PKCS#12 bundle and of
//! an encrypted key.)

#![cfg(feature = "tls")]

mod support;

use zk_proto::sasl::SaslConfig;
use zk_proto::{Client, ClientBuilder, Secret, TlsOptions};
use zk_testkit::client::connect;

/// The renderings of `secret` that a `Debug` could print: as text, as a `Bytes`/`[u8]`
/// debug, as hex.
fn renderings(secret: &[u8]) -> Vec<String> {
    let mut forms = vec![
        format!("{:?}", bytes::Bytes::copy_from_slice(secret)),
        format!("{secret:?}"),
        secret.iter().map(|b| format!("{b:02x}")).collect(),
    ];
    if let Ok(text) = std::str::from_utf8(secret)
        && !text.is_empty()
    {
        forms.push(text.to_owned());
    }
    forms
}

fn assert_hidden(what: &str, printed: &str, secret: &[u8]) {
    for form in renderings(secret) {
        assert!(
            !printed.contains(&form),
            "{what} shows a secret ({form}): {printed}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_debug_output_shows_a_secret() {
    let server = support::server().await;
    let client: Client = connect(&server.connect_string()).await;
    let credential = "alice:correct-horse-battery";
    client
        .add_digest_auth("alice", "correct-horse-battery")
        .await
        .expect("addAuth");
    let password = client.session_password();
    assert_eq!(password.len(), 16);
    assert!(password.expose().iter().any(|b| *b != 0), "a real password");

    let printed = format!("{client:?} {client:#?}");
    assert_hidden("Client", &printed, password.expose());
    assert_hidden("Client", &printed, credential.as_bytes());
    assert_hidden("Secret", &format!("{password:?}"), password.expose());

    let key = "-----BEGIN PRIVATE KEY-----\nTUlJRXZRSUJBREFOQmdrcWhraUc5dzBCQVFFRkFBU0NCS2N3Z2dTakFnRUFBb0lCQVFD\n-----END PRIVATE KEY-----\n";
    let builder = ClientBuilder::default()
        .resume(client.session_id(), password.clone())
        .sasl(SaslConfig::digest_md5("bob", "tr0ub4dor&3"))
        .tls(TlsOptions::new().client_cert_pem("-----BEGIN CERTIFICATE-----\n", key));
    let printed = format!("{builder:?} {builder:#?}");
    assert_hidden("ClientBuilder", &printed, password.expose());
    assert_hidden("ClientBuilder", &printed, b"tr0ub4dor&3");
    assert_hidden("ClientBuilder", &printed, key.as_bytes());
    assert_hidden(
        "ClientBuilder",
        &printed,
        b"TUlJRXZRSUJBREFOQmdrcWhraUc5dzBCQVFF",
    );

    // The passwords of a PKCS#12 bundle and of an encrypted key.
    let bundle_password = "pkcs12-bundle-passphrase";
    let key_password = "encrypted-key-passphrase";
    for tls in [
        TlsOptions::new()
            .client_identity_pkcs12(b"\x30\x82bundle", bundle_password)
            .client_key_password(key_password),
        TlsOptions::new()
            .client_identity_pkcs12_file("/etc/zk/client.p12", bundle_password)
            .client_key_password(key_password),
        TlsOptions::new()
            .client_cert_pem(
                "-----BEGIN CERTIFICATE-----\n",
                "-----BEGIN ENCRYPTED PRIVATE KEY-----\n",
            )
            .client_key_password(key_password),
    ] {
        let builder = ClientBuilder::default().tls(tls.clone());
        let printed = format!("{tls:?} {tls:#?} {builder:?} {builder:#?}");
        assert_hidden("TlsOptions", &printed, bundle_password.as_bytes());
        assert_hidden("TlsOptions", &printed, key_password.as_bytes());
    }

    let resumed = Secret::from(password.expose());
    assert_eq!(resumed, password);
    client.close().await.expect("close");
}

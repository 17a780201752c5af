//! `rzk` against secured servers, as a user would run it: SASL DIGEST-MD5 (`--sasl` or
//! `RZK_SASL`) and TLS (`--tls-ca`, `--tls-cert`/`--tls-key`), with their exit statuses.

mod support;

use support::rzk;
use zk_testkit::client::{serial, server_builder, start_server_with};
use zk_testkit::{ClientAuth, DigestJaas};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_sessions_are_their_user_and_a_wrong_password_is_an_auth_failure() {
    let _serial = serial().await;
    let jaas = DigestJaas::write(&[("bob", "bob-secret")]).expect("write the JAAS file");
    let server = start_server_with(server_builder().sasl_digest(&jaas)).await;
    let zk = server.connect_string();
    let run = rzk(&zk, &["--sasl", "bob:bob-secret", "whoami", "--json"])
        .await
        .expect(0, "whoami with SASL");
    let identities = run.json();
    let text = identities.to_string();
    assert!(
        text.contains("\"sasl\"") && text.contains("\"bob\""),
        "{identities}"
    );
    let run = rzk(&zk, &["--sasl", "bob:wrong", "whoami"])
        .await
        .expect(5, "a wrong password");
    run.one_error_line("cannot connect");
    let run = rzk(&zk, &["--sasl", "no-colon", "whoami"])
        .await
        .expect(2, "a malformed --sasl");
    run.one_error_line("--sasl");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_options_reach_a_tls_server_and_plaintext_to_its_port_is_a_connection_failure() {
    let _serial = serial().await;
    let server = start_server_with(server_builder().tls(ClientAuth::Need)).await;
    let tls = server.tls_connect_string().expect("a TLS port");
    let certs = server.tls_certs().expect("certificates");
    let (ca, cert, key) = (
        certs.ca().display().to_string(),
        certs.client_cert().display().to_string(),
        certs.client_key().display().to_string(),
    );
    let secured = [
        "--tls-ca",
        ca.as_str(),
        "--tls-cert",
        cert.as_str(),
        "--tls-key",
        key.as_str(),
    ];
    let with = |args: &[&'static str]| -> Vec<String> {
        secured
            .iter()
            .map(|s| s.to_string())
            .chain(args.iter().map(|s| s.to_string()))
            .collect()
    };
    let create = with(&["create", "/over-tls", "v"]);
    let create: Vec<&str> = create.iter().map(String::as_str).collect();
    rzk(&tls, &create).await.expect(0, "create over TLS");
    let get = with(&["get", "/over-tls"]);
    let get: Vec<&str> = get.iter().map(String::as_str).collect();
    let run = rzk(&tls, &get).await.expect(0, "get over TLS");
    assert_eq!(run.stdout, "v");
    // Plaintext to the TLS port, and TLS without the client certificate it needs: refused.
    rzk(&tls, &["get", "/over-tls"])
        .await
        .expect(6, "plaintext to a TLS port");
    rzk(&tls, &["--tls-ca", ca.as_str(), "get", "/over-tls"])
        .await
        .expect(6, "no client certificate");
}

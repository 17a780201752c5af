//! `rzk` against secured servers, as a user would run it: SASL DIGEST-MD5 (`--sasl` or
//! `RZK_SASL`) and TLS (`--tls-ca`, `--tls-cert`/`--tls-key`, and the client identity as a
//! PKCS#12 key store, `--tls-keystore`, or an encrypted PKCS#8 key, with their passwords from
//! `RZK_TLS_KEYSTORE_PASSWORD` and `RZK_TLS_KEY_PASSWORD`), with their exit statuses.

mod support;

use std::time::{Duration, Instant};

use support::{Run, command, finish, rzk};
use zk_testkit::client::{serial, server_builder, start_server_with};
use zk_testkit::{ClientAuth, DigestJaas, Pkcs12Tool, ZkServer};

/// The password the key stores and keys are written with (keytool wants 6 characters or
/// more).
const PASSWORD: &str = "tr0ub4dor&3 horse";

/// A password that opens nothing.
const WRONG_PASSWORD: &str = "not-the-password-42";

/// A password that does not open its file must end rzk well before this (its connect
/// timeout in these runs is 30 s): nothing is dialed.
const FAILS_WITHIN: Duration = Duration::from_secs(10);

/// rzk's variables with TLS passwords.
const KEYSTORE_PASSWORD_VARIABLE: &str = "RZK_TLS_KEYSTORE_PASSWORD";
const KEY_PASSWORD_VARIABLE: &str = "RZK_TLS_KEY_PASSWORD";

/// Runs rzk with `args` against `server`, with exactly these of its TLS password variables
/// set (the others removed).
async fn rzk_with_passwords(server: &str, args: &[&str], passwords: &[(&str, &str)]) -> Run {
    let mut command = command(server, args);
    command
        .env_remove(KEYSTORE_PASSWORD_VARIABLE)
        .env_remove(KEY_PASSWORD_VARIABLE);
    for (variable, value) in passwords {
        command.env(variable, value);
    }
    finish(command.spawn().expect("start rzk"), args).await
}

/// Asserts that `run` authenticated as the test kit's client certificate: ZooKeeper makes
/// it the session's `x509` identity.
fn authenticated_as_the_client(run: &Run) {
    let identities = run.json();
    let text = identities.to_string();
    assert!(
        text.contains("\"x509\"") && text.contains("CN=zk-testkit client"),
        "{identities}"
    );
}

/// A wrong or missing password: exit 1 before anything is dialed (a listener that must see
/// no connection stands for the server), one line on stderr saying `says`, the password
/// itself in no output.
async fn refused_before_dialing(args: &[&str], passwords: &[(&str, &str)], says: &[&str]) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("non-blocking");
    let address = listener.local_addr().expect("address").to_string();
    let mut args = args.to_vec();
    args.extend(["--connect-timeout", "30s", "ls", "/"]);
    let started = Instant::now();
    let run = rzk_with_passwords(&address, &args, passwords)
        .await
        .expect(1, "a password that does not open its file");
    let elapsed = started.elapsed();
    assert!(elapsed < FAILS_WITHIN, "failed after {elapsed:?}: {run:?}");
    for part in says {
        run.one_error_line(part);
    }
    for (_, password) in passwords {
        assert!(
            !run.stderr.contains(password) && !run.stdout.contains(password),
            "{run:?}"
        );
    }
    // A dial would have completed its TCP handshake (the kernel queues it) before rzk
    // could have exited.
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        Err(e) => panic!("accept: {e}"),
        Ok((_, peer)) => panic!("rzk dialed ({peer}) with a password that opens nothing"),
    }
}

async fn server_needing_a_client_certificate() -> ZkServer {
    start_server_with(server_builder().tls(ClientAuth::Need)).await
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pkcs12_key_store_with_its_password_from_the_environment_is_the_client_certificate() {
    let _serial = serial().await;
    let server = server_needing_a_client_certificate().await;
    let tls = server.tls_connect_string().expect("a TLS port");
    let certs = server.tls_certs().expect("certificates");
    let ca = certs.ca().display().to_string();
    for tool in [Pkcs12Tool::OpenSsl, Pkcs12Tool::Keytool] {
        let bundle = certs.client_pkcs12(PASSWORD, tool).expect("the key store");
        let bundle = bundle.display().to_string();
        let identity = ["--tls-ca", ca.as_str(), "--tls-keystore", bundle.as_str()];
        let password = [(KEYSTORE_PASSWORD_VARIABLE, PASSWORD)];
        let mut ls = identity.to_vec();
        ls.extend(["ls", "/"]);
        let run = rzk_with_passwords(&tls, &ls, &password)
            .await
            .expect(0, "ls over TLS with a key store");
        assert!(
            run.stdout.lines().any(|line| line == "zookeeper"),
            "{tool:?}: {run:?}"
        );
        let mut whoami = identity.to_vec();
        whoami.extend(["whoami", "--json"]);
        let run = rzk_with_passwords(&tls, &whoami, &password)
            .await
            .expect(0, "whoami over TLS with a key store");
        authenticated_as_the_client(&run);

        // A wrong password names where it came from, and never shows.
        refused_before_dialing(
            &identity,
            &[(KEYSTORE_PASSWORD_VARIABLE, WRONG_PASSWORD)],
            &[
                "wrong password",
                "the password of --tls-keystore, from --tls-keystore-password or RZK_TLS_KEYSTORE_PASSWORD",
            ],
        )
        .await;
        // No password at all: the empty one, which opens nothing either.
        refused_before_dialing(
            &identity,
            &[],
            &["wrong password", "no password was given for --tls-keystore"],
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_encrypted_pkcs8_key_with_its_password_from_the_environment_is_the_client_certificate() {
    let _serial = serial().await;
    let server = server_needing_a_client_certificate().await;
    let tls = server.tls_connect_string().expect("a TLS port");
    let certs = server.tls_certs().expect("certificates");
    let key = certs.encrypted_client_key(PASSWORD, &["-v2", "aes-256-cbc"], "rzk-aes256");
    let (ca, cert, key) = (
        certs.ca().display().to_string(),
        certs.client_cert().display().to_string(),
        key.display().to_string(),
    );
    let identity = [
        "--tls-ca",
        ca.as_str(),
        "--tls-cert",
        cert.as_str(),
        "--tls-key",
        key.as_str(),
    ];
    let mut args = identity.to_vec();
    args.extend(["whoami", "--json"]);
    let run = rzk_with_passwords(&tls, &args, &[(KEY_PASSWORD_VARIABLE, PASSWORD)])
        .await
        .expect(0, "whoami over TLS with an encrypted key");
    authenticated_as_the_client(&run);
    refused_before_dialing(
        &identity,
        &[(KEY_PASSWORD_VARIABLE, WRONG_PASSWORD)],
        &[
            "wrong password",
            "the password of --tls-key, from --tls-key-password or RZK_TLS_KEY_PASSWORD",
        ],
    )
    .await;
    // The key store's variable is not the key's.
    refused_before_dialing(
        &identity,
        &[(KEYSTORE_PASSWORD_VARIABLE, PASSWORD)],
        &[
            "is encrypted and no password was given",
            "RZK_TLS_KEY_PASSWORD",
        ],
    )
    .await;
}

/// `--help` names the password variables and never shows their values; the options' own
/// values never show in a usage error.
#[tokio::test]
async fn the_tls_passwords_never_show_in_the_help() {
    let run = rzk_with_passwords(
        "127.0.0.1:1",
        &["--help"],
        &[
            (KEYSTORE_PASSWORD_VARIABLE, "keystore-hunter2"),
            (KEY_PASSWORD_VARIABLE, "key-hunter2"),
        ],
    )
    .await
    .expect(0, "--help");
    assert!(!run.stdout.contains("hunter2"), "{}", run.stdout);
    for variable in [KEYSTORE_PASSWORD_VARIABLE, KEY_PASSWORD_VARIABLE] {
        assert!(
            run.stdout.contains(&format!("[env: {variable}]")),
            "{variable}: {}",
            run.stdout
        );
    }
    let run = rzk_with_passwords(
        "127.0.0.1:1",
        &[
            "--tls-keystore",
            "client.p12",
            "--tls-keystore-password",
            "flag-hunter2",
            "--tls-key",
            "client-key.pem",
            "ls",
            "/",
        ],
        &[(KEY_PASSWORD_VARIABLE, "key-hunter2")],
    )
    .await
    .expect(2, "a key store and a key");
    assert!(!run.stderr.contains("hunter2"), "{}", run.stderr);
    assert!(run.stderr.contains("--tls-keystore"), "{}", run.stderr);
}

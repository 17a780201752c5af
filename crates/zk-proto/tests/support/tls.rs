//! The TLS servers and client settings of the TLS tests (`tls.rs`, `tls_identity.rs`): here
//! and not in the kit, whose client helpers build zk-proto without TLS (so that this crate's
//! tests without default features stay without it).

use std::time::{Duration, Instant};

use zk_proto::{Error, TlsFailure, TlsOptions};
use zk_testkit::client::{builder, server_builder, start_server_with, within};
use zk_testkit::{ClientAuth, TestCerts, ZkServer};

/// A permanent failure must end `connect` well before this (the connect timeout of these
/// tests is 20 s, far above it).
pub(crate) const FAILS_WITHIN: Duration = Duration::from_secs(5);

/// Starts the kit's standalone server with a `secureClientPort` and `ssl.clientAuth` set to
/// `client_auth`.
pub(crate) async fn tls_server(client_auth: ClientAuth) -> ZkServer {
    start_server_with(server_builder().tls(client_auth)).await
}

/// The test certificates of a TLS server.
pub(crate) fn certs(server: &ZkServer) -> &TestCerts {
    server.tls_certs().expect("a TLS server")
}

/// The connect string of a TLS server's secure port.
pub(crate) fn secure(server: &ZkServer) -> String {
    server.tls_connect_string().expect("a TLS server")
}

/// Trusts the test CA; no client certificate.
pub(crate) fn trusting(certs: &TestCerts) -> TlsOptions {
    TlsOptions::new().ca_pem_file(certs.ca())
}

/// Trusts the test CA and presents the client certificate it issued.
pub(crate) fn mutual(certs: &TestCerts) -> TlsOptions {
    trusting(certs).client_cert_pem_files(certs.client_cert(), certs.client_key())
}

/// Connects with `options`, expecting it to fail for good: returns the TLS failure, after
/// checking that it came fast and after one attempt per host.
pub(crate) async fn refused(options: TlsOptions, connect_string: &str, hosts: u32) -> TlsFailure {
    refused_within(options, connect_string, hosts..=hosts).await
}

/// As [`refused`], with the number of attempts in `attempts`.
pub(crate) async fn refused_within(
    options: TlsOptions,
    connect_string: &str,
    attempts_allowed: std::ops::RangeInclusive<u32>,
) -> TlsFailure {
    let started = Instant::now();
    let result = within(
        "a refused connect",
        Duration::from_secs(30),
        builder()
            .connect_timeout(Some(Duration::from_secs(20)))
            .tls(options)
            .connect(connect_string),
    )
    .await;
    let error = result.expect_err("the connect must fail");
    let elapsed = started.elapsed();
    assert!(elapsed < FAILS_WITHIN, "gave up after {elapsed:?}: {error}");
    match &error {
        Error::NoServerReachable { attempts, .. } => {
            assert!(
                attempts_allowed.contains(attempts),
                "{attempts} attempts, not {attempts_allowed:?} (no storm): {error}"
            );
        }
        other => panic!("expected NoServerReachable, got {other:?}"),
    }
    error
        .tls_failure()
        .cloned()
        .unwrap_or_else(|| panic!("not a TLS failure: {error}"))
}

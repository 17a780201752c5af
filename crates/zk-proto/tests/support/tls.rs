//! The TLS servers and client settings of the TLS tests (`tls.rs`, `tls_identity.rs`): here
//! and not in the kit, whose client helpers build zk-proto without TLS (so that this crate's
//! tests without default features stay without it).

use std::time::Duration;

use zk_proto::TlsOptions;
use zk_testkit::client::{server_builder, start_server_with};
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

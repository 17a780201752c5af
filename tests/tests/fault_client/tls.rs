//! TLS under faults: a reconnection that every server refuses for good (a certificate
//! rotation gone wrong) ends the session with that failure. The TLS failures of a first
//! connect, against healthy servers, are in `crates/zk-proto/tests/tls.rs`.

use zk_proto::{TlsFailure, TlsOptions};
use zk_testkit::client::{builder, connect_with, server_builder, start_server_with};
use zk_testkit::{ClientAuth, ZkServer};

use super::*;

#[tokio::test]
async fn a_tls_refusal_on_reconnection_ends_the_session_naming_it() {
    // The client reaches its server through a proxy; then the proxy leads to another TLS
    // server whose certificate comes from a CA the client does not trust (a certificate
    // rotation gone wrong): every reconnection is refused for good. The session must end
    // with that failure, not with a bare expiry that hides it.
    let _serial = serial().await;
    let tls_server = || start_server_with(server_builder().tls(ClientAuth::None));
    let (trusted, untrusted) = tokio::join!(tls_server(), tls_server());
    let secure_addr = |server: &ZkServer| -> std::net::SocketAddr {
        ([127, 0, 0, 1], server.secure_port().expect("TLS")).into()
    };
    let proxy = FaultProxy::start(secure_addr(&trusted))
        .await
        .expect("proxy");
    let session_timeout = Duration::from_secs(4);
    let ca = trusted.tls_certs().expect("a TLS server").ca();
    let client = connect_with(
        builder()
            .session_timeout(session_timeout)
            .tls(TlsOptions::new().ca_pem_file(ca).server_name("localhost")),
        &proxy.connect_string(),
    )
    .await;
    let mut states = client.state_watcher();
    proxy.set_target(secure_addr(&untrusted));
    proxy.cut();
    let cut = Instant::now();
    within("the session's end", Duration::from_secs(20), async {
        while !states.borrow_and_update().is_terminal() {
            if states.changed().await.is_err() {
                break;
            }
        }
    })
    .await;
    let elapsed = cut.elapsed();
    assert_eq!(client.state(), SessionState::Closed);
    let error = client.ended_with().expect("ended");
    assert!(
        matches!(
            error.tls_failure(),
            Some(TlsFailure::UntrustedCertificate { .. })
        ),
        "the cause is the refusal: {error}"
    );
    assert!(error.is_terminal(), "{error}");
    // Retried until the session would have expired (the servers may be fixed meanwhile),
    // then ended at once.
    assert!(
        elapsed >= session_timeout.mul_f32(0.6) && elapsed < session_timeout * 3,
        "ended {elapsed:?} after the cut"
    );
    // Every call gets the same error.
    let call = client.exists("/").await.expect_err("the session is over");
    assert_eq!(call, error);
    assert!(proxy.accepted() >= 2, "reconnections were tried");
}

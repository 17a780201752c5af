//! The lock over TLS: two sessions on a ZooKeeper 3.8 server that needs a client certificate
//! (`ssl.clientAuth=need`, the test kit's certificates). Uses `Lock::new` and the guard only.

use std::time::Duration;

use zk_proto::TlsOptions;
use zk_recipes::lock::Lock;
use zk_testkit::ClientAuth;
use zk_testkit::client::{
    builder, connect_with, server_builder, start_server_with, wait_children, within,
};

#[tokio::test]
async fn a_lock_over_mutual_tls_excludes_and_hands_over() {
    let server = start_server_with(server_builder().tls(ClientAuth::Need)).await;
    let certs = server.tls_certs().expect("a TLS server");
    let options = TlsOptions::new()
        .ca_pem_file(certs.ca())
        .client_cert_pem_files(certs.client_cert(), certs.client_key());
    let connect_string = server.tls_connect_string().expect("a TLS server");
    let a = connect_with(builder().tls(options.clone()), &connect_string).await;
    let b = connect_with(builder().tls(options), &connect_string).await;

    let held = within(
        "a acquires",
        Duration::from_secs(10),
        Lock::new(&a, "/locks/tls").acquire(None),
    )
    .await
    .expect("a acquires");
    let lock_b = Lock::new(&b, "/locks/tls");
    let waiting = tokio::spawn(async move { lock_b.acquire(None).await });
    // b is queued behind a (two contenders' nodes), and does not hold the lock.
    wait_children(
        &a,
        "/locks/tls",
        Duration::from_secs(10),
        "b queued",
        |nodes| nodes.len() == 2,
    )
    .await;
    assert!(!waiting.is_finished(), "b acquired while a holds the lock");
    let first = held.fencing_token();
    held.release().await.expect("a releases");
    let granted = within("b is granted", Duration::from_secs(10), waiting)
        .await
        .expect("the task ran")
        .expect("b acquires after a's release");
    assert!(granted.fencing_token() > first, "fencing tokens increase");
    granted.release().await.expect("b releases");
    wait_children(
        &a,
        "/locks/tls",
        Duration::from_secs(10),
        "nothing left",
        |nodes| nodes.is_empty(),
    )
    .await;
}

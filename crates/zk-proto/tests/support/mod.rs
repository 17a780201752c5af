//! Shared support of the client's integration tests: real servers and a client builder (the
//! fault proxy is the test kit's `zk_testkit::fault::FaultProxy`).

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use zk_proto::{Client, ClientBuilder};
use zk_testkit::ZkServer;

/// Starts a standalone server (TTL nodes enabled) off the runtime's threads.
pub async fn server() -> ZkServer {
    tokio::task::spawn_blocking(|| {
        ZkServer::builder()
            .tick_time(Duration::from_millis(500))
            .extended_types(true)
            .start()
            .expect("start ZooKeeper (scripts/install-deps.sh installs it)")
    })
    .await
    .expect("server start task")
}

/// Connects a client with a short session timeout and a 10 s request timeout, so a
/// request that gets no reply fails the test instead of hanging it.
pub async fn connect(connect_string: &str) -> Client {
    builder().connect(connect_string).await.expect("connect")
}

/// The builder the tests use.
pub fn builder() -> ClientBuilder {
    Client::builder()
        .session_timeout(Duration::from_secs(4))
        .request_timeout(Some(Duration::from_secs(10)))
}

/// Waits (bounded) until the client reports `state`.
pub async fn wait_for_state(client: &Client, state: zk_proto::SessionState, within: Duration) {
    let mut states = client.state_watcher();
    let reached = tokio::time::timeout(within, states.wait_for(|s| *s == state)).await;
    assert!(
        matches!(reached, Ok(Ok(_))),
        "state {state:?} not reached within {within:?}; now {:?}",
        client.state()
    );
}

//! Support of the election tests: a real server, a fault proxy per client, bounded polling.

#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::time::Duration;

use zk_proto::{Client, SessionState};
use zk_testkit::ZkServer;
use zk_testkit::fault::FaultProxy;

/// The session timeout the tests ask for (the server's minimum is two ticks, 1 s).
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(2);

/// Starts a standalone server off the runtime's threads.
pub async fn server() -> ZkServer {
    tokio::task::spawn_blocking(|| {
        ZkServer::builder()
            .tick_time(Duration::from_millis(500))
            .start()
            .expect("start ZooKeeper (scripts/install-deps.sh installs it)")
    })
    .await
    .expect("server start task")
}

/// Connects with a short session timeout and a 10 s request timeout.
pub async fn connect(connect_string: &str) -> Client {
    Client::builder()
        .session_timeout(SESSION_TIMEOUT)
        .request_timeout(Some(Duration::from_secs(10)))
        .connect(connect_string)
        .await
        .expect("connect")
}

/// A client behind its own proxy, so that it alone can be cut off.
pub struct Candidate {
    pub client: Client,
    pub proxy: FaultProxy,
}

/// `n` clients, each behind its own proxy to `target`.
pub async fn candidates(target: SocketAddr, n: usize) -> Vec<Candidate> {
    let mut all = Vec::with_capacity(n);
    for _ in 0..n {
        let proxy = FaultProxy::start(target).await.expect("proxy");
        let client = connect(&proxy.connect_string()).await;
        all.push(Candidate { client, proxy });
    }
    all
}

/// Polls `condition` every 10 ms until it holds; panics after `within`.
pub async fn eventually(within: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + within;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not within {within:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits (bounded) until the client reports `state`.
pub async fn wait_for_state(client: &Client, state: SessionState, within: Duration) {
    let mut states = client.state_watcher();
    let reached = tokio::time::timeout(within, states.wait_for(|s| *s == state)).await;
    assert!(
        matches!(reached, Ok(Ok(_))),
        "state {state:?} not reached within {within:?}; now {:?}",
        client.state()
    );
}

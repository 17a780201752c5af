//! Support of the lock tests: real servers (the fault proxy is the test kit's `FaultProxy`).

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use zk_proto::{Client, ClientBuilder};
use zk_testkit::ZkServer;

/// Serialises the tests of this binary: each starts a JVM, and the machine is small.
pub static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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

/// Connects a client with a 4 s session and a 10 s request timeout.
pub async fn connect(connect_string: &str) -> Client {
    builder().connect(connect_string).await.expect("connect")
}

/// The builder the tests use.
pub fn builder() -> ClientBuilder {
    Client::builder()
        .session_timeout(Duration::from_secs(4))
        .request_timeout(Some(Duration::from_secs(10)))
}

/// Polls `children(path)` until it has `n` entries (bounded), returning the last listing.
pub async fn wait_children(client: &Client, path: &str, n: usize, within: Duration) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let children = match client.get_children(path).await {
            Ok(children) => children,
            Err(zk_proto::Error::NoNode) => Vec::new(),
            Err(e) => panic!("list {path}: {e}"),
        };
        if children.len() == n || tokio::time::Instant::now() >= deadline {
            return children;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

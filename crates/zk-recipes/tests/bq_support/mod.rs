//! Support of the barrier and queue tests: a real server and many sessions.

#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::time::Duration;

use zk_proto::Client;
use zk_testkit::ZkServer;

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

/// Connects a session with a 10 s request timeout, so a request that gets no reply fails the
/// test instead of hanging it.
pub async fn connect(connect_string: &str) -> Client {
    Client::builder()
        .session_timeout(Duration::from_secs(6))
        .request_timeout(Some(Duration::from_secs(10)))
        .connect(connect_string)
        .await
        .expect("connect")
}

/// `n` sessions, connected concurrently.
pub async fn sessions(connect_string: &str, n: usize) -> Vec<Client> {
    let mut tasks = Vec::new();
    for _ in 0..n {
        let connect_string = connect_string.to_owned();
        tasks.push(tokio::spawn(async move { connect(&connect_string).await }));
    }
    let mut clients = Vec::new();
    for task in tasks {
        clients.push(task.await.expect("connect task"));
    }
    clients
}

/// Polls `condition` every 20 ms until it holds, at most `within`.
pub async fn eventually<F, Fut>(within: Duration, what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + within;
    while !condition().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not reached within {within:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Awaits a task, bounded, failing the test when it hangs or panicked.
pub async fn join<T>(task: tokio::task::JoinHandle<T>, within: Duration) -> T {
    tokio::time::timeout(within, task)
        .await
        .expect("task finished in time")
        .expect("task did not panic")
}

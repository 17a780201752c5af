//! Support of the recipe fault scenarios (`fault_recipes.rs`): a real server with a short tick,
//! sessions direct or behind their own [`FaultProxy`], and bounded waits on events.

#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::time::Duration;

use tokio::time::{Instant, timeout};
use zk_proto::{Client, SessionState};
use zk_testkit::ZkServer;
use zk_testkit::fault::FaultProxy;

/// One scenario at a time: each starts its own JVM, and the machine has 2 cores.
pub static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Starts a standalone server with tick `tick` (session timeouts from `2 × tick`) off the
/// runtime's threads.
pub async fn server(tick: Duration) -> ZkServer {
    tokio::task::spawn_blocking(move || {
        ZkServer::builder()
            .tick_time(tick)
            .start()
            .expect("start ZooKeeper (scripts/install-deps.sh installs it)")
    })
    .await
    .expect("server start task")
}

/// Connects to `connect_string` asking for `session_timeout`, with a 10 s request timeout so
/// that a request that gets no answer fails the test instead of hanging it.
pub async fn connect(connect_string: &str, session_timeout: Duration) -> Client {
    Client::builder()
        .session_timeout(session_timeout)
        .request_timeout(Some(Duration::from_secs(10)))
        .connect(connect_string)
        .await
        .expect("connect")
}

/// A session behind its own fault proxy, so that it alone can be cut off.
pub struct Proxied {
    pub proxy: FaultProxy,
    pub client: Client,
}

/// A new proxy to `server` and a session through it.
pub async fn proxied(server: &ZkServer, session_timeout: Duration) -> Proxied {
    let proxy = FaultProxy::start(server.addr()).await.expect("start proxy");
    let client = connect(&proxy.connect_string(), session_timeout).await;
    Proxied { proxy, client }
}

/// Awaits `future`, failing the test with `what` when it takes longer than `within`.
pub async fn bounded<T>(within: Duration, what: &str, future: impl Future<Output = T>) -> T {
    timeout(within, future)
        .await
        .unwrap_or_else(|_| panic!("not within {within:?}: {what}"))
}

/// Waits (bounded) until the client reports `state`.
pub async fn wait_for_state(client: &Client, state: SessionState, within: Duration) {
    let mut states = client.state_watcher();
    let reached = timeout(within, states.wait_for(|s| *s == state)).await;
    assert!(
        matches!(reached, Ok(Ok(_))),
        "state {state:?} not reached within {within:?}; now {:?}",
        client.state()
    );
}

/// Waits (bounded) until `path` exists (`true`) or not (`false`), on exists-watches: no polling.
pub async fn wait_exists(client: &Client, path: &str, present: bool, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let (stat, watch) = client.exists_watch(path).await.expect("exists");
        if stat.is_some() == present {
            return;
        }
        match tokio::time::timeout_at(deadline, watch.changed()).await {
            Ok(event) => {
                event.expect("watch event");
            }
            Err(_) => panic!(
                "{path} {} within {within:?}",
                if present {
                    "not created"
                } else {
                    "not deleted"
                }
            ),
        }
    }
}

/// Asserts that `elapsed` lies in `[at_least, at_least + margin]`.
pub fn assert_within(elapsed: Duration, at_least: Duration, margin: Duration, what: &str) {
    assert!(
        elapsed + Duration::from_millis(5) >= at_least && elapsed <= at_least + margin,
        "{what}: took {elapsed:?}, expected between {at_least:?} and {:?}",
        at_least + margin
    );
}

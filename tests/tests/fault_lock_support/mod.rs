//! Support of `fault_lock.rs`: real servers and ensembles started off the runtime's threads,
//! clients with a short session, and bounded waits on listings and session states.

#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use zk_proto::{Client, ClientBuilder, CreateOptions, SessionState};
use zk_testkit::{Ensemble, ZkServer};

/// Serialises the tests of this binary: each starts JVMs, and the machine is small.
pub static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The session timeout every client asks for (the servers grant it as is).
pub const SESSION: Duration = Duration::from_secs(4);

/// The client's read timeout for [`SESSION`] (`2T/3`, `zk_proto::session::timing`).
pub const READ_TIMEOUT: Duration = Duration::from_millis(4000 * 2 / 3);

/// Starts a standalone server (`tickTime` 500 ms) off the runtime's threads.
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

/// Starts an ensemble of `n` servers (the kit's `tickTime` of 250 ms: fast elections).
pub async fn ensemble(n: usize) -> Arc<Ensemble> {
    let ensemble = tokio::task::spawn_blocking(move || {
        Ensemble::start(n).expect("start an ensemble (scripts/install-deps.sh installs it)")
    })
    .await
    .expect("ensemble start task");
    Arc::new(ensemble)
}

/// Runs a blocking test-kit call (kill, restart, leader lookup) off the runtime's threads.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("blocking task")
}

/// The builder the tests use: a 4 s session and a 10 s request timeout.
pub fn builder() -> ClientBuilder {
    Client::builder()
        .session_timeout(SESSION)
        .request_timeout(Some(Duration::from_secs(10)))
}

/// Connects with [`builder`], bounded.
pub async fn connect(connect_string: &str) -> Client {
    within(
        "connect",
        Duration::from_secs(20),
        builder().connect(connect_string),
    )
    .await
    .expect("connect")
}

/// Awaits `fut`, panicking with `what` when it takes longer than `limit`: no call hangs.
pub async fn within<F: Future>(what: &str, limit: Duration, fut: F) -> F::Output {
    match tokio::time::timeout(limit, fut).await {
        Ok(out) => out,
        Err(_) => panic!("{what}: not done within {limit:?}"),
    }
}

/// Creates `path` and its ancestors as persistent nodes (existing ones are fine).
pub async fn mkdirs(client: &Client, path: &str) {
    let mut at = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        at.push('/');
        at.push_str(part);
        match within(
            "create",
            Duration::from_secs(10),
            client.create(&at, "", &CreateOptions::persistent()),
        )
        .await
        {
            Ok(_) | Err(zk_proto::Error::NodeExists) => {}
            Err(e) => panic!("create {at}: {e}"),
        }
    }
}

/// The children of `path` (none when it does not exist).
pub async fn children(client: &Client, path: &str) -> Vec<String> {
    match within("list", Duration::from_secs(10), client.get_children(path)).await {
        Ok(mut children) => {
            children.sort();
            children
        }
        Err(zk_proto::Error::NoNode) => Vec::new(),
        Err(e) => panic!("list {path}: {e}"),
    }
}

/// The children of `path` with their ephemeral owner (a child deleted meanwhile is left out).
pub async fn owners(client: &Client, path: &str) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for child in children(client, path).await {
        let full = format!("{path}/{child}");
        match within("stat", Duration::from_secs(10), client.exists(&full)).await {
            Ok(Some(stat)) => out.push((child, stat.ephemeral_owner)),
            Ok(None) => {}
            Err(e) => panic!("stat {full}: {e}"),
        }
    }
    out
}

/// Polls the children of `path` until `done` holds, at most `limit`; returns the last listing,
/// panicking with it when `done` never held.
pub async fn wait_children(
    client: &Client,
    path: &str,
    limit: Duration,
    what: &str,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + limit;
    loop {
        let listing = children(client, path).await;
        if done(&listing) {
            return listing;
        }
        if Instant::now() >= deadline {
            panic!("{what}: not reached within {limit:?}; children of {path}: {listing:?}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits (bounded) until the client's state satisfies `done`; returns it.
pub async fn wait_state(
    client: &Client,
    limit: Duration,
    done: impl Fn(SessionState) -> bool,
) -> SessionState {
    let mut states = client.state_watcher();
    let state = within("session state", limit, states.wait_for(|s| done(*s)))
        .await
        .map(|s| *s);
    state.unwrap_or_else(|_| panic!("the client is gone; state {:?}", client.state()))
}

/// Every state a client goes through, with the instant it was seen (recorded by a task).
#[derive(Clone, Default)]
pub struct StateLog {
    seen: Arc<Mutex<Vec<(SessionState, Instant)>>>,
}

impl StateLog {
    /// Starts recording the states of `client` (the current one first).
    pub fn record(client: &Client) -> StateLog {
        let log = StateLog::default();
        let mut states = client.state_watcher();
        let seen = log.seen.clone();
        seen.lock()
            .expect("log")
            .push((*states.borrow_and_update(), Instant::now()));
        tokio::spawn(async move {
            while states.changed().await.is_ok() {
                let state = *states.borrow_and_update();
                seen.lock().expect("log").push((state, Instant::now()));
                if state.is_terminal() {
                    return;
                }
            }
        });
        log
    }

    /// The states seen so far.
    pub fn states(&self) -> Vec<SessionState> {
        self.seen.lock().expect("log").iter().map(|s| s.0).collect()
    }

    /// When `state` was first seen.
    pub fn first(&self, state: SessionState) -> Option<Instant> {
        self.seen
            .lock()
            .expect("log")
            .iter()
            .find(|s| s.0 == state)
            .map(|s| s.1)
    }
}

//! Support of the election tests: a real server, a fault proxy per client, bounded polling.
//! (Adapted from `zk-proto`'s test support.)

#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;
use zk_proto::{Client, SessionState};
use zk_testkit::ZkServer;

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
    pub proxy: Proxy,
}

/// `n` clients, each behind its own proxy to `target`.
pub async fn candidates(target: SocketAddr, n: usize) -> Vec<Candidate> {
    let mut all = Vec::with_capacity(n);
    for _ in 0..n {
        let proxy = Proxy::start(target).await;
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

/// A TCP proxy in front of a server that can cut every connection through it and refuse
/// new ones.
pub struct Proxy {
    addr: SocketAddr,
    blocked: Arc<AtomicBool>,
    links: Arc<Mutex<Vec<AbortHandle>>>,
    accept: AbortHandle,
}

impl Proxy {
    /// A proxy to `target` on a free loopback port.
    pub async fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let blocked = Arc::new(AtomicBool::new(false));
        let links: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let accept = {
            let (blocked, links) = (blocked.clone(), links.clone());
            tokio::spawn(async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    if blocked.load(Ordering::SeqCst) {
                        drop(inbound);
                        continue;
                    }
                    let link = tokio::spawn(async move {
                        if let Ok(mut outbound) = TcpStream::connect(target).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                    links.lock().expect("links").push(link.abort_handle());
                }
            })
            .abort_handle()
        };
        Proxy {
            addr,
            blocked,
            links,
            accept,
        }
    }

    /// The connect string through the proxy.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// Cuts every connection and refuses new ones until [`restore`](Self::restore).
    pub fn cut(&self) {
        self.blocked.store(true, Ordering::SeqCst);
        for link in self.links.lock().expect("links").drain(..) {
            link.abort();
        }
    }

    /// Lets connections through again.
    pub fn restore(&self) {
        self.blocked.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
        self.accept.abort();
    }
}

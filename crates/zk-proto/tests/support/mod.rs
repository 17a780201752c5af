//! Shared support of the client's integration tests: real servers and a fault proxy.

#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;
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

/// A TCP proxy in front of a server that can cut every connection through it and refuse
/// new ones, to cut a client off without touching the server.
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

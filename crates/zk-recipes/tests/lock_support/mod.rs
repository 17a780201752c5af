//! Support of the lock tests: real servers and a fault proxy (adapted from zk-proto's tests).

#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;
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

/// A TCP proxy that can cut every connection through it and refuse new ones.
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

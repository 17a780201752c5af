//! A fault-injecting TCP proxy between a client and a server, on loopback.
//!
//! Each accepted connection is relayed by two tasks, one per direction. The client-to-server
//! direction splits the byte stream into frames (4-byte length prefix) so that a fault can be
//! tied to a request: [`FaultProxy::cut_after_request`] lets one request with a chosen op code
//! reach the server, swallows whatever the server answers, and then cuts the connection, which
//! is how a client loses the reply of a request the server did apply.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jute::OpCode;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio::task::AbortHandle;

/// The largest frame the proxy parses to find request headers; a bigger length prefix is
/// relayed as raw bytes (ZooKeeper's default limit is well under this).
const MAX_PARSED_FRAME: usize = 64 << 20;

/// How long the proxy waits for the server to answer a request armed with
/// [`FaultProxy::cut_after_request`] before cutting anyway.
const REPLY_WAIT: Duration = Duration::from_secs(2);

/// A TCP proxy on `127.0.0.1` that injects faults: cut, refuse, freeze, delay, and cut after a
/// chosen request. Dropping it cuts every connection and stops accepting.
#[derive(Debug)]
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: AbortHandle,
}

#[derive(Debug)]
struct Shared {
    target: Mutex<SocketAddr>,
    refusing: AtomicBool,
    /// `true` while traffic is frozen (connections stay open, nothing moves).
    frozen: watch::Sender<bool>,
    delay: Mutex<Duration>,
    links: Mutex<HashMap<u64, Link>>,
    next_link: AtomicU64,
    accepted: AtomicU64,
    armed: Mutex<Option<Arc<Armed>>>,
    /// Requests forwarded to the server, by op code.
    forwarded: Mutex<HashMap<i32, u64>>,
}

#[derive(Debug)]
struct Link {
    relays: [AbortHandle; 2],
}

#[derive(Debug)]
struct Armed {
    op: OpCode,
    fired: Notify,
    done: AtomicBool,
}

/// A fault armed by [`FaultProxy::cut_after_request`].
#[derive(Debug)]
pub struct CutAfterRequest {
    armed: Arc<Armed>,
}

impl CutAfterRequest {
    /// Waits until the armed request has been forwarded and its connection cut.
    pub async fn fired(&self) {
        loop {
            let notified = self.armed.fired.notified();
            if self.armed.done.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }

    /// Whether the fault has fired.
    pub fn has_fired(&self) -> bool {
        self.armed.done.load(Ordering::SeqCst)
    }
}

impl FaultProxy {
    /// Starts a proxy to `target` on a free loopback port, passing traffic through.
    pub async fn start(target: SocketAddr) -> io::Result<FaultProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            target: Mutex::new(target),
            refusing: AtomicBool::new(false),
            frozen: watch::channel(false).0,
            delay: Mutex::new(Duration::ZERO),
            links: Mutex::default(),
            next_link: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            armed: Mutex::new(None),
            forwarded: Mutex::default(),
        });
        let accept = tokio::spawn(accept_loop(listener, shared.clone())).abort_handle();
        Ok(FaultProxy {
            addr,
            shared,
            accept,
        })
    }

    /// The proxy's own address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The connect string through the proxy (`127.0.0.1:port`).
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// Connections accepted so far, refused ones included: a client's connection attempts.
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Requests with op code `op` forwarded to the server so far, over every connection: how
    /// many round trips of a kind a client made.
    pub fn forwarded(&self, op: OpCode) -> u64 {
        lock(&self.shared.forwarded)
            .get(&i32::from(op))
            .copied()
            .unwrap_or(0)
    }

    /// Waits (polling, at most 10 s) until at least `n` requests with op code `op` were
    /// forwarded.
    ///
    /// # Panics
    ///
    /// When fewer were forwarded by then.
    pub async fn wait_forwarded(&self, op: OpCode, n: u64) {
        let mut tick = tokio::time::interval(Duration::from_millis(5));
        let reached = tokio::time::timeout(Duration::from_secs(10), async {
            while self.forwarded(op) < n {
                tick.tick().await;
            }
        })
        .await;
        assert!(
            reached.is_ok(),
            "{n} {op:?} requests not forwarded; saw {}",
            self.forwarded(op)
        );
    }

    /// Connections being relayed now.
    pub fn open_links(&self) -> usize {
        lock(&self.shared.links).len()
    }

    /// Points new connections at another server (existing ones are left alone).
    pub fn set_target(&self, target: SocketAddr) {
        *lock(&self.shared.target) = target;
    }

    /// Closes every open connection (both sides see the socket close). New connections are
    /// still accepted unless [`refuse`](Self::refuse) is on.
    pub fn cut(&self) {
        self.shared.cut_all();
    }

    /// Refuses (accepts and closes at once) every new connection while `refusing` is true.
    pub fn refuse(&self, refusing: bool) {
        self.shared.refusing.store(refusing, Ordering::SeqCst);
    }

    /// Cuts every connection and refuses new ones: the server is unreachable. Undo with
    /// [`restore`](Self::restore).
    pub fn isolate(&self) {
        self.refuse(true);
        self.cut();
    }

    /// Ends every fault: accepts connections, thaws, removes the delay and any armed cut.
    pub fn restore(&self) {
        self.refuse(false);
        self.thaw();
        self.set_delay(Duration::ZERO);
        lock(&self.shared.armed).take();
    }

    /// Stops moving bytes in both directions without closing anything, as a network
    /// partition that drops packets does. New connections are accepted and frozen too.
    pub fn freeze(&self) {
        self.shared.frozen.send_replace(true);
    }

    /// Moves bytes again after [`freeze`](Self::freeze); what was sent meanwhile is delivered.
    pub fn thaw(&self) {
        self.shared.frozen.send_replace(false);
    }

    /// Freezes traffic for `duration`, then thaws it (in the background).
    pub fn freeze_for(&self, duration: Duration) {
        self.freeze();
        let frozen = self.shared.frozen.clone();
        tokio::spawn(async move {
            tokio::time::sleep(duration).await;
            frozen.send_replace(false);
        });
    }

    /// Holds every chunk of bytes, in both directions, for `delay` before relaying it.
    pub fn set_delay(&self, delay: Duration) {
        *lock(&self.shared.delay) = delay;
    }

    /// Arms a one-shot fault: the next client request with op code `op` is forwarded to the
    /// server; whatever the server sends back on that connection from then on is swallowed;
    /// once the server has answered (or after 2 s), the connection is cut. The client thus
    /// loses the reply of a request the server applied. Replaces any fault armed before.
    pub fn cut_after_request(&self, op: OpCode) -> CutAfterRequest {
        let armed = Arc::new(Armed {
            op,
            fired: Notify::new(),
            done: AtomicBool::new(false),
        });
        *lock(&self.shared.armed) = Some(armed.clone());
        CutAfterRequest { armed }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.shared.cut_all();
    }
}

impl Shared {
    fn cut_all(&self) {
        for (_, link) in lock(&self.links).drain() {
            for relay in link.relays {
                relay.abort();
            }
        }
    }

    fn cut_link(&self, id: u64) {
        if let Some(link) = lock(&self.links).remove(&id) {
            for relay in link.relays {
                relay.abort();
            }
        }
    }

    fn delay(&self) -> Duration {
        *lock(&self.delay)
    }

    /// Takes the armed fault if `op` is what it waits for.
    fn take_armed(&self, op: OpCode) -> Option<Arc<Armed>> {
        let mut armed = lock(&self.armed);
        if armed.as_ref().is_some_and(|a| a.op == op) {
            armed.take()
        } else {
            None
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A relay task that panicked cannot leave these maps half-updated: recover the data.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    while let Ok((inbound, _)) = listener.accept().await {
        shared.accepted.fetch_add(1, Ordering::SeqCst);
        if shared.refusing.load(Ordering::SeqCst) {
            drop(inbound);
            continue;
        }
        let target = *lock(&shared.target);
        let shared = shared.clone();
        tokio::spawn(async move {
            let Ok(outbound) = TcpStream::connect(target).await else {
                return;
            };
            let _ = inbound.set_nodelay(true);
            let _ = outbound.set_nodelay(true);
            let id = shared.next_link.fetch_add(1, Ordering::SeqCst);
            let (client_read, client_write) = inbound.into_split();
            let (server_read, server_write) = outbound.into_split();
            // Set when an armed request went through: from then on the server's bytes are
            // swallowed, and the first of them (the reply) triggers the cut.
            let swallow = Arc::new(watch::channel(0u64).0);
            let swallowing = Arc::new(AtomicBool::new(false));
            let mut links = lock(&shared.links);
            let upstream = tokio::spawn(relay_requests(
                client_read,
                server_write,
                shared.clone(),
                id,
                swallowing.clone(),
                swallow.clone(),
            ));
            let downstream = tokio::spawn(relay_replies(
                server_read,
                client_write,
                shared.clone(),
                id,
                swallowing,
                swallow,
            ));
            links.insert(
                id,
                Link {
                    relays: [upstream.abort_handle(), downstream.abort_handle()],
                },
            );
        });
    }
}

/// Waits while the proxy is frozen, then for the configured delay.
async fn obey(shared: &Shared) {
    let mut frozen = shared.frozen.subscribe();
    // The sender lives in `shared`, so this only ends when thawed.
    let _ = frozen.wait_for(|f| !*f).await;
    let delay = shared.delay();
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
}

/// Client to server: relays whole frames, watching request headers for an armed fault.
async fn relay_requests(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    shared: Arc<Shared>,
    id: u64,
    swallowing: Arc<AtomicBool>,
    swallowed: Arc<watch::Sender<u64>>,
) {
    let mut first = true;
    loop {
        let mut prefix = [0u8; 4];
        if from.read_exact(&mut prefix).await.is_err() {
            break;
        }
        let len = i32::from_be_bytes(prefix);
        let Ok(len) = usize::try_from(len) else {
            // Not a frame a server accepts: relay the prefix and the rest as raw bytes.
            obey(&shared).await;
            if to.write_all(&prefix).await.is_err() {
                break;
            }
            let _ = relay_raw(&mut from, &mut to, &shared).await;
            break;
        };
        if len > MAX_PARSED_FRAME {
            obey(&shared).await;
            if to.write_all(&prefix).await.is_err() {
                break;
            }
            let _ = relay_raw(&mut from, &mut to, &shared).await;
            break;
        }
        let mut frame = vec![0u8; 4 + len];
        frame[..4].copy_from_slice(&prefix);
        if from.read_exact(&mut frame[4..]).await.is_err() {
            break;
        }
        obey(&shared).await;
        // The first frame of a connection is the ConnectRequest, which has no header.
        let op = (!first && len >= 8).then(|| {
            OpCode(i32::from_be_bytes([
                frame[8], frame[9], frame[10], frame[11],
            ]))
        });
        first = false;
        let armed = op.and_then(|op| shared.take_armed(op));
        if armed.is_some() {
            swallowing.store(true, Ordering::SeqCst);
        }
        if to.write_all(&frame).await.is_err() {
            break;
        }
        if let Some(op) = op {
            *lock(&shared.forwarded).entry(i32::from(op)).or_default() += 1;
        }
        if let Some(armed) = armed {
            // Wait for the server's answer (swallowed by the other relay), then cut. Bytes
            // swallowed before the request was written were not its answer.
            let mut chunks = swallowed.subscribe();
            let before = *chunks.borrow_and_update();
            let _ = tokio::time::timeout(REPLY_WAIT, chunks.wait_for(|n| *n > before)).await;
            armed.done.store(true, Ordering::SeqCst);
            armed.fired.notify_waiters();
            shared.cut_link(id);
            return;
        }
    }
    shared.cut_link(id);
}

/// Server to client: relays chunks, or swallows them once an armed request went through.
async fn relay_replies(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    shared: Arc<Shared>,
    id: u64,
    swallowing: Arc<AtomicBool>,
    swallowed: Arc<watch::Sender<u64>>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            // While an armed request's answer is swallowed, the request relay cuts the link
            // (and records the fault as fired) once it has seen the answer: the server may
            // close right after answering (closeSession), and cutting here would abort it
            // before it records anything.
            Ok(0) | Err(_) if swallowing.load(Ordering::SeqCst) => return,
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if swallowing.load(Ordering::SeqCst) {
            swallowed.send_modify(|n| *n += 1);
            continue;
        }
        obey(&shared).await;
        if swallowing.load(Ordering::SeqCst) {
            swallowed.send_modify(|n| *n += 1);
            continue;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    shared.cut_link(id);
}

async fn relay_raw(
    from: &mut (impl AsyncRead + Unpin),
    to: &mut (impl AsyncWrite + Unpin),
    shared: &Shared,
) -> io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        obey(shared).await;
        to.write_all(&buf[..n]).await?;
    }
}

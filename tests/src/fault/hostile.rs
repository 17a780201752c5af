//! A hostile scripted ZooKeeper server: it speaks just enough of the protocol to hold a
//! session, misbehaves once in a chosen way, and then behaves, so a test can see a client
//! survive the misbehaviour and its session recover.
//!
//! The server binds `127.0.0.1:0`. Every connection starts with a ConnectRequest (recorded
//! for assertions). On the connection chosen to misbehave (the first by default) the server
//! does what its [`Misbehaviour`] says, either in place of the ConnectResponse
//! ([`Misbehaviour::ZeroTimeout`]) or in place of the reply to the first request after a
//! correct handshake (every other kind); it then goes silent on that connection, only
//! reading, and records how long the client took to close it ([`Reaction`]). Every other
//! connection is served correctly: the requested session is resumed (or a new one created),
//! the requested timeout granted, getData answered with [`FIXED_DATA`], exists with an empty
//! Stat, pings, auth packets and SetWatches with OK, anything else with `UNIMPLEMENTED`.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::StreamExt;
use jute::{
    ConnectRequest, ConnectResponse, Encode, ErrorCode, ExistsResponse, FrameCodec,
    GetDataResponse, OpCode, ReplyHeader, RequestHeader, Stat, decode_exact,
};
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::AbortHandle;
use tokio_util::codec::FramedRead;

/// The data every getData gets from a behaving connection.
pub const FIXED_DATA: &[u8] = b"hostile-but-fair";

/// The length prefix of [`Misbehaviour::HugeLength`]: just under 2 GiB.
pub const HUGE_LENGTH: i32 = 0x7fff_fff0;

/// The length prefix of [`Misbehaviour::NegativeLength`].
pub const NEGATIVE_LENGTH: i32 = -16;

/// The session password the server hands out.
const PASSWORD: [u8; 16] = [0x5a; 16];

/// The first session id the server hands out (then +1 per new session).
const FIRST_SESSION_ID: i64 = 0x4a0d_0000_0000_0001;

/// Reserved xids (ZooKeeper's `ClientCnxn`).
const NOTIFICATION_XID: i32 = -1;
const PING_XID: i32 = -2;

/// How the server misbehaves, once, on the chosen connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Misbehaviour {
    /// In place of a reply: a 16-byte frame of junk (its "xid" `0xdeadbeef`), then 48 more
    /// junk bytes.
    Garbage,
    /// In place of a reply: a length prefix of 64, 10 bytes of the frame, then silence. Only
    /// the client's read timeout can end this.
    TruncatedFrame,
    /// In place of a reply: the length prefix [`HUGE_LENGTH`] and a reply header with the
    /// request's xid, then silence. A client must refuse the frame from its prefix (without
    /// reserving 2 GiB) and can tell which request it answered.
    HugeLength,
    /// In place of a reply: the length prefix [`NEGATIVE_LENGTH`] and a reply header.
    NegativeLength,
    /// In place of a reply: a well-formed getData reply for an xid the client never sent
    /// (the request's xid + 1,000,000).
    UnknownXid,
    /// Waits for two pipelined requests and answers them swapped: the second one's reply
    /// first.
    OutOfOrder,
    /// In place of the ConnectResponse: one with timeout 0, ZooKeeper's way of saying the
    /// session expired.
    ZeroTimeout,
    /// In place of a reply: a watch notification (xid -1) whose WatcherEvent does not decode
    /// (its path claims 1,000 bytes and has 2).
    MalformedWatchEvent,
}

impl Misbehaviour {
    /// Every kind.
    pub const ALL: [Misbehaviour; 8] = [
        Misbehaviour::Garbage,
        Misbehaviour::TruncatedFrame,
        Misbehaviour::HugeLength,
        Misbehaviour::NegativeLength,
        Misbehaviour::UnknownXid,
        Misbehaviour::OutOfOrder,
        Misbehaviour::ZeroTimeout,
        Misbehaviour::MalformedWatchEvent,
    ];

    /// Whether it replaces the ConnectResponse (else it replaces a reply, after a correct
    /// handshake).
    pub fn is_in_handshake(self) -> bool {
        matches!(self, Misbehaviour::ZeroTimeout)
    }

    /// How many requests the server waits for before misbehaving (0 for the handshake).
    pub fn requests_needed(self) -> usize {
        match self {
            Misbehaviour::ZeroTimeout => 0,
            Misbehaviour::OutOfOrder => 2,
            _ => 1,
        }
    }
}

/// How the client reacted on the connection the server misbehaved on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reaction {
    /// The connection's number (1 for the first connection accepted).
    pub connection: u64,
    /// From the misbehaviour's last byte written to the client closing the connection.
    pub closed_after: Duration,
}

/// What the server has seen so far, published on every change.
#[derive(Debug, Clone, Default)]
struct Seen {
    connect_requests: Vec<ConnectRequest>,
    misbehaved_on: Option<u64>,
    reaction: Option<Reaction>,
}

#[derive(Debug)]
struct Shared {
    misbehaviour: Misbehaviour,
    on_connection: u64,
    /// While `true`, every connection gets a malformed watch event right after its
    /// handshake, then is closed ([`HostileServer::start_storm`]).
    storm: AtomicBool,
    accepted: AtomicU64,
    seen: watch::Sender<Seen>,
    /// `true` while ConnectResponses are held back.
    hold: watch::Sender<bool>,
    next_session: AtomicI64,
    zxid: AtomicI64,
    answered: AtomicU64,
    conns: Mutex<HashMap<u64, AbortHandle>>,
}

/// A scripted ZooKeeper server on `127.0.0.1` that misbehaves once (see the module
/// documentation). Dropping it closes every connection and stops accepting.
#[derive(Debug)]
pub struct HostileServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: AbortHandle,
}

impl HostileServer {
    /// Starts a server that misbehaves on its first connection.
    pub async fn start(misbehaviour: Misbehaviour) -> io::Result<HostileServer> {
        HostileServer::start_on(misbehaviour, 1).await
    }

    /// Starts a server that misbehaves on its `connection`-th connection (1-based) and
    /// serves every other one correctly.
    pub async fn start_on(misbehaviour: Misbehaviour, connection: u64) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            misbehaviour,
            on_connection: connection,
            storm: AtomicBool::new(false),
            accepted: AtomicU64::new(0),
            seen: watch::channel(Seen::default()).0,
            hold: watch::channel(false).0,
            next_session: AtomicI64::new(FIRST_SESSION_ID),
            zxid: AtomicI64::new(100),
            answered: AtomicU64::new(0),
            conns: Mutex::default(),
        });
        let accept = tokio::spawn(accept_loop(listener, shared.clone())).abort_handle();
        Ok(HostileServer {
            addr,
            shared,
            accept,
        })
    }

    /// Starts a server that breaks every connection right after a correct handshake (which
    /// resumes the requested session): a malformed watch event, then the connection closed.
    /// A client without a reconnect backoff reconnects as fast as it can. After
    /// [`behave`](Self::behave), every connection is served correctly.
    pub async fn start_storm() -> io::Result<HostileServer> {
        // Connection 0 never comes: the storm is the only misbehaviour.
        let server = HostileServer::start_on(Misbehaviour::MalformedWatchEvent, 0).await?;
        server.shared.storm.store(true, Ordering::SeqCst);
        Ok(server)
    }

    /// Ends the storm of [`start_storm`](Self::start_storm): later connections are served
    /// correctly.
    pub fn behave(&self) {
        self.shared.storm.store(false, Ordering::SeqCst);
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The connect string (`127.0.0.1:port`).
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// The misbehaviour it was started with.
    pub fn misbehaviour(&self) -> Misbehaviour {
        self.shared.misbehaviour
    }

    /// Connections accepted so far: the client's connection attempts.
    pub fn connections(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// The ConnectRequests received, in order (one per connection that sent one).
    pub fn connect_requests(&self) -> Vec<ConnectRequest> {
        self.shared.seen.borrow().connect_requests.clone()
    }

    /// Requests answered correctly so far (pings and auth packets excluded).
    pub fn answered(&self) -> u64 {
        self.shared.answered.load(Ordering::SeqCst)
    }

    /// The connection the server misbehaved on, once it has.
    pub fn misbehaved_on(&self) -> Option<u64> {
        self.shared.seen.borrow().misbehaved_on
    }

    /// Waits until `n` ConnectRequests have arrived and returns them.
    pub async fn wait_for_connect_requests(&self, n: usize) -> Vec<ConnectRequest> {
        let mut seen = self.shared.seen.subscribe();
        // The sender lives in `self.shared`: this only ends when the condition holds.
        match seen.wait_for(|s| s.connect_requests.len() >= n).await {
            Ok(seen) => seen.connect_requests.clone(),
            Err(_) => Vec::new(),
        }
    }

    /// Waits until the client has closed the connection the server misbehaved on, and says
    /// how long that took.
    pub async fn reaction(&self) -> Reaction {
        let mut seen = self.shared.seen.subscribe();
        loop {
            if let Some(reaction) = seen.borrow_and_update().reaction {
                return reaction;
            }
            if seen.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }

    /// Holds back every ConnectResponse (the ConnectRequest is still read and recorded) while
    /// `hold` is true; releasing sends the ones held.
    pub fn hold_handshakes(&self, hold: bool) {
        self.shared.hold.send_replace(hold);
    }

    /// Closes every open connection (the client sees the socket close).
    pub fn cut(&self) {
        for (_, conn) in lock(&self.shared.conns).drain() {
            conn.abort();
        }
    }
}

impl Drop for HostileServer {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A connection task that panicked cannot leave the map half-updated: recover it.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    while let Ok((stream, _)) = listener.accept().await {
        let number = shared.accepted.fetch_add(1, Ordering::SeqCst) + 1;
        let _ = stream.set_nodelay(true);
        // The map's lock is held across the spawn, so the task's own removal comes after.
        let mut conns = lock(&shared.conns);
        let task = tokio::spawn(serve(stream, number, shared.clone()));
        conns.insert(number, task.abort_handle());
    }
}

/// One frame: the 4-byte length prefix, then `body`.
fn frame(body: &impl Encode) -> Bytes {
    let mut buf = BytesMut::with_capacity(4 + body.encoded_len());
    buf.put_i32(i32::try_from(body.encoded_len()).unwrap_or(i32::MAX));
    body.encode(&mut buf);
    buf.freeze()
}

/// Deterministic junk (xorshift), never a valid record by accident of zeros.
fn junk(len: usize, mut state: u32) -> Vec<u8> {
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state.to_be_bytes()[0]
        })
        .collect()
}

/// A watch notification (xid -1) whose WatcherEvent does not decode: its path claims 1,000
/// bytes and has 2. Length prefix included.
fn malformed_watch_event() -> Vec<u8> {
    let mut body = BytesMut::new();
    ReplyHeader {
        xid: NOTIFICATION_XID,
        zxid: -1,
        err: ErrorCode::OK,
    }
    .encode(&mut body);
    body.put_i32(3); // NodeDataChanged
    body.put_i32(3); // SyncConnected
    body.put_i32(1_000); // a path of 1,000 bytes...
    body.put_slice(b"/a"); // ...that has 2
    let mut bytes = i32::try_from(body.len())
        .unwrap_or(i32::MAX)
        .to_be_bytes()
        .to_vec();
    bytes.extend_from_slice(&body);
    bytes
}

type Frames = FramedRead<OwnedReadHalf, FrameCodec>;

struct Conn {
    number: u64,
    frames: Frames,
    write: OwnedWriteHalf,
    shared: Arc<Shared>,
}

async fn serve(stream: TcpStream, number: u64, shared: Arc<Shared>) {
    let (read, write) = stream.into_split();
    let mut conn = Conn {
        number,
        frames: FramedRead::new(read, FrameCodec::new()),
        write,
        shared,
    };
    let _ = conn.run().await;
    lock(&conn.shared.conns).remove(&number);
}

impl Conn {
    fn zxid(&self) -> i64 {
        self.shared.zxid.fetch_add(1, Ordering::SeqCst)
    }

    fn misbehaves(&self) -> bool {
        self.number == self.shared.on_connection
    }

    async fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write.write_all(bytes).await?;
        self.write.flush().await
    }

    async fn run(&mut self) -> io::Result<()> {
        let Some(Ok(first)) = self.frames.next().await else {
            return Ok(());
        };
        let Ok(request) = decode_exact::<ConnectRequest>(first) else {
            return Ok(());
        };
        let requested = request.session_id;
        let time_out = request.time_out.max(1);
        self.shared
            .seen
            .send_modify(|s| s.connect_requests.push(request));
        let mut hold = self.shared.hold.subscribe();
        // The sender lives in `shared`: this only ends when released.
        let _ = hold.wait_for(|held| !*held).await;

        if self.misbehaves() && self.shared.misbehaviour == Misbehaviour::ZeroTimeout {
            let response = ConnectResponse {
                protocol_version: 0,
                time_out: 0,
                session_id: 0,
                passwd: Some(Bytes::from_static(&[0; 16])),
                read_only: Some(false),
            };
            self.send(&frame(&response)).await?;
            return self.misbehaved().await;
        }
        let session_id = if requested != 0 {
            requested
        } else {
            self.shared.next_session.fetch_add(1, Ordering::SeqCst)
        };
        let response = ConnectResponse {
            protocol_version: 0,
            time_out,
            session_id,
            passwd: Some(Bytes::from_static(&PASSWORD)),
            read_only: Some(false),
        };
        self.send(&frame(&response)).await?;
        if self.shared.storm.load(Ordering::SeqCst) {
            // Returning drops the connection: the client sees it close after the event.
            return self.send(&malformed_watch_event()).await;
        }

        let mut waiting: Vec<RequestHeader> = Vec::new();
        while let Some(Ok(body)) = self.frames.next().await {
            let Some(header) = body
                .get(..8)
                .and_then(|h| decode_exact::<RequestHeader>(Bytes::copy_from_slice(h)).ok())
            else {
                return Ok(());
            };
            // Only normal requests (positive xids) trigger the misbehaviour; pings and auth
            // packets are answered as usual meanwhile.
            if self.misbehaves() && header.xid > 0 {
                waiting.push(header);
                if waiting.len() >= self.shared.misbehaviour.requests_needed() {
                    self.misbehave(&waiting).await?;
                    return self.misbehaved().await;
                }
                continue;
            }
            if !self.answer(header).await? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Answers one request correctly; `false` when the connection is to be closed.
    async fn answer(&mut self, header: RequestHeader) -> io::Result<bool> {
        let reply = |xid, zxid, err| ReplyHeader { xid, zxid, err };
        if header.xid == PING_XID {
            let zxid = self.shared.zxid.load(Ordering::SeqCst);
            self.send(&frame(&reply(PING_XID, zxid, ErrorCode::OK)))
                .await?;
            return Ok(true);
        }
        let zxid = self.zxid();
        let bytes = match header.op_code {
            OpCode::GET_DATA => frame(&(
                reply(header.xid, zxid, ErrorCode::OK),
                GetDataResponse {
                    data: Some(Bytes::from_static(FIXED_DATA)),
                    stat: Stat::default(),
                },
            )),
            OpCode::EXISTS => frame(&(
                reply(header.xid, zxid, ErrorCode::OK),
                ExistsResponse {
                    stat: Stat::default(),
                },
            )),
            OpCode::AUTH | OpCode::SET_WATCHES | OpCode::SET_WATCHES2 | OpCode::CLOSE_SESSION => {
                frame(&reply(header.xid, zxid, ErrorCode::OK))
            }
            _ => frame(&reply(header.xid, zxid, ErrorCode::UNIMPLEMENTED)),
        };
        self.send(&bytes).await?;
        if header.xid > 0 {
            self.shared.answered.fetch_add(1, Ordering::SeqCst);
        }
        Ok(header.op_code != OpCode::CLOSE_SESSION)
    }

    /// Sends the misbehaviour in place of the reply to `requests` (one, or two pipelined).
    async fn misbehave(&mut self, requests: &[RequestHeader]) -> io::Result<()> {
        let Some(first) = requests.first().cloned() else {
            return Ok(());
        };
        let zxid = self.zxid();
        let header = ReplyHeader {
            xid: first.xid,
            zxid,
            err: ErrorCode::OK,
        };
        let get_data_reply = |xid: i32| {
            frame(&(
                ReplyHeader {
                    xid,
                    zxid,
                    err: ErrorCode::OK,
                },
                GetDataResponse {
                    data: Some(Bytes::from_static(FIXED_DATA)),
                    stat: Stat::default(),
                },
            ))
        };
        let bytes: Vec<u8> = match self.shared.misbehaviour {
            Misbehaviour::Garbage => {
                let mut bytes = vec![0, 0, 0, 16, 0xde, 0xad, 0xbe, 0xef];
                bytes.extend(junk(12 + 48, 0x2545_f491));
                bytes
            }
            Misbehaviour::TruncatedFrame => {
                let mut bytes = 64i32.to_be_bytes().to_vec();
                bytes.extend_from_slice(&header.to_bytes()[..10]);
                bytes
            }
            Misbehaviour::HugeLength => {
                let mut bytes = HUGE_LENGTH.to_be_bytes().to_vec();
                bytes.extend_from_slice(&header.to_bytes());
                bytes
            }
            Misbehaviour::NegativeLength => {
                let mut bytes = NEGATIVE_LENGTH.to_be_bytes().to_vec();
                bytes.extend_from_slice(&header.to_bytes());
                bytes
            }
            Misbehaviour::UnknownXid => get_data_reply(first.xid.wrapping_add(1_000_000)).to_vec(),
            Misbehaviour::OutOfOrder => {
                let mut bytes = Vec::new();
                for request in requests.iter().rev() {
                    bytes.extend_from_slice(&get_data_reply(request.xid));
                }
                bytes
            }
            Misbehaviour::MalformedWatchEvent => malformed_watch_event(),
            // Handled in place of the ConnectResponse.
            Misbehaviour::ZeroTimeout => Vec::new(),
        };
        self.send(&bytes).await
    }

    /// After misbehaving: silence, reading (and dropping) whatever comes until the client
    /// closes the connection, then records how long that took.
    async fn misbehaved(&mut self) -> io::Result<()> {
        let since = Instant::now();
        let number = self.number;
        self.shared
            .seen
            .send_modify(|s| s.misbehaved_on = Some(number));
        while let Some(Ok(_)) = self.frames.next().await {}
        let reaction = Reaction {
            connection: number,
            closed_after: since.elapsed(),
        };
        self.shared
            .seen
            .send_modify(|s| s.reaction = Some(reaction));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_carry_their_length() {
        let bytes = frame(&ReplyHeader {
            xid: 7,
            zxid: 1,
            err: ErrorCode::OK,
        });
        assert_eq!(&bytes[..4], &16i32.to_be_bytes());
        assert_eq!(bytes.len(), 20);
    }

    #[test]
    fn junk_is_deterministic_and_not_zeros() {
        assert_eq!(junk(32, 9), junk(32, 9));
        assert!(junk(32, 9).iter().any(|&b| b != 0));
    }

    #[test]
    fn only_the_zero_timeout_replaces_the_handshake() {
        for m in Misbehaviour::ALL {
            assert_eq!(m.is_in_handshake(), m.requests_needed() == 0, "{m:?}");
        }
    }
}

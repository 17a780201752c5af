//! A session spoken by hand: `jute` records over a blocking `std::net::TcpStream`, with the
//! length-prefix framing written out here (not taken from `jute::frame`), so that tests check
//! the codec and the framing against the server itself, and can send what the client would
//! refuse to.
//!
//! [`RawSession`] opens a session ([`handshake`] a bare connect) and sends requests; the free
//! functions build the pieces ([`s`], [`b`], [`world_acl`], [`event`]) and frame them
//! ([`write_frame`], [`read_frame`]). Every call is bounded by [`IO_TIMEOUT`] and panics on an
//! unexpected answer (these are test helpers).

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::Bytes;
use jute::{
    Acl, ConnectRequest, ConnectResponse, CreateMode, CreateRequest, CreateResponse, DeleteRequest,
    Encode, ErrorCode, EventType, ExistsRequest, GetChildrenRequest, GetDataRequest, Id,
    KeeperState, OpCode, Perms, ReplyHeader, RequestHeader, Response, ServerMessage,
    SetDataRequest, Stat, WatcherEvent, decode_exact,
};

/// How long a raw session waits for a connect, a read or a write before it fails the test.
pub const IO_TIMEOUT: Duration = Duration::from_secs(15);
/// ZooKeeper 3.8's default `jute.maxbuffer`, the largest frame either side accepts.
pub const MAX_FRAME: usize = 0xfffff;
/// The xid of a watch notification.
pub const XID_NOTIFICATION: i32 = -1;
/// The xid of a ping and of its reply.
pub const XID_PING: i32 = -2;
/// The xid of an auth packet and of its reply.
pub const XID_AUTH: i32 = -4;

/// A jute string: `Some(v)`.
pub fn s(v: &str) -> Option<String> {
    Some(v.to_owned())
}

/// A jute buffer: `Some(v)`.
pub fn b(v: &[u8]) -> Option<Bytes> {
    Some(Bytes::copy_from_slice(v))
}

/// The open ACL: every permission for `world:anyone`.
pub fn world_acl() -> Option<Vec<Acl>> {
    Some(vec![Acl {
        perms: Perms::ALL,
        id: Id {
            scheme: s("world"),
            id: s("anyone"),
        },
    }])
}

/// Writes one frame: the 4-byte big-endian length, then `payload` encoded, written out here
/// rather than taken from `jute::frame`, so that the framing is checked against the server.
///
/// # Errors
///
/// The error of the write.
pub fn write_frame(stream: &mut TcpStream, payload: &impl Encode) -> io::Result<()> {
    let body = payload.to_bytes();
    let len = i32::try_from(body.len()).expect("frame fits an i32");
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&body);
    stream.write_all(&frame)
}

/// Reads one frame and returns it without its length prefix.
///
/// # Errors
///
/// The error of the read (a timeout, EOF).
///
/// # Panics
///
/// When the length is negative or over [`MAX_FRAME`].
pub fn read_frame(stream: &mut TcpStream) -> io::Result<Bytes> {
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix)?;
    let len = i32::from_be_bytes(prefix);
    let len = usize::try_from(len).expect("non-negative frame length");
    assert!(len <= MAX_FRAME, "frame of {len} bytes");
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body)?;
    Ok(Bytes::from(body))
}

/// True when the server has closed the connection (EOF or reset) within the I/O timeout.
pub fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64];
    let deadline = Instant::now() + IO_TIMEOUT;
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return true,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Err(e) => panic!("unexpected read error: {e}"),
        }
        if Instant::now() > deadline {
            return false;
        }
    }
}

/// A request for a new session asking for `time_out` milliseconds.
pub fn new_session_request(time_out: i32) -> ConnectRequest {
    ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: 0,
        time_out,
        session_id: 0,
        passwd: Some(Bytes::from_static(&[0; 16])),
        read_only: false,
    }
}

/// Opens a connection and sends `request`; returns the stream and the decoded answer, or the
/// error of reading it (the server closes the connection without an answer in some cases).
pub fn handshake(
    addr: SocketAddr,
    request: &ConnectRequest,
) -> (TcpStream, io::Result<ConnectResponse>) {
    let mut stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT).expect("connect");
    stream
        .set_read_timeout(Some(IO_TIMEOUT))
        .expect("set read timeout");
    stream
        .set_write_timeout(Some(IO_TIMEOUT))
        .expect("set write timeout");
    stream.set_nodelay(true).expect("set TCP_NODELAY");
    write_frame(&mut stream, request).expect("send ConnectRequest");
    let response = read_frame(&mut stream)
        .map(|frame| decode_exact::<ConnectResponse>(frame).expect("decode ConnectResponse"));
    (stream, response)
}

/// A session spoken by hand over a blocking `TcpStream`: requests are sent as encoded records
/// and replies decoded; notifications that arrive before a reply are queued for
/// [`next_event`](Self::next_event). Every method panics on an unexpected answer.
pub struct RawSession {
    /// The connection.
    pub stream: TcpStream,
    /// The session id the server gave.
    pub session_id: i64,
    /// The session password the server gave.
    pub passwd: Bytes,
    /// The negotiated session timeout, in milliseconds.
    pub time_out: i32,
    next_xid: i32,
    /// The highest zxid seen in a reply.
    pub last_zxid: i64,
    pending: HashMap<i32, OpCode>,
    events: VecDeque<(ReplyHeader, WatcherEvent)>,
}

impl RawSession {
    /// Opens a new session on `addr` with a 10 s timeout.
    pub fn connect(addr: SocketAddr) -> RawSession {
        RawSession::connect_with_timeout(addr, 10_000)
    }

    /// Opens a new session on `addr` asking for `time_out` milliseconds.
    pub fn connect_with_timeout(addr: SocketAddr, time_out: i32) -> RawSession {
        let (stream, response) = handshake(addr, &new_session_request(time_out));
        let response = response.expect("ConnectResponse");
        assert_ne!(response.session_id, 0, "{response:?}");
        RawSession::from_response(stream, response)
    }

    /// The session `response` established on `stream`.
    pub fn from_response(stream: TcpStream, response: ConnectResponse) -> RawSession {
        RawSession {
            stream,
            session_id: response.session_id,
            passwd: response.passwd.clone().expect("a session password"),
            time_out: response.time_out,
            next_xid: 1,
            last_zxid: 0,
            pending: HashMap::new(),
            events: VecDeque::new(),
        }
    }

    /// A request to resume this session on a new connection.
    pub fn resume_request(&self) -> ConnectRequest {
        ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: self.last_zxid,
            time_out: self.time_out,
            session_id: self.session_id,
            passwd: Some(self.passwd.clone()),
            read_only: false,
        }
    }

    /// Sends request `op` with `body` under `xid`.
    pub fn send_xid(&mut self, xid: i32, op: OpCode, body: impl Encode) {
        let header = RequestHeader { xid, op_code: op };
        write_frame(&mut self.stream, &(header, body)).expect("send request");
        self.pending.insert(xid, op);
    }

    /// Sends request `op` with `body` under the next xid, and returns the xid.
    pub fn send(&mut self, op: OpCode, body: impl Encode) -> i32 {
        let xid = self.next_xid;
        self.next_xid += 1;
        self.send_xid(xid, op, body);
        xid
    }

    /// Reads the next reply, queueing notifications that arrive before it.
    pub fn read_reply(&mut self) -> (ReplyHeader, Option<Response>, Bytes) {
        loop {
            let frame = read_frame(&mut self.stream).expect("read a frame");
            let pending = &mut self.pending;
            let message = ServerMessage::decode(frame.clone(), |xid| {
                pending
                    .remove(&xid)
                    .unwrap_or_else(|| panic!("reply for unknown xid {xid}"))
            })
            .expect("decode a server frame");
            match message {
                ServerMessage::Notification(header, event) => {
                    self.events.push_back((header, event))
                }
                ServerMessage::Reply { header, body } => {
                    self.last_zxid = self.last_zxid.max(header.zxid);
                    return (header, body, frame);
                }
            }
        }
    }

    /// Sends request `op` with `body` under `xid` and reads its reply: header, body and the
    /// whole frame.
    pub fn request_xid(
        &mut self,
        xid: i32,
        op: OpCode,
        body: impl Encode,
    ) -> (ReplyHeader, Option<Response>, Bytes) {
        self.send_xid(xid, op, body);
        let reply = self.read_reply();
        assert_eq!(reply.0.xid, xid, "replies come in request order");
        reply
    }

    /// Sends request `op` with `body` and reads its reply.
    pub fn request(&mut self, op: OpCode, body: impl Encode) -> (ReplyHeader, Option<Response>) {
        let xid = self.send(op, body);
        let (header, response, _) = self.read_reply();
        assert_eq!(header.xid, xid, "replies come in request order");
        (header, response)
    }

    /// A request that must succeed; returns the reply's zxid and body.
    pub fn ok(&mut self, op: OpCode, body: impl Encode) -> (i64, Response) {
        let (header, response) = self.request(op, body);
        assert_eq!(header.err, ErrorCode::OK, "{op:?} failed: {header:?}");
        (header.zxid, response.expect("a body with OK"))
    }

    /// A request that must fail; checks that the reply is the bare 16-byte header.
    pub fn fails(&mut self, op: OpCode, body: impl Encode) -> ErrorCode {
        let xid = self.send(op, body);
        let (header, response, frame) = self.read_reply();
        assert_eq!(header.xid, xid);
        assert_ne!(header.err, ErrorCode::OK, "{op:?} succeeded: {response:?}");
        assert_eq!(response, None);
        assert_eq!(frame.len(), 16, "an error reply is only the reply header");
        header.err
    }

    /// Creates `path` with `data`, the open ACL and `flags`; returns the created path.
    pub fn create(&mut self, path: &str, data: &[u8], flags: CreateMode) -> String {
        let request = CreateRequest {
            path: s(path),
            data: b(data),
            acl: world_acl(),
            flags,
        };
        match self.ok(OpCode::CREATE, request).1 {
            Response::Create(CreateResponse { path: Some(p) }) => p,
            other => panic!("create {path}: {other:?}"),
        }
    }

    /// Sends create(`path`, no data, the open ACL, persistent) under `xid`, with the path's
    /// bytes as given (which need not be UTF-8: a request the client would refuse to send),
    /// and returns the reply's header.
    pub fn create_with_path_bytes(&mut self, xid: i32, path: &[u8]) -> ReplyHeader {
        // A jute string is a length and bytes, as a buffer is: the path goes as a buffer.
        let body = (
            (Some(Bytes::copy_from_slice(path)), b(&[])),
            (world_acl(), CreateMode::PERSISTENT),
        );
        self.request_xid(xid, OpCode::CREATE, body).0
    }

    /// getData: the data and the stat.
    pub fn get_data(&mut self, path: &str, watch: bool) -> (Option<Bytes>, Stat) {
        let request = GetDataRequest {
            path: s(path),
            watch,
        };
        match self.ok(OpCode::GET_DATA, request).1 {
            Response::GetData(r) => (r.data, r.stat),
            other => panic!("getData {path}: {other:?}"),
        }
    }

    /// setData at `version`: the new stat.
    pub fn set_data(&mut self, path: &str, data: &[u8], version: i32) -> Stat {
        let request = SetDataRequest {
            path: s(path),
            data: b(data),
            version,
        };
        match self.ok(OpCode::SET_DATA, request).1 {
            Response::SetData(r) => r.stat,
            other => panic!("setData {path}: {other:?}"),
        }
    }

    /// exists: the stat, or the error code (`NONODE`).
    pub fn exists(&mut self, path: &str, watch: bool) -> Result<Stat, ErrorCode> {
        let request = ExistsRequest {
            path: s(path),
            watch,
        };
        match self.request(OpCode::EXISTS, request) {
            (h, Some(Response::Exists(r))) if h.err == ErrorCode::OK => Ok(r.stat),
            (h, None) => Err(h.err),
            other => panic!("exists {path}: {other:?}"),
        }
    }

    /// getChildren: the children of `path`, sorted.
    pub fn children(&mut self, path: &str, watch: bool) -> Vec<String> {
        let request = GetChildrenRequest {
            path: s(path),
            watch,
        };
        match self.ok(OpCode::GET_CHILDREN, request).1 {
            Response::GetChildren(r) => sorted(r.children),
            other => panic!("getChildren {path}: {other:?}"),
        }
    }

    /// Deletes `path` at `version`.
    pub fn delete(&mut self, path: &str, version: i32) {
        let request = DeleteRequest {
            path: s(path),
            version,
        };
        assert_eq!(self.ok(OpCode::DELETE, request).1, Response::Empty);
    }

    /// A ping round trip.
    pub fn ping(&mut self) {
        let (header, body, _) = self.request_xid(XID_PING, OpCode::PING, ());
        assert_eq!(header.err, ErrorCode::OK);
        assert_eq!(body, Some(Response::Empty));
    }

    /// The next watch notification (already received, or read within the I/O timeout).
    pub fn next_event(&mut self) -> WatcherEvent {
        let (header, event) = match self.events.pop_front() {
            Some(e) => e,
            None => {
                let frame = read_frame(&mut self.stream).expect("a notification");
                match ServerMessage::decode(frame, |xid| panic!("unexpected reply {xid}")) {
                    Ok(ServerMessage::Notification(h, e)) => (h, e),
                    other => panic!("expected a notification, got {other:?}"),
                }
            }
        };
        assert_eq!(header.xid, XID_NOTIFICATION);
        assert_eq!(header.err, ErrorCode::OK);
        // ZooKeeper 3.8 sends notifications with zxid -1.
        assert_eq!(header.zxid, -1, "{header:?}");
        assert_eq!(event.state, KeeperState::SYNC_CONNECTED);
        event
    }

    /// Asserts that no notification is pending: a ping round trip brings none.
    pub fn assert_no_events(&mut self) {
        self.ping();
        assert!(
            self.events.is_empty(),
            "unexpected events: {:?}",
            self.events
        );
    }

    /// Closes the session (closeSession answered OK) and checks that the server closes the
    /// connection.
    pub fn close(mut self) {
        let (header, body, _) = self.request_xid(self.next_xid, OpCode::CLOSE_SESSION, ());
        assert_eq!(header.err, ErrorCode::OK);
        assert_eq!(body, Some(Response::Empty));
        assert!(
            closed_by_server(&mut self.stream),
            "the server closes after closeSession"
        );
    }
}

/// The names of a getChildren answer, sorted.
pub fn sorted(children: Option<jute::StringList>) -> Vec<String> {
    let children = children.expect("a children list");
    assert!(!children.has_nulls(), "a null child name: {children:?}");
    let mut names = children.to_vec();
    names.sort();
    names
}

/// A `SyncConnected` watch event of `event_type` on `path`.
pub fn event(event_type: EventType, path: &str) -> WatcherEvent {
    WatcherEvent {
        event_type,
        state: KeeperState::SYNC_CONNECTED,
        path: s(path),
    }
}

//! The client protocol against real ZooKeeper 3.8 servers, spoken by hand: `jute` records over a
//! blocking `std::net::TcpStream`, with the length-prefix framing written out here (not taken
//! from `jute::frame`), so these tests check the codec and the framing against the server itself.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::Bytes;
use jute::{
    Acl, AddWatchMode, AuthPacket, CheckVersionRequest, CheckWatchesRequest, ConnectRequest,
    ConnectResponse, Create2Response, CreateMode, CreateRequest, CreateResponse, CreateTtlRequest,
    DeleteRequest, Encode, ErrorCode, ErrorResponse, EventType, ExistsRequest,
    GetAllChildrenNumberRequest, GetChildren2Request, GetChildrenRequest, GetDataRequest,
    GetEphemeralsRequest, Id, KeeperState, MultiOp, MultiRequest, MultiResponse, MultiResult,
    OpCode, Perms, RemoveWatchesRequest, ReplyHeader, RequestHeader, Response, ServerMessage,
    SetAclRequest, SetDataRequest, Stat, SyncRequest, WatcherEvent, WatcherType, decode_exact,
};
use zk_testkit::{Ensemble, ZkServer, started};

const IO_TIMEOUT: Duration = Duration::from_secs(15);
/// ZooKeeper 3.8's default `jute.maxbuffer`, the largest frame either side accepts.
const MAX_FRAME: usize = 0xfffff;
const XID_NOTIFICATION: i32 = -1;
const XID_PING: i32 = -2;
const XID_AUTH: i32 = -4;

// ---------------------------------------------------------------------------------------------
// A minimal blocking client.

fn s(v: &str) -> Option<String> {
    Some(v.to_owned())
}

fn b(v: &[u8]) -> Option<Bytes> {
    Some(Bytes::copy_from_slice(v))
}

fn world_acl() -> Option<Vec<Acl>> {
    Some(vec![Acl {
        perms: Perms::ALL,
        id: Id {
            scheme: s("world"),
            id: s("anyone"),
        },
    }])
}

fn write_frame(stream: &mut TcpStream, payload: &impl Encode) -> io::Result<()> {
    let body = payload.to_bytes();
    let len = i32::try_from(body.len()).expect("frame fits an i32");
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&body);
    stream.write_all(&frame)
}

fn read_frame(stream: &mut TcpStream) -> io::Result<Bytes> {
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
fn closed_by_server(stream: &mut TcpStream) -> bool {
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

fn new_session_request(time_out: i32) -> ConnectRequest {
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
fn handshake(
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

struct Session {
    stream: TcpStream,
    session_id: i64,
    passwd: Bytes,
    time_out: i32,
    next_xid: i32,
    last_zxid: i64,
    pending: HashMap<i32, OpCode>,
    events: VecDeque<(ReplyHeader, WatcherEvent)>,
}

impl Session {
    fn connect(addr: SocketAddr) -> Session {
        Session::connect_with_timeout(addr, 10_000)
    }

    fn connect_with_timeout(addr: SocketAddr, time_out: i32) -> Session {
        let (stream, response) = handshake(addr, &new_session_request(time_out));
        let response = response.expect("ConnectResponse");
        assert_ne!(response.session_id, 0, "{response:?}");
        Session::from_response(stream, response)
    }

    fn from_response(stream: TcpStream, response: ConnectResponse) -> Session {
        Session {
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
    fn resume_request(&self) -> ConnectRequest {
        ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: self.last_zxid,
            time_out: self.time_out,
            session_id: self.session_id,
            passwd: Some(self.passwd.clone()),
            read_only: false,
        }
    }

    fn send_xid(&mut self, xid: i32, op: OpCode, body: impl Encode) {
        let header = RequestHeader { xid, op_code: op };
        write_frame(&mut self.stream, &(header, body)).expect("send request");
        self.pending.insert(xid, op);
    }

    fn send(&mut self, op: OpCode, body: impl Encode) -> i32 {
        let xid = self.next_xid;
        self.next_xid += 1;
        self.send_xid(xid, op, body);
        xid
    }

    /// Reads the next reply, queueing notifications that arrive before it.
    fn read_reply(&mut self) -> (ReplyHeader, Option<Response>, Bytes) {
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

    fn request_xid(
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

    fn request(&mut self, op: OpCode, body: impl Encode) -> (ReplyHeader, Option<Response>) {
        let xid = self.send(op, body);
        let (header, response, _) = self.read_reply();
        assert_eq!(header.xid, xid, "replies come in request order");
        (header, response)
    }

    /// A request that must succeed; returns the reply's zxid and body.
    fn ok(&mut self, op: OpCode, body: impl Encode) -> (i64, Response) {
        let (header, response) = self.request(op, body);
        assert_eq!(header.err, ErrorCode::OK, "{op:?} failed: {header:?}");
        (header.zxid, response.expect("a body with OK"))
    }

    /// A request that must fail; checks that the reply is the bare 16-byte header.
    fn fails(&mut self, op: OpCode, body: impl Encode) -> ErrorCode {
        let xid = self.send(op, body);
        let (header, response, frame) = self.read_reply();
        assert_eq!(header.xid, xid);
        assert_ne!(header.err, ErrorCode::OK, "{op:?} succeeded: {response:?}");
        assert_eq!(response, None);
        assert_eq!(frame.len(), 16, "an error reply is only the reply header");
        header.err
    }

    fn create(&mut self, path: &str, data: &[u8], flags: CreateMode) -> String {
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

    fn get_data(&mut self, path: &str, watch: bool) -> (Option<Bytes>, Stat) {
        let request = GetDataRequest {
            path: s(path),
            watch,
        };
        match self.ok(OpCode::GET_DATA, request).1 {
            Response::GetData(r) => (r.data, r.stat),
            other => panic!("getData {path}: {other:?}"),
        }
    }

    fn set_data(&mut self, path: &str, data: &[u8], version: i32) -> Stat {
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

    fn exists(&mut self, path: &str, watch: bool) -> Result<Stat, ErrorCode> {
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

    fn children(&mut self, path: &str, watch: bool) -> Vec<String> {
        let request = GetChildrenRequest {
            path: s(path),
            watch,
        };
        match self.ok(OpCode::GET_CHILDREN, request).1 {
            Response::GetChildren(r) => sorted(r.children),
            other => panic!("getChildren {path}: {other:?}"),
        }
    }

    fn delete(&mut self, path: &str, version: i32) {
        let request = DeleteRequest {
            path: s(path),
            version,
        };
        assert_eq!(self.ok(OpCode::DELETE, request).1, Response::Empty);
    }

    fn ping(&mut self) {
        let (header, body, _) = self.request_xid(XID_PING, OpCode::PING, ());
        assert_eq!(header.err, ErrorCode::OK);
        assert_eq!(body, Some(Response::Empty));
    }

    /// The next watch notification (already received, or read within the I/O timeout).
    fn next_event(&mut self) -> WatcherEvent {
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
    fn assert_no_events(&mut self) {
        self.ping();
        assert!(
            self.events.is_empty(),
            "unexpected events: {:?}",
            self.events
        );
    }

    fn close(mut self) {
        let (header, body, _) = self.request_xid(self.next_xid, OpCode::CLOSE_SESSION, ());
        assert_eq!(header.err, ErrorCode::OK);
        assert_eq!(body, Some(Response::Empty));
        assert!(
            closed_by_server(&mut self.stream),
            "the server closes after closeSession"
        );
    }
}

fn sorted(children: Option<Vec<Option<String>>>) -> Vec<String> {
    let mut names: Vec<String> = children
        .expect("a children list")
        .into_iter()
        .map(|c| c.expect("a child name"))
        .collect();
    names.sort();
    names
}

fn event(event_type: EventType, path: &str) -> WatcherEvent {
    WatcherEvent {
        event_type,
        state: KeeperState::SYNC_CONNECTED,
        path: s(path),
    }
}

// ---------------------------------------------------------------------------------------------

#[test]
fn handshake_and_node_lifecycle() {
    let server = started(ZkServer::start());
    let (stream, response) = handshake(server.addr(), &new_session_request(10_000));
    let response = response.expect("ConnectResponse");
    assert_eq!(response.protocol_version, 0);
    assert_eq!(response.time_out, 10_000, "within [2, 20] ticks of 2000 ms");
    assert_ne!(response.session_id, 0);
    assert_eq!(response.passwd.as_ref().map(Bytes::len), Some(16));
    assert_eq!(
        response.read_only,
        Some(false),
        "3.8 sends the read-only byte"
    );
    let mut zk = Session::from_response(stream, response);
    let cons = server.four_letter("cons").unwrap();
    assert!(
        cons.contains(&format!("sid=0x{:x}", zk.session_id)),
        "{cons}"
    );

    // create, getData
    let (create_zxid, created) = zk.ok(
        OpCode::CREATE,
        CreateRequest {
            path: s("/raw"),
            data: b(b"v0"),
            acl: world_acl(),
            flags: CreateMode::PERSISTENT,
        },
    );
    assert_eq!(
        created,
        Response::Create(CreateResponse { path: s("/raw") })
    );
    assert!(create_zxid > 0);
    let (data, stat) = zk.get_data("/raw", false);
    assert_eq!(data, b(b"v0"));
    assert_eq!(stat.czxid, create_zxid);
    assert_eq!(stat.mzxid, create_zxid);
    assert_eq!(stat.pzxid, create_zxid);
    assert_eq!((stat.version, stat.cversion, stat.aversion), (0, 0, 0));
    assert_eq!(
        (stat.data_length, stat.num_children, stat.ephemeral_owner),
        (2, 0, 0)
    );
    assert_eq!(stat.ctime, stat.mtime);

    // setData with the right and a wrong version
    let stat = zk.set_data("/raw", b"v1", 0);
    assert_eq!(stat.version, 1);
    assert!(stat.mzxid > create_zxid);
    let bad = SetDataRequest {
        path: s("/raw"),
        data: b(b"v2"),
        version: 0,
    };
    assert_eq!(zk.fails(OpCode::SET_DATA, bad), ErrorCode::BAD_VERSION);
    assert_eq!(zk.exists("/raw", false).unwrap().version, 1);
    assert_eq!(zk.exists("/nope", false), Err(ErrorCode::NO_NODE));

    // sequential and create2
    assert_eq!(
        zk.create("/raw/seq-", b"", CreateMode::PERSISTENT_SEQUENTIAL),
        "/raw/seq-0000000000"
    );
    let (zxid, created) = zk.ok(
        OpCode::CREATE2,
        CreateRequest {
            path: s("/raw/two"),
            data: None,
            acl: world_acl(),
            flags: CreateMode::PERSISTENT,
        },
    );
    let Response::Create2(Create2Response { path, stat }) = created else {
        panic!("create2: {created:?}");
    };
    assert_eq!(path, s("/raw/two"));
    assert_eq!(stat.czxid, zxid);
    assert_eq!(stat.data_length, 0);
    // A node created with null data reads back as null data, not as an empty buffer.
    assert_eq!(zk.get_data("/raw/two", false).0, None);

    // children
    let (_, listed) = zk.ok(
        OpCode::GET_CHILDREN2,
        GetChildren2Request {
            path: s("/raw"),
            watch: false,
        },
    );
    let Response::GetChildren2(listed) = listed else {
        panic!("getChildren2: {listed:?}");
    };
    assert_eq!(sorted(listed.children), ["seq-0000000000", "two"]);
    assert_eq!(listed.stat.num_children, 2);
    assert_eq!(listed.stat.cversion, 2);
    assert_eq!(zk.children("/raw/two", false), Vec::<String>::new());
    let (_, count) = zk.ok(
        OpCode::GET_ALL_CHILDREN_NUMBER,
        GetAllChildrenNumberRequest { path: s("/raw") },
    );
    assert!(matches!(count, Response::GetAllChildrenNumber(c) if c.total_number == 2));

    // sync, ping
    let (_, synced) = zk.ok(OpCode::SYNC, SyncRequest { path: s("/raw") });
    assert!(matches!(synced, Response::Sync(r) if r.path == s("/raw")));
    zk.ping();

    // delete
    let delete_parent = DeleteRequest {
        path: s("/raw"),
        version: -1,
    };
    assert_eq!(
        zk.fails(OpCode::DELETE, delete_parent.clone()),
        ErrorCode::NOT_EMPTY
    );
    zk.delete("/raw/seq-0000000000", 0);
    zk.delete("/raw/two", -1);
    let (_, deleted) = zk.ok(OpCode::DELETE, delete_parent);
    assert_eq!(deleted, Response::Empty);
    assert_eq!(zk.exists("/raw", false), Err(ErrorCode::NO_NODE));

    zk.close();
}

#[test]
fn errors_are_a_bare_reply_header() {
    let server = started(ZkServer::start());
    let mut zk = Session::connect(server.addr());
    zk.create("/e", b"", CreateMode::PERSISTENT);
    zk.create("/eph", b"", CreateMode::EPHEMERAL);

    let create = |path: &str, acl: Option<Vec<Acl>>| CreateRequest {
        path: s(path),
        data: None,
        acl,
        flags: CreateMode::PERSISTENT,
    };
    assert_eq!(
        zk.fails(OpCode::CREATE, create("/e", world_acl())),
        ErrorCode::NODE_EXISTS
    );
    assert_eq!(
        zk.fails(OpCode::CREATE, create("/a/b", world_acl())),
        ErrorCode::NO_NODE
    );
    assert_eq!(
        zk.fails(OpCode::CREATE, create("/eph/child", world_acl())),
        ErrorCode::NO_CHILDREN_FOR_EPHEMERALS
    );
    assert_eq!(
        zk.fails(OpCode::CREATE, create("/f", Some(vec![]))),
        ErrorCode::INVALID_ACL
    );
    assert_eq!(
        zk.fails(OpCode::CREATE, create("/f", None)),
        ErrorCode::INVALID_ACL
    );
    assert_eq!(
        zk.fails(OpCode::CREATE, create("no-slash", world_acl())),
        ErrorCode::BAD_ARGUMENTS
    );
    let get = GetDataRequest {
        path: s("/missing"),
        watch: false,
    };
    assert_eq!(zk.fails(OpCode::GET_DATA, get), ErrorCode::NO_NODE);
    let delete = DeleteRequest {
        path: s("/e"),
        version: 3,
    };
    assert_eq!(zk.fails(OpCode::DELETE, delete), ErrorCode::BAD_VERSION);
    // TTL nodes need zookeeper.extendedTypesEnabled.
    let ttl = CreateTtlRequest {
        path: s("/ttl"),
        data: None,
        acl: world_acl(),
        flags: CreateMode::PERSISTENT_WITH_TTL,
        ttl: 1000,
    };
    assert_eq!(zk.fails(OpCode::CREATE_TTL, ttl), ErrorCode::UNIMPLEMENTED);
    // After all that, the session still works.
    zk.ping();
    assert_eq!(zk.children("/", false), ["e", "eph", "zookeeper"]);
}

#[test]
fn extended_types_create_ttl_and_container_nodes() {
    let server = started(
        ZkServer::builder()
            .extended_types(true)
            .system_property("znode.container.checkIntervalMs", 100)
            .start(),
    );
    let mut zk = Session::connect(server.addr());

    let ttl_ms = 300;
    let (_, created) = zk.ok(
        OpCode::CREATE_TTL,
        CreateTtlRequest {
            path: s("/ttl"),
            data: b(b"x"),
            acl: world_acl(),
            flags: CreateMode::PERSISTENT_WITH_TTL,
            ttl: ttl_ms,
        },
    );
    let Response::Create2(Create2Response { path, stat }) = created else {
        panic!("createTTL: {created:?}");
    };
    assert_eq!(path, s("/ttl"));
    // The server keeps TTL and container markers in ephemeralOwner but shows clients 0.
    assert_eq!(stat.ephemeral_owner, 0);

    let (_, created) = zk.ok(
        OpCode::CREATE_CONTAINER,
        CreateRequest {
            path: s("/box"),
            data: None,
            acl: world_acl(),
            flags: CreateMode::CONTAINER,
        },
    );
    let Response::Create2(Create2Response { stat, .. }) = created else {
        panic!("createContainer: {created:?}");
    };
    assert_eq!(stat.ephemeral_owner, 0);
    zk.create("/box/item", b"", CreateMode::PERSISTENT);
    zk.delete("/box/item", -1);

    // The container manager (checking every 100 ms here) removes the expired TTL node and the
    // emptied container.
    let deadline = Instant::now() + Duration::from_secs(20);
    while zk.exists("/ttl", false).is_ok() || zk.exists("/box", false).is_ok() {
        assert!(
            Instant::now() < deadline,
            "TTL node or container not removed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn watches_fire_once_and_persistent_ones_stay() {
    let server = started(ZkServer::start());
    let mut watcher = Session::connect(server.addr());
    let mut writer = Session::connect(server.addr());
    writer.create("/w", b"0", CreateMode::PERSISTENT);

    watcher.get_data("/w", true);
    assert_eq!(watcher.exists("/w2", true), Err(ErrorCode::NO_NODE));
    assert!(watcher.children("/w", true).is_empty());

    writer.set_data("/w", b"1", -1);
    assert_eq!(
        watcher.next_event(),
        event(EventType::NODE_DATA_CHANGED, "/w")
    );
    writer.create("/w2", b"", CreateMode::PERSISTENT);
    assert_eq!(watcher.next_event(), event(EventType::NODE_CREATED, "/w2"));
    writer.create("/w/c", b"", CreateMode::PERSISTENT);
    assert_eq!(
        watcher.next_event(),
        event(EventType::NODE_CHILDREN_CHANGED, "/w")
    );
    // One-shot: the same changes again fire nothing.
    writer.set_data("/w", b"2", -1);
    writer.create("/w/d", b"", CreateMode::PERSISTENT);
    watcher.assert_no_events();

    // checkWatches / removeWatches on a data watch.
    watcher.get_data("/w2", true);
    let check = CheckWatchesRequest {
        path: s("/w2"),
        watcher_type: WatcherType::DATA,
    };
    assert_eq!(
        watcher.ok(OpCode::CHECK_WATCHES, check.clone()).1,
        Response::Empty
    );
    let remove = RemoveWatchesRequest {
        path: s("/w2"),
        watcher_type: WatcherType::DATA,
    };
    assert_eq!(
        watcher.ok(OpCode::REMOVE_WATCHES, remove).1,
        Response::Empty
    );
    assert_eq!(
        watcher.fails(OpCode::CHECK_WATCHES, check),
        ErrorCode::NO_WATCHER
    );
    writer.set_data("/w2", b"x", -1);
    watcher.assert_no_events();

    // A persistent recursive watch fires for every change below, and stays.
    let (_, added) = watcher.ok(
        OpCode::ADD_WATCH,
        jute::AddWatchRequest {
            path: s("/w"),
            mode: AddWatchMode::PERSISTENT_RECURSIVE,
        },
    );
    assert_eq!(
        added,
        Response::AddWatch(ErrorResponse { err: ErrorCode::OK })
    );
    writer.set_data("/w/c", b"a", -1);
    writer.set_data("/w/c", b"b", -1);
    writer.create("/w/c/e", b"", CreateMode::PERSISTENT);
    writer.delete("/w/c/e", -1);
    assert_eq!(
        watcher.next_event(),
        event(EventType::NODE_DATA_CHANGED, "/w/c")
    );
    assert_eq!(
        watcher.next_event(),
        event(EventType::NODE_DATA_CHANGED, "/w/c")
    );
    assert_eq!(
        watcher.next_event(),
        event(EventType::NODE_CREATED, "/w/c/e")
    );
    assert_eq!(
        watcher.next_event(),
        event(EventType::NODE_DELETED, "/w/c/e")
    );
    watcher.assert_no_events();
}

#[test]
fn multi_is_all_or_nothing_and_multi_read_is_not() {
    let server = started(ZkServer::start());
    let mut zk = Session::connect(server.addr());
    let create = |path: &str| {
        MultiOp::Create(CreateRequest {
            path: s(path),
            data: b(b"m"),
            acl: world_acl(),
            flags: CreateMode::PERSISTENT,
        })
    };
    let check = |path: &str, version| {
        MultiOp::Check(CheckVersionRequest {
            path: s(path),
            version,
        })
    };

    let ops = MultiRequest {
        ops: vec![
            create("/m"),
            check("/m", 0),
            MultiOp::SetData(SetDataRequest {
                path: s("/m"),
                data: b(b"n"),
                version: 0,
            }),
        ],
    };
    let (zxid, response) = zk.ok(OpCode::MULTI, ops);
    let Response::Multi(MultiResponse { results }) = response else {
        panic!("multi: {response:?}");
    };
    assert_eq!(results.len(), 3);
    assert_eq!(
        results[0],
        MultiResult::Create(CreateResponse { path: s("/m") })
    );
    assert_eq!(results[1], MultiResult::Check);
    let MultiResult::SetData(set) = &results[2] else {
        panic!("{results:?}");
    };
    assert_eq!(set.stat.version, 1);
    assert_eq!(set.stat.czxid, zxid, "one transaction, one zxid");
    assert_eq!(set.stat.mzxid, zxid);

    // A failing op fails the whole transaction; the reply header still says OK.
    let ops = MultiRequest {
        ops: vec![
            create("/m2"),
            check("/m", 7),
            MultiOp::Delete(DeleteRequest {
                path: s("/m"),
                version: -1,
            }),
        ],
    };
    let (_, response) = zk.ok(OpCode::MULTI, ops);
    assert_eq!(
        response,
        Response::Multi(MultiResponse {
            results: vec![
                MultiResult::Error(ErrorCode::OK),
                MultiResult::Error(ErrorCode::BAD_VERSION),
                MultiResult::Error(ErrorCode::RUNTIME_INCONSISTENCY),
            ]
        })
    );
    assert_eq!(zk.exists("/m2", false), Err(ErrorCode::NO_NODE));
    assert_eq!(zk.get_data("/m", false).0, b(b"n"));

    // multiRead: independent reads, each with its own result.
    let ops = MultiRequest {
        ops: vec![
            MultiOp::GetData(GetDataRequest {
                path: s("/m"),
                watch: false,
            }),
            MultiOp::GetChildren(GetChildrenRequest {
                path: s("/"),
                watch: false,
            }),
            MultiOp::GetData(GetDataRequest {
                path: s("/missing"),
                watch: false,
            }),
        ],
    };
    let (_, response) = zk.ok(OpCode::MULTI_READ, ops);
    let Response::Multi(MultiResponse { results }) = response else {
        panic!("multiRead: {response:?}");
    };
    assert!(
        matches!(&results[0], MultiResult::GetData(r) if r.data == b(b"n") && r.stat.version == 1)
    );
    assert!(
        matches!(&results[1], MultiResult::GetChildren(r) if sorted(r.children.clone()) == ["m", "zookeeper"])
    );
    assert_eq!(results[2], MultiResult::Error(ErrorCode::NO_NODE));
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let server = started(ZkServer::start());
    let mut zk = Session::connect(server.addr());
    let n = 100;
    let xids: Vec<i32> = (0..n)
        .map(|i| {
            zk.send(
                OpCode::CREATE,
                CreateRequest {
                    path: s(&format!("/p{i:03}")),
                    data: b(&[i as u8]),
                    acl: world_acl(),
                    flags: CreateMode::PERSISTENT,
                },
            )
        })
        .collect();
    let mut last_zxid = 0;
    for (i, xid) in xids.into_iter().enumerate() {
        let (header, body, _) = zk.read_reply();
        assert_eq!(header.xid, xid);
        assert_eq!(header.err, ErrorCode::OK);
        assert!(header.zxid > last_zxid, "zxids increase");
        last_zxid = header.zxid;
        assert_eq!(
            body,
            Some(Response::Create(CreateResponse {
                path: s(&format!("/p{i:03}"))
            }))
        );
    }
    assert_eq!(zk.children("/", false).len(), n + 1);
}

#[test]
fn sessions_resume_on_a_new_connection_and_end_with_close() {
    let server = started(ZkServer::start());
    let mut zk = Session::connect(server.addr());
    zk.create("/eph", b"", CreateMode::EPHEMERAL);
    assert_eq!(
        zk.exists("/eph", false).unwrap().ephemeral_owner,
        zk.session_id
    );
    let (_, ephemerals) = zk.ok(
        OpCode::GET_EPHEMERALS,
        GetEphemeralsRequest {
            prefix_path: s("/"),
        },
    );
    assert!(
        matches!(&ephemerals, Response::GetEphemerals(r) if r.ephemerals == Some(vec![s("/eph")])),
        "{ephemerals:?}"
    );

    // Resume on a second connection; the server closes the first.
    let (stream, response) = handshake(server.addr(), &zk.resume_request());
    let response = response.expect("resumed");
    assert_eq!(response.session_id, zk.session_id);
    assert_eq!(response.time_out, zk.time_out);
    assert_eq!(response.passwd.as_ref(), Some(&zk.passwd));
    assert!(
        closed_by_server(&mut zk.stream),
        "the old connection is closed"
    );
    let mut resumed = Session::from_response(stream, response);
    assert_eq!(
        resumed.exists("/eph", false).unwrap().ephemeral_owner,
        zk.session_id
    );

    // A wrong password gets a ConnectResponse with timeout 0, then the connection closes.
    // The server closes the session's current connection before it checks the password, so
    // the attempt also disconnects `resumed` (the session itself lives on).
    let mut wrong = zk.resume_request();
    wrong.passwd = Some(Bytes::from_static(&[7; 16]));
    let (mut stream, response) = handshake(server.addr(), &wrong);
    let response = response.expect("an answer");
    assert_eq!(
        (response.time_out, response.session_id),
        (0, 0),
        "{response:?}"
    );
    assert!(closed_by_server(&mut stream));
    assert!(closed_by_server(&mut resumed.stream));

    // A client that has seen a later zxid than the server is refused without an answer.
    let mut ahead = zk.resume_request();
    ahead.last_zxid_seen = resumed.last_zxid + 1_000_000;
    let (_, response) = handshake(server.addr(), &ahead);
    assert!(response.is_err(), "{response:?}");

    // The right password still resumes the session.
    let (stream, response) = handshake(server.addr(), &zk.resume_request());
    let response = response.expect("resumed again");
    assert_eq!(response.session_id, zk.session_id);
    let resumed = Session::from_response(stream, response);

    // closeSession deletes the session's ephemeral nodes.
    let mut other = Session::connect(server.addr());
    resumed.close();
    assert_eq!(other.exists("/eph", false), Err(ErrorCode::NO_NODE));
}

#[test]
fn an_expired_session_cannot_be_resumed() {
    let server = started(
        ZkServer::builder()
            .tick_time(Duration::from_millis(200))
            .start(),
    );
    let mut zk = Session::connect_with_timeout(server.addr(), 100);
    assert_eq!(zk.time_out, 400, "raised to the minimum of 2 ticks");
    zk.create("/eph", b"", CreateMode::EPHEMERAL);
    let resume = zk.resume_request();
    zk.stream.shutdown(Shutdown::Both).unwrap();
    drop(zk);

    let mut observer = Session::connect(server.addr());
    let deadline = Instant::now() + Duration::from_secs(20);
    while observer.exists("/eph", false).is_ok() {
        assert!(Instant::now() < deadline, "the session did not expire");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (mut stream, response) = handshake(server.addr(), &resume);
    let response = response.expect("an answer");
    assert_eq!(
        response.time_out, 0,
        "timeout 0 means expired: {response:?}"
    );
    assert!(closed_by_server(&mut stream));
}

#[test]
fn digest_auth_and_acls() {
    let server = started(ZkServer::start());
    let mut alice = Session::connect(server.addr());
    let auth = AuthPacket {
        auth_type: 0,
        scheme: s("digest"),
        auth: b(b"alice:secret"),
    };
    let (header, body, _) = alice.request_xid(XID_AUTH, OpCode::AUTH, auth);
    assert_eq!(header.err, ErrorCode::OK);
    assert_eq!(body, Some(Response::Empty));

    let (_, who) = alice.ok(OpCode::WHO_AM_I, ());
    let Response::WhoAmI(who) = who else {
        panic!("whoAmI: {who:?}");
    };
    let ids: Vec<(String, String)> = who
        .client_info
        .unwrap_or_default()
        .into_iter()
        .map(|c| {
            (
                c.auth_scheme.unwrap_or_default(),
                c.user.unwrap_or_default(),
            )
        })
        .collect();
    assert!(ids.contains(&("digest".into(), "alice".into())), "{ids:?}");
    assert!(ids.contains(&("ip".into(), "127.0.0.1".into())), "{ids:?}");

    // The `auth` scheme stands for the session's authenticated identities.
    let only_alice = Some(vec![Acl {
        perms: Perms::ALL,
        id: Id {
            scheme: s("auth"),
            id: s(""),
        },
    }]);
    alice.ok(
        OpCode::CREATE,
        CreateRequest {
            path: s("/secret"),
            data: b(b"s"),
            acl: only_alice,
            flags: CreateMode::PERSISTENT,
        },
    );
    let (_, acl) = alice.ok(OpCode::GET_ACL, jute::GetAclRequest { path: s("/secret") });
    let Response::GetAcl(acl) = acl else {
        panic!("getACL: {acl:?}");
    };
    let acl = acl.acl.expect("an ACL");
    assert_eq!(acl.len(), 1);
    assert_eq!(acl[0].perms, Perms::ALL);
    assert_eq!(acl[0].id.scheme, s("digest"));
    assert!(
        acl[0].id.id.as_deref().unwrap_or("").starts_with("alice:"),
        "{acl:?}"
    );

    let mut bob = Session::connect(server.addr());
    let get = GetDataRequest {
        path: s("/secret"),
        watch: false,
    };
    assert_eq!(bob.fails(OpCode::GET_DATA, get.clone()), ErrorCode::NO_AUTH);

    // Alice opens it for reading to everyone.
    let read_only = SetAclRequest {
        path: s("/secret"),
        acl: Some(vec![Acl {
            perms: Perms::READ,
            id: Id {
                scheme: s("world"),
                id: s("anyone"),
            },
        }]),
        version: 0,
    };
    let (_, set) = alice.ok(OpCode::SET_ACL, read_only);
    assert!(matches!(set, Response::SetAcl(r) if r.stat.aversion == 1));
    assert_eq!(bob.get_data("/secret", false).0, b(b"s"));
    let write = SetDataRequest {
        path: s("/secret"),
        data: b(b"bob"),
        version: -1,
    };
    assert_eq!(bob.fails(OpCode::SET_DATA, write), ErrorCode::NO_AUTH);

    // An unknown auth scheme fails the auth and ends the connection.
    let bad = AuthPacket {
        auth_type: 0,
        scheme: s("no-such-scheme"),
        auth: b(b"x"),
    };
    bob.send_xid(XID_AUTH, OpCode::AUTH, bad);
    let (header, body, _) = bob.read_reply();
    assert_eq!(header.xid, XID_AUTH);
    assert_eq!(header.err, ErrorCode::AUTH_FAILED);
    assert_eq!(body, None);
    assert!(closed_by_server(&mut bob.stream));
}

#[test]
fn oversized_frames_close_the_connection() {
    let server = started(ZkServer::start());
    let mut zk = Session::connect(server.addr());
    zk.create("/big", b"small", CreateMode::PERSISTENT);
    let request = SetDataRequest {
        path: s("/big"),
        data: Some(Bytes::from(vec![b'x'; 2 * MAX_FRAME])),
        version: -1,
    };
    // The server may reset the connection while the frame is still being written.
    let header = RequestHeader {
        xid: 1,
        op_code: OpCode::SET_DATA,
    };
    let _ = write_frame(&mut zk.stream, &(header, request));
    assert!(closed_by_server(&mut zk.stream));
    let mut other = Session::connect(server.addr());
    assert_eq!(other.get_data("/big", false).0, b(b"small"));
}

#[test]
fn an_ensemble_forwards_writes_and_syncs_reads() {
    let ensemble = started(Ensemble::start(3));
    let leader = ensemble.wait_for_leader().unwrap();
    let followers: Vec<usize> = (0..3).filter(|&i| i != leader).collect();

    // A write through a follower is forwarded to the leader and committed by the quorum.
    let mut writer = Session::connect(ensemble.server(followers[0]).addr());
    let (zxid, _) = writer.ok(
        OpCode::CREATE,
        CreateRequest {
            path: s("/q"),
            data: b(b"quorum"),
            acl: world_acl(),
            flags: CreateMode::PERSISTENT,
        },
    );
    // Session ids carry the id of the server that created them in the top byte.
    let creator = ensemble.server(followers[0]).id();
    assert_eq!(
        (writer.session_id >> 56) as u32,
        creator,
        "{:#x}",
        writer.session_id
    );

    for &i in &[leader, followers[1]] {
        let mut reader = Session::connect(ensemble.server(i).addr());
        reader.ok(OpCode::SYNC, SyncRequest { path: s("/q") });
        let (data, stat) = reader.get_data("/q", false);
        assert_eq!(data, b(b"quorum"));
        assert_eq!(stat.czxid, zxid);
        assert!(reader.last_zxid >= zxid);
    }

    // The session survives moving to another server.
    let (stream, response) = handshake(ensemble.server(leader).addr(), &writer.resume_request());
    let response = response.expect("resumed on the leader");
    assert_eq!(response.session_id, writer.session_id);
    let mut moved = Session::from_response(stream, response);
    moved.create("/q/eph", b"", CreateMode::EPHEMERAL);
    moved.close();
}

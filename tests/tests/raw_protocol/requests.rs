//! Requests and their replies, by hand: a node's lifecycle, errors as a bare reply header,
//! TTL and container nodes, multi and multiRead, pipelining, and oversized frames.

use std::time::{Duration, Instant};

use bytes::Bytes;
use jute::{
    Acl, CheckVersionRequest, Create2Response, CreateMode, CreateRequest, CreateResponse,
    CreateTtlRequest, DeleteRequest, ErrorCode, GetAllChildrenNumberRequest, GetChildren2Request,
    GetChildrenRequest, GetDataRequest, MultiOp, MultiRequest, MultiResponse, MultiResult, OpCode,
    RequestHeader, Response, SetDataRequest, SyncRequest,
};
use zk_testkit::raw::{
    MAX_FRAME, RawSession, b, closed_by_server, handshake, new_session_request, s, sorted,
    world_acl, write_frame,
};
use zk_testkit::{ZkServer, started};

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
    let mut zk = RawSession::from_response(stream, response);
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
    let mut zk = RawSession::connect(server.addr());
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
    let mut zk = RawSession::connect(server.addr());

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
fn multi_is_all_or_nothing_and_multi_read_is_not() {
    let server = started(ZkServer::start());
    let mut zk = RawSession::connect(server.addr());
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
    let mut zk = RawSession::connect(server.addr());
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
fn oversized_frames_close_the_connection() {
    let server = started(ZkServer::start());
    let mut zk = RawSession::connect(server.addr());
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
    let mut other = RawSession::connect(server.addr());
    assert_eq!(other.get_data("/big", false).0, b(b"small"));
}

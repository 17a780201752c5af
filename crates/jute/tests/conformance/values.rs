//! Decoded values, field by field, against what GenerateVectors.java gave the reference: the
//! records, the multi bodies, and the ConnectRequest with and without its read-only byte.

use super::*;

/// Clients older than 3.4 send the ConnectRequest record without the readOnly byte the 3.8
/// client appends: it decodes, as false (as the Java server reads it), and re-encodes with it.
#[test]
fn connect_request_decodes_with_and_without_its_read_only_byte() {
    let requests: Vec<&Vector> = vectors()
        .iter()
        .filter(|v| v.name == "proto.ConnectRequest")
        .collect();
    assert!(requests.len() >= 3);
    for v in requests {
        let full: ConnectRequest = decode_exact(v.bytes.clone())
            .unwrap_or_else(|e| panic!("{}: does not decode: {e}", v.id()));
        let short = v.bytes.slice(..v.bytes.len() - 1);
        let old: ConnectRequest = decode_exact(short.clone())
            .unwrap_or_else(|e| panic!("{}: without readOnly: {e}", v.id()));
        assert_eq!(
            old,
            ConnectRequest {
                read_only: false,
                ..full.clone()
            },
            "{}",
            v.id()
        );
        assert_eq!(old.encoded_len(), v.bytes.len(), "{}", v.id());
        assert_eq!(old.to_bytes()[..short.len()], short[..], "{}", v.id());
        assert_eq!(old.to_bytes()[short.len()], 0, "{}", v.id());
        // Neither one byte less (inside passwd) nor a second trailing byte.
        let cut = v.bytes.slice(..v.bytes.len() - 2);
        assert!(decode_exact::<ConnectRequest>(cut).is_err(), "{}", v.id());
        let mut long = v.bytes.to_vec();
        long.push(0);
        assert!(
            decode_exact::<ConnectRequest>(Bytes::from(long)).is_err(),
            "{}",
            v.id()
        );
    }
}

#[test]
fn decoded_values_match_what_the_reference_was_given() {
    // Field order: every field of these Stats has a distinct value.
    check("data.Stat", "typical", |v: Stat| v, typical_stat());
    check("data.Stat", "min", |v: Stat| v, min_stat());
    check("data.Stat", "max", |v: Stat| v, max_stat());
    check("data.Stat", "zero", |v: Stat| v, Stat::default());

    // Strings: non-ASCII, null versus empty, NUL and the UTF-8 length boundaries.
    let path = |v: CreateResponse| v.path;
    check("proto.CreateResponse", "non-ascii", path, s(NON_ASCII));
    check("proto.CreateResponse", "null", path, None);
    check("proto.CreateResponse", "empty", path, s(""));
    check(
        "proto.CreateResponse",
        "long-4k",
        |v: CreateResponse| v.path.map(|p| p.len()),
        Some(4096),
    );
    check(
        "data.Id",
        "boundaries",
        |v: Id| v,
        Id {
            scheme: s("ip"),
            id: s("a\0b\u{7f}\u{80}\u{7ff}\u{800}\u{fffd}\u{ffff}"),
        },
    );

    // Buffers: null versus empty, every byte value, the large one byte for byte.
    let data = |v: GetDataResponse| v.data;
    check(
        "proto.GetDataResponse",
        "null-min",
        |v: GetDataResponse| v,
        GetDataResponse {
            data: None,
            stat: min_stat(),
        },
    );
    check(
        "proto.GetDataResponse",
        "empty-max",
        data,
        Some(Bytes::new()),
    );
    check(
        "proto.GetDataResponse",
        "all-byte-values-minus-one",
        data,
        Some((0..=255u8).collect::<Vec<u8>>().into()),
    );
    check(
        "proto.GetDataResponse",
        "large-100k",
        |v: GetDataResponse| v,
        GetDataResponse {
            data: Some(pattern(100 * 1024)),
            stat: typical_stat(),
        },
    );

    // Vectors: null versus empty, null elements, 1000 children in order.
    let children = |v: GetChildrenResponse| v.children.map(|list| list.to_nullable_vec());
    check("proto.GetChildrenResponse", "null", children, None);
    check("proto.GetChildrenResponse", "empty", children, Some(vec![]));
    check(
        "proto.GetChildrenResponse",
        "one-empty-string",
        children,
        Some(vec![s("")]),
    );
    check(
        "proto.GetChildrenResponse",
        "null-elements",
        children,
        Some(vec![None, s("x"), None]),
    );
    check(
        "proto.GetChildrenResponse",
        "many-1000",
        children,
        Some((0..1000).map(|i| Some(format!("child-{i:04}"))).collect()),
    );

    // Records inside records, and the code newtypes.
    check(
        "proto.CreateRequest",
        "persistent-open",
        |v: CreateRequest| v,
        CreateRequest {
            path: s("/a"),
            data: Some(Bytes::from_static(b"hello")),
            acl: Some(vec![Acl {
                perms: Perms::ALL,
                id: world_anyone(),
            }]),
            flags: CreateMode::PERSISTENT,
        },
    );
    check(
        "proto.CreateRequest",
        "all-null",
        |v: CreateRequest| v,
        CreateRequest {
            path: None,
            data: None,
            acl: None,
            flags: CreateMode::PERSISTENT,
        },
    );
    check(
        "proto.CreateTTLRequest",
        "sequential-max-ttl",
        |v: CreateTtlRequest| (v.flags, v.ttl),
        (CreateMode::PERSISTENT_SEQUENTIAL_WITH_TTL, (1 << 40) - 1),
    );
    check(
        "proto.WatcherEvent",
        "none-expired-null-path",
        |v: WatcherEvent| v,
        WatcherEvent {
            event_type: EventType::NONE,
            state: KeeperState::EXPIRED,
            path: None,
        },
    );
    check(
        "proto.ReplyHeader",
        "no-node",
        |v: ReplyHeader| v,
        ReplyHeader {
            xid: 5,
            zxid: 10,
            err: ErrorCode::NO_NODE,
        },
    );

    // The readOnly byte ClientCnxn and the server append to the connect records.
    check(
        "proto.ConnectRequest",
        "resume-read-only",
        |v: ConnectRequest| v,
        ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0x12_3456_7890,
            time_out: 40000,
            session_id: 0x0123_4567_89ab_cdef,
            passwd: Some(pattern(16)),
            read_only: true,
        },
    );
    let read_only = |v: ConnectResponse| v.read_only;
    check(
        "proto.ConnectResponse",
        "read-only-server",
        read_only,
        Some(true),
    );
    check(
        "proto.ConnectResponse",
        "new-session",
        read_only,
        Some(false),
    );
    check(
        "proto.ConnectResponse",
        "no-readonly-byte",
        |v: ConnectResponse| v,
        ConnectResponse {
            protocol_version: 0,
            time_out: 30000,
            session_id: 0x10_0000_abcd,
            passwd: Some(pattern(16)),
            read_only: None,
        },
    );
}

#[test]
fn decoded_multi_bodies_match_what_the_reference_was_given() {
    check(
        "MultiRequest",
        "all-write-kinds",
        |v: MultiRequest| v.ops.iter().map(MultiOp::op_code).collect::<Vec<_>>(),
        vec![
            OpCode::CREATE,
            OpCode::CREATE_CONTAINER,
            OpCode::CREATE_TTL,
            OpCode::CREATE2,
            OpCode::DELETE,
            OpCode::SET_DATA,
            OpCode::CHECK,
        ],
    );
    check(
        "MultiRequest",
        "all-write-kinds",
        |mut v: MultiRequest| v.ops.drain(2..5).collect::<Vec<_>>(),
        vec![
            MultiOp::CreateTtl(CreateTtlRequest {
                path: s("/m/t"),
                data: Some(Bytes::new()),
                acl: Some(vec![Acl {
                    perms: Perms::ALL,
                    id: Id {
                        scheme: s("auth"),
                        id: s(""),
                    },
                }]),
                flags: CreateMode::PERSISTENT_WITH_TTL,
                ttl: 60000,
            }),
            MultiOp::Create2(CreateRequest {
                path: s("/m/s-"),
                data: Some(Bytes::from_static(b"s")),
                acl: Some(vec![Acl {
                    perms: Perms::ALL,
                    id: world_anyone(),
                }]),
                flags: CreateMode::EPHEMERAL_SEQUENTIAL,
            }),
            MultiOp::Delete(DeleteRequest {
                path: s("/m/old"),
                version: -1,
            }),
        ],
    );
    check(
        "MultiRequest",
        "read-kinds",
        |v: MultiRequest| {
            v.ops
                .iter()
                .map(|op| (op.op_code(), op.is_read()))
                .collect::<Vec<_>>()
        },
        vec![
            (OpCode::GET_CHILDREN, true),
            (OpCode::GET_DATA, true),
            (OpCode::GET_DATA, true),
        ],
    );
    check("MultiRequest", "empty", |v: MultiRequest| v.ops, vec![]);

    check(
        "MultiResponse",
        "all-result-kinds",
        |v: MultiResponse| v.results,
        vec![
            MultiResult::Create(CreateResponse { path: s("/m/a") }),
            MultiResult::Create2(Create2Response {
                path: s("/m/s-0000000001"),
                stat: typical_stat(),
            }),
            MultiResult::Delete,
            MultiResult::SetData(SetDataResponse { stat: max_stat() }),
            MultiResult::Check,
            MultiResult::GetChildren(GetChildrenResponse {
                children: Some(["x", "y"].into_iter().collect()),
            }),
            MultiResult::GetData(GetDataResponse {
                data: Some(Bytes::from_static(b"data")),
                stat: min_stat(),
            }),
            MultiResult::Error(ErrorCode::NO_NODE),
        ],
    );
    check(
        "MultiResponse",
        "failed-transaction",
        |v: MultiResponse| v.results,
        vec![
            MultiResult::Error(ErrorCode::OK),
            MultiResult::Error(ErrorCode::BAD_VERSION),
            MultiResult::Error(ErrorCode::RUNTIME_INCONSISTENCY),
        ],
    );
}
